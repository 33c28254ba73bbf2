"""Fixtures and helpers shared by the tests.

Test modules import the helpers by name (``from conftest import FAST, filler``: pytest puts
this folder on ``sys.path``); the test doubles (models, embedders) are in ``fakes.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import os
import sys
from bisect import bisect_right
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from langchain_recursive_memory.core import (
    DEFAULT_NAMESPACE,
    HybridMemory,
    MemoryStore,
    RetryPolicy,
    TokenCounter,
    Turn,
)
from langchain_recursive_memory.core.facts import Fact
from langchain_recursive_memory.core.storage.keys import (
    SessionOwner,
    kinds_filter,
    owned_fact_record_id,
)
from langchain_recursive_memory.core.storage.records import VectorRecord
from langchain_recursive_memory.servers import LocalChromaServer

# Never touch a developer's real store from the tests.
os.environ.setdefault("LANGCHAIN_RECURSIVE_MEMORY_PATH", "/nonexistent/lrm-tests-must-pass-a-path")

# -- what many test modules share ------------------------------------------------------------

#: the checkout: the repository's root folder
ROOT = Path(__file__).resolve().parents[1]
#: the library's top-level packages
LIBRARY = ("langchain_recursive_memory", "llamaindex_higmem")

# Retry policies for scripted models: no wait between attempts, no cool-down after a failed
# fold. The timeout only matters for a model or embedder that hangs (a test that needs one
# to time out passes its own policy); a fold lease lasts max(10 s, timeout) either way.

#: one attempt: a failing call fails at once
FAST = RetryPolicy(attempts=1, initial_delay=0.0, timeout=10.0, cooldown=0.0)
#: one retry after a failed attempt
FAST_RETRY = dataclasses.replace(FAST, attempts=2)
#: two retries after a failed attempt
FAST_TWO_RETRIES = dataclasses.replace(FAST, attempts=3)

#: the default token counter (gpt-4o's o200k_base)
COUNTER = TokenCounter()
#: the namespace of a memory or store made without one
NS = DEFAULT_NAMESPACE
#: a fixed "now" for turns with given times (2023-11-14 22:13 UTC)
T0 = 1_700_000_000.0

FILLER_TOPICS = ["weather", "football", "recipes", "music", "traffic", "gardening", "movies"]


def filler(i: int) -> list[Turn]:
    """Exchange ``i`` of small talk (a user turn and an answer) that states no fact."""
    topic = FILLER_TOPICS[i % len(FILLER_TOPICS)]
    return [
        Turn(role="user", text=f"Let's chat about {topic} again, round {i}."),
        Turn(role="assistant", text=f"Sure, {topic} is a fine topic for round {i}."),
    ]


def hybrid(store: MemoryStore, session: str = "s", **kw: Any) -> HybridMemory:
    """A hybrid memory for tests: quick retries, an 800-token budget, a 120-token summary cap
    (``kw`` sets the model, the embedder or any other option)."""
    kw.setdefault("retry", FAST_RETRY)
    kw.setdefault("max_tokens", 800)
    kw.setdefault("max_summary_tokens", 120)
    return HybridMemory(session, store=store, **kw)


def logged_texts(store: MemoryStore, session: str = "s", namespace: str = NS) -> list[str]:
    """The texts of a session's log, in order."""
    return [t.turn.text for t in store.turns(namespace, session)]


def check_consistent(store: MemoryStore, session: str, expected: int) -> None:
    """Every turn stored once, covered by exactly one summary version or still unfolded."""
    log = store.turns(NS, session)
    assert len(log) == expected
    assert len({t.id for t in log}) == expected
    versions = store.summaries(NS, session)
    assert [v.version for v in versions] == list(range(1, len(versions) + 1))
    named = [tid for v in versions for tid in v.turn_ids]
    assert len(named) == len(set(named)), "a turn was folded twice"
    window = {t.id for t in store.session(NS, session).summaries.load().turns}
    assert window.isdisjoint(named)
    assert window | set(named) == {t.id for t in log}, "a turn is neither folded nor unfolded"
    by_id = {t.id: t for t in log}
    for v in versions:  # the version's mark on its turns is the version (one transaction)
        assert {by_id[tid].folded_in for tid in v.turn_ids} == {v.version}
    if versions:
        assert versions[-1].covered == len(named)


