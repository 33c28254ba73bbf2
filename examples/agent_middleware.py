"""RecursiveMemoryMiddleware in a LangChain v1 agent built with create_agent (offline).

The chat model is a scripted stand-in (it replays tool calls and answers), and no
summarizer is configured, so folds use the no-LLM extractive summary. With real models:
``create_agent("openai:gpt-4o", tools, middleware=[RecursiveMemoryMiddleware(
llm="openai:gpt-4o-mini", ...)])``.
"""

import tempfile

from langchain.agents import create_agent
from langchain.agents.middleware import wrap_model_call
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langchain_recursive_memory.core import TokenCounter
from langchain_recursive_memory.messages import message_to_turn
from langchain_recursive_memory.middleware import RecursiveMemoryMiddleware

WEEK_1 = ["Oslo", "Porto", "Bergen", "Seville", "Tartu", "Cork", "Split", "Malmo"]
WEEK_2 = ["Kyoto", "Dakar", "Hanoi", "Accra", "Nagoya", "Rabat", "Izmir", "Jaipur"]
WEEK_3 = ["Lima", "Quito", "Perth", "Cusco", "Hobart", "Leeds", "Tromso", "Krakow"]
CITIES = WEEK_1 + WEEK_2 + WEEK_3  # a 24-stop trip, one question per stop


@tool
def get_weather(city: str) -> str:
    """Return tomorrow's forecast for a city."""
    return f"Tomorrow in {city}: {len(city) * 3} degrees, light wind from the north-west."


def script():
    for i, city in enumerate(CITIES):
        call = {"name": "get_weather", "args": {"city": city}, "id": f"call-{i}"}
        yield AIMessage("", tool_calls=[call])
        yield AIMessage(f"{city} will be {len(city) * 3} degrees tomorrow: pack accordingly!")


class StandInChatModel(GenericFakeChatModel):  # replays the script; use a real model instead
    def bind_tools(self, tools, **kwargs):
        return self


counter = TokenCounter("gpt-4o")
sent_tokens: list[int] = []


@wrap_model_call
def measure(request, handler):  # inside the memory: sees exactly what the model is sent
    sent_tokens.append(counter.count_turns([message_to_turn(m) for m in request.messages]))
    return handler(request)


memory = RecursiveMemoryMiddleware(  # session = the LangGraph thread_id
    path=tempfile.mkdtemp(),  # the store's folder; omit it for the default location
    max_tokens=600,  # summary + recent messages sent on each model call
    max_summary_tokens=150,
)
agent = create_agent(
    StandInChatModel(messages=script()),
    tools=[get_weather],
    system_prompt="You are a travel assistant. Check the weather before answering.",
    middleware=[memory, measure],
    checkpointer=InMemorySaver(),
)

config = {"configurable": {"thread_id": "trip-42"}}
print("turn | messages in the thread's state | tokens of the messages sent (budget 600)")
for turn, city in enumerate(CITIES, start=1):
    state = agent.invoke({"messages": [("user", f"What's the weather in {city}?")]}, config)
    if turn % 4 == 0:
        print(f"{turn:4} | {len(state['messages']):30} | {max(sent_tokens[-2:]):4}")

everything = memory.all_messages("trip-42")  # the state keeps the window; the log, all
full = counter.count_turns([message_to_turn(m) for m in everything])
print(f"\nThe whole thread is {len(everything)} messages, {full} tokens; the model was", end=" ")
print(f"never sent messages of more than {max(sent_tokens)} tokens", end=" ")
print("(max_tokens=600 holds them with the system prompt and the tool schemas).")
print("Last answer:", state["messages"][-1].content)
log = memory.get_memory("trip-42")
print(f"Log: {len(log.turns())} messages; summary version {log.get_summary().version}:")
print(log.get_summary().text)
