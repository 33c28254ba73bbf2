"""Against real servers: PostgreSQL (the log) and `chroma run` (facts and vectors).

The promises of a store shared by many workers, tested on the servers they are made for:
a conversation folds, persists and resumes in another worker; writers in many processes
lose nothing and keep their order; either server may go away (a dead or stalled Chroma
fails fast; an unreachable database fails the add, names the database with its password
masked and writes nothing; Chroma down leaves the log and the context working) and come
back (a restart of each, mid-conversation); a retried append stores each turn once; a
process killed in the middle of a fold loses nothing (embedded: SQLite and a
``PersistentClient``).

The shared servers are the CI's or the fixtures' own (tests/conftest.py); a test that stops
a server runs its own (:class:`RestartablePostgres`, ``LocalChromaServer``).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import FAST, FAST_RETRY, NS, check_consistent, logged_texts, stored_vectors
from fakes import BagOfWordsEmbedder, CallbackModel, FactModel, KeywordSummarizer

from langchain_recursive_memory.core import (
    ConfigurationError,
    HybridMemory,
    MemoryStore,
    RecursiveMemory,
    StoreError,
    Turn,
    WriteOutcomeUnknownError,
)
from langchain_recursive_memory.core.cache import StoreCaches
from langchain_recursive_memory.core.storage.database import Database
from langchain_recursive_memory.core.storage.keys import window_kind
from langchain_recursive_memory.servers import LocalChromaServer, free_port
from langchain_recursive_memory.servers.postgres import (
    LocalPostgres,
    _as_postgres,
    find_bindir,
)

TESTS = Path(__file__).resolve().parent
WINDOW_KINDS = [window_kind(r) for r in (0, 1, 2)]


def exchange(i: int) -> list[Turn]:
    """One exchange; exchanges 3, 20 and 33 state a fact."""
    said = {
        3: "By the way, my locker code is 4471.",
        20: "Also: my home city is Trondheim.",
        33: "And my dog is Rex.",
    }
    question = said.get(i, f"Let's chat about the weather again, round {i}, Alice and Bob {i * 7}.")
    return [
        Turn(role="user", text=question),
        Turn(role="assistant", text=f"Sure, the weather is a fine topic for round {i}."),
    ]


def hybrid(store: MemoryStore, session: str = "s", **kwargs: Any) -> HybridMemory:
    """A hybrid memory with facts and an embedder: every fold writes to Chroma too."""
    kwargs.setdefault("model", FactModel())
    kwargs.setdefault("max_tokens", 600)
    kwargs.setdefault("max_summary_tokens", 120)
    return HybridMemory(session, store=store, embedder=BagOfWordsEmbedder(), retry=FAST, **kwargs)


def window_refs(store: MemoryStore, memory: HybridMemory, session: str = "s") -> set[str]:
    """The turn ids that have a window vector in Chroma."""
    assert memory.space is not None
    return {r.ref for r in stored_vectors(store, memory.space, NS, session, WINDOW_KINDS)}


class RestartablePostgres(LocalPostgres):
    """A :class:`LocalPostgres` whose server can go away and come back on the same data.

    ``LocalPostgres.stop`` removes the cluster; :meth:`halt` only stops the server
    (immediate shutdown, as a crash: the restart recovers from the write-ahead log) and
    :meth:`resume` starts it again on the same directory and port.
    """

    def halt(self) -> None:
        assert self.process is not None and self.pid_file is not None
        postmaster = int(self.pid_file.read_text().split()[0])
        os.kill(postmaster, signal.SIGQUIT)
        self.process.wait(30)
        self.process = None

    def resume(self) -> None:
        import psycopg

        assert self.process is None and self.path is not None
        bindir = self.bindir or find_bindir()
        assert bindir is not None
        command = [str(bindir / "postgres"), "-D", str(self.path / "data"), "-h", self.host]
        command += ["-p", str(self.port), "-k", str(self.path)]
        with open(self.path / "server.log", "ab") as log:
            self.process = subprocess.Popen(
                _as_postgres() + command, cwd=self.path, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 60
        while True:
            assert self.process.poll() is None, (self.path / "server.log").read_text()[-2000:]
            try:
                psycopg.connect(
                    host=self.host,
                    port=self.port,
                    user="postgres",
                    dbname=self.database,
                    connect_timeout=2,
                ).close()
                return
            except psycopg.OperationalError:
                assert time.monotonic() < deadline, "PostgreSQL did not come back"
                time.sleep(0.1)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@pytest.fixture(scope="module")
def restartable_pg() -> Iterator[RestartablePostgres]:
    """A PostgreSQL server of this module's own, that tests may stop and start again."""
    if find_bindir() is None:
        pytest.skip("PostgreSQL's binaries (initdb, postgres) are not installed")
    server = RestartablePostgres().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg(restartable_pg: RestartablePostgres) -> Iterator[RestartablePostgres]:
    """The module's restartable PostgreSQL, running at the start and the end of a test."""
    if not restartable_pg.running:
        restartable_pg.resume()
    yield restartable_pg
    if not restartable_pg.running:
        restartable_pg.resume()


