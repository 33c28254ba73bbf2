"""Every read answers as a fresh process would, whatever happened before (issue 27).

A model-based test (hypothesis ``RuleBasedStateMachine``): rules add, fold, clear,
expire, forget a user, and open a new session for a new or a known user, each through
one of several long-lived store objects over one store (the database of the log and the
Chroma of the facts and vectors; each store object with caches of its own, as separate
processes have). After every step, every read (``recall`` and ``retrieve`` in both
scopes, ``context(q)``, ``turns``, ``facts``, ``events``, the summary,
``store.user_sessions``, ``store.users``, ``store.sessions``) through every long-lived
object (memories made once and kept) equals the same read through a fresh store object.
This is the freshness rule of the store (``core/storage/__init__.py``: every cached value
records the session's head it was built from and catches up with ``seq > last seen``)
checked from the outside.

``test_freshness_model_embedded`` (the default suite, bounded) runs it on an embedded
store: SQLite in the store's folder and a Chroma ``PersistentClient``.
``test_freshness_model_server`` (slow) runs the same machine on PostgreSQL and a real
``chroma run`` server, with a second *process* writing beside the two store objects.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import FAST, NS, T0
from fakes import FactModel
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from langchain_recursive_memory.core import (
    HiGMem,
    HybridMemory,
    MemoryStore,
    RecursiveMemory,
    Turn,
)
from langchain_recursive_memory.core.cache import StoreCaches

KINDS = ("hybrid", "higmem", "recursive")
TOPICS = ("garden", "violin", "Lisbon", "marathon", "invoice", "museum")
QUERIES = ("What is my locker code?", "Where is my home city?", "violin lessons in Lisbon")
EXAMPLES = int(os.environ.get("LRM_FRESHNESS_EXAMPLES", "5"))
STEPS = int(os.environ.get("LRM_FRESHNESS_STEPS", "12"))


def lines(seed: int, count: int) -> list[str]:
    """Turn texts: small talk, now and then a fact the readers look for."""
    out = []
    for i in range(count):
        n = seed * 31 + i
        if n % 5 == 0:
            out.append(f"My locker code is {4400 + n % 97}.")
        elif n % 7 == 0:
            out.append(f"My home city is {TOPICS[n % len(TOPICS)]}ville.")
        else:
            out.append(f"Small talk {n} about the {TOPICS[n % len(TOPICS)]} and violin.")
    return out


def make(kind: str, store: MemoryStore, sid: str, user: str | None) -> Any:
    """A memory of ``kind`` on a session (the same settings whoever makes it)."""
    if kind == "higmem":
        return HiGMem(sid, store=store, user_id=user, retry=FAST)
    scope = "user" if user is not None else "session"
    if kind == "hybrid":
        return HybridMemory(
            sid,
            store=store,
            user_id=user,
            model=FactModel(),
            retry=FAST,
            max_tokens=320,
            max_summary_tokens=60,
            recall_scope=scope,
        )
    return RecursiveMemory(sid, store=store, user_id=user, retry=FAST, max_tokens=320)


def hits(found: list[Any]) -> list[tuple[Any, ...]]:
    return [(h.kind, h.id, h.text, round(h.score, 9), sorted(h.metadata.items())) for h in found]


def retrieved(found: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (r.turn.id, r.turn.text, round(r.score, 9), r.rank, r.event_ids, r.session_id)
        for r in found
    ]


def readers(kind: str, user: str | None) -> dict[str, Callable[[Any], Any]]:
    """Every read of a memory of ``kind``, each giving plain, comparable data."""
    out: dict[str, Callable[[Any], Any]] = {
        "turns": lambda m: [(t.id, t.seq, t.turn.text, t.folded_in) for t in m.turns()]
    }
    scopes = ["session", "user"] if user is not None else ["session"]
    for scope in scopes:
        for q in QUERIES:
            if kind == "higmem":
                out[f"retrieve/{scope}/{q}"] = lambda m, q=q, s=scope: retrieved(
                    m.retrieve(q, k=5, scope=s)
                )
            elif kind == "hybrid":
                out[f"recall/{scope}/{q}"] = lambda m, q=q, s=scope: hits(m.recall(q, k=5, scope=s))
    if kind == "higmem":
        out["events"] = lambda m: [(e.id, e.summary, e.turn_ids) for e in m.events()]
        out["nodes"] = lambda m: [(n.turn_id, n.keywords, n.event_ids) for n in m.turn_nodes()]
        return out
    out["summary"] = lambda m: (s.version, s.text) if (s := m.get_summary()) is not None else None
    out["context"] = lambda m: context_of(m.context(QUERIES[0]))
    if kind == "hybrid":
        out["facts"] = lambda m: [(f.key, f.text, f.session_ids) for f in m.facts()]
    return out


def context_of(context: Any) -> tuple[Any, ...]:
    summary = context.summary_turn.text if context.summary_turn is not None else None
    return ([(t.role, t.text) for t in context.window], summary, context.tokens)


def store_reads(store: MemoryStore, users: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "users": [u.user_id for u in store.users(NS)],
        "sessions": [(s.session_id, s.user_id) for s in store.sessions(NS)],
    }
    for user in users:
        out[f"user_sessions/{user}"] = [s.session_id for s in store.user_sessions(NS, user)]
    return out


class Writer:
    """Writes and reads through one long-lived store object and the memories it made."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.memories: dict[str, Any] = {}

    def memory(self, kind: str, sid: str, user: str | None) -> Any:
        if sid not in self.memories:
            self.memories[sid] = make(kind, self.store, sid, user)
        return self.memories[sid]

    def do(self, op: dict[str, Any]) -> None:
        kind, sid, user = op.get("kind", ""), op.get("sid", ""), op.get("user")
        if op["op"] == "add":
            memory = self.memory(kind, sid, user)
            start = op["at"]
            memory.add(
                [
                    Turn(role="user" if i % 2 == 0 else "assistant", name="Ada" if i % 2 == 0
                         else "Bot", text=text, created_at=start + i * 60)
                    for i, text in enumerate(op["texts"])
                ]
            )  # fmt: skip
        elif op["op"] == "fold":
            self.memory(kind, sid, user).fold(force=True)
        elif op["op"] == "flush":
            self.memory(kind, sid, user).flush()
        elif op["op"] == "clear":
            self.memory(kind, sid, user).clear()
        elif op["op"] == "expire":
            self.store.expire(op["older_than"], namespace=NS, now=op["now"], by="created")
        elif op["op"] == "forget":
            self.store.forget_user(NS, op["user"])


