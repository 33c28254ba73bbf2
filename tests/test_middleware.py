"""RecursiveMemoryMiddleware inside langchain's create_agent, with scripted models.

The agent's model is a scripted tool-calling chat model that records every request it is
sent: for a human message naming an ``item``, it calls the ``lookup`` tool, then answers
with the tool's result. Budgets are checked on what the model is actually sent: the
messages after the system message (the system prompt and the tool schemas are outside
``max_tokens``, as documented), counted with ``TokenCounter`` on ``message_to_turn``.
"""

from __future__ import annotations

import itertools
import logging
import re
import uuid
from typing import Any

import pytest
from conftest import COUNTER, FAST, thread
from fakes import FactModel, FailingModel, KeywordSummarizer
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel, GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from langchain_recursive_memory.core import (
    ConfigurationError,
    MemoryStore,
    RecursiveMemory,
    StoreError,
)
from langchain_recursive_memory.core.storage.session_store import SessionSummaries, SessionTurns
from langchain_recursive_memory.messages import is_summary_message, message_to_turn
from langchain_recursive_memory.middleware import RecursiveMemoryMiddleware

SYSTEM = "You are a meticulous inventory assistant."
BUDGET = 600
_ITEM = re.compile(r"\bitem (\S+?)[.,]?(?:\s|$)")


@tool
def lookup(key: str) -> str:
    """Look up where an inventory item is stored."""
    return f"Item {key} is stored in Bay {sum(map(ord, key)) % 97} next to the loading dock."


class ToolAgentModel(BaseChatModel):
    """Calls `lookup` for a human message naming an item, then answers with the result.

    Records every request (the full list of messages it was sent).
    """

    requests: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-tool-agent"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolAgentModel:  # type: ignore[override]
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.requests.append(list(messages))
        last = messages[-1]
        if isinstance(last, ToolMessage):
            answer = AIMessage(f"Found it. {last.content}")
        elif isinstance(last, HumanMessage) and (match := _ITEM.search(last.text)):
            call = {"name": "lookup", "args": {"key": match.group(1)}, "id": _call_id()}
            answer = AIMessage("", tool_calls=[call])
        else:
            answer = AIMessage("Noted, thank you.")
        return ChatResult(generations=[ChatGeneration(message=answer)])


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:12]}"


def question(i: int, marker: str = "Alpha") -> str:
    return f"Please look up item {marker}-{i} for the {marker} quarterly plan, it matters."


def check_request(messages: list[BaseMessage], budget: int = BUDGET) -> None:
    """One system message, first; the rest within budget; tool calls paired."""
    assert [i for i, m in enumerate(messages) if isinstance(m, SystemMessage)] == [0]
    assert messages[0].text.startswith(SYSTEM)
    body = messages[1:]
    assert COUNTER.count_turns([message_to_turn(m) for m in body]) <= budget
    assert not any(is_summary_message(m) for m in body[1:])  # the summary only comes first
    i = 0
    while i < len(body):
        message = body[i]
        assert not isinstance(message, ToolMessage), f"orphan tool result at {i}"
        i += 1
        if isinstance(message, AIMessage) and (message.tool_calls or message.invalid_tool_calls):
            answered = set()
            while i < len(body) and isinstance(body[i], ToolMessage):
                answered.add(body[i].tool_call_id)
                i += 1
            calls = [*message.tool_calls, *message.invalid_tool_calls]
            assert answered == {c["id"] for c in calls}


def middleware(store: MemoryStore, **kwargs: Any) -> RecursiveMemoryMiddleware:
    kwargs.setdefault("max_tokens", BUDGET)
    kwargs.setdefault("max_summary_tokens", 120)
    kwargs.setdefault("retry", FAST)
    return RecursiveMemoryMiddleware(store=store, **kwargs)


def agent_with(mw: RecursiveMemoryMiddleware, model: BaseChatModel, checkpointer: Any = None):
    return create_agent(
        model, tools=[lookup], system_prompt=SYSTEM, middleware=[mw], checkpointer=checkpointer
    )