@pytest.fixture
def own_chroma(tmp_path: Path) -> Iterator[LocalChromaServer]:
    """A Chroma server of the test's own (it may stop and start it again)."""
    server = LocalChromaServer(tmp_path / "chroma").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_prefix(pg_url: str) -> Iterator[str]:
    """A fresh prefix in the shared PostgreSQL; its tables are dropped afterwards."""
    prefix = f"t{uuid.uuid4().hex[:12]}"
    yield prefix
    db = Database.open(pg_url, prefix, create=False)
    db.tables.metadata.drop_all(db.engine)
    db.dispose()


def fresh_prefix() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


# -- a conversation on the servers ------------------------------------------------------------


@pytest.mark.server
def test_history_on_a_server_folds_persists_and_resumes(server_store, chroma_server, pg_url):
    model = KeywordSummarizer()
    memory = RecursiveMemory(
        "s", store=server_store, model=model, retry=FAST, max_tokens=400, max_summary_tokens=80
    )
    for i in range(40):
        memory.add(Turn(role="user", text=f"Server message {i} about Oslo and {i} cats."))
        assert memory.context().tokens <= 400
    assert memory.get_summary() is not None
    # Another worker: its own store object and caches, the same servers and prefix.
    host, port = chroma_server
    other = MemoryStore.http(
        host, port, database=pg_url, prefix=server_store.prefix, cache=StoreCaches()
    )
    try:
        again_model = KeywordSummarizer()
        again = RecursiveMemory(
            "s",
            store=other,
            model=again_model,
            retry=FAST,
            max_tokens=400,
            max_summary_tokens=80,
        )
        assert again.context().turns == memory.context().turns
        assert again.get_summary() == memory.get_summary()
        assert other.summaries(NS, "s") == server_store.summaries(NS, "s")
        assert again_model.calls == 0, "the summary is persisted: resuming summarizes nothing"
        check_consistent(other, "s", 40)
    finally:
        other.close()


def test_a_server_store_needs_a_database():
    with pytest.raises(ConfigurationError, match="database"):
        MemoryStore.http("127.0.0.1", free_port())


@pytest.mark.server
def test_a_dead_or_stalled_chroma_server_fails_fast(pg_url):
    port = free_port()  # nothing listens
    start = time.monotonic()
    with pytest.raises(StoreError, match="heartbeat"):
        MemoryStore.http("127.0.0.1", port, database=pg_url, timeout=2)
    assert time.monotonic() - start < 5

    listener = socket.socket()  # accepts connections, never answers
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stalled = listener.getsockname()[1]
    try:
        start = time.monotonic()
        with pytest.raises(StoreError, match="heartbeat"):
            MemoryStore.http("127.0.0.1", stalled, database=pg_url, timeout=1.5)
        assert time.monotonic() - start < 5
    finally:
        listener.close()


