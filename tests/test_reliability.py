"""Races, faults and odd records: nothing lost, nothing leaked, no crash (issue 13).

Each scenario was reproduced against 0.1.0 before it was fixed; the comments say what
happened then. Since 0.3.0 the log lives in a database (SQLite by default, PostgreSQL for
many workers) and Chroma keeps the facts and vectors: the scenarios that were races of a
protocol built on Chroma are now tested as the same promises against the database (its
transactions, row locks and retries). The tests that need PostgreSQL are marked
``server`` (``-m server``).
"""

from __future__ import annotations

import itertools
import json
import logging
import sqlite3
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import FAST, FAST_RETRY, FAST_TWO_RETRIES, fact_record_id, logged_texts
from fakes import FactModel, FailingModel, HiGMemModel, KeywordSummarizer
from sqlalchemy import event, select, update

from langchain_recursive_memory.core import (
    ConfigurationError,
    HiGMem,
    HybridMemory,
    InvalidInputError,
    MemoryStore,
    ModelTimeoutError,
    RecursiveMemory,
    RetryPolicy,
    StoreError,
    Turn,
    WriteOutcomeUnknownError,
)
from langchain_recursive_memory.core.cache import StoreCaches
from langchain_recursive_memory.core.ingest import read_jsonl
from langchain_recursive_memory.core.recursive.fold import MIN_LEASE_SECONDS
from langchain_recursive_memory.core.storage import session_store
from langchain_recursive_memory.core.storage import turns as turn_log
from langchain_recursive_memory.core.storage.client import in_memory_client
from langchain_recursive_memory.core.storage.database import sqlite_url
from langchain_recursive_memory.core.storage.session_store import SessionSummaries
from langchain_recursive_memory.servers import free_port

AGE = 0.3  # seconds: what "old" means in the expiry tests
WAIT = 0.3  # seconds a hook gives another thread to reach (and wait at) its next step


def _memory(store: MemoryStore, sid: str, namespace: str = "default") -> RecursiveMemory:
    return RecursiveMemory(
        sid,
        store=store,
        namespace=namespace,
        model=KeywordSummarizer(),
        retry=FAST,
        max_tokens=200,
        max_summary_tokens=60,
    )


def _old_session(store: MemoryStore, sid: str, turns: int = 20) -> None:
    memory = _memory(store, sid)
    for i in range(turns):
        memory.add(Turn(role="user", text=f"old message {i} about the garden"))
    assert store.summaries("default", sid)  # folded: there is derived state to delete


class _Database:
    """One database that several store objects open, each with caches of its own.

    Store objects with caches of their own share nothing but the database (and
    Chroma), as processes do. ``memory``: the in-memory SQLite database of one Chroma
    client and prefix; ``file``: a SQLite file (real locks between connections);
    ``postgres``: the test PostgreSQL server (row locks, concurrent transactions).
    """

    def __init__(self, kind: str, url: str | None) -> None:
        self.kind = kind
        self.url = url
        self.prefix = f"r{uuid.uuid4().hex[:10]}"
        self.client = in_memory_client()  # chromadb's client creation is not thread-safe
        self.stores: list[MemoryStore] = []

    def open(self) -> MemoryStore:
        """A new store object over the database, with caches of its own."""
        extra: dict[str, Any] = {} if self.url is None else {"database": self.url}
        store = MemoryStore(self.client, prefix=self.prefix, cache=StoreCaches(), **extra)
        self.stores.append(store)
        return store

    def close(self) -> None:
        if self.kind == "postgres" and self.stores:
            self.stores[0].db.tables.metadata.drop_all(self.stores[0].db.engine)
        for store in self.stores:
            store.close()


_BACKENDS = ["memory", "file", pytest.param("postgres", marks=pytest.mark.server)]


@pytest.fixture(params=_BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path) -> Iterator[_Database]:
    kind = request.param
    url = {
        "memory": None,
        "file": sqlite_url(tmp_path),
        "postgres": request.getfixturevalue("pg_url") if kind == "postgres" else None,
    }[kind]
    db = _Database(kind, url)
    yield db
    db.close()


