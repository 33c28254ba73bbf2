"""Names that say what a thing is (issue 23): one name per idea, the older names gone.

* no method or function of the library is called just ``steps``: an operation written as
  steps is named ``<verb>_steps``;
* "scope" names one idea, where recall reads from (``"session"``/``"user"``): no class of
  the library is named ``*Scope``; an engine's session is a ``SessionRef``;
* one name for a HiGMem turn node (``TurnNode``); ``FoldRunner``, not ``Folder``;
* ``get_summary()`` is the latest ``Summary`` on every engine and adapter.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.core import (
    HiGMem,
    MemoryStore,
    RecursiveMemory,
    Turn,
    TurnNode,
)
from langchain_recursive_memory.core.session import SessionRef
from llamaindex_higmem import RecursiveSummaryMemory

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("langchain_recursive_memory", "llamaindex_higmem")


def _definitions() -> list[tuple[str, ast.AST]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            rel = str(path.relative_to(ROOT))
            found += [
                (rel, n)
                for n in ast.walk(tree)
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            ]
    return found


def test_no_operation_is_named_just_steps():
    bare = [f"{rel}:{n.lineno}" for rel, n in _definitions() if getattr(n, "name", "") == "steps"]
    assert bare == []


def test_scope_names_one_idea_and_old_class_names_are_gone():
    classes = {n.name: rel for rel, n in _definitions() if isinstance(n, ast.ClassDef)}
    assert [c for c in classes if c.endswith("Scope")] == []
    assert "Folder" not in classes and "TurnNote" not in classes
    assert {"FoldRunner", "TurnNode", "SessionRef", "SessionOwner", "UserOwner"} <= set(classes)


def test_the_new_names_work_and_the_0_1_0_ones_are_gone():
    store = MemoryStore.in_memory()
    memory = RecursiveMemory("names", store=store, max_tokens=300)
    for i in range(30):
        memory.add([Turn(role="user", text=f"Message {i} about the orchard and its pears.")])
    with pytest.raises(ImportError):  # 0.1.0's name, deprecated by 0.2.0, removed in 0.3.0
        from langchain_recursive_memory.core import TurnNote  # noqa: F401
    assert memory.get_summary() is not None and not hasattr(memory, "summary")
    assert isinstance(memory.session, SessionRef) and not hasattr(memory, "scope")  # unshipped
    graph = HiGMem("names-hg", store=store)
    graph.add([Turn(role="user", text="Ada booked the Lisbon trip.")])
    graph.flush()
    nodes = graph.turn_nodes()
    assert nodes != [] and all(isinstance(n, TurnNode) for n in nodes)
    assert not hasattr(graph, "notes")


@pytest.mark.asyncio
async def test_get_summary_is_the_record_everywhere_and_summary_its_text():
    store = MemoryStore.in_memory()
    history = RecursiveSummaryChatMessageHistory("lc", store=store, max_tokens=300)
    llama = RecursiveSummaryMemory.from_defaults(session_id="li", store=store, token_limit=300)
    for i in range(30):
        history.add_user_message(f"Message {i} about the orchard and its pears.")
        llama.put_messages(llama_messages(i))
    for adapter in (history, llama):
        record = adapter.get_summary()
        assert record is not None and adapter.summary == record.text
        assert await adapter.aget_summary() == record
    engine = history.memory
    assert await engine.aget_summary() == engine.get_summary() is not None
    assert not hasattr(engine, "asummary")


def llama_messages(i: int) -> list:
    from llama_index.core.llms import ChatMessage

    return [ChatMessage(role="user", content=f"Message {i} about the orchard and its pears.")]
