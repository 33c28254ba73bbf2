"""What the agent's model is sent, by the provider's own count (issue 22, items 1 and 9).

The agent's model here is a scripted provider: it records every request (system prompt,
messages and the tool schemas bound to it) and reports ``usage_metadata.input_tokens``
the way a provider counts what it received: the messages as OpenAI counts them, plus the
tool schemas as the JSON it was sent, plus whatever the provider adds on its own
(``hidden``: a tool-use preamble) or counts differently (``factor``: another tokenizer).
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from typing import Any

import pytest
from conftest import COUNTER, FAST
from fakes import KeywordSummarizer
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from langchain_recursive_memory.messages import message_to_turn
from langchain_recursive_memory.middleware import RecursiveMemoryMiddleware

SYSTEM = " ".join(
    f"Rule {i}: answer the traveller precisely, cite the booking system, never guess a fare."
    for i in range(43)
)
TOOL_NAMES = ("search_flights", "book_flight", "search_hotels", "book_hotel", "weather", "fx")


def _tool(name: str) -> StructuredTool:
    def run(**kwargs: Any) -> str:
        return f"{name} result: " + "availability confirmed for the dates asked. " * 25

    fields = {
        f"{name}_field_{j}": {
            "type": "string",
            "description": f"Field {j} of {name}: the value the booking system expects for "
            "this parameter, in the format the traveller gave it.",
        }
        for j in range(5)
    }
    schema = {"type": "object", "properties": fields, "required": list(fields)[:2]}
    return StructuredTool.from_function(
        func=run,
        name=name,
        description=f"{name}: " + "Query the travel booking backend and return its answer. " * 2,
        args_schema=schema,
    )


TOOLS = [_tool(n) for n in TOOL_NAMES]


def tools_as_sent(tools: list[Any]) -> int:
    return COUNTER.count_text(json.dumps([convert_to_openai_tool(t) for t in tools]))


class Provider(BaseChatModel):
    """Calls a tool for each question, then answers; reports usage as a provider does."""

    requests: list[tuple[list[BaseMessage], int]] = Field(default_factory=list)
    tools: list[Any] = Field(default_factory=list)
    hidden: int = 0
    factor: float = 1.0
    tool_rounds: int = 1
    left: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted-provider"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Provider:  # type: ignore[override]
        self.tools = list(tools)
        return self

    def received(self, messages: list[BaseMessage]) -> int:
        exact = COUNTER.count_turns([message_to_turn(m) for m in messages])
        exact += tools_as_sent(self.tools)
        return math.ceil(exact * self.factor) + self.hidden

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        tokens = self.received(list(messages))
        self.requests.append((list(messages), tokens))
        if isinstance(messages[-1], HumanMessage):
            self.left = self.tool_rounds
        if self.left > 0:
            self.left -= 1
            name = TOOL_NAMES[len(self.requests) % len(TOOL_NAMES)]
            call = {"name": name, "args": {f"{name}_field_0": "LIS"}, "id": uuid.uuid4().hex}
            answer = AIMessage("", tool_calls=[call])
        else:
            answer = AIMessage("Booked: " + "your itinerary is confirmed and paid. " * 8)
        answer.usage_metadata = {"input_tokens": tokens, "output_tokens": 9, "total_tokens": 9}
        return ChatResult(generations=[ChatGeneration(message=answer)])


def agent_for(store, provider: Provider, max_tokens: int = 4000):
    mw = RecursiveMemoryMiddleware(
        store=store, llm=KeywordSummarizer(), max_tokens=max_tokens, retry=FAST
    )
    agent = create_agent(
        provider, tools=TOOLS, system_prompt=SYSTEM, middleware=[mw], checkpointer=InMemorySaver()
    )
    return agent, mw


def ask(agent, n: int, thread: str = "t", marker: str = "") -> None:
    question = f"Question {n}: find me a flight to Lisbon and a hotel near the river, please. " * 6
    question += marker
    agent.invoke({"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": thread}})


def test_the_reproduction_is_as_large_as_the_issue_says():
    system = COUNTER.count_text(SYSTEM)
    tools = tools_as_sent(TOOLS)
    assert 780 <= system <= 840  # an ~811-token system prompt
    assert 1700 <= tools <= 1820  # six tools, ~1,759 tokens as the JSON sent


def test_the_whole_request_fits_by_the_count_of_a_provider_counting_what_it_received(store):
    provider = Provider()
    agent, _ = agent_for(store, provider)
    for n in range(12):
        ask(agent, n)
    sent = [tokens for _, tokens in provider.requests]
    assert len(sent) == 24
    assert max(sent) <= 4000, sent
    assert max(sent) > 3500  # the budget is used, not wasted


@pytest.mark.parametrize(("hidden", "factor"), [(346, 1.0), (0, 1.12), (120, 1.05)])
def test_reported_usage_corrects_the_next_request_of_the_thread(store, caplog, hidden, factor):
    provider = Provider(hidden=hidden, factor=factor)
    agent, _ = agent_for(store, provider)
    with caplog.at_level(logging.DEBUG, logger="langchain_recursive_memory"):
        for n in range(12):
            ask(agent, n)
    sent = [tokens for _, tokens in provider.requests]
    assert max(sent[1:]) <= 4000, sent  # after the first response, by the provider's count
    assert max(sent[1:]) > 3300, sent
    assert "input_tokens" in caplog.text and "correct" in caplog.text


def test_the_correction_is_per_thread(store):
    class PerThread(Provider):
        """Adds 600 hidden tokens to thread a's requests only."""

        def received(self, messages: list[BaseMessage]) -> int:
            extra = 600 if any("thread-a" in m.text for m in messages) else 0
            return super().received(messages) + extra

    provider = PerThread()
    agent, _ = agent_for(store, provider)
    seen: dict[str, list[int]] = {"a": [], "b": []}
    for n in range(8):
        for name in ("a", "b"):
            before = len(provider.requests)
            ask(agent, n, thread=name, marker=f"thread-{name}")
            seen[name] += [tokens for _, tokens in provider.requests[before:]]
    assert max(seen["a"][1:]) <= 4000, seen["a"]
    assert max(seen["b"]) <= 4000, seen["b"]
    assert max(seen["b"]) > 3500, seen["b"]  # thread a's correction did not shrink thread b


def test_a_cut_tool_result_warns_once_per_thread(store, caplog):
    def huge(**kwargs: Any) -> str:
        return "A very long page of search results. " * 900

    tools = [
        StructuredTool.from_function(func=huge, name=name, description="Search.")
        for name in TOOL_NAMES
    ]
    provider = Provider(tool_rounds=4)
    mw = RecursiveMemoryMiddleware(store=store, max_tokens=3000, retry=FAST)
    agent = create_agent(
        provider,
        tools=tools,
        system_prompt="Be brief.",
        middleware=[mw],
        checkpointer=InMemorySaver(),
    )
    with caplog.at_level(logging.INFO, logger="langchain_recursive_memory"):
        ask(agent, 0, thread="w")
        ask(agent, 1, thread="w")
        ask(agent, 0, thread="v")
    cut = [r for r in caplog.records if "sent cut" in r.getMessage()]
    assert len(cut) >= 8  # every cut is logged ...
    assert len([r for r in cut if r.levelno >= logging.WARNING]) == 2, (
        cut
    )  # ... warned once a thread
