"""Folds keep the log's order and the summarizer sees what the work was for (issue 22, 2).

A question followed by a long tool run under a small budget: the question is folded in
its place, with the tool results that follow it (so the first summary says what they
answer), every summary version folds the range of the log right after the previous one,
and while the question is the newest user message it is still shown verbatim: by the
core context, the LangChain chat history and the agent middleware.
"""

from __future__ import annotations

import uuid
from typing import Any

from conftest import COUNTER, FAST
from fakes import KeywordSummarizer, prompt_messages
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.core import (
    MemoryStore,
    RecursiveMemory,
    ToolCall,
    Turn,
)
from langchain_recursive_memory.messages import message_to_turn
from langchain_recursive_memory.middleware import RecursiveMemoryMiddleware

QUESTION = "Which Quarry mirror answers fastest from Lisbon? Ping all forty of them."
STEPS = 40


def result(i: int) -> str:
    """A tool result of about 40 tokens."""
    return f"Mirror {i} answered in {20 + i} ms. " + " ".join(f"hop{j}" for j in range(30))


def assert_contiguous(store: MemoryStore, session_id: str) -> None:
    """Every summary version folds the range of the log right after the previous one."""
    position = {t.id: i for i, t in enumerate(store.turns("default", session_id))}
    versions = store.summaries("default", session_id)
    assert versions, "nothing was folded"
    expected = 0
    for v in versions:
        where = [position[tid] for tid in v.turn_ids]
        assert where == list(range(expected, expected + len(where))), (
            f"version {v.version} folds log positions {where}, expected from {expected}"
        )
        expected += len(where)


def test_the_question_is_folded_first_and_still_shown_while_current(store):
    model = KeywordSummarizer()
    mem = RecursiveMemory("s", store=store, retry=FAST, max_tokens=600, model=model)
    mem.add(Turn(role="user", text=QUESTION))
    for i in range(STEPS):
        call = ToolCall("ping", {"mirror": i}, f"c{i}")
        mem.add(Turn(role="assistant", tool_calls=(call,)))
        mem.add(Turn(role="tool", text=result(i), tool_call_id=f"c{i}", name="ping"))
        ctx = mem.context()
        assert ctx.tokens <= 600
        assert [t.text for t in ctx.window].count(QUESTION) == 1, f"step {i}"
        assert ctx.window[-1].tool_call_id == f"c{i}"
    assert model.prompts, "no fold ran"
    assert QUESTION in prompt_messages(model.prompts[0])  # what the results answer
    assert_contiguous(store, "s")
    assert mem.turns()[0].folded_in == 1  # folded in its place, by the first version
    mem.add(Turn(role="assistant", text="Mirror 0 is fastest."))
    mem.add(Turn(role="user", text="Thanks. And from Porto?"))
    shown = [t.text for t in mem.context().window]
    assert QUESTION not in shown and shown[-1] == "Thanks. And from Porto?"  # not current


def test_a_forced_fold_that_ends_the_conversation_shows_no_question(store):
    mem = RecursiveMemory("s", store=store, retry=FAST, max_tokens=600, model=KeywordSummarizer())
    mem.add(Turn(role="user", text=QUESTION))
    mem.add(Turn(role="assistant", text="Mirror 3."))
    mem.fold(force=True, keep=False)
    assert mem.context().window == ()


def test_the_chat_history_folds_in_order_and_shows_the_question(store):
    history = RecursiveSummaryChatMessageHistory(
        "h", store=store, llm=KeywordSummarizer(), max_tokens=600, retry=FAST
    )
    history.add_messages([HumanMessage(QUESTION)])
    for i in range(STEPS):
        call = {"name": "ping", "args": {"mirror": i}, "id": f"c{i}"}
        history.add_messages(
            [AIMessage("", tool_calls=[call]), ToolMessage(result(i), tool_call_id=f"c{i}")]
        )
        texts = [m.text for m in history.messages]
        assert texts.count(QUESTION) == 1, f"step {i}"
    assert_contiguous(store, "h")


@tool
def ping(mirror: int) -> str:
    """Ping one mirror by its number and report how fast it answered."""
    return result(mirror)


class PingModel(BaseChatModel):
    """Pings one mirror per step for ``steps`` steps, then answers."""

    steps: int = STEPS
    requests: list[list[Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-ping"

    def bind_tools(self, tools: Any, **kwargs: Any) -> PingModel:  # type: ignore[override]
        self._tools = [convert_to_openai_tool(t) for t in tools]
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.requests.append(list(messages))
        step = len(self.requests)
        if step > self.steps:
            answer = AIMessage("Mirror 0 is fastest.")
        else:
            call = {"name": "ping", "args": {"mirror": step}, "id": f"c{step}"}
            answer = AIMessage("", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=answer)])


def test_the_middleware_folds_in_order_and_sends_the_question(store):
    summarizer = KeywordSummarizer()
    mw = RecursiveMemoryMiddleware(
        store=store, llm=summarizer, max_tokens=600, retry=FAST, count_system_and_tools=False
    )
    model = PingModel()
    agent = create_agent(model, tools=[ping], middleware=[mw])
    thread = f"t-{uuid.uuid4().hex[:6]}"
    cfg = {"configurable": {"thread_id": thread}, "recursion_limit": 200}
    agent.invoke({"messages": [HumanMessage(QUESTION)]}, cfg)
    assert len(model.requests) == STEPS + 1
    for n, request in enumerate(model.requests):
        body = [message_to_turn(m) for m in request]
        assert COUNTER.count_turns(body) <= 600
        assert [t.text for t in body].count(QUESTION) == 1, f"request {n}"
    assert summarizer.prompts and QUESTION in prompt_messages(summarizer.prompts[0])
    assert_contiguous(store, thread)