def check_log_is_the_state(mw: RecursiveMemoryMiddleware, session: str, state: dict) -> None:
    """The log holds every message exactly once, in order; the state is its newest part.

    With ``trim_state`` (the default) the state is the memory's window: the messages no
    summary version folded; without it, the whole log.
    """
    logged = [t.id for t in mw.get_memory(session).turns()]
    assert len(logged) == len(set(logged))
    ids = [m.id for m in state["messages"]]
    assert logged[len(logged) - len(ids) :] == ids
    if mw.trim_state:
        window = mw.get_memory(session).session.records.turns.unfolded_ids()
        kept = {m.id for m in state["messages"] if isinstance(m, SystemMessage)}
        assert set(ids) - kept == window - kept
    else:
        assert logged == ids


# -- the long run -------------------------------------------------------------------------------


def test_a_long_thread_keeps_every_request_within_budget_and_logs_everything(store):
    summarizer = KeywordSummarizer()
    mw = middleware(store, llm=summarizer)
    model = ToolAgentModel()
    agent = agent_with(mw, model, InMemorySaver())
    for i in range(60):
        state = agent.invoke({"messages": [HumanMessage(question(i))]}, thread("t-1"))
        assert state["messages"][-1].text.startswith(f"Found it. Item Alpha-{i} ")
    assert len(mw.all_messages("t-1")) == 240  # the log keeps everything
    assert len(state["messages"]) < 40  # the state: the memory's window only
    assert len(model.requests) == 120  # one tool round trip per invocation
    for n, request in enumerate(model.requests):
        check_request(request)
        # The newest message of the thread is always sent, last.
        newest = request[-1]
        if n % 2 == 0:
            assert isinstance(newest, HumanMessage) and newest.text == question(n // 2)
        else:
            assert isinstance(newest, ToolMessage) and f"Alpha-{n // 2} " in newest.text
    check_log_is_the_state(mw, "t-1", state)
    # Folds happened, the model was sent the summary, and the full history would not fit.
    assert summarizer.calls > 5
    late = model.requests[-1]
    assert is_summary_message(late[1]) and "Summary of the earlier conversation" in late[1].text
    latest = mw.get_memory("t-1").get_summary()
    assert latest is not None and late[1].response_metadata["lrm_version"] == latest.version
    assert latest.text in late[1].text
    full = COUNTER.count_turns([message_to_turn(m) for m in mw.all_messages("t-1")])
    assert full > 8 * BUDGET


async def test_ainvoke_keeps_the_same_guarantees(store):
    summarizer = KeywordSummarizer()
    mw = middleware(store, llm=summarizer)
    model = ToolAgentModel()
    agent = agent_with(mw, model, InMemorySaver())
    for i in range(30):
        state = await agent.ainvoke({"messages": [HumanMessage(question(i))]}, thread("t-a"))
        assert state["messages"][-1].text.startswith(f"Found it. Item Alpha-{i} ")
    assert len(model.requests) == 60
    for request in model.requests:
        check_request(request)
    check_log_is_the_state(mw, "t-a", state)
    assert summarizer.calls > 2
    assert is_summary_message(model.requests[-1][1])


def test_without_a_checkpointer_the_middleware_is_the_memory(store):
    mw = middleware(store, session_id="user-7", llm=KeywordSummarizer())
    model = ToolAgentModel()
    agent = agent_with(mw, model)  # no checkpointer: each state holds one run only
    runs = [agent.invoke({"messages": [HumanMessage(question(i, "Gamma"))]}) for i in range(20)]
    assert all(len(r["messages"]) == 4 for r in runs)
    # The second run's model call still sees the first run's exchange.
    second = model.requests[2]
    assert [m.text for m in second[1:3]] == [question(0, "Gamma"), ""]
    for request in model.requests:
        check_request(request)
    logged = [t.id for t in mw.get_memory("user-7").turns()]
    assert logged == [m.id for r in runs for m in r["messages"]]  # every run, once, in order
    assert is_summary_message(model.requests[-1][1])


# -- sessions -----------------------------------------------------------------------------------


def test_two_threads_never_see_each_other(store):
    mw = middleware(store, llm=KeywordSummarizer())
    model = ToolAgentModel()
    agent = agent_with(mw, model, InMemorySaver())
    for i in range(20):
        agent.invoke({"messages": [HumanMessage(question(i, "Alpha"))]}, thread("a"))
        agent.invoke({"messages": [HumanMessage(question(i, "Beta"))]}, thread("b"))
    seen = {"Alpha": 0, "Beta": 0}
    for request in model.requests:
        check_request(request)
        human = next(m for m in reversed(request) if isinstance(m, HumanMessage))
        mine = "Alpha" if "Alpha" in human.text else "Beta"
        other = "Beta" if mine == "Alpha" else "Alpha"
        seen[mine] += 1
        assert not any(other in m.text for m in request), (mine, [m.text for m in request])
        if seen[mine] > 20:  # late requests carry the thread's own summary
            assert is_summary_message(request[1]) and mine in request[1].text
    assert seen == {"Alpha": 40, "Beta": 40}
    for tid, other in (("a", "Beta"), ("b", "Alpha")):
        texts = [t.turn.text for t in mw.get_memory(tid).turns()]
        assert len(texts) == 80 and not any(other in t for t in texts)


def test_a_thread_without_an_id_is_refused_with_a_clear_error(store):
    agent = agent_with(middleware(store), ToolAgentModel())
    with pytest.raises(ConfigurationError, match="thread_id"):
        agent.invoke({"messages": [HumanMessage("hello")]})


def test_a_session_function_maps_threads_to_one_user_memory(store):
    mw = middleware(store, session_id=lambda config, runtime: config["configurable"]["user"])
    model = ToolAgentModel()
    agent = agent_with(mw, model, InMemorySaver())
    cfg = {"configurable": {"thread_id": "first", "user": "ada"}}
    agent.invoke({"messages": [HumanMessage("My cat is called Pixel.")]}, cfg)
    cfg = {"configurable": {"thread_id": "second", "user": "ada"}}
    agent.invoke({"messages": [HumanMessage("What is my cat called?")]}, cfg)
    assert "My cat is called Pixel." in [m.text for m in model.requests[-1]]
    assert len(mw.get_memory("ada").turns()) == 4


# -- recall -------------------------------------------------------------------------------------


@pytest.mark.parametrize("recall", [True, False])
def test_recalled_facts_reach_the_model_when_recall_is_on(store, recall):
    summarizer = FactModel()
    mw = middleware(
        store,
        llm=summarizer,
        extract_facts=True,
        max_tokens=800,
        recall_tokens=None if recall else 0,  # None: a quarter of max_tokens with facts
    )
    model = ToolAgentModel()
    agent = agent_with(mw, model, InMemorySaver())
    agent.invoke(
        {"messages": [HumanMessage("Please remember: my locker code is 4471.")]}, thread("r")
    )
    for i in range(30):
        agent.invoke({"messages": [HumanMessage(question(i))]}, thread("r"))
    agent.invoke({"messages": [HumanMessage("What is my locker code?")]}, thread("r"))
    last = model.requests[-1]
    check_request(last, 800)
    assert not any("4471" in m.text for m in last[2:])  # long gone from the window
    head = last[1]
    assert is_summary_message(head)
    assert "4471" not in head.text.split("<memories>")[0]  # nor in the (forgetful) summary
    if recall:
        assert "<memories>" in head.text and "4471" in head.text.split("<memories>")[1]
        assert any(f.key == "user/locker_code" for f in mw.get_memory("r").facts())
    else:
        assert "4471" not in head.text


# -- failures -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["raise", "empty"])
def test_a_failing_summarizer_never_breaks_the_agent(store, mode, caplog):
    summarizer = FailingModel(mode)
    mw = middleware(store, llm=summarizer)
    model = ToolAgentModel()
    agent = agent_with(mw, model, InMemorySaver())
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        for i in range(25):
            state = agent.invoke({"messages": [HumanMessage(question(i))]}, thread("f"))
            assert state["messages"][-1].text.startswith(f"Found it. Item Alpha-{i} ")
    assert summarizer.failed_calls > 5
    assert "fold failed" in caplog.text
    for request in model.requests:
        check_request(request)  # the budget holds while nothing can be folded
        assert not any(is_summary_message(m) for m in request)  # no failure written in
    memory = mw.get_memory("f")
    assert memory.get_summary() is None and memory.context().hidden > 0
    check_log_is_the_state(mw, "f", state)
    # The summarizer comes back: the next calls fold the backlog and show a summary.
    summarizer.failing = False
    for i in range(25, 28):
        state = agent.invoke({"messages": [HumanMessage(question(i))]}, thread("f"))
    check_request(model.requests[-1])
    assert is_summary_message(model.requests[-1][1])
    assert memory.get_summary() is not None
    check_log_is_the_state(mw, "f", state)


def test_a_failing_store_falls_back_within_budget_and_catches_up(store, monkeypatch, caplog):
    mw = middleware(store, llm=KeywordSummarizer())
    model = ToolAgentModel()
    agent = agent_with(mw, model, InMemorySaver())
    for i in range(10):
        agent.invoke({"messages": [HumanMessage(question(i))]}, thread("s"))

    def down(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("Chroma is down (scripted)")

    monkeypatch.setattr(SessionTurns, "append", down)
    monkeypatch.setattr(SessionSummaries, "load", down)
    before = len(model.requests)
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        for i in range(10, 15):
            state = agent.invoke({"messages": [HumanMessage(question(i))]}, thread("s"))
            assert state["messages"][-1].text.startswith(f"Found it. Item Alpha-{i} ")
    assert "memory store failed" in caplog.text
    for request in model.requests[before:]:
        check_request(request)
        assert not is_summary_message(request[1])  # the fallback: newest messages that fit
    monkeypatch.undo()
    state = agent.invoke({"messages": [HumanMessage(question(15))]}, thread("s"))
    check_request(model.requests[-1])
    check_log_is_the_state(mw, "s", state)  # the missed messages were stored, in order


# -- the summarizer as a LangChain model, streaming ---------------------------------------------


async def test_a_langchain_summarizer_works_and_its_tokens_are_not_streamed(store):
    summarizer = GenericFakeChatModel(
        messages=itertools.cycle([AIMessage("SUMMARYTOKEN the user looked up many items.")])
    )
    mw = middleware(store, llm=summarizer)
    agent = agent_with(mw, ToolAgentModel(), InMemorySaver())
    streamed: list[str] = []
    for i in range(15):  # async: the summarizer runs in the agent's callback context
        async for chunk, _meta in agent.astream(
            {"messages": [HumanMessage(question(i))]}, thread("as"), stream_mode="messages"
        ):
            streamed.append(chunk.text)
    for i in range(15):
        for chunk, _meta in agent.stream(
            {"messages": [HumanMessage(question(i))]}, thread("ss"), stream_mode="messages"
        ):
            streamed.append(chunk.text)
    for session in ("as", "ss"):
        summary = mw.get_memory(session).get_summary()
        assert summary is not None and "SUMMARYTOKEN" in summary.text
    assert any("Found it." in text for text in streamed)
    assert not any("SUMMARYTOKEN" in text for text in streamed)


# -- ids, restarts, system messages, invalid tool calls -----------------------------------------


def test_a_restart_with_the_same_checkpointer_stores_nothing_twice(store):
    saver = InMemorySaver()
    first = middleware(store, llm=KeywordSummarizer())
    for i in range(5):
        agent_with(first, ToolAgentModel(), saver).invoke(
            {"messages": [HumanMessage(question(i))]}, thread("r")
        )
    second = middleware(store, llm=KeywordSummarizer())  # a new process: nothing cached
    agent = agent_with(second, ToolAgentModel(), saver)
    for i in range(5, 8):
        state = agent.invoke({"messages": [HumanMessage(question(i))]}, thread("r"))
    check_log_is_the_state(second, "r", state)


def test_a_message_sent_again_with_its_id_is_stored_once(store):
    mw = middleware(store, session_id="u")
    agent = agent_with(mw, ToolAgentModel())
    for _ in range(3):
        agent.invoke({"messages": [HumanMessage("Good morning!", id="greeting-1")]})
    texts = [t.turn.text for t in mw.get_memory("u").turns()]
    assert texts.count("Good morning!") == 1 and len(texts) == 4  # + three answers


def test_system_messages_of_the_state_join_the_one_first_system_message(store):
    mw = middleware(store, llm=KeywordSummarizer())
    model = ToolAgentModel()
    agent = agent_with(mw, model, InMemorySaver())
    agent.invoke(
        {"messages": [SystemMessage("Answer in French."), HumanMessage(question(0))]},
        thread("sys"),
    )
    for i in range(1, 20):
        agent.invoke({"messages": [HumanMessage(question(i))]}, thread("sys"))
    for request in model.requests:
        check_request(request)
        assert request[0].text == f"{SYSTEM}\n\nAnswer in French."
    assert is_summary_message(model.requests[-1][1])  # folded, yet still instructed


def test_a_system_summary_role_is_refused(store):
    with pytest.raises(ConfigurationError, match="summary_role"):
        middleware(store, summary_role="system")
    memory = RecursiveMemory("m", store=store, summary_role="system")
    with pytest.raises(ConfigurationError, match="summary_role"):
        RecursiveMemoryMiddleware(memory=memory)


class BrokenCallModel(ToolAgentModel):
    """Answers "broken" with an invalid tool call (malformed arguments), once."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        last = messages[-1]
        if isinstance(last, HumanMessage) and last.text == "broken":
            self.requests.append(list(messages))
            bad = {"name": "lookup", "args": "{oops", "id": "bad-1", "error": "bad json"}
            answer = AIMessage("", invalid_tool_calls=[{**bad, "type": "invalid_tool_call"}])
            return ChatResult(generations=[ChatGeneration(message=answer)])
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.mark.parametrize("checkpointer", [True, False])
def test_an_invalid_tool_call_is_always_answered_in_the_request(store, checkpointer):
    mw = middleware(store, session_id="inv", llm=KeywordSummarizer())
    model = BrokenCallModel()
    agent = agent_with(mw, model, InMemorySaver() if checkpointer else None)
    cfg = thread("inv")
    agent.invoke({"messages": [HumanMessage("broken")]}, cfg)
    for i in range(3):
        agent.invoke({"messages": [HumanMessage(question(i))]}, cfg)
    for request in model.requests[1:]:
        check_request(request)
        at = next(i for i, m in enumerate(request) if getattr(m, "invalid_tool_calls", None))
        answer = request[at + 1]
        assert isinstance(answer, ToolMessage) and answer.tool_call_id == "bad-1"
    logged = [t.turn for t in mw.get_memory("inv").turns()]
    assert len({t.id for t in logged}) == len(logged)
    if checkpointer:  # create_agent's answer is logged right after the call
        at = next(i for i, t in enumerate(logged) if t.extra.get("invalid_tool_calls"))
        assert logged[at + 1].tool_call_id == "bad-1"


def test_a_ready_memory_or_a_memory_function_can_be_given(store):
    from langchain_recursive_memory.core import HybridMemory

    ready = HybridMemory("fixed", store=store, model=FactModel(), max_tokens=800, retry=FAST)
    model = ToolAgentModel()
    agent = agent_with(RecursiveMemoryMiddleware(memory=ready), model)
    agent.invoke({"messages": [HumanMessage(question(0))]}, thread("ignored"))
    assert len(ready.turns()) == 4  # the memory's own session, not the thread
    built: list[str] = []

    def make(session_id: str) -> RecursiveMemory:
        built.append(session_id)
        return RecursiveMemory(session_id, store=store, max_tokens=BUDGET)

    mw = RecursiveMemoryMiddleware(memory=make)
    agent = agent_with(mw, model, InMemorySaver())
    for tid in ("x", "y", "x"):
        agent.invoke({"messages": [HumanMessage(question(1))]}, thread(tid))
    assert built == ["x", "y"] and len(mw.get_memory("x").turns()) == 8
    with pytest.raises(ConfigurationError, match="llm or model"):
        RecursiveMemoryMiddleware(store=store, llm=KeywordSummarizer(), model=KeywordSummarizer())
    with pytest.raises(ConfigurationError, match="session"):
        RecursiveMemoryMiddleware("other", memory=ready)


def test_a_message_larger_than_the_budget_is_sent_cut_and_is_reported(store, caplog):
    mw = middleware(store, session_id="big", max_tokens=300, max_summary_tokens=60)
    model = ToolAgentModel()
    agent = agent_with(mw, model)
    huge = "Please read this long note. " + "word " * 600
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        agent.invoke({"messages": [HumanMessage(huge)]})
    check_request(model.requests[-1], 300)  # the budget wins, and it is said
    assert "does not fit max_tokens=300 and is sent cut" in caplog.text
    sent = [m for m in model.requests[0] if isinstance(m, HumanMessage)]
    assert sent and sent[-1].text.startswith("Please read this long note.")
    assert "more tokens not shown" in sent[-1].text
    assert mw.get_memory("big").turns()[0].turn.text == huge  # logged whole