# -- the database goes away -------------------------------------------------------------------


@pytest.mark.server
def test_an_unreachable_database_fails_the_add_naming_it_and_writes_nothing(pg, chroma_server):
    host, port = chroma_server
    url = pg.url.replace("postgres@", "postgres:secret@")  # trust auth: the password is unused
    store = MemoryStore.http(host, port, database=url, prefix=fresh_prefix())
    memory = RecursiveMemory(
        "s",
        store=store,
        model=KeywordSummarizer(),
        retry=FAST,
        max_tokens=400,
        max_summary_tokens=80,
    )
    said = [f"before the outage {i} " * 4 for i in range(20)]
    for text in said:
        memory.add(Turn(role="user", text=text))
    versions = store.summaries(NS, "s")
    assert versions, "20 messages in 400 tokens must fold"

    pg.halt()
    down = Turn(role="user", text="said while the database is down", id="turn-during-outage")
    start = time.monotonic()
    with pytest.raises(StoreError) as info:
        memory.add(down)
    elapsed = time.monotonic() - start
    assert elapsed < 15, f"took {elapsed:.1f}s"
    message = str(info.value)
    assert f"postgresql+psycopg://postgres:***@127.0.0.1:{pg.port}/lrm" in message
    assert "append" in message
    shown = "".join(traceback.format_exception(info.value))
    assert "secret" not in shown, "the password leaks through the error or its cause"
    # A read says so too, rather than answering from nothing.
    with pytest.raises(StoreError, match=r"postgres:\*\*\*@"):
        memory.context()

    pg.resume()
    assert logged_texts(store, "s") == said, "the refused add wrote something"
    assert store.summaries(NS, "s") == versions
    check_consistent(store, "s", 20)
    # The caller retries the refused add (the same turn, with its id): stored once.
    memory.add(down)
    memory.add(down)
    for i in range(10):
        memory.add(Turn(role="user", text=f"after the outage {i} " * 4))
        assert memory.context().tokens <= 400
    assert logged_texts(store, "s").count(down.text) == 1
    check_consistent(store, "s", 31)
    store.close()


@pytest.mark.server
def test_the_database_going_away_during_a_fold_leaves_no_half_written_version(pg, chroma_server):
    host, port = chroma_server
    store = MemoryStore.http(host, port, database=pg.url, prefix=fresh_prefix())
    armed = threading.Event()

    def outage(prompt: str) -> None:  # the database goes away while the summary is written
        if armed.is_set():
            armed.clear()
            pg.halt()

    memory = RecursiveMemory(
        "s",
        store=store,
        model=CallbackModel(outage),
        retry=FAST,
        max_tokens=400,
        max_summary_tokens=80,
    )
    for i in range(10):
        memory.add(Turn(role="user", text=f"message {i} about Bergen " * 3), fold=False)
    armed.set()
    big = Turn(role="user", text="a long message that makes the window overflow " * 30)
    stored = memory.add(big)  # stored, then its fold fails at the commit: add still succeeds
    assert not armed.is_set(), "the fold did not run"
    assert [t.turn.text for t in stored] == [big.text]
    assert isinstance(memory.last_fold_error, StoreError)

    pg.resume()
    assert store.summaries(NS, "s") == [], "a version was written without its commit"
    check_consistent(store, "s", 11)
    assert memory.context().tokens <= 400
    result = memory.fold()  # the fold resumes
    assert result.versions >= 1 and result.error is None
    memory.add(Turn(role="user", text="one more about Bergen"))
    check_consistent(store, "s", 12)
    assert memory.last_fold_error is None
    store.close()


# -- an append whose answer is lost ------------------------------------------------------------