def thread(thread_id: str) -> dict[str, Any]:
    """The run config of a LangGraph thread."""
    return {"configurable": {"thread_id": thread_id}}


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """Write ``records`` as JSON lines to ``path``."""
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def cli_runner() -> Any:
    """A CLI runner for ``lrm``, wide, so table cells are not wrapped in what tests look for."""
    from typer.testing import CliRunner

    return CliRunner(env={"COLUMNS": "200"})


def lrm(path: Path, *args: str, input: str | None = None) -> Any:
    """Run ``lrm --path PATH ARGS...``; its result (an error other than an exit is raised)."""
    from langchain_recursive_memory.cli import app

    result = cli_runner().invoke(app, ["--path", str(path), *args], input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


# -- the upgrade tests: a store an earlier release wrote, read back --------------------------


def data(value: Any) -> Any:
    """Dataclasses, tuples and mappings as JSON data (as the fixtures' scripts wrote them)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [data(v) for v in value]
    return value


def stored_turn(s: Any) -> dict[str, Any]:
    """A stored turn as JSON data (as the fixtures' scripts wrote them)."""
    return {
        "id": s.turn.id,
        "role": s.turn.role,
        "text": s.turn.text,
        "payload": s.turn.payload(),
        "created_at": s.turn.created_at,
        "seq": s.seq,
        "tokens": s.tokens,
        "encoding": s.encoding,
        "folded_in": s.folded_in,
    }


def renumbered(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An old release's turns (as it read them, oldest first) with today's order keys: 1..n."""
    old = [t["seq"] for t in turns]
    assert old == sorted(old), "the old release read its turns in order-key order"
    return [{**t, "seq": n} for n, t in enumerate(turns, start=1)]


def new_last_seq(old: int, turns: list[dict[str, Any]]) -> int:
    """An old ``last_seq`` in the new numbering: the seq of the last turn at or before it."""
    return bisect_right([t["seq"] for t in turns], old) if old else 0


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore.in_memory()


@pytest.fixture
def fast_retry() -> RetryPolicy:
    return FAST_RETRY


@pytest.fixture(scope="session")
def in_memory_client():
    from langchain_recursive_memory.core.storage import client

    return client.in_memory_client()


@pytest.fixture(autouse=True, scope="module")
def _drop_in_memory_collections(in_memory_client):
    """Drop the collections a test module made in the process's in-memory Chroma database.

    chromadb keeps one in-memory database per process and ``MemoryStore.in_memory()``
    never deletes its collections; every store opened lists them all (the migration
    check), so each module's leftovers would make every later test slower (0.75 s a store
    with 3,200 collections left). Per module, not per test: a module may keep a memory
    for several of its tests (tests/test_retrievers.py).
    """
    before = set(collection_names(in_memory_client))
    yield
    drop_collections(in_memory_client, set(collection_names(in_memory_client)) - before)


def collection_names(client) -> list[str]:
    return [c if isinstance(c, str) else c.name for c in client.list_collections()]


def drop_collections(client, names) -> None:
    """Delete the named collections; one already gone is fine (a dropped in-memory store's
    finalizer deletes its own, at whatever allocation the collector picks)."""
    from chromadb.errors import NotFoundError

    for name in names:
        with contextlib.suppress(NotFoundError):
            client.delete_collection(name)


@pytest.fixture(autouse=True)
def _fresh_session_caches():
    """Fold cool-downs and caches are shared per session in a process; tests start clean."""
    from langchain_recursive_memory.core.cache import clear_caches

    clear_caches()
    yield
    clear_caches()


# -- a real Chroma server (`chroma run`) for the tests marked `server` -----------------------


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """The CI's server (CHROMA_SERVER_HOST/PORT, started by .ci/run), or one of our own."""
    host, port = os.environ.get("CHROMA_SERVER_HOST"), os.environ.get("CHROMA_SERVER_PORT")
    if host and port:
        yield host, int(port)
        return
    server = LocalChromaServer(tmp_path_factory.mktemp("chroma-server")).start()
    try:
        yield server.host, server.port
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_url():
    """The CI's PostgreSQL (LRM_TEST_DATABASE_URL, started by .ci/run), or one of our own."""
    from langchain_recursive_memory.servers import LocalPostgres, find_bindir

    url = os.environ.get("LRM_TEST_DATABASE_URL")
    if url:
        yield url
        return
    if find_bindir() is None:
        pytest.skip(
            "PostgreSQL's binaries (initdb, postgres) are neither on PATH nor in "
            "/usr/lib/postgresql/*/bin, and LRM_TEST_DATABASE_URL is not set"
        )
    with LocalPostgres() as server:
        yield server.url


@pytest.fixture
def server_store(chroma_server, pg_url):
    """A store on the Chroma server and PostgreSQL, with a fresh prefix per test.

    Its tables are dropped afterwards (tests and xdist workers share one database).
    """
    import uuid

    host, port = chroma_server
    store = MemoryStore.http(host, port, database=pg_url, prefix=f"t{uuid.uuid4().hex[:12]}")
    yield store
    store.db.tables.metadata.drop_all(store.db.engine)
    store.close()


def fact_record_id(store: MemoryStore, namespace: str, session_id: str, fact: Fact) -> str:
    """The Chroma id of a fact's record (and vector): the session user's, if it has one."""
    user = store.session_user(namespace, session_id)
    return owned_fact_record_id(namespace, session_id, user, fact.key_hash)


def stored_vectors(
    store: MemoryStore, space: str, namespace: str, session_id: str, kinds: Sequence[str]
) -> list[VectorRecord]:
    """The session's vector records of ``kinds`` as stored (a test's look into the store)."""
    owner = SessionOwner.of(namespace, session_id)
    collection = store.vector_spaces.collection(space)
    got = collection.get(where=kinds_filter(owner.key, kinds), include=["embeddings", "metadatas"])
    embeddings = [] if got["embeddings"] is None else list(got["embeddings"])
    return [
        VectorRecord(rid, str(meta["kind"]), str(meta["ref"]), vector, str(meta.get("h", "")))
        for rid, meta, vector in zip(got["ids"], got["metadatas"], embeddings, strict=True)
        if owner.owns(meta)
    ]


# -- what a store holds, read from the database and from Chroma directly ---------------------


def database_rows(store: MemoryStore) -> dict[str, list[dict]]:
    """Every row of every table of the store's prefix (a test's look into the database).

    Rows of a session's tables carry its ``ns``, ``sid`` and (if it has a user) ``uid``,
    joined from its row; a row whose session is gone would carry ``sid`` None (foreign
    keys make that impossible). The ``_meta`` and ``_pending`` tables are left out.
    """
    from sqlalchemy import select

    t = store.db.tables

    def read(conn):
        sessions = {r.id: r for r in conn.execute(select(t.sessions))}
        out = {}
        for table in t.metadata.sorted_tables:
            if table in (t.meta, t.pending):
                continue
            rows = []
            for row in conn.execute(select(table)):
                item = dict(row._mapping)
                if "session" in item:
                    owner = sessions.get(item["session"])
                    item["ns"] = owner.ns if owner else None
                    item["sid"] = owner.sid if owner else None
                    if owner is not None and owner.user_id is not None:
                        item["uid"] = owner.user_id
                elif table is t.sessions and item["user_id"] is not None:
                    item["uid"] = item["user_id"]
                rows.append(item)
            out[table.name] = rows
        return out

    return store.db.read(read)


def chroma_records(store: MemoryStore, where: dict | None = None) -> dict[str, list[tuple]]:
    """Every record of every Chroma collection of the store (id, document, metadata).

    Only the store's own prefix: the in-memory client is shared by the whole process.
    """
    out = {}
    for col in store.client.list_collections():
        if not col.name.startswith(store.prefix + "_"):
            continue
        got = store.client.get_collection(col.name).get(
            where=where, include=["documents", "metadatas"]
        )
        docs = got["documents"] or [None] * len(got["ids"])
        out[col.name] = list(zip(got["ids"], docs, got["metadatas"], strict=True))
    return out


def session_records(store: MemoryStore, sid: str) -> dict[str, int]:
    """How many records of session ``sid`` each table and each Chroma collection holds."""
    counts = {
        name: sum(r.get("sid") == sid for r in rows) for name, rows in database_rows(store).items()
    }
    for name, rows in chroma_records(store, {"sid": sid}).items():
        counts[name] = len(rows)
    return counts


class Requests:
    """What a store asks of its database (statements) and of Chroma (calls), from now on.

    Keys: ``"SELECT turns"``, ``"UPDATE sessions"``... (the verb and the table after the
    store's prefix) and ``"chroma: <what>"``; :attr:`rows` counts the turns decoded.
    """

    def __init__(self, store: MemoryStore) -> None:
        import re
        from collections import Counter

        from sqlalchemy import event

        from langchain_recursive_memory.core.storage import turns

        self.counts: Counter[str] = Counter()
        self.rows = 0
        prefix = re.escape(store.prefix + "_")
        table = re.compile(rf"(?:FROM|INTO|UPDATE|JOIN)\s+\"?{prefix}(\w+)", re.IGNORECASE)

        def sql(conn, cursor, statement, params, context, executemany):
            verb = statement.split(None, 1)[0].upper()
            if verb in ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA", "SAVEPOINT", "RELEASE"):
                return
            found = table.search(statement)
            self.counts[f"{verb} {found.group(1) if found else '?'}"] += 1

        event.listen(store.db.engine, "before_cursor_execute", sql)
        self._undo = [lambda: event.remove(store.db.engine, "before_cursor_execute", sql)]
        call = store.chroma.call

        def chroma(what, fn):
            self.counts[f"chroma: {what}"] += 1
            return call(what, fn)

        store.chroma.call = chroma
        self._undo.append(lambda: setattr(store.chroma, "call", call))
        decode = turns.stored_turn

        def counted(row):
            self.rows += 1
            return decode(row)

        turns.stored_turn = counted
        self._undo.append(lambda: setattr(turns, "stored_turn", decode))

    def clear(self) -> None:
        self.counts.clear()
        self.rows = 0

    def total(self) -> int:
        return sum(self.counts.values())

    def close(self) -> None:
        """Stop counting (what was counted stays); a second close does nothing."""
        for undo in reversed(self._undo):
            undo()
        self._undo = []


async def same_requests(requests: Requests, call: Callable[[], Any], acall: Callable[[], Any]):
    """Run ``call``, then its async twin ``acall``, each from cold caches; their answers.

    Both must ask the database and Chroma the same (statements and calls by kind, turns
    decoded): an async twin drives the same steps as its sync shell, so it asks what the
    sync call asks.
    """
    from langchain_recursive_memory.core.cache import clear_caches

    asked, answers = [], []
    for run in (call, acall):
        clear_caches()
        requests.clear()
        answer = run()
        answers.append(await answer if inspect.isawaitable(answer) else answer)
        asked.append((dict(requests.counts), requests.rows))
    assert asked[0] == asked[1], f"the sync call asked {asked[0]}, its async twin {asked[1]}"
    return answers[0], answers[1]


@pytest.fixture
def requests_of():
    """``requests_of(store)`` starts counting a store's requests (undone after the test)."""
    made: list[Requests] = []

    def start(store: MemoryStore) -> Requests:
        made.append(Requests(store))
        return made[-1]

    yield start
    for r in reversed(made):
        r.close()