class _Faults:
    """Hooks into a store's database: run a function at a statement, or at a commit.

    The function may raise (a fault: the DBAPI exception a driver raises) or do something
    in between (another thread's write). Every hook is removed after the test.
    """

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def at(
        self,
        store: MemoryStore,
        starts: str,
        action: Callable[[], None],
        *,
        after: bool = False,
        times: int = 1,
    ) -> list[str]:
        """Run ``action`` before (``after``: after) the first ``times`` statements so starting.

        ``starts``: e.g. ``"INSERT INTO {prefix}_turns"`` (``{prefix}`` is filled in).
        Returns the statements it ran at (one entry per time).
        """
        wanted = starts.format(prefix=store.prefix).upper()
        fired: list[str] = []
        name = "after_cursor_execute" if after else "before_cursor_execute"

        def hook(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if len(fired) < times and statement.lstrip().upper().startswith(wanted):
                fired.append(statement)
                action()

        event.listen(store.db.engine, name, hook)
        self._undo.append(lambda: event.remove(store.db.engine, name, hook))
        return fired

    def at_commit(
        self,
        store: MemoryStore,
        action: Callable[[], None],
        *,
        of: str = "INSERT INTO {prefix}_turns",
        times: int = 1,
    ) -> list[bool]:
        """Run ``action`` right after a transaction that ran a statement ``of`` committed.

        An ``action`` that raises is an answer lost after the database committed. The
        first ``times`` such commits only.
        """
        wanted = of.format(prefix=store.prefix).upper()
        marked: list[Any] = []  # the pooled connections whose transaction ran one
        fired: list[bool] = []

        def mark(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if statement.lstrip().upper().startswith(wanted):
                marked.append(conn.connection)

        event.listen(store.db.engine, "before_cursor_execute", mark)
        self._undo.append(lambda: event.remove(store.db.engine, "before_cursor_execute", mark))
        dialect = store.db.engine.dialect
        commit = dialect.do_commit

        def do_commit(pooled: Any) -> None:
            commit(pooled)
            ran = any(c is pooled for c in marked)
            marked[:] = [c for c in marked if c is not pooled]
            if ran and len(fired) < times:
                fired.append(True)
                action()

        dialect.do_commit = do_commit  # type: ignore[method-assign]
        self._undo.append(lambda: delattr(dialect, "do_commit"))
        return fired

    def undo(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


@pytest.fixture
def faults() -> Iterator[_Faults]:
    hooks = _Faults()
    yield hooks
    hooks.undo()


def _fail(exc: BaseException) -> Callable[[], None]:
    def action() -> None:
        raise exc

    return action


# -- 1. expire() never deletes a turn stored while it runs ----------------------------------
#
# 0.1.0 read activity, then deleted whole sessions: a turn stored in between went with
# them. Now expire() is one transaction that deletes the sessions whose last write is
# older than the cutoff, and an append moves its session's row in its own transaction:
# whichever comes first, the other must see it. Two interleavings, each forced with a
# hook and a second thread: the append has moved the row and not yet committed when
# expire() runs ("append first"), or expire() has picked the old sessions and not yet
# deleted them when the append runs ("expire first").

_PG_EXPIRE = (
    "lifecycle.py SessionLifecycle._delete_sessions selects the old sessions, then "
    "deletes them by key only (DELETE ... WHERE skey IN (...)) without re-checking the "
    "age: on PostgreSQL (READ COMMITTED, no FOR UPDATE) an append that moved the row "
    "meanwhile is deleted with it, and its turn is lost"
)


def _late_turn(store: MemoryStore) -> None:
    _memory(store, "busy").add(Turn(role="user", text="I am back!", id="late"))


def _append_first(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The late append holds its moved row while expire() runs in another thread."""
    expired: list[tuple[str, str]] = []
    entered = threading.Event()
    delete_sessions = store.lifecycle._delete_sessions

    def deleting(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        return delete_sessions(*args, **kwargs)

    monkeypatch.setattr(store.lifecycle, "_delete_sessions", deleting)
    expiry = threading.Thread(target=lambda: expired.extend(store.expire(AGE)))
    advance = turn_log.advance

    def advanced(*args: Any, **kwargs: Any) -> Any:
        moved = advance(*args, **kwargs)
        if expiry.ident is None:  # the first append only
            expiry.start()
            assert entered.wait(5)
            time.sleep(WAIT)  # expire() waits for this transaction (or would miss it)
        return moved

    monkeypatch.setattr(turn_log, "advance", advanced)
    _late_turn(store)
    expiry.join(10)
    assert not expiry.is_alive()
    return expired


def _expire_first(store: MemoryStore, faults: _Faults) -> list[tuple[str, str]]:
    """expire() has picked the old sessions when the late append starts (another thread)."""
    append = threading.Thread(target=_late_turn, args=(store,))

    def start_the_append() -> None:
        append.start()
        append.join(WAIT)  # done (it did not wait for expire), or waiting for it

    fired = faults.at(store, "DELETE FROM {prefix}_sessions", start_the_append)
    expired = store.expire(AGE)
    assert fired
    append.join(10)
    assert not append.is_alive()
    return expired


@pytest.mark.parametrize(
    "backend",
    [
        "memory",
        "file",
        pytest.param(
            "postgres",
            marks=[pytest.mark.server],
        ),
    ],
)
@pytest.mark.parametrize("order", ["append first", "expire first"])
def test_expire_keeps_a_turn_stored_while_it_runs(
    backend, order, request, tmp_path, faults, monkeypatch
):
    url = {"memory": None, "file": sqlite_url(tmp_path)}.get(backend)
    db = _Database(backend, request.getfixturevalue("pg_url") if backend == "postgres" else url)
    request.addfinalizer(db.close)
    store = db.open()
    _old_session(store, "busy")
    _old_session(store, "idle")
    time.sleep(AGE + 0.1)
    before = [t.id for t in store.turns("default", "busy")]
    if order == "append first":
        expired = _append_first(store, monkeypatch)
    else:
        expired = _expire_first(store, faults)
    kept = [t.id for t in store.turns("default", "busy")]
    assert "late" in kept  # whatever the order, the turn stored while expire() ran is kept
    assert ("default", "idle") in expired
    assert store.turns("default", "idle") == []
    assert ("default", "busy") in {(s.namespace, s.session_id) for s in store.sessions()}
    if ("default", "busy") in expired:
        # The append waited for expire(): the old history went, the new turn started the
        # session again, with nothing of the old one left.
        assert order == "expire first"
        assert kept == ["late"]
        assert store.summaries("default", "busy") == []
    else:
        assert kept == [*before, "late"]
        assert expired == [("default", "idle")]
        assert store.summaries("default", "busy")
    fresh = _memory(db.open(), "busy")
    assert fresh.context().turns[-1].text == "I am back!"


def test_expire_rejects_bad_arguments():
    store = MemoryStore.in_memory()
    for bad in (0, -1.0, float("nan"), float("inf"), True, "10"):
        with pytest.raises(ConfigurationError, match="older_than"):
            store.expire(bad)
    with pytest.raises(ConfigurationError, match="now"):
        store.expire(10, now=float("nan"))


# -- 4. a tenant scope is never a query operator --------------------------------------------


@pytest.mark.parametrize("bad", [{"$ne": "x"}, {"$in": ["a", "b"]}, ["a"], 1, "", "  ", "\ud800"])
def test_store_methods_refuse_a_namespace_that_is_not_a_name(bad):
    # 0.1.0: expire(1.0, namespace={"$ne": "x"}) deleted both tenants' sessions.
    store = MemoryStore.in_memory()
    for ns in ("x", "y"):
        _memory(store, "s", namespace=ns).add(Turn(role="user", text="hello"))
    time.sleep(0.01)
    for call in (
        lambda: store.expire(0.001, namespace=bad),
        lambda: store.sessions(namespace=bad),
        lambda: store.activity(namespace=bad),
    ):
        with pytest.raises(InvalidInputError, match="namespace"):
            call()
    assert len(store.turns("x", "s")) == len(store.turns("y", "s")) == 1


# -- 2. a non-finite timestamp is refused; a damaged record never locks a session -----------


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), "yesterday", True])
def test_turn_refuses_a_timestamp_that_is_not_a_finite_number(bad):
    # 0.1.0 stored NaN; Chroma dropped the field and the session raised KeyError: 'created'.
    with pytest.raises(InvalidInputError, match="created_at"):
        Turn(role="user", text="hi", created_at=bad)


def test_jsonl_line_with_an_overflowing_timestamp_names_the_line(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(
        json.dumps({"role": "user", "content": "hi"})
        + "\n"
        + '{"role": "user", "content": "later", "created_at": 1e999}\n'
    )
    with pytest.raises(InvalidInputError, match=r"chat\.jsonl:2: created_at"):
        read_jsonl(path)


# A record the library cannot decode (a field an older or foreign writer left out or
# wrote wrong) is skipped with a warning naming it: it never makes its session unreadable.
# The log's turns are rows of the database now; what is decoded from free-form records
# is a fact in Chroma and HiGMem's turn and event nodes (JSON in the database).


def _fact_memory(store: MemoryStore, sid: str) -> HybridMemory:
    return HybridMemory(
        sid, store=store, model=FactModel(), retry=FAST, max_tokens=300, max_summary_tokens=60
    )


def test_a_damaged_fact_record_is_skipped_with_a_warning(caplog):
    store, sid = MemoryStore.in_memory(), f"facts-{uuid.uuid4().hex[:8]}"
    memory = _fact_memory(store, sid)
    for attribute, value in [("city", "Oslo"), ("pet", "a cat"), ("job", "pilot")]:
        memory.add(Turn(role="user", text=f"my {attribute} is {value}. " + "and so on " * 12))
    for i in range(10):
        memory.add(Turn(role="user", text=f"small talk {i} " * 8))
    facts = {f.key: f for f in memory.facts()}
    assert set(facts) == {"user/city", "user/pet", "user/job"}
    # Damage one record in Chroma: its source list is no longer JSON.
    record = fact_record_id(store, "default", sid, facts["user/city"])
    store.fact_table.collection.update(ids=[record], metadatas=[{"sources": "[not json"}])
    fresh = _fact_memory(MemoryStore(store.client, prefix=store.prefix, cache=StoreCaches()), sid)
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        assert {f.key for f in fresh.facts()} == {"user/pet", "user/job"}
        assert fresh.context("what is my job?").tokens <= 300
        assert "The user's job is pilot." in [h.text for h in fresh.recall("pilot job")]
        fresh.add(Turn(role="user", text="still works"))
    assert "damaged fact record" in caplog.text and repr(sid) in caplog.text
    assert logged_texts(store, sid)[-1] == "still works"


def _higmem(store: MemoryStore, sid: str) -> HiGMem:
    return HiGMem(
        sid,
        store=store,
        model=HiGMemModel(),
        retry=FAST_RETRY,
        batch_size=4,
    )


def _indexed_higmem(sid: str) -> tuple[MemoryStore, list[str]]:
    """A store whose session ``sid`` HiGMem has indexed: its turns' ids."""
    store = MemoryStore.in_memory()
    lines = [
        "I adopted a cat called Miso last week.",
        "Congratulations! How old is Miso?",
        "Miso is 2 years old and loves tuna.",
        "My sister moved to Porto in March.",
        "I started learning the violin yesterday.",
        "Violin is hard, good luck with the violin lessons!",
        "The lesson is on Tuesday evening.",
        "Then I will ask about the violin on Wednesday.",
    ]
    ids = [f"{sid}-{i}" for i in range(len(lines))]
    _higmem(store, sid).add(
        [
            Turn(
                role="user" if i % 2 == 0 else "assistant",
                text=line,
                id=ids[i],
                created_at=1_700_000_000.0 + 60 * i,
                extra={"session": "1"},
            )
            for i, line in enumerate(lines)
        ]
    )
    return store, ids


def _damage_node(store: MemoryStore, table_name: str, column: str, ref: str, meta: Any) -> None:
    """Overwrite the ``meta`` JSON of one HiGMem row (a function of the decoded meta)."""
    table = getattr(store.db.tables, table_name)

    def write(conn: Any) -> None:
        found = conn.execute(select(table.c.meta).where(table.c[column] == ref)).scalar_one()
        conn.execute(update(table).where(table.c[column] == ref).values(meta=meta(found)))

    store.db.write(write)


def _read_after_damage(store: MemoryStore, sid: str, caplog: Any) -> HiGMem:
    fresh = _higmem(MemoryStore(store.client, prefix=store.prefix, cache=StoreCaches()), sid)
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        hits = fresh.retrieve("violin lesson", k=3)
        assert any("violin" in h.turn.text.lower() for h in hits), hits
        fresh.add(Turn(role="user", text="still works"))
    assert fresh.turns()[-1].turn.text == "still works"
    return fresh


def test_a_damaged_higmem_node_is_skipped_with_a_warning(caplog):
    sid = f"nodes-{uuid.uuid4().hex[:8]}"
    store, ids = _indexed_higmem(sid)
    event_id = _higmem(store, sid).events()[0].id

    def bad_keywords(meta: str) -> str:
        return json.dumps({**json.loads(meta), "keywords": "[not json"})

    def no_id(meta: str) -> str:
        return json.dumps({k: v for k, v in json.loads(meta).items() if k != "eid"})

    _damage_node(store, "turn_nodes", "tid", ids[0], bad_keywords)
    _damage_node(store, "events", "eid", event_id, no_id)
    fresh = _read_after_damage(store, sid, caplog)
    assert f"damaged turn node record (tid={ids[0]!r})" in caplog.text
    assert "damaged event record" in caplog.text and "'eid'" in caplog.text
    assert {n.turn_id for n in fresh.turn_nodes()} >= set(ids[1:])


def test_a_higmem_node_row_that_is_not_json_is_skipped_with_a_warning(caplog):
    sid = f"json-{uuid.uuid4().hex[:8]}"
    store, ids = _indexed_higmem(sid)
    _damage_node(store, "turn_nodes", "tid", ids[0], lambda meta: meta[: len(meta) // 2])
    _read_after_damage(store, sid, caplog)
    assert "damaged turn node record" in caplog.text


# -- 5. a failed write tells the truth; a retried one stores each turn once ------------------
#
# 0.1.0 raised "failed to append turns" for a write Chroma had stored, and the
# application's retry stored a second copy. Now an append is one database transaction:
# it either committed or left nothing, and the turns' ids are fixed before it starts, so
# running it again (the library's retry, or the application's) stores each turn once.


def _disk_error() -> sqlite3.OperationalError:
    return sqlite3.OperationalError("disk I/O error")  # not transient: never retried


def test_a_write_that_did_not_land_is_a_store_error_and_safe_to_retry(faults):
    store = MemoryStore.in_memory()
    store.retry = FAST_TWO_RETRIES
    memory = _memory(store, "s")
    fired = faults.at(store, "INSERT INTO {prefix}_turns", _fail(_disk_error()), times=9)
    with pytest.raises(StoreError, match="append turns: disk I/O error") as info:
        memory.add(Turn(role="user", text="never stored"))
    assert not isinstance(info.value, WriteOutcomeUnknownError)  # it failed before commit
    assert len(fired) == 1  # a permanent failure is not retried
    assert store.db.name in str(info.value)
    assert store.turns("default", "s") == [] and store.sessions() == []  # nothing written
    faults.undo()
    memory.add(Turn(role="user", text="never stored"))  # the application's retry
    assert logged_texts(store) == ["never stored"]


def test_a_failed_append_is_rolled_back_whole(faults):
    # 0.1.0's batches could land in part (Chroma stores records one batch at a time).
    store = MemoryStore.in_memory()
    memory = _memory(store, "s")
    memory.add(Turn(role="user", text="before"))
    turns = [Turn(role="user", text=f"part {i}", id=f"p{i}") for i in range(3)]
    # The turns' rows are written, then the transaction fails before it commits.
    faults.at(store, "INSERT INTO {prefix}_turns", _fail(_disk_error()), after=True)
    with pytest.raises(StoreError):
        memory.add(turns)
    assert logged_texts(store) == ["before"]
    assert store.session("default", "s").head().last_seq == 1  # its order keys too
    faults.undo()
    memory.add(turns)
    memory.add(turns)  # again: each turn is stored once
    stored = store.turns("default", "s")
    assert [t.turn.text for t in stored] == ["before", "part 0", "part 1", "part 2"]
    assert [t.seq for t in stored] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    "fault",
    [
        sqlite3.OperationalError("database is locked"),
        # What SQLite's driver says when its connection is gone: SQLAlchemy drops it.
        sqlite3.ProgrammingError("Cannot operate on a closed database."),
    ],
    ids=["locked", "dropped connection"],
)
def test_a_transient_failure_is_retried_and_the_write_succeeds(fault, faults, tmp_path):
    store = MemoryStore(in_memory_client(), database=sqlite_url(tmp_path), retry=FAST_TWO_RETRIES)
    session = store.session("default", "s")
    session.turns.append([Turn(role="user", text="before")], [2], "o200k_base")
    fired = faults.at(store, "INSERT INTO {prefix}_turns", _fail(fault))
    stored = session.turns.append([Turn(role="user", text="retried")], [2], "o200k_base")
    assert fired  # the first attempt failed...
    assert [s.turn.text for s in stored] == ["retried"]  # ...and the retry stored it
    assert logged_texts(store) == ["before", "retried"]
    store.close()


def test_a_busy_database_makes_a_writer_wait_not_fail(tmp_path):
    store = MemoryStore(in_memory_client(), database=sqlite_url(tmp_path), retry=FAST_TWO_RETRIES)
    session = store.session("default", "s")
    session.turns.append([Turn(role="user", text="before")], [2], "o200k_base")
    other = sqlite3.connect(
        tmp_path / "memory.sqlite3", isolation_level=None, check_same_thread=False
    )
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock for a while
    threading.Timer(0.5, other.commit).start()
    start = time.monotonic()
    session.turns.append([Turn(role="user", text="after the lock")], [2], "o200k_base")
    assert time.monotonic() - start >= 0.4
    assert logged_texts(store) == ["before", "after the lock"]
    other.close()
    store.close()


def test_a_commit_whose_answer_was_lost_is_retried_and_stores_once(faults):
    # The commit landed, then the connection failed before its answer arrived: the
    # transaction is retried, and finds the turn stored.
    store = MemoryStore.in_memory()
    store.retry = FAST_TWO_RETRIES
    memory = _memory(store, "s")
    memory.add(Turn(role="user", text="before"))
    lost = faults.at_commit(store, _fail(sqlite3.OperationalError("database is locked")))
    memory.add(Turn(role="user", text="stored, answer lost"))
    assert lost
    assert logged_texts(store) == ["before", "stored, answer lost"]
    fresh = _memory(MemoryStore(store.client, prefix=store.prefix, cache=StoreCaches()), "s")
    assert [t.text for t in fresh.context().window] == ["before", "stored, answer lost"]


def test_a_retried_append_returns_the_turns_its_lost_commit_stored(faults):
    store = MemoryStore.in_memory()
    store.retry = FAST_TWO_RETRIES
    memory = _memory(store, "s")
    faults.at_commit(store, _fail(sqlite3.OperationalError("database is locked")))
    stored = memory.add(Turn(role="user", text="stored, answer lost"))
    assert [s.turn.text for s in stored] == ["stored, answer lost"]


def test_an_unknown_outcome_says_so_and_its_turns_store_once(faults):
    store = MemoryStore.in_memory()
    store.retry = FAST_TWO_RETRIES
    memory = _memory(store, "s")
    faults.at_commit(store, _fail(_disk_error()))  # landed; then the database failed
    with pytest.raises(WriteOutcomeUnknownError) as info:
        memory.add([Turn(role="user", text="one"), Turn(role="user", text="two")])
    assert [t.text for t in info.value.turns] == ["one", "two"]
    assert all(t.id for t in info.value.turns)
    memory.add(list(info.value.turns))  # what the error tells the caller to do
    assert logged_texts(store) == ["one", "two"]  # stored once, not twice


def test_a_database_that_fails_for_good_is_named_without_its_password():
    pytest.importorskip("psycopg")
    url = f"postgresql+psycopg://lrm:s3cret-pw@127.0.0.1:{free_port()}/memory"
    start = time.monotonic()
    with pytest.raises(StoreError) as info:
        MemoryStore(in_memory_client(), database=url, retry=FAST_TWO_RETRIES)
    assert time.monotonic() - start < 5
    message = str(info.value)
    assert "postgresql+psycopg://lrm:***@127.0.0.1:" in message
    assert "after 3 attempts" in message  # a refused connection is retried first
    shown = "".join(traceback.format_exception(info.value))
    assert "s3cret-pw" not in shown


def test_a_sqlite_file_that_cannot_be_opened_is_named(tmp_path):
    (tmp_path / "memory.sqlite3").mkdir()  # a folder where the file should be
    with pytest.raises(StoreError, match="unable to open") as info:
        MemoryStore(in_memory_client(), database=sqlite_url(tmp_path))
    assert str(tmp_path / "memory.sqlite3") in str(info.value)


# -- 6. concurrent appends and folds leave every turn in exactly one place -----------------
#
# 0.1.0: a turn stamped before another writer folded, landing after, sorted before the
# turns already summarized and was folded later: out of order, ranges overlapped. Now the
# database gives a turn its order key when its write commits, under the session row's
# lock, so a turn can no longer land before turns already summarized. What must hold
# whatever the interleaving of writers and folds: every turn is either in the window or
# in exactly one summary version, the versions' turns follow the log order, nothing is
# lost.


class _SlowSummarizer(KeywordSummarizer):
    """Answers after ``delay`` seconds; records how many calls ran at once."""

    def __init__(self, delay: float) -> None:
        # Within the cap, keeping most of the previous summary: one call per version.
        super().__init__(max_words=60)
        self.delay = delay
        self.running = 0
        self.most_at_once = 0
        self._count = threading.Lock()

    def _answer(self, prompt: str) -> str:
        with self._count:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            time.sleep(self.delay)
            return super()._answer(prompt)
        finally:
            with self._count:
                self.running -= 1


def _summary_ranges(store: MemoryStore, sid: str) -> list[tuple[int, int]]:
    seq = {t.id: t.seq for t in store.turns("default", sid)}
    return [
        (min(seq[t] for t in v.turn_ids), max(seq[t] for t in v.turn_ids))
        for v in store.summaries("default", sid)
    ]


def _check_every_turn_in_one_place(store: MemoryStore, sid: str, expected: list[str]) -> None:
    """The log holds ``expected`` (ids) once each; each is in the window or one version."""
    log = store.turns("default", sid)
    assert sorted(t.id for t in log) == sorted(expected)  # nothing lost, nothing twice
    assert all(a.seq < b.seq for a, b in itertools.pairwise(log))
    versions = store.summaries("default", sid)
    assert [v.version for v in versions] == list(range(1, len(versions) + 1))
    folded: dict[str, int] = {}
    for v in versions:
        for turn_id in v.turn_ids:
            assert turn_id not in folded, f"{turn_id} is in versions {folded[turn_id]} and {v}"
            folded[turn_id] = v.version
    for t in log:  # the marks agree with the versions
        assert t.folded_in == folded.get(t.id, 0), t
    # In log order: version 1's turns, version 2's..., then the window (never folded).
    marks = [t.folded_in for t in log]
    assert marks == sorted(marks, key=lambda m: (m == 0, m)), marks
    ranges = _summary_ranges(store, sid)
    assert all(prev[1] < nxt[0] for prev, nxt in itertools.pairwise(ranges)), ranges
    for v in versions:
        assert v.covered == sum(1 for m in marks if 0 < m <= v.version)
    window = store.session("default", sid).summaries.load().turns
    assert [t.id for t in window] == [t.id for t in log if not t.folded_in]


def _run(workers: list[Callable[[], None]]) -> None:
    errors: list[BaseException] = []

    def guarded(work: Callable[[], None]) -> None:
        try:
            work()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors[0]


def test_concurrent_appends_and_folds_leave_every_turn_in_one_place(database, monkeypatch):
    writers, per_writer = 3, 24
    model = _SlowSummarizer(delay=0.01)
    stores = [database.open() for _ in range(writers + 1)]  # opened up front: see _Database
    memories = [
        RecursiveMemory(
            "s", store=s, model=model, retry=FAST, max_tokens=300, max_summary_tokens=80
        )
        for s in stores
    ]
    advance = turn_log.advance

    def slow_append(*args: Any, **kwargs: Any) -> Any:
        moved = advance(*args, **kwargs)
        time.sleep(0.002)  # the order keys are taken; the turns land a moment later
        return moved

    monkeypatch.setattr(turn_log, "advance", slow_append)
    done = threading.Event()

    def writer(w: int) -> Callable[[], None]:
        def write() -> None:
            for i in range(per_writer):
                turns = [Turn(role="user", text=f"writer {w} says {i} " * 3, id=f"w{w}-{i}")]
                if i % 5 == 4:  # a question and its answer in one append
                    turns.append(Turn(role="assistant", text=f"answer {i} " * 2, id=f"a{w}-{i}"))
                memories[w].add(turns)

        return write

    def folder() -> None:  # folds without the lease (fold() does not take it)
        while not done.wait(0.02):
            memories[-1].fold(force=True)

    def writers_then_stop() -> None:
        _run([writer(w) for w in range(writers)])
        done.set()

    _run([writers_then_stop, folder])
    memories[0].fold(force=True)
    store = database.open()
    expected = [f"w{w}-{i}" for w in range(writers) for i in range(per_writer)]
    expected += [f"a{w}-{i}" for w in range(writers) for i in range(per_writer) if i % 5 == 4]
    _check_every_turn_in_one_place(store, "s", expected)
    assert len(store.summaries("default", "s")) >= 3
    for w in range(writers):  # each writer's turns in the order it wrote them
        mine = [t.id for t in store.turns("default", "s") if t.id.startswith(f"w{w}-")]
        assert mine == [f"w{w}-{i}" for i in range(per_writer)]


# -- 7. no wasted summarizer calls under concurrency ----------------------------------------
#
# 0.1.0: 8 writers made 525-585 summarizer calls for 245-262 committed versions. A fold
# started by add() claims the session's fold lease (columns of the session's row) before
# it summarizes; while another writer holds it, the fold is skipped.


def _lease_memory(store: MemoryStore, model: Any) -> RecursiveMemory:
    return RecursiveMemory(
        "s", store=store, model=model, retry=FAST, max_tokens=400, max_summary_tokens=150
    )


def test_a_fold_lease_lets_one_writer_summarize_at_a_time(database):
    model = _SlowSummarizer(delay=0.05)
    # One store object per writer, each with caches (and so a fold lock) of its own, like
    # a process; opened up front (chromadb's client creation is not thread-safe).
    memories = [_lease_memory(database.open(), model) for _ in range(4)]

    def writer(w: int) -> Callable[[], None]:
        def write() -> None:
            for i in range(25):
                memories[w].add(Turn(role="user", text=f"writer {w} message {i} " * 3))

        return write

    _run([writer(w) for w in range(4)])
    store = database.open()
    versions = len(store.summaries("default", "s"))
    assert versions >= 3
    assert model.most_at_once == 1  # never two writers summarizing the session at once
    assert len(store.turns("default", "s")) == 100
    _check_every_turn_in_one_place(store, "s", [t.id for t in store.turns("default", "s")])


def test_a_fold_lease_claimed_after_another_writer_folded_wastes_no_call(tmp_path, monkeypatch):
    db = _Database("file", sqlite_url(tmp_path))
    model = _SlowSummarizer(delay=0.0)
    a, b = _lease_memory(db.open(), model), _lease_memory(db.open(), model)
    for i in range(25):
        a.add(Turn(role="user", text=f"message {i} about the garden " * 3), fold=False)
    claim = SessionSummaries.claim_lease
    interleaved: list[bool] = []

    def claim_lease(self: SessionSummaries, holder: str, period: float) -> bool:
        if self.db is db.stores[0].db and not interleaved:
            # A has loaded and planned its fold; B folds the session before A claims.
            interleaved.append(True)
            b.add(Turn(role="user", text="B's message"))
            assert db.stores[1].summaries("default", "s")
        return claim(self, holder, period)

    monkeypatch.setattr(SessionSummaries, "claim_lease", claim_lease)
    a.add(Turn(role="user", text="A's message"))
    assert interleaved
    versions = db.stores[0].summaries("default", "s")
    calls = [p for p in model.prompts if not p.startswith("Shorten")]
    db.close()
    assert len(calls) == len(versions), (len(calls), len(versions))


def test_a_dead_lease_holder_blocks_folds_for_at_most_one_period(monkeypatch):
    store = MemoryStore.in_memory()
    model = KeywordSummarizer()
    memory = RecursiveMemory(
        "s", store=store, model=model, retry=FAST, max_tokens=200, max_summary_tokens=40
    )
    for i in range(20):
        memory.add(Turn(role="user", text=f"message {i} about the garden " * 2), fold=False)
    period = max(MIN_LEASE_SECONDS, FAST.timeout)  # what a fold claims
    # A writer claimed the lease to fold, and died.
    assert store.session("default", "s").summaries.claim_lease("dead holder", period)
    clock = {"offset": 0.0}

    class Clock:
        @staticmethod
        def time() -> float:
            return time.time() + clock["offset"]

    monkeypatch.setattr(session_store, "time", Clock)
    for offset in (0.0, period - 1.0):
        clock["offset"] = offset
        memory.add(Turn(role="user", text=f"more at +{offset} s " * 3))
        assert store.summaries("default", "s") == []  # the fold was skipped: leased
    assert model.calls == 0  # not even a wasted call
    clock["offset"] = period + 0.5  # one period on: the dead holder's claim is over
    memory.add(Turn(role="user", text="one more"))
    assert store.summaries("default", "s")
    # The live holder released its lease: anyone may claim it now.
    assert store.session("default", "s").summaries.claim_lease("someone else", period)


# -- 8. background folds never crash the process --------------------------------------------

EXIT_WHILE_FOLDING = """
import sys
from langchain_recursive_memory.core import MemoryStore, RecursiveMemory, RetryPolicy, Turn

class Quick:  # answers at once: the background folds spend their time inside Chroma
    def complete(self, prompt):
        return "A summary of the earlier messages about the garden."
    async def acomplete(self, prompt):
        return self.complete(prompt)

memory = RecursiveMemory("s", store=MemoryStore.persistent(sys.argv[1]), model=Quick(),
                         background_folds=True, max_tokens=300, max_summary_tokens=40,
                         retry=RetryPolicy(attempts=1, timeout=30))
for i in range(150):
    memory.add(Turn(role="user", text=f"message {i} about the garden and the weather " * 5))
print("added", flush=True)
"""


@pytest.mark.slow
def test_exit_while_a_background_fold_runs_is_clean(tmp_path):
    # 0.1.0: SIGSEGV (exit 139): the daemon fold thread was inside Chroma while the
    # interpreter finalized (3 of 12 runs of this script here, 6 of 6 in the runs).
    for run in range(4):
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", EXIT_WHILE_FOLDING, str(tmp_path / f"db{run}")],
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        assert b"added" in done.stdout
        assert time.monotonic() - start < 60
        store = MemoryStore.persistent(tmp_path / f"db{run}")
        assert len(store.turns("default", "s")) == 150  # nothing lost


def test_one_slow_fold_does_not_hold_up_other_sessions():
    store = MemoryStore.in_memory()
    slow = RecursiveMemory(
        "slow",
        store=store,
        model=_SlowSummarizer(delay=3.0),
        background_folds=True,
        retry=FAST,
        max_tokens=200,
        max_summary_tokens=40,
    )
    fast = RecursiveMemory(
        "fast",
        store=store,
        model=KeywordSummarizer(),
        background_folds=True,
        retry=FAST,
        max_tokens=200,
        max_summary_tokens=40,
    )
    for i in range(12):
        slow.add(Turn(role="user", text=f"slow session message {i} " * 3))
    start = time.monotonic()
    for i in range(12):
        fast.add(Turn(role="user", text=f"fast session message {i} " * 3))
    assert fast.wait_for_folds(2.5)
    assert time.monotonic() - start < 2.5
    assert store.summaries("default", "fast")
    assert slow.wait_for_folds(15)


def test_model_calls_reuse_worker_threads(monkeypatch):
    # 0.1.0 started a new thread for every model call.
    started: list[str] = []
    start = threading.Thread.start

    def counting_start(self: threading.Thread) -> None:
        started.append(self.name)
        start(self)

    model = KeywordSummarizer()
    memory = RecursiveMemory(
        "s",
        store=MemoryStore.in_memory(),
        model=model,
        retry=FAST,
        max_tokens=200,
        max_summary_tokens=40,
    )
    monkeypatch.setattr(threading.Thread, "start", counting_start)
    for i in range(60):
        memory.add(Turn(role="user", text=f"message {i} about Oslo " * 3))
    assert model.calls >= 10
    assert len(started) <= 1, started  # at most the pool's first worker


# -- 9. bounded blocking ---------------------------------------------------------------------


def test_a_hanging_summarizer_blocks_add_only_until_the_fold_deadline():
    # 0.1.0: one add waited timeout x attempts (3 minutes with the defaults).
    model = FailingModel(mode="hang", hang_seconds=30.0)
    memory = RecursiveMemory(
        "s",
        store=MemoryStore.in_memory(),
        model=model,
        retry=RetryPolicy(attempts=3, timeout=60.0, initial_delay=0.0, fold_deadline=1.0),
        max_tokens=200,
        max_summary_tokens=40,
    )
    took: list[float] = []
    for i in range(15):
        start = time.monotonic()
        memory.add(Turn(role="user", text=f"message {i} about the garden " * 2))
        took.append(time.monotonic() - start)
    assert max(took) < 3.0, took
    assert len(memory.turns()) == 15  # nothing lost
    assert isinstance(memory.last_fold_error, ModelTimeoutError)
    assert memory.context().tokens <= 200


def test_the_default_fold_deadline_is_short_enough_for_a_chat_turn():
    assert RetryPolicy().fold_deadline <= 30.0
    with pytest.raises(ConfigurationError, match="fold_deadline"):
        RetryPolicy(fold_deadline=0)


# -- 10. several processes on one embedded path ---------------------------------------------

# Chroma's embedded client is opened when a store first uses Chroma (its facts, vectors):
# the warning is about Chroma's directory, the database (SQLite in WAL mode) is shared fine.
HOLD_THE_STORE = """
import sys, time
from langchain_recursive_memory.core import MemoryStore
MemoryStore.persistent(sys.argv[1]).user_facts("default", "ada")  # Chroma opened
print("open", flush=True)
time.sleep(30)
"""


def test_a_second_process_on_an_embedded_path_is_warned(tmp_path, caplog):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_STORE, str(tmp_path)], stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == b"open"
        with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
            store = MemoryStore.persistent(tmp_path)
            assert "another process" not in caplog.text  # the database alone: no warning
            store.user_facts("default", "ada")  # Chroma's embedded directory, opened
        assert "another process" in caplog.text and "chroma run" in caplog.text
    finally:
        holder.kill()
        holder.wait()


def test_one_process_alone_on_an_embedded_path_is_not_warned(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        MemoryStore.persistent(tmp_path).user_facts("default", "ada")
        MemoryStore.persistent(tmp_path).user_facts("default", "ada")  # a second object
    assert "another process" not in caplog.text