class Subprocess:
    """A writer in another process (the server variant): JSON lines on its stdin."""

    def __init__(self, host: str, port: int, database: str, prefix: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", host, str(port), database, prefix],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).parent,
        )

    def do(self, op: dict[str, Any]) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(op) + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer.strip() == "ok", answer

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


@contextmanager
def fresh_store(opener: Callable[[StoreCaches], MemoryStore]) -> Iterator[MemoryStore]:
    """A store object as a fresh process opens it (caches of its own), closed after use."""
    store = opener(StoreCaches())
    try:
        yield store
    finally:
        store.close()


class Freshness(RuleBasedStateMachine):
    """The machine; ``opener`` makes a store object over the database under test."""

    opener: Callable[[StoreCaches], MemoryStore]
    extra_writer: Callable[[], Any] | None = None
    finish: Callable[[], None] | None = None  # after a run: drop what it wrote

    def __init__(self) -> None:
        super().__init__()
        self.writers: list[Any] = []
        self.readers: list[Writer] = []
        self.sessions: dict[str, tuple[str, str | None]] = {}  # live: kind, user
        self.gone: dict[str, tuple[str, str | None]] = {}
        self.users: list[str] = []
        self.clock = T0
        self.count = 0

    @initialize()
    def open_stores(self) -> None:
        self.readers = [Writer(self.opener(StoreCaches())) for _ in range(2)]
        self.writers = list(self.readers)
        if self.extra_writer is not None:
            self.writers.append(self.extra_writer())

    def teardown(self) -> None:
        for writer in self.writers:
            if isinstance(writer, Subprocess):
                writer.close()
            else:
                writer.store.close()
        if self.finish is not None:
            self.finish()

    def _do(self, index: int, op: dict[str, Any]) -> None:
        self.writers[index % len(self.writers)].do(op)

    def _add(self, sid: str, count: int, writer: int) -> None:
        kind, user = self.sessions[sid]
        self.count += 1
        texts = lines(self.count, count)
        op = {"op": "add", "kind": kind, "sid": sid, "user": user, "texts": texts}
        self._do(writer, {**op, "at": self.clock})
        self.clock += 60 * count + 3600

    @rule(
        kind=st.sampled_from(KINDS),
        user=st.sampled_from(["none", "new", "known"]),
        count=st.integers(1, 6),
        writer=st.integers(0, 2),
    )
    def open_session(self, kind: str, user: str, count: int, writer: int) -> None:
        chosen: str | None = None
        if user == "new" or (user == "known" and not self.users):
            chosen = f"u{len(self.users)}"
            self.users.append(chosen)
        elif user == "known":
            chosen = self.users[self.count % len(self.users)]
        sid = f"s{len(self.sessions) + len(self.gone)}"
        self.sessions[sid] = (kind, chosen)
        self._add(sid, count, writer)

    def _live(self, pick: int) -> str:
        return sorted(self.sessions)[pick % len(self.sessions)]

    @precondition(lambda self: self.sessions)
    @rule(pick=st.integers(0, 50), count=st.integers(1, 24), writer=st.integers(0, 2))
    def add(self, pick: int, count: int, writer: int) -> None:
        self._add(self._live(pick), count, writer)

    @precondition(lambda self: self.sessions)
    @rule(pick=st.integers(0, 50), writer=st.integers(0, 2))
    def fold_or_flush(self, pick: int, writer: int) -> None:
        sid = self._live(pick)
        kind, user = self.sessions[sid]
        op = "flush" if kind == "higmem" else "fold"
        self._do(writer, {"op": op, "kind": kind, "sid": sid, "user": user})

    @precondition(lambda self: self.sessions)
    @rule(pick=st.integers(0, 50), writer=st.integers(0, 2))
    def clear(self, pick: int, writer: int) -> None:
        sid = self._live(pick)
        kind, user = self.sessions.pop(sid)
        self.gone[sid] = (kind, user)
        self._do(writer, {"op": "clear", "kind": kind, "sid": sid, "user": user})

    @precondition(lambda self: self.sessions)
    @rule(writer=st.integers(0, 2), back=st.integers(1, 4))
    def expire(self, writer: int, back: int) -> None:
        """Expire the sessions whose newest turn is older than a cutoff (by their time)."""
        now = self.clock
        older_than = back * 4 * 3600.0
        self._do(writer, {"op": "expire", "older_than": older_than, "now": now})
        for sid in [s for s in self.sessions if s in self._expired(now - older_than)]:
            self.gone[sid] = self.sessions.pop(sid)

    def _expired(self, cutoff: float) -> set[str]:
        store = self.readers[0].store
        return {sid for sid in self.sessions if not store.count_turns(NS, sid)}

    @precondition(lambda self: self.users)
    @rule(pick=st.integers(0, 50), writer=st.integers(0, 2))
    def forget_user(self, pick: int, writer: int) -> None:
        user = self.users[pick % len(self.users)]
        self._do(writer, {"op": "forget", "user": user})
        for sid in [s for s, (_, u) in self.sessions.items() if u == user]:
            self.gone[sid] = self.sessions.pop(sid)

    @invariant()
    def every_read_answers_as_a_fresh_process(self) -> None:
        if not self.readers:
            return
        with fresh_store(self.opener) as fresh:
            expected_store = store_reads(fresh, self.users)
        for reader in self.readers:
            assert store_reads(reader.store, self.users) == expected_store
        for sid, (kind, user) in sorted({**self.gone, **self.sessions}.items()):
            with fresh_store(self.opener) as fresh:
                fresh_memory = make(kind, fresh, sid, user)
                # Read by read (a read may write: a no-LLM HiGMem indexes what waits before
                # its events are read), the fresh object first, then every long-lived one.
                for what, read in readers(kind, user).items():
                    expected = read(fresh_memory)
                    for i, reader in enumerate(self.readers):
                        got = read(reader.memory(kind, sid, user))
                        assert got == expected, (i, sid, kind, what)


