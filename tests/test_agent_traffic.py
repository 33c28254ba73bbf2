"""Real agent traffic: every request the model gets is valid, answerable and within budget.

Large and parallel tool results, tool-calling messages split by provider, the system
prompt and tool schemas inside ``max_tokens``, exact counts of reasoning blocks. The long
test runs a scripted tool-calling model through ``create_agent`` for 50+ steps with tool
results from 10 to 60,000 tokens and checks what the model received at every step.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from conftest import COUNTER, FAST, thread
from fakes import KeywordSummarizer
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from langchain_recursive_memory.core import (
    MemoryStore,
    RecursiveMemory,
    TokenCounter,
    ToolCall,
    Turn,
)
from langchain_recursive_memory.messages import message_to_turn
from langchain_recursive_memory.middleware import RecursiveMemoryMiddleware

SYSTEM = "You are a research agent. " + "Follow the house rules carefully. " * 40


def words(n: int, tag: str = "data") -> str:
    """About ``n`` tokens of text."""
    return " ".join(f"{tag}{i % 97}" for i in range(n))


def memory(store: MemoryStore, **kw: Any) -> RecursiveMemory:
    kw.setdefault("max_tokens", 2000)
    return RecursiveMemory("s", store=store, retry=FAST, **kw)


def call(name: str, call_id: str, **args: Any) -> ToolCall:
    return ToolCall(name, args, call_id)


def assert_valid(turns: list[Turn]) -> None:
    """Every tool result follows the messages that called it; every call is answered."""
    open_calls: set[str] = set()
    answered: set[str] = set()
    calls: set[str] = set()
    for turn in turns:
        if turn.role == "tool":
            assert turn.tool_call_id in open_calls, f"orphan result {turn.tool_call_id}"
            answered.add(turn.tool_call_id)
        elif turn.role == "assistant" and turn.tool_calls:
            ids = {c.id for c in turn.tool_calls if c.id}
            open_calls |= ids
            calls |= ids
        else:
            assert calls <= answered, f"unanswered calls {calls - answered}"
            open_calls = set()
    assert calls <= answered, f"unanswered calls {calls - answered}"


# -- the core: one context builder ---------------------------------------------------------


def test_a_tool_result_larger_than_the_budget_is_shown_cut_with_the_question(store):
    mem = memory(store)
    question = Turn(role="user", text="What does the status page say about the outage?")
    page = words(2400, "page")
    mem.add(question)
    mem.add(Turn(role="assistant", tool_calls=(call("fetch", "c1", url="status"),)))
    mem.add(Turn(role="tool", text=page, tool_call_id="c1", name="fetch"))
    ctx = mem.context()
    shown = ctx.window
    assert ctx.tokens <= 2000
    assert [t.role for t in shown] == ["user", "assistant", "tool"]
    assert shown[0].text == question.text  # the question is never folded away unseen
    assert shown[2].tool_call_id == "c1" and shown[2].text.endswith("more tokens not shown]")
    assert shown[2].extra["lrm_cut"] > 0
    assert mem.turns()[-1].turn.text == page  # the log keeps it whole


def test_parallel_results_that_overflow_together_are_all_shown_cut(store):
    mem = memory(store)
    mem.add(Turn(role="user", text="Compare the two reports."))
    calls = (call("read", "a", doc="A"), call("read", "b", doc="B"), call("read", "c", doc="C"))
    mem.add(Turn(role="assistant", tool_calls=calls))
    sizes = {"a": 1500, "b": 900, "c": 40}
    mem.add([Turn(role="tool", text=words(n, k), tool_call_id=k) for k, n in sizes.items()])
    ctx = mem.context()
    assert ctx.tokens <= 2000
    assert_valid(list(ctx.window))
    results = {t.tool_call_id: t for t in ctx.window if t.role == "tool"}
    assert set(results) == {"a", "b", "c"}
    assert "lrm_cut" in results["a"].extra  # the largest first
    assert results["c"].text == words(40, "c")  # a small one is left whole


def test_interleaved_parallel_calls_keep_every_result(store):
    mem = memory(store)
    turns = [
        Turn(role="user", text="Weather in Oslo and Lima?"),
        Turn(role="assistant", tool_calls=(call("weather", "a", city="Oslo"),)),
        Turn(role="assistant", tool_calls=(call("weather", "b", city="Lima"),)),
        Turn(role="tool", text="Oslo: 4 C", tool_call_id="a"),
        Turn(role="tool", text="Lima: 19 C", tool_call_id="b"),
    ]
    mem.add(turns)
    shown = list(mem.context().window)
    assert [t.text for t in shown if t.role == "tool"] == ["Oslo: 4 C", "Lima: 19 C"]
    assert len(shown) == 5
    assert_valid(shown)


def test_a_fold_shows_the_current_question_and_never_takes_what_was_not_seen(store):
    mem = memory(store, max_tokens=1200, max_summary_tokens=100)
    mem.add([Turn(role="user", text=f"Earlier chat {i}: " + words(40)) for i in range(6)])
    question = Turn(role="user", text="Please read the long report and summarise it.")
    mem.add(question)
    for i in range(6):  # an agent loop: call, big result, call, big result...
        mem.add(Turn(role="assistant", tool_calls=(call("read", f"r{i}", page=i),)))
        mem.add(Turn(role="tool", text=words(500, f"p{i}"), tool_call_id=f"r{i}"))
        ctx = mem.context()
        assert ctx.tokens <= 1200
        assert ctx.window[0].text == question.text
        assert ctx.window[-1].tool_call_id == f"r{i}"  # the newest result is shown
        assert_valid(list(ctx.window))
    log = mem.turns()
    folded = [t.id for t in log if t.folded_in]
    assert folded == [t.id for t in log[: len(folded)]]  # in log order, the question too
    assert log[6].folded_in and not log[-1].folded_in  # shown verbatim while current


def test_a_pasted_document_as_the_question_is_shown_cut(store):
    mem = memory(store, max_tokens=500, max_summary_tokens=60)
    mem.add(Turn(role="user", text="Summarise: " + words(3000)))
    ctx = mem.context()
    assert ctx.tokens <= 500 and ctx.window[0].text.startswith("Summarise:")
    assert ctx.window[0].extra["lrm_cut"] > 0


# -- exact token counts ----------------------------------------------------------------------


def test_reasoning_and_long_text_blocks_are_counted_as_text_not_as_media():
    thinking = words(10_000, "thought")
    turn = Turn(
        role="assistant",
        text="The answer is 42.",
        blocks=(
            {"type": "thinking", "thinking": thinking, "signature": "c2lnbmF0dXJl"},
            {"type": "text", "text": "The answer is 42."},
        ),
    )
    exact = COUNTER.count_text(thinking)
    assert exact > 9_000
    assert exact <= COUNTER.count_turn(turn) <= exact + 40
    long_text = Turn(role="tool", text="", blocks=({"type": "text", "text": words(3000)},))
    assert COUNTER.count_turn(long_text) >= 3000
    image = Turn(role="user", blocks=({"type": "image_url", "image_url": {"url": "data:x"}},))
    assert COUNTER.count_turn(image) == COUNTER.count_turn(Turn(role="user")) + 765


def test_tool_schemas_are_counted_like_openai_counts_functions():
    schema = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city."},
                    "unit": {"type": "string", "description": "", "enum": ["c", "f"]},
                },
            },
        },
    }
    text = COUNTER.count_text
    expected = (
        7 + text("get_weather:Get the current weather in a city") + 3
        + 3 + text("city:string:The city")
        + 3 - 3 + 3 + text("c") + 3 + text("f") + text("unit:string:")
        + 12
    )  # fmt: skip
    assert COUNTER.count_tools([schema], as_sent=False) == expected
    assert (
        TokenCounter("gpt-4").count_tools([schema], as_sent=False) == expected + 3
    )  # func_init 10
    assert COUNTER.count_tools([]) == 0


# -- create_agent: 50+ steps ------------------------------------------------------------------

SIZES = [10, 60_000, 300, 2_400, 12_000, 40, 900, 5_000, 25, 1_800]


@tool
def fetch(page: int) -> str:
    """Fetch one page of the research corpus by its number."""
    return words(SIZES[page % len(SIZES)], f"p{page}-")


@tool
def search(query: str, limit: int = 5) -> str:
    """Search the research corpus and return matching snippets with their page numbers."""
    return words(SIZES[(len(query) + limit) % len(SIZES)], "hit")


class ResearchModel(BaseChatModel):
    """Fetches pages (sometimes two in parallel) for ``steps`` steps, then answers."""

    steps: int = 50
    requests: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-research"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ResearchModel:  # type: ignore[override]
        self.tools = [convert_to_openai_tool(t) for t in tools]
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.requests.append({"messages": list(messages), "tools": list(self.tools)})
        step = len(self.requests)
        if step > self.steps:
            answer = AIMessage("Here is my report.")
        elif step % 5 == 0:  # two calls at once
            answer = AIMessage(
                "",
                tool_calls=[
                    {"name": "fetch", "args": {"page": step}, "id": f"c{step}a"},
                    {"name": "search", "args": {"query": f"topic {step}"}, "id": f"c{step}b"},
                ],
            )
        else:
            answer = AIMessage(
                "", tool_calls=[{"name": "fetch", "args": {"page": step}, "id": f"c{step}"}]
            )
        return ChatResult(generations=[ChatGeneration(message=answer)])


def check_agent_request(request: dict[str, Any], question: str, budget: int) -> None:
    messages: list[BaseMessage] = request["messages"]
    assert [i for i, m in enumerate(messages) if isinstance(m, SystemMessage)] == [0]
    body = [message_to_turn(m) for m in messages[1:]]
    total = COUNTER.count_turns([message_to_turn(messages[0]), *body])
    total += COUNTER.count_tools(request["tools"])
    assert total <= budget, f"{total} tokens sent with max_tokens={budget}"
    assert any(t.role == "user" and t.text == question for t in body), "the question is gone"
    assert_valid([t for t in body if t.extra.get("lrm_kind") != "summary"])
    last = messages[-1]
    assert isinstance(last, HumanMessage | ToolMessage)


@pytest.mark.parametrize("summarizer", [None, KeywordSummarizer()], ids=["extractive", "llm"])
def test_fifty_steps_of_tool_calls_keep_every_request_valid_and_within_budget(store, summarizer):
    budget = 4000
    mw = RecursiveMemoryMiddleware(
        store=store, llm=summarizer, max_tokens=budget, max_summary_tokens=300, retry=FAST
    )
    model = ResearchModel(steps=50)
    agent = create_agent(model, tools=[fetch, search], system_prompt=SYSTEM, middleware=[mw])
    question = "Research the outage reports and write me a report on the causes."
    cfg = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:6]}"}, "recursion_limit": 400}
    state = agent.invoke({"messages": [HumanMessage(question)]}, cfg)
    assert state["messages"][-1].text == "Here is my report."
    assert len(model.requests) == 51
    sent = COUNTER.count_turn(message_to_turn(model.requests[0]["messages"][0]))
    assert sent > 200 and COUNTER.count_tools(model.requests[0]["tools"]) > 60
    for request in model.requests:
        check_agent_request(request, question, budget)
    # Every tool result, from 10 to 60,000 tokens, was sent when it was new.
    for n, request in enumerate(model.requests[1:], start=1):
        newest = [m for m in request["messages"] if isinstance(m, ToolMessage)]
        ids = {m.tool_call_id for m in newest}
        expected = {f"c{n}a", f"c{n}b"} if n % 5 == 0 else {f"c{n}"}
        assert expected <= ids, f"step {n}: the new results were not sent"
    logged = [t.turn for t in mw.get_memory(cfg["configurable"]["thread_id"]).turns()]
    sizes = [COUNTER.count_text(t.text) for t in logged if t.role == "tool"]
    assert max(sizes) >= 60_000  # the log keeps every result whole


def test_the_system_prompt_and_tools_can_be_left_out_of_the_budget(store):
    mw = RecursiveMemoryMiddleware(
        store=store, max_tokens=1500, retry=FAST, count_system_and_tools=False
    )
    model = ResearchModel(steps=3)
    agent = create_agent(model, tools=[fetch, search], system_prompt=SYSTEM, middleware=[mw])
    agent.invoke({"messages": [HumanMessage("Go.")]}, thread("x"))
    body = [message_to_turn(m) for m in model.requests[-1]["messages"][1:]]
    assert COUNTER.count_turns(body) <= 1500
    overhead = COUNTER.count_turn(message_to_turn(model.requests[-1]["messages"][0]))
    assert COUNTER.count_turns(body) + overhead > 1500  # they come on top


def test_a_system_prompt_larger_than_the_budget_is_a_clear_error(store):
    from langchain_recursive_memory.core import ConfigurationError

    mw = RecursiveMemoryMiddleware(store=store, max_tokens=600, max_summary_tokens=60)
    agent = create_agent(
        ResearchModel(steps=1), tools=[fetch], system_prompt=SYSTEM * 3, middleware=[mw]
    )
    with pytest.raises(ConfigurationError, match="system prompt and tool schemas take"):
        agent.invoke({"messages": [HumanMessage("Go.")]}, thread("y"))


def test_reserve_tokens_leaves_room_in_the_chat_history(store):
    from langchain_recursive_memory import RecursiveSummaryChatMessageHistory

    plain = RecursiveSummaryChatMessageHistory("a", store=store, max_tokens=800)
    reserved = RecursiveSummaryChatMessageHistory(
        "b", store=store, max_tokens=800, reserve_tokens=300
    )
    for history in (plain, reserved):
        for i in range(40):
            history.add_messages([HumanMessage(f"Note {i}: " + words(30))])
    tokens = [
        COUNTER.count_turns([message_to_turn(m) for m in h.messages]) for h in (plain, reserved)
    ]
    assert tokens[0] > 500 and tokens[1] <= 500
