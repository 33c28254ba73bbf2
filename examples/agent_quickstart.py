"""A LangChain v1 agent whose memory is RecursiveMemoryMiddleware (offline).

The chat model is a stand-in that answers "Noted."; no summarizer is configured, so folds
use the no-LLM extractive summary. With real models: ``create_agent("openai:gpt-4o",
middleware=[RecursiveMemoryMiddleware(llm="openai:gpt-4o-mini", store=store)])``.
"""

import itertools
import tempfile

from langchain.agents import create_agent
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_recursive_memory import MemoryStore, RecursiveMemoryMiddleware


class StandInChatModel(GenericFakeChatModel):  # stand-in for your chat model
    def bind_tools(self, tools, **kwargs):
        return self


answers = (AIMessage(f"Noted ({i}).") for i in itertools.count())
store = MemoryStore.persistent(tempfile.mkdtemp())  # one store for the whole application
memory = RecursiveMemoryMiddleware(store=store, max_tokens=800)  # summary + recent messages
agent = create_agent(
    StandInChatModel(messages=answers),
    system_prompt="You are a helpful assistant.",
    middleware=[memory],
    checkpointer=InMemorySaver(),
)

config = {"configurable": {"thread_id": "user-42"}}  # the thread is the memory's session
agent.invoke({"messages": [("user", "Hi! I'm Ada, I live in Oslo and I have 3 cats.")]}, config)
for i in range(60):
    state = agent.invoke({"messages": [("user", f"Weekend idea {i} for Oslo?")]}, config)

print(len(state["messages"]), "messages in the thread's state: the memory's window")
print(len(memory.all_messages("user-42")), "messages in the log: nothing is lost")
print("Summary:", memory.get_memory("user-42").get_summary().text.splitlines()[0])
