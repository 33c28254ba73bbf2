"""The middleware keeps an agent thread's state bounded (issue 34).

Every message is in the memory's log, so the thread's state need hold only what the model
still needs verbatim: the memory's window. At the end of each run the messages the memory
folded leave the state (``RemoveMessage``); the log keeps them
(``RecursiveMemoryMiddleware.all_messages``). Tool calls stay with their results; a thread
resumed from its checkpoint in a new process goes on as if nothing happened;
``trim_state=False`` keeps every message in the state.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from fakes import KeywordSummarizer
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from test_middleware import (
    ToolAgentModel,
    agent_with,
    check_log_is_the_state,
    check_request,
    middleware,
    question,
    thread,
)

from langchain_recursive_memory.core import MemoryStore


def check_state(messages: list) -> None:
    """No tool result without its call before it, no call without its results after it."""
    for i, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            calls = [
                c["id"] for m in messages[:i] if isinstance(m, AIMessage) for c in m.tool_calls
            ]
            assert message.tool_call_id in calls, f"orphan tool result at {i}"
        if isinstance(message, AIMessage) and message.tool_calls:
            answered = {m.tool_call_id for m in messages[i + 1 :] if isinstance(m, ToolMessage)}
            assert {c["id"] for c in message.tool_calls} <= answered, f"unanswered call at {i}"


def test_a_long_thread_keeps_a_bounded_state_and_logs_everything(store):
    mw = middleware(store, llm=KeywordSummarizer())
    model = ToolAgentModel()
    agent = agent_with(mw, model, InMemorySaver())
    sizes = []
    for i in range(80):
        state = agent.invoke({"messages": [HumanMessage(question(i))]}, thread("t-1"))
        assert state["messages"][-1].text.startswith(f"Found it. Item Alpha-{i} ")
        sizes.append(len(agent.get_state(thread("t-1")).values["messages"]))
        check_state(agent.get_state(thread("t-1")).values["messages"])
    assert len(mw.all_messages("t-1")) == 320  # 4 messages a run, every one logged once
    assert max(sizes[40:]) <= max(sizes[:40]) + 4  # flat: the window, not the thread
    assert max(sizes) < 40
    check_log_is_the_state(mw, "t-1", agent.get_state(thread("t-1")).values)
    for request in model.requests:
        check_request(request)
    # What left the state is what the memory folded: the summary holds it.
    assert mw.get_memory("t-1").get_summary() is not None


async def test_the_async_path_trims_the_same(store):
    mw = middleware(store, llm=KeywordSummarizer())
    agent = agent_with(mw, ToolAgentModel(), InMemorySaver())
    for i in range(40):
        await agent.ainvoke({"messages": [HumanMessage(question(i))]}, thread("t-a"))
    state = (await agent.aget_state(thread("t-a"))).values
    assert len(state["messages"]) < 40 and len(mw.all_messages("t-a")) == 160
    check_state(state["messages"])
    check_log_is_the_state(mw, "t-a", state)


def test_trim_state_false_keeps_every_message_in_the_state(store):
    mw = middleware(store, llm=KeywordSummarizer(), trim_state=False)
    agent = agent_with(mw, ToolAgentModel(), InMemorySaver())
    for i in range(30):
        state = agent.invoke({"messages": [HumanMessage(question(i))]}, thread("t-k"))
    assert len(state["messages"]) == 120 == len(mw.all_messages("t-k"))
    check_log_is_the_state(mw, "t-k", state)


RESUME = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[3])
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from fakes import KeywordSummarizer
    from test_middleware import ToolAgentModel, agent_with, middleware, question, thread
    from langchain_recursive_memory.core import MemoryStore

    first, count = int(sys.argv[4]), int(sys.argv[5])
    with SqliteSaver.from_conn_string(sys.argv[2]) as saver:
        mw = middleware(MemoryStore.persistent(sys.argv[1]), llm=KeywordSummarizer())
        model = ToolAgentModel()
        agent = agent_with(mw, model, saver)
        for i in range(first, first + count):
            state = agent.invoke({"messages": [HumanMessage(question(i))]}, thread("t-r"))
        print(json.dumps({
            "state": [m.id for m in state["messages"]],
            "log": [m.id for m in mw.all_messages("t-r")],
            "summary": [r[1].text for r in model.requests[-1:]],
        }))
    """
)


def test_a_thread_resumed_from_its_checkpoint_in_a_new_process_goes_on(tmp_path):
    """Two processes, one after the other, on one SQLite checkpointer and one store."""
    import json

    tests = str(Path(__file__).parent)
    args = [str(tmp_path / "store"), str(tmp_path / "checkpoints.sqlite"), tests]

    def run(first: int, count: int) -> dict:
        out = subprocess.run(
            [sys.executable, "-c", RESUME, *args, str(first), str(count)],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    before = run(0, 25)
    after = run(25, 25)
    assert len(before["log"]) == 100 and len(after["log"]) == 200
    assert after["log"][:100] == before["log"]  # nothing stored twice, nothing lost
    assert len(after["state"]) < 40
    assert after["log"][-len(after["state"]) :] == after["state"]
    assert "Summary of the earlier conversation" in after["summary"][0]
    store = MemoryStore.persistent(tmp_path / "store")
    assert [t.id for t in store.turns("default", "t-r")] == after["log"]