def run_machine(machine: type[Freshness], examples: int) -> None:
    run = machine.TestCase
    run.settings = settings(
        max_examples=examples,
        stateful_step_count=STEPS,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    run().runTest()


def test_freshness_model_embedded(tmp_path):
    """SQLite in the store's folder and a ``PersistentClient``; a fresh prefix per run."""
    prefix = ["x"]

    def open_store(caches: StoreCaches) -> MemoryStore:
        return MemoryStore.persistent(tmp_path / "store", prefix=prefix[0], cache=caches)

    class Run(Freshness):
        opener = staticmethod(open_store)

        def __init__(self) -> None:
            prefix[0] = f"fm{uuid.uuid4().hex[:10]}"
            super().__init__()

    run_machine(Run, EXAMPLES)


@pytest.mark.slow
@pytest.mark.server
def test_freshness_model_server(chroma_server, pg_url):
    """PostgreSQL and ``chroma run``; a second process writes too; tables dropped per run."""
    host, port = chroma_server
    prefix = ["x"]

    def open_store(caches: StoreCaches) -> MemoryStore:
        return MemoryStore.http(host, port, database=pg_url, prefix=prefix[0], cache=caches)

    def second_process() -> Subprocess:
        return Subprocess(host, port, pg_url, prefix[0])

    def drop_tables() -> None:  # and the run's collections: every store opened lists them
        with fresh_store(open_store) as store:
            store.db.tables.metadata.drop_all(store.db.engine)
            for name in store.chroma.collection_names():
                if name.startswith(f"{store.prefix}_"):
                    store.client.delete_collection(name)

    class Run(Freshness):
        opener = staticmethod(open_store)
        extra_writer = staticmethod(second_process)
        finish = staticmethod(drop_tables)

        def __init__(self) -> None:
            prefix[0] = f"fs{uuid.uuid4().hex[:10]}"
            super().__init__()

    run_machine(Run, max(EXAMPLES, 4))


def _worker(host: str, port: int, database: str, prefix: str) -> None:
    """The second process of the server variant: one writer, ops from stdin."""
    writer = Writer(MemoryStore.http(host, port, database=database, prefix=prefix))
    for line in sys.stdin:
        writer.do(json.loads(line))
        print("ok", flush=True)


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    sys.path.insert(0, str(Path(__file__).parent))
    _worker(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