@contextmanager
def lost_answers(store: MemoryStore) -> Iterator[list[int]]:
    """Appends whose commit lands and then loses its answer (the connection drops).

    Only the commits of appends (transactions that read or write the turns of a session:
    a retried append first looks for the turns its lost commit stored) lose their answer.
    Yields a one-item list: how many of the next such commits lose it.
    """
    import psycopg
    from sqlalchemy import event

    engine = store.db.engine
    dialect = engine.dialect
    real = dialect.do_commit
    table = store.db.tables.turns.name.upper()
    budget = [0]
    appending: set[int] = set()

    def mark(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if f" {table} " in f" {statement.upper()} " and conn.get_execution_options().get(
            "lrm_write"
        ):
            appending.add(id(conn.connection))  # the pool's proxy, as do_commit gets it

    def do_commit(connection: Any) -> None:
        real(connection)
        if id(connection) in appending:
            appending.discard(id(connection))
            if budget[0] > 0:  # committed: only the answer is lost
                budget[0] -= 1
                raise psycopg.OperationalError("server closed the connection unexpectedly")

    event.listen(engine, "before_cursor_execute", mark)
    dialect.do_commit = do_commit  # type: ignore[method-assign]
    try:
        yield budget
    finally:
        del dialect.do_commit
        event.remove(engine, "before_cursor_execute", mark)


@pytest.mark.server
def test_an_append_whose_answer_is_lost_is_stored_once(server_store):
    memory = RecursiveMemory("s", store=server_store, retry=FAST)
    memory.add(Turn(role="user", text="first"))
    with lost_answers(server_store) as budget:
        # The database layer retries the transaction itself: the turn is written once,
        # and the add answers with it as stored.
        budget[0] = 1
        stored = memory.add(Turn(role="user", text="the answer to this append is lost once"))
        assert budget[0] == 0, "no append lost its answer"
        # Every answer lost: the add fails, saying the outcome is unknown, and hands the
        # turns back with the ids they were given; added again, each is stored once.
        server_store.retry = FAST_RETRY
        budget[0] = 100
        with pytest.raises(WriteOutcomeUnknownError, match="append") as info:
            memory.add(
                [
                    Turn(role="user", text="a question whose add failed"),
                    Turn(role="assistant", text="its answer"),
                ]
            )
        budget[0] = 0
    again = list(info.value.turns)
    assert [t.text for t in again] == ["a question whose add failed", "its answer"]
    assert all(t.id for t in again)
    memory.add(again)
    memory.add(again)
    log = server_store.turns(NS, "s")
    assert [t.turn.text for t in log] == [
        "first",
        "the answer to this append is lost once",
        "a question whose add failed",
        "its answer",
    ]
    assert [t.id for t in log][2:] == [t.id for t in again]
    assert [(t.id, t.seq) for t in stored] == [(log[1].id, log[1].seq)]
    assert [t.seq for t in log] == sorted(t.seq for t in log)


@pytest.mark.server
def test_a_retried_append_leaves_no_gap_in_the_order_keys(server_store):
    memory = RecursiveMemory("s", store=server_store, retry=FAST)
    with lost_answers(server_store) as budget:
        budget[0] = 1
        memory.add(Turn(role="user", text="the answer to this append is lost once"))
        assert budget[0] == 0, "no append lost its answer"
    again = Turn(role="user", text="added twice", id="twice")
    memory.add(again)
    memory.add(again)
    memory.add(Turn(role="user", text="last"))
    log = server_store.turns(NS, "s")
    assert [t.seq for t in log] == [1, 2, 3]
    head = server_store.session(NS, "s").head()
    assert head is not None and head.last_seq == 3


# -- Chroma goes away while the database is up ---------------------------------------------


def _chroma_outage_start(
    chroma: LocalChromaServer, pg_url: str, prefix: str
) -> tuple[MemoryStore, HybridMemory]:
    store = MemoryStore.http(chroma.host, chroma.port, database=pg_url, prefix=prefix, timeout=3)
    store.retry = FAST_RETRY
    memory = hybrid(store)
    for i in range(12):
        memory.add(exchange(i))
    assert store.summaries(NS, "s"), "12 exchanges in 600 tokens must fold"
    assert [f.key for f in memory.facts()] == ["user/locker_code"]
    return store, memory


@pytest.mark.server
def test_with_chroma_down_add_stores_every_turn_and_the_memory_catches_up(
    own_chroma, pg_url, pg_prefix
):
    store, memory = _chroma_outage_start(own_chroma, pg_url, pg_prefix)
    own_chroma.stop()
    during: list[str] = []
    for i in range(12, 30):  # exchange 20 states the home city
        stored = memory.add(exchange(i))  # never raises: the turns are in the database
        assert [t.turn.text for t in stored] == [t.text for t in exchange(i)]
        during += [t.id for t in stored]
        assert memory.context().tokens <= 600
    expected = [t.text for i in range(30) for t in exchange(i)]
    assert logged_texts(store, "s") == expected
    check_consistent(store, "s", 60)
    # A question's context recalls what it can (the turns are in the database).
    context = memory.context("What is my home city?")
    assert context.tokens <= 600
    shown = [t.text for t in context.window] + [h.text for h in context.recalled]
    assert "Also: my home city is Trondheim." in shown

    own_chroma.start()  # same data, same port
    for i in range(30, 40):
        memory.add(exchange(i))
        assert memory.context().tokens <= 600
    log = store.turns(NS, "s")
    expected += [t.text for i in range(30, 40) for t in exchange(i)]
    assert [t.turn.text for t in log] == expected
    check_consistent(store, "s", 80)
    assert memory.last_fold_error is None
    folded = {t.id for t in log if t.folded_in}
    assert set(during) <= folded, "the turns of the outage are folded once Chroma is back"
    # What a fold writes to Chroma caught up: the fact stated during the outage, and the
    # vectors of the turns archived then.
    facts = {f.key: f.text for f in memory.facts()}
    assert facts["user/home_city"] == "The user's home city is Trondheim."
    assert facts["user/dog"] == "The user's dog is Rex."
    hits = memory.recall("What is my home city?", k=5)
    assert "The user's home city is Trondheim." in [h.text for h in hits]
    missing = folded - window_refs(store, memory)
    assert not missing, f"{len(missing)} archived turns have no vector"
    store.close()


@pytest.mark.server
def test_with_chroma_down_the_fold_waits_and_the_context_keeps_its_budget(
    own_chroma, pg_url, pg_prefix
):
    """By design the fold that needs Chroma (its facts) waits: no summary version is
    committed during the outage, the turns stay in the window and the log, the context
    stays in budget, and the add never fails (the next fold after the outage folds them)."""
    store, memory = _chroma_outage_start(own_chroma, pg_url, pg_prefix)
    before = len(store.summaries(NS, "s"))
    own_chroma.stop()
    for i in range(12, 30):
        memory.add(exchange(i))
    check_consistent(store, "s", 60)
    assert len(store.summaries(NS, "s")) == before  # waited
    assert isinstance(memory.last_fold_error, StoreError)
    assert memory.context().tokens <= memory.config.max_tokens
    store.close()


# -- many writers ---------------------------------------------------------------------------


WRITER = textwrap.dedent(
    """
    import sys, time
    from langchain_recursive_memory.core import (
        FunctionTextModel, MemoryStore, RecursiveMemory, RetryPolicy, Turn)
    host, port, database, prefix, writer, count = sys.argv[1:7]

    def summarize(prompt):  # a summarizer that takes a while, as a real one does
        time.sleep(0.02)
        return "Writers talked about their messages " + prompt.split()[-3]

    store = MemoryStore.http(host, int(port), database=database, prefix=prefix)
    memory = RecursiveMemory("shared", store=store, max_tokens=600, max_summary_tokens=100,
                             model=FunctionTextModel(summarize),
                             retry=RetryPolicy(attempts=1, cooldown=0.0))
    for i in range(int(count)):
        memory.add(Turn(role="user", text=f"writer {writer} message {i} " + "word " * 8))
    """
)


@pytest.mark.server
@pytest.mark.slow
def test_eight_processes_write_one_session_through_the_servers(server_store, chroma_server, pg_url):
    host, port = chroma_server
    args = [sys.executable, "-c", WRITER, host, str(port), pg_url, server_store.prefix]
    writers = [subprocess.Popen([*args, str(w), "250"], stderr=subprocess.PIPE) for w in range(8)]
    for proc in writers:
        _, err = proc.communicate(timeout=1200)
        assert proc.returncode == 0, err.decode()[-3000:]
    log = server_store.turns(NS, "shared")
    assert len(log) == 2000
    assert [t.seq for t in log] == list(range(1, 2001)), "gaps or duplicate order keys"
    for w in range(8):
        mine = [
            t.turn.text.split(" word")[0] for t in log if t.turn.text.startswith(f"writer {w} ")
        ]
        assert mine == [f"writer {w} message {i}" for i in range(250)]  # each writer's order
    check_consistent(server_store, "shared", 2000)
    # Summary ranges in log order (0.1.0: 4-23 of ~250 versions out of order) and no
    # wasted summarizer calls (0.1.0: 525-585 calls for 245-262 versions).
    seq = {t.id: t.seq for t in log}
    versions = server_store.summaries(NS, "shared")
    ranges = [(min(seq[t] for t in v.turn_ids), max(seq[t] for t in v.turn_ids)) for v in versions]
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges)), "a version out of order"
    fold = server_store.usage(NS, "shared")["fold"]
    assert fold.calls + fold.failed_calls <= 1.1 * len(versions), (fold, len(versions))


