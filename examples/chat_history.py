"""RecursiveSummaryChatMessageHistory inside RunnableWithMessageHistory (offline).

The two models are scripted stand-ins so this runs offline; replace them with real ones,
e.g. ``init_chat_model("openai:gpt-4o")`` for the chat and ``"openai:gpt-4o-mini"`` for the
summarizer. The application opens one ``MemoryStore``; ``get_history`` builds a history
per call, a cheap handle on that store (README, "LangChain: a history per conversation").
"""

import tempfile
import warnings

from langchain_core.language_models import FakeListChatModel
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_recursive_memory import MemoryStore, RecursiveSummaryChatMessageHistory

warnings.filterwarnings("ignore", category=DeprecationWarning)  # RunnableWithMessageHistory

chat_model = FakeListChatModel(responses=["Noted!"] * 100)  # stand-in for the chat model
summarizer = FakeListChatModel(responses=["Ada lives in Oslo and has 3 cats."] * 100)
# One store for the whole application; omit the path to use the default location.
store = MemoryStore.persistent(tempfile.mkdtemp())


def get_history(session_id: str) -> RecursiveSummaryChatMessageHistory:
    return RecursiveSummaryChatMessageHistory(
        session_id, llm=summarizer, store=store, max_tokens=1000, max_summary_tokens=200
    )


prompt = ChatPromptTemplate.from_messages(
    [
        ("system", "You are a helpful assistant."),
        MessagesPlaceholder("history"),
        ("human", "{question}"),
    ]
)
chain = RunnableWithMessageHistory(
    prompt | chat_model,
    get_history,
    input_messages_key="question",
    history_messages_key="history",
)

config = {"configurable": {"session_id": "user-42"}}
chain.invoke({"question": "Hi! I'm Ada, I live in Oslo and I have 3 cats."}, config)
for i in range(60):
    chain.invoke({"question": f"Tell me idea number {i} for a weekend in Oslo."}, config)

history = get_history("user-42")
print(history.summary)  # the running summary (here, the stand-in's answer)
print(history.context().tokens, "<= 1000 tokens in the context")
print(len(history.all_messages()), "messages in the log")  # 122: nothing is lost
