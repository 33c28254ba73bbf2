from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from langchain_recursive_memory.core import MemoryStore, RetryPolicy
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

FAST_RETRY = RetryPolicy(attempts=2, initial_delay=0.0, timeout=5.0, cooldown=0.0)


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore.in_memory()


@pytest.fixture
def fast_retry() -> RetryPolicy:
    return FAST_RETRY


@pytest.fixture(scope="session")
def _in_memory_client():
    from langchain_recursive_memory.core.storage import client

    return client.in_memory_client()


@pytest.fixture(autouse=True, scope="module")
def _drop_in_memory_collections(_in_memory_client):
    """Drop the collections a test module made in the process's in-memory Chroma database.

    chromadb keeps one in-memory database per process and ``MemoryStore.in_memory()``
    never deletes its collections; every store opened lists them all (the migration
    check), so each module's leftovers would make every later test slower (0.75 s a store
    with 3,200 collections left). Per module, not per test: a module may keep a memory
    for several of its tests (tests/test_retrievers.py).
    """
    before = set(_collection_names(_in_memory_client))
    yield
    for name in set(_collection_names(_in_memory_client)) - before:
        _in_memory_client.delete_collection(name)


def _collection_names(client) -> list[str]:
    return [c if isinstance(c, str) else c.name for c in client.list_collections()]


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