@pytest.mark.slow
def test_eight_threads_write_one_session_in_an_embedded_store(tmp_path):
    store = MemoryStore.persistent(tmp_path)
    errors: list[BaseException] = []

    def work(w: int) -> None:
        try:
            memory = RecursiveMemory(
                "shared",
                store=MemoryStore.persistent(tmp_path),
                max_tokens=600,
                max_summary_tokens=100,
                retry=FAST,
            )
            for i in range(250):
                memory.add(Turn(role="user", text=f"writer {w} message {i} " + "word " * 8))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    log = store.turns(NS, "shared")
    assert [t.seq for t in log] == list(range(1, 2001)), "gaps or duplicate order keys"
    for w in range(8):
        mine = [
            t.turn.text.split(" word")[0] for t in log if t.turn.text.startswith(f"writer {w} ")
        ]
        assert mine == [f"writer {w} message {i}" for i in range(250)]
    check_consistent(store, "shared", 2000)


# -- the servers restart ----------------------------------------------------------------------


@pytest.mark.server
def test_the_chroma_and_postgres_servers_restart_mid_conversation(own_chroma, pg):
    prefix = fresh_prefix()
    store = MemoryStore.http(own_chroma.host, own_chroma.port, database=pg.url, prefix=prefix)
    store.retry = FAST_RETRY
    memory = hybrid(store)
    accepted: list[str] = []

    def say(i: int) -> None:
        memory.add(exchange(i))
        accepted.extend(t.text for t in exchange(i))
        assert memory.context().tokens <= 600

    for i in range(10):
        say(i)
    own_chroma.stop()  # Chroma restarts: the conversation goes on
    for i in range(10, 14):
        say(i)
    own_chroma.start()
    for i in range(14, 22):
        say(i)
    pg.halt()  # the database restarts: the add is refused, and the caller is told
    with pytest.raises(StoreError):
        memory.add(Turn(role="user", text="said while the database is down"))
    pg.resume()
    for i in range(22, 36):
        say(i)
    assert memory.fold().error is None
    log = store.turns(NS, "s")
    assert [t.turn.text for t in log] == accepted
    check_consistent(store, "s", len(accepted))
    assert memory.get_summary() is not None and memory.last_fold_error is None
    facts = {f.key: f.text for f in memory.facts()}
    assert facts["user/locker_code"] == "The user's locker code is 4471."
    assert facts["user/home_city"] == "The user's home city is Trondheim."
    # Another worker reads the same conversation.
    other = MemoryStore.http(
        own_chroma.host, own_chroma.port, database=pg.url, prefix=prefix, cache=StoreCaches()
    )
    again = hybrid(other)
    assert again.context().turns == memory.context().turns
    query = "What is my home city?"
    assert again.context(query).turns == memory.context(query).turns
    assert other.summaries(NS, "s") == store.summaries(NS, "s")
    other.close()
    store.close()


