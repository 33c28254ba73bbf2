"""A long conversation costs what a short one does per turn (issues 20 and 33).

The requests of an ``add`` and of the read that follows it (what a live chat does) are
counted, database statements and Chroma calls alike, and so are the turns they read:
they must not grow with the session, for every engine, with and without an embedder,
and a user's other sessions must not cost a request each. A turn written by another
process is seen by the next read (SQLite, and PostgreSQL with a Chroma server, both
engines). Timings are measured in ``benchmarks/exchange.py``, not here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import FAST, T0, Requests
from fakes import BagOfWordsEmbedder

from langchain_recursive_memory.core import (
    HiGMem,
    HybridMemory,
    MemoryStore,
    RecursiveMemory,
    Turn,
)

TOPICS = ["garden", "violin", "budget", "Lisbon", "marathon", "recipes", "museum", "invoice"]
EXCHANGES = 8


def exchange(i: int) -> list[Turn]:
    topic, other = TOPICS[i % len(TOPICS)], TOPICS[(i * 3 + 1) % len(TOPICS)]
    return [
        Turn(role="user", name="Ada", text=f"Round {i}: my {topic} plans changed again.",
             created_at=T0 + i * 300),
        Turn(role="assistant", name="Bot", text=f"Noted about {topic}; and the {other}?",
             created_at=T0 + i * 300 + 5),
    ]  # fmt: skip


def counting(store: MemoryStore) -> Requests:
    """Count the store's requests (statements and Chroma calls) from now on."""
    return Requests(store)


Engine = RecursiveMemory | HiGMem


def make(kind: str, store: MemoryStore, embedder: Any, sid: str = "s", **kw: Any) -> Engine:
    if kind == "higmem":
        return HiGMem(sid, store=store, embedder=embedder, retry=FAST, **kw)
    cls = HybridMemory if kind == "hybrid" else RecursiveMemory
    return cls(sid, store=store, embedder=embedder, retry=FAST, max_tokens=1500, **kw)


def read(memory: Engine, i: int, **kw: Any) -> object:
    question = f"What changed about the {TOPICS[i % len(TOPICS)]} plans?"
    if isinstance(memory, HiGMem):
        return memory.retrieve(question, k=8, **kw)
    if isinstance(memory, HybridMemory):
        return memory.context(question)
    return memory.context()


def live_calls(kind: str, turns: int, embedder: Any) -> tuple[int, int]:
    """The most Chroma calls of an add and of a read, over live exchanges at ``turns``."""
    store = MemoryStore.in_memory()
    memory = make(kind, store, embedder)
    done = 0
    while done < turns:
        memory.add([t for i in range(done // 2, done // 2 + 50) for t in exchange(i)])
        done += 100
    read(memory, 0)  # this process has now seen the session
    calls = counting(store)
    most_add = most_read = rows = 0
    for i in range(done // 2, done // 2 + EXCHANGES):
        calls.clear()
        memory.add(exchange(i))
        most_add = max(most_add, calls.total())
        calls.clear()
        read(memory, i)
        most_read = max(most_read, calls.total())
        rows = max(rows, calls.rows)
    calls.close()
    return most_add, most_read, rows


@pytest.mark.slow
@pytest.mark.parametrize("embedded", [False, True], ids=["lexical", "dense"])
@pytest.mark.parametrize("kind", ["recursive", "hybrid", "higmem"])
def test_calls_of_an_add_and_a_read_do_not_grow_with_the_session(kind: str, embedded: bool):
    embedder = BagOfWordsEmbedder() if embedded else None
    short = live_calls(kind, 100, embedder)
    long = live_calls(kind, 2000, embedder)
    assert long[0] <= short[0], f"add: {short[0]} requests at 100 turns, {long[0]} at 2,000"
    assert long[1] <= short[1], f"read: {short[1]} requests at 100 turns, {long[1]} at 2,000"
    assert long[2] <= short[2], f"read: {short[2]} turns read at 100 turns, {long[2]} at 2,000"


def user_read_calls(kind: str, sessions: int) -> int:
    """Chroma calls of a user-scope read over ``sessions`` sessions of one user."""
    store = MemoryStore.in_memory()
    for n in range(sessions):
        memory = make(kind, store, None, f"s{n}", user_id="ada")
        memory.add([t for i in range(30) for t in exchange(i + n)])
    memory = make(kind, store, None, "now", user_id="ada", **(
        {} if kind == "higmem" else {"recall_scope": "user"}
    ))  # fmt: skip
    memory.add(exchange(0))
    read(memory, 1, **({"scope": "user"} if kind == "higmem" else {}))  # seen once
    calls = counting(store)
    read(memory, 2, **({"scope": "user"} if kind == "higmem" else {}))
    calls.close()
    return calls.total()


@pytest.mark.parametrize("kind", ["hybrid", "higmem"])
def test_a_user_scope_read_costs_no_call_per_session(kind: str):
    assert user_read_calls(kind, 12) <= user_read_calls(kind, 2)


WRITER = """
import sys
from langchain_recursive_memory.core import HiGMem, HybridMemory, MemoryStore, Turn
kind, sid = sys.argv[1], sys.argv[2]
if len(sys.argv) > 4:
    store = MemoryStore.http(
        sys.argv[3], int(sys.argv[4]), prefix=sys.argv[5], database=sys.argv[6]
    )
else:
    store = MemoryStore.persistent(sys.argv[3])
if kind == "higmem":
    memory = HiGMem(sid, store=store)
else:
    memory = HybridMemory(sid, store=store, max_tokens=600, max_summary_tokens=80)
memory.add(Turn(role="user", text="My violin teacher is called Ingrid Halvorsen."))
for i in range(30):
    memory.add(Turn(role="user", text=f"More small talk, number {i}."))
"""


def seen_after_another_process_writes(kind: str, store: MemoryStore, argv: list[str]) -> None:
    sid = f"shared-{kind}"
    if kind == "higmem":
        memory: Engine = HiGMem(sid, store=store)
    else:
        memory = HybridMemory(sid, store=store, max_tokens=600, max_summary_tokens=80)
    for i in range(40):
        memory.add(Turn(role="user", text=f"Small talk about the weather, number {i}."))

    def found() -> list[str]:
        if isinstance(memory, HiGMem):
            return [r.turn.text for r in memory.retrieve("violin teacher", k=3)]
        return [h.text for h in memory.recall("violin teacher", k=3, kinds=("turn",))]

    assert not any("Ingrid" in text for text in found())  # this process has read it
    subprocess.run([sys.executable, "-c", WRITER, kind, sid, *argv], check=True, timeout=300)
    assert "My violin teacher is called Ingrid Halvorsen." in found()


@pytest.mark.parametrize("kind", ["hybrid", "higmem"])
def test_a_turn_written_by_another_process_is_seen_by_the_next_read(kind: str, tmp_path: Path):
    store = MemoryStore.persistent(tmp_path)
    seen_after_another_process_writes(kind, store, [str(tmp_path)])


@pytest.mark.server
@pytest.mark.parametrize("kind", ["hybrid", "higmem"])
def test_a_turn_written_by_another_process_is_seen_over_a_server(
    kind: str, server_store: MemoryStore, chroma_server: tuple[str, int], pg_url: str
):
    host, port = chroma_server
    argv = [host, str(port), server_store.prefix, pg_url]
    seen_after_another_process_writes(kind, server_store, argv)