# -- a process killed in the middle of a fold (embedded: SQLite and PersistentClient) ---------


ATTRIBUTES = ["locker code", "home city", "dog", "car", "favourite colour"]
VALUES = ["4471", "Trondheim", "Rex", "a Volvo", "green"]


def killed_fold_text(i: int) -> str:
    if i % 8 == 3:
        k = i // 8
        return f"By the way, my {ATTRIBUTES[k]} is {VALUES[k]}."
    return f"message {i} about the weather and the garden " * 2


KILLED_FOLD = textwrap.dedent(
    """
    import json, os, signal, sys, time
    path, marker, where, tests, said = sys.argv[1:6]
    sys.path.insert(0, tests)
    from fakes import BagOfWordsEmbedder, FactModel
    from langchain_recursive_memory.core import HybridMemory, MemoryStore, RetryPolicy, Turn
    from langchain_recursive_memory.core.storage.facts import FactTable
    from langchain_recursive_memory.core.storage.session_store import SessionSummaries
    from langchain_recursive_memory.core.storage.vectors import VectorSpaces

    def die_after(cls, name):  # the call completes, then the process is killed
        real = getattr(cls, name)
        def call(self, *args, **kwargs):
            result = real(self, *args, **kwargs)
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
            return result
        setattr(cls, name, call)

    class Model(FactModel):
        def _answer(self, prompt):
            if where == "in-llm":
                open(marker, "w").close()
                time.sleep(60)
            return super()._answer(prompt)

    store = MemoryStore.persistent(path)
    memory = HybridMemory("s", store=store, model=Model(), embedder=BagOfWordsEmbedder(),
                          retry=RetryPolicy(attempts=1, timeout=120, cooldown=0),
                          max_tokens=400, max_summary_tokens=80)
    for text in json.loads(open(said).read()):
        memory.add(Turn(role="user", text=text), fold=False)
    open(marker + ".added", "w").close()
    if where == "in-facts":  # the facts are in Chroma; the version is not committed yet
        die_after(FactTable, "put")
    elif where == "after-commit":  # the version and its turns' marks are committed
        die_after(SessionSummaries, "commit")
    elif where == "in-vectors":  # the version committed; some of its vectors written
        die_after(VectorSpaces, "put")
    memory.fold()
    """
)

KILL_POINTS = {"in-llm": 0, "in-facts": 0, "after-commit": 1, "in-vectors": 1}


@pytest.mark.parametrize(
    "where",
    [
        "in-llm",
        "after-commit",
        pytest.param("in-facts", marks=pytest.mark.slow),
        pytest.param("in-vectors", marks=pytest.mark.slow),
    ],
)
def test_sigkill_in_the_middle_of_a_fold_loses_nothing(tmp_path, where):
    marker = tmp_path / "marker"
    path = tmp_path / "db"
    said = [killed_fold_text(i) for i in range(40)]
    (tmp_path / "said.json").write_text(json.dumps(said))
    args = [str(path), str(marker), where, str(TESTS), str(tmp_path / "said.json")]
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_FOLD, *args],
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    if where == "in-llm":
        proc.kill()  # SIGKILL, while the summarizer answers
    proc.wait(120)
    assert proc.returncode == -signal.SIGKILL
    assert Path(str(marker) + ".added").exists()

    store = MemoryStore.persistent(path)
    assert logged_texts(store, "s") == said
    check_consistent(store, "s", 40)
    assert len(store.summaries(NS, "s")) == KILL_POINTS[where]  # the kill came where meant
    memory = hybrid(store, max_tokens=400, max_summary_tokens=80)
    keys = [f.key for f in memory.facts()]
    assert len(keys) == len(set(keys))
    assert memory.context().tokens <= 400
    memory.fold()  # folding resumes
    memory.add(Turn(role="user", text="one more message"))
    check_consistent(store, "s", 41)
    assert memory.get_summary() is not None and memory.last_fold_error is None
    memory.fold(force=True, keep=False)  # the conversation ends: every turn folded
    check_consistent(store, "s", 41)
    log = store.turns(NS, "s")
    assert all(t.folded_in for t in log)
    facts = memory.facts()
    assert sorted(f.key for f in facts) == sorted(f"user/{a.replace(' ', '_')}" for a in ATTRIBUTES)
    ids = {t.id for t in log}
    assert all(set(f.source_turn_ids) <= ids for f in facts)
    # Vectors are derived state: a recall brings back any the kill left unwritten.
    assert memory.recall("What is my home city?", k=3)
    missing = {t.id for t in log} - window_refs(store, memory)
    assert not missing, f"{len(missing)} archived turns have no vector"


# -- one user's sessions folded by several processes at once ---------------------------------


USER_WRITER = textwrap.dedent(
    r"""
    import json, re, sys, time
    from langchain_recursive_memory.core import (
        FunctionTextModel, HybridMemory, MemoryStore, RetryPolicy, Turn)
    host, port, database, prefix, writer, start = sys.argv[1:7]
    line = re.compile(r"^\[(\d+)\] (?:\[[^\]]*\] )?user: (.*)$", re.M)
    statement = re.compile(r"\bMy (\w+) is (\w+)")

    def summarize(prompt):
        said = line.findall(prompt)
        facts = [{"key": f"user/{a}", "fact": f"The user's {a} is {v}.", "sources": [int(n)]}
                 for n, text in said for a, v in statement.findall(text)]
        body = "\n".join(json.dumps(f) for f in facts)
        return f"<summary>{' '.join(t for _, t in said)}</summary>\n<facts>\n{body}\n</facts>"

    store = MemoryStore.http(host, int(port), database=database, prefix=prefix)
    memory = HybridMemory(f"s{writer}", store=store, user_id="ada", max_tokens=2000,
                          model=FunctionTextModel(summarize),
                          retry=RetryPolicy(attempts=1, cooldown=0.0))
    said_at = 1_000_000_000 + 86400 * int(writer)  # a later writer said it later
    for i in range(12):
        memory.add(Turn(role="user", text=f"My k{i} is value{writer}.", created_at=said_at + i))
    time.sleep(max(0.0, float(start) - time.time()))  # every writer folds at once
    memory.fold(force=True, keep=False)
    """
)


@pytest.mark.server
@pytest.mark.slow
def test_processes_folding_one_users_sessions_at_once_keep_every_statement(
    server_store, chroma_server, pg_url
):
    host, port = chroma_server
    start = str(time.time() + 8)
    args = [sys.executable, "-c", USER_WRITER, host, str(port), pg_url, server_store.prefix]
    writers = [subprocess.Popen([*args, str(w), start], stderr=subprocess.PIPE) for w in range(4)]
    for proc in writers:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()[-3000:]
    facts = server_store.user_facts(NS, "ada")
    assert len(facts) == 12
    for fact in facts:
        assert set(fact.session_ids) == {"s0", "s1", "s2", "s3"}, fact
        assert fact.text.endswith("is value3.")  # the newest statement wins
    for w in range(4):
        check_consistent(server_store, f"s{w}", 12)
