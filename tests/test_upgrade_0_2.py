"""Upgrade from 0.2.0: this release opens a store written by the 0.2.0 release.

``tests/data/store-0.2.0`` was written by 0.2.0 (commit ``74f87b1``) with
``tests/data/make_store_0_2_0.py`` (its docstring lists what each session covers), and
``expected.json`` beside it is what 0.2.0 read back from it in a fresh process. The store
is never regenerated with newer code. Each test works on a copy in ``tmp_path`` (the
read-only tests share one, migrated once): nothing is ever written into ``tests/data``.

0.2.0 kept everything in Chroma; this release keeps the log in a database and the facts
and vectors in Chroma, and moves each session into the database the first time a process
opens the store (:mod:`~langchain_recursive_memory.core.storage.migrations`). Every
session of ``expected.json`` must read the same afterwards, with models and embedders
that fail if called. What legitimately changed is mapped explicitly:

* **Order keys.** 0.2.0 ordered turns by a nanosecond clock (``StoredTurn.seq``); the
  database numbers a session's turns 1, 2, 3... in the order the log held them. The tests
  compare the order (``seq`` is each turn's position, :func:`renumbered`).
* **``Summary.last_seq``** is in the new numbering: the ``seq`` of the last turn at or
  before 0.2.0's key (:func:`new_last_seq`). ``folded_in`` of every turn is kept.
* **The session's state.** 0.2.0's ``SessionState.stamp`` (the session's stamp record)
  is the session's head today: ``stamp.memory`` is ``head.memory``, ``stamp.user_id`` is
  ``head.user_id``; ``repair_ids`` (turns a crashed fold named but left unflagged) is
  gone: the migration marks such turns folded by the version naming them (0.2.0's reads
  left them out of the window too; :func:`test_a_fold_that_a_crash_left_unflagged_stays_folded`).
* **Vectors** stay in Chroma as 0.2.0 wrote them (read here with chromadb, as the script
  read them: 0.2.0 had no API listing a session's vectors).

The oddities of the fixture (see the script's docstring): the turns of
``default/higmem-waiting`` wait to be indexed, and 0.2.0 did not read its events or nodes
(reading them indexes the turns, a write): here they are checked before and after such a
read, on a copy of their own. The tool results of ``default/agent-thread-1`` have
LangGraph's random ids: they are compared as stored, never predicted.
``default/cleared`` was cleared and written again with partly the same turn ids: only its
new turns are read.

The migration: every session moved once, the log marked, the vectors left; a dry run
(``lrm migrate --dry-run`` too) changes nothing; a session whose record a crash left
unwritten is found by its turns; a cleared session and a forgotten user stay gone in a new
process; two processes migrating into PostgreSQL at once (marked ``server``).

Then the conversations go on: a recursive session folds new versions after its old ones,
a hybrid session updates a fact, a user's new session sees the user's facts, HiGMem
indexes new turns, the agent thread continues through ``RecursiveMemoryMiddleware``; and a
store object with caches of its own (as a new process) reads what the writing one reads.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import FAST_RETRY, cli_runner, data, new_last_seq, renumbered, stored_turn
from fakes import BagOfWordsEmbedder, FactModel, HiGMemModel, KeywordSummarizer
from langchain.agents import create_agent
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, messages_to_dict
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from sqlalchemy import select

from langchain_recursive_memory import (
    RecursiveMemoryMiddleware,
    RecursiveSummaryChatMessageHistory,
)
from langchain_recursive_memory.cli import app
from langchain_recursive_memory.core import (
    HiGMem,
    HybridMemory,
    MemoryStore,
    RecursiveMemory,
    Turn,
)
from langchain_recursive_memory.core.cache import StoreCaches
from langchain_recursive_memory.core.storage.client import persistent_client
from llamaindex_higmem import RecursiveSummaryMemory

FIXTURE = Path(__file__).parent / "data" / "store-0.2.0"
EXPECTED: dict[str, Any] = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
PREFIX = EXPECTED["prefix"]
SESSIONS: dict[str, dict[str, Any]] = EXPECTED["sessions"]
USERS: dict[str, dict[str, Any]] = EXPECTED["users"]
SPACE = "bagofwordsembedder"  # the vector collection of 0.2.0's BagOfWordsEmbedder(16)
BASE = 1761984000.0  # the fixture's given turn times start at 2025-11-01 08:00 UTC
AGENT_SYSTEM = "You are a careful warehouse assistant."  # as the script's agent


def of_kind(*kinds: str) -> list[str]:
    return [key for key, entry in SESSIONS.items() if entry["kind"] in kinds]


def scope(key: str) -> tuple[str, str]:
    entry = SESSIONS[key]
    return entry["namespace"], entry["session_id"]


def summaries_now(key: str) -> list[dict[str, Any]]:
    """The session's summary versions as 0.2.0 read them, ``last_seq`` renumbered."""
    turns = SESSIONS[key]["turns"]
    return [
        {**s, "last_seq": new_last_seq(s["last_seq"], turns)} for s in SESSIONS[key]["summaries"]
    ]


def copy_fixture(target: Path) -> Path:
    shutil.copytree(FIXTURE, target)
    return target


def fresh(path: Path, **options: Any) -> MemoryStore:
    """A store object with caches of its own: what a new process opens (and migrates)."""
    return MemoryStore.persistent(path, prefix=PREFIX, cache=StoreCaches(), **options)


class Refuse:
    """A model and embedder that fail if called (records the attempt first)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def _fail(self, what: str) -> Any:
        self.calls.append(what)
        raise AssertionError(f"a read of a 0.2.0 session called the {what}")

    def complete(self, prompt: str) -> str:
        return self._fail("model")

    async def acomplete(self, prompt: str) -> str:
        return self._fail("model")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._fail("embedder")

    def embed_query(self, text: str) -> list[float]:
        return self._fail("embedder")


@pytest.fixture(scope="module")
def old_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the fixture for the read-only tests."""
    return copy_fixture(tmp_path_factory.mktemp("upgrade-0.2") / "store")


@pytest.fixture(scope="module")
def old_store(old_path: Path) -> MemoryStore:
    """The read-only copy, opened (and so migrated) once by today's code."""
    return fresh(old_path)


def vector_records(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Every record of each vector collection, read with chromadb (as the script did)."""
    client = persistent_client(path)
    names = sorted(c if isinstance(c, str) else c.name for c in client.list_collections())
    out: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        if not name.startswith(f"{PREFIX}_vec_"):
            continue
        got = client.get_collection(name).get(include=["metadatas", "embeddings"])
        out[name[len(f"{PREFIX}_vec_") :]] = [
            {
                "id": rid,
                "kind": str(meta["kind"]),
                "ref": str(meta["ref"]),
                "text_hash": str(meta.get("h", "")),
                "namespace": meta.get("ns"),
                "session_id": meta.get("sid"),
                "user_id": meta.get("uid"),
                "user_owned": "uo" in meta,
                "dimension": len(vector),
            }
            for rid, meta, vector in zip(
                got["ids"], got["metadatas"] or [], got["embeddings"], strict=True
            )
        ]
    return out


@pytest.fixture(scope="module")
def vectors(old_store: MemoryStore, old_path: Path) -> dict[str, list[dict[str, Any]]]:
    """The vector records of the migrated read-only copy."""
    return vector_records(old_path)


def owned_by(records: dict[str, list[dict[str, Any]]], **owner: Any) -> dict[str, Any]:
    fields = ("id", "kind", "ref", "text_hash")
    return {
        space: sorted(
            ({f: r[f] for f in fields} for r in rows if all(r[k] == v for k, v in owner.items())),
            key=lambda r: r["id"],
        )
        for space, rows in records.items()
    }


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return copy_fixture(tmp_path / "store")


# -- the fixture itself ---------------------------------------------------------------------


def test_the_fixture_was_written_by_0_2_0_and_names_no_absolute_path():
    assert EXPECTED["written_by"]["langchain_recursive_memory"] == "0.2.0"
    assert EXPECTED["written_by"]["release_commit"] == "74f87b1"
    assert len(SESSIONS) == 15 and len(USERS) == 3
    for path in FIXTURE.rglob("*"):
        if path.is_file():
            raw = path.read_bytes()
            assert b"/tmp/" not in raw and b"/work/" not in raw and b"/home/" not in raw, path


# -- reads: what 0.2.0 read ------------------------------------------------------------------


def test_sessions_users_and_activity_read_the_same(old_store):
    assert data(old_store.sessions()) == EXPECTED["sessions_list"]
    assert data(old_store.users()) == EXPECTED["users_list"]
    for by, expected in (
        ("written", EXPECTED["activity"]),
        ("created", EXPECTED["activity_created"]),
    ):
        activity = [
            {"namespace": ns, "session_id": sid, "last": last}
            for (ns, sid), last in sorted(old_store.activity(by=by).items())
        ]
        assert activity == expected, by
    for key, entry in SESSIONS.items():
        assert old_store.session_settings(*scope(key)) == entry["settings"]
        assert old_store.session_user(*scope(key)) == entry["user_id"] == entry["written_for_user"]


@pytest.mark.parametrize("user", list(USERS))
def test_users_sessions_facts_and_vectors_read_the_same(old_store, vectors, user):
    expected = USERS[user]
    namespace, user_id = expected["namespace"], expected["user_id"]
    assert data(old_store.user_sessions(namespace, user_id)) == expected["sessions"]
    assert data(old_store.user_facts(namespace, user_id)) == expected["facts"]
    assert data(old_store.user(namespace, user_id).facts()) == expected["facts"]
    mine = owned_by(vectors, namespace=namespace, user_id=user_id, user_owned=True)
    assert mine == expected["vectors"]


@pytest.mark.parametrize("key", list(SESSIONS))
def test_turns_read_the_same(old_store, key):
    expected = SESSIONS[key]
    assert [stored_turn(s) for s in old_store.turns(*scope(key))] == renumbered(expected["turns"])
    assert old_store.count_turns(*scope(key)) == expected["count_turns"]
    head = old_store.session(*scope(key)).head()
    assert head is not None and head.last_seq == len(expected["turns"])


@pytest.mark.parametrize("key", list(SESSIONS))
def test_summaries_and_state_read_the_same(old_store, key):
    expected = SESSIONS[key]
    assert data(old_store.summaries(*scope(key))) == summaries_now(key)
    latest = old_store.latest_summary(*scope(key))
    assert (latest.version if latest else None) == expected["latest_summary_version"]
    state = old_store.session(*scope(key)).summaries.load()
    assert expected["state"]["repair_ids"] == []  # none in 0.2.0's reads (see the doc)
    assert {
        "summary_version": state.summary.version if state.summary else None,
        "unfolded_ids": [t.id for t in state.turns],
        "question_id": state.question.id if state.question else None,
        # 0.2.0's stamp record is the session's head today.
        "stamp_memory": state.head.memory if state.head else None,
        "stamp_user_id": state.head.user_id if state.head else None,
    } == {k: v for k, v in expected["state"].items() if k != "repair_ids"}


@pytest.mark.parametrize("key", list(SESSIONS))
def test_facts_usage_and_vectors_read_the_same(old_store, vectors, key):
    expected = SESSIONS[key]
    namespace, session_id = scope(key)
    session = old_store.session(namespace, session_id)
    assert data(session.facts.get()) == expected["facts"]
    assert data(old_store.usage(namespace, session_id)) == expected["usage"]
    mine = owned_by(vectors, namespace=namespace, session_id=session_id, user_owned=False)
    assert mine == expected["vectors"]
    for space, records in expected["vectors"].items():
        got = session.vectors.by_ids(space, [r["id"] for r in records]) if records else []
        assert (
            sorted(
                ({"id": r.id, "kind": r.kind, "ref": r.ref, "text_hash": r.text_hash} for r in got),
                key=lambda r: r["id"],
            )
            == records
        )
        assert all(len(r.vector) == 16 for r in got)


@pytest.mark.parametrize("key", of_kind("recursive", "hybrid", "agent"))
def test_recursive_engines_read_the_same_without_a_model_call(old_store, key):
    expected = SESSIONS[key]
    namespace, session_id = scope(key)
    refuse = Refuse()
    engine = RecursiveMemory if expected["kind"] == "recursive" else HybridMemory
    memory = engine(
        session_id,
        store=old_store,
        namespace=namespace,
        model=refuse,
        embedder=refuse,
        retry=FAST_RETRY,
        **expected["config"],
    )
    context = memory.context()
    assert {
        "summary_version": context.summary.version if context.summary else None,
        "window_ids": [t.id for t in context.window],
        "tokens": context.tokens,
        "max_tokens": context.max_tokens,
        "hidden": context.hidden,
    } == expected["context"]
    assert [stored_turn(s) for s in memory.turns()] == renumbered(expected["turns"])
    summary = memory.get_summary()
    assert (summary.version if summary else None) == expected["latest_summary_version"]
    assert data(memory.facts()) == expected["facts"]
    assert data(memory.usage_by_purpose()) == expected["usage"]
    assert refuse.calls == []


@pytest.mark.parametrize("key", of_kind("higmem"))
def test_higmem_events_and_turn_nodes_read_the_same_without_a_model_call(old_store, key):
    expected = SESSIONS[key]
    namespace, session_id = scope(key)
    refuse = Refuse()
    memory = HiGMem(
        session_id,
        store=old_store,
        namespace=namespace,
        model=refuse,
        embedder=refuse,
        retry=FAST_RETRY,
        **expected["config"],
    )
    assert data(memory.events()) == expected["events"]
    assert data(memory.turn_nodes()) == expected["nodes"]
    assert [stored_turn(s) for s in memory.turns()] == renumbered(expected["turns"])
    assert data(memory.usage_by_purpose()) == expected["usage"]
    assert refuse.calls == []


def test_the_adapters_read_the_same_messages(old_store):
    refuse = Refuse()
    history = RecursiveSummaryChatMessageHistory(
        "lc-history", store=old_store, llm=refuse, **SESSIONS["default/lc-history"]["config"]
    )
    assert messages_to_dict(history.messages) == SESSIONS["default/lc-history"]["messages"]
    memory = RecursiveSummaryMemory.from_defaults(
        session_id="li-memory",
        store=old_store,
        llm=refuse,
        token_limit=SESSIONS["default/li-memory"]["config"]["max_tokens"],
    )
    got = [m.model_dump(mode="json") for m in memory.get_all()]
    assert got == SESSIONS["default/li-memory"]["messages"]
    assert refuse.calls == []


def test_the_cleared_and_rewritten_session_reads_only_its_new_turns(old_store):
    expected = SESSIONS["default/cleared"]
    turns = old_store.turns("default", "cleared")
    assert [s.id for s in turns] == [f"c-{i:02d}" for i in range(18)]
    assert all(s.turn.text.startswith("New note") for s in turns)
    for summary in old_store.summaries("default", "cleared"):
        assert "Gdansk" not in summary.text and "P-5" not in summary.text
    assert [s["version"] for s in expected["summaries"]] == [1, 2]
    assert old_store.session("default", "cleared").facts.get() == []


# -- the migration -----------------------------------------------------------------------------


def test_the_migration_moved_every_session_once_and_marked_the_log(old_store, old_path, vectors):
    s = old_store.db.tables.sessions
    rows = old_store.db.read(lambda c: c.execute(select(s.c.ns, s.c.sid)).all())
    assert sorted((r.ns, r.sid) for r in rows) == sorted(scope(k) for k in SESSIONS)
    log = persistent_client(old_path).get_collection(f"{PREFIX}_turns")
    assert (log.metadata or {}).get("lrm_schema") == 3
    assert log.count() == EXPECTED["collections"][f"{PREFIX}_turns"]  # left, unread
    assert not fresh(old_path).migrate(dry_run=True).needed
    # The vectors stay where 0.2.0 wrote them, every one.
    assert len(vectors[SPACE]) == EXPECTED["collections"][f"{PREFIX}_vec_{SPACE}"]
    assert {r["dimension"] for r in vectors[SPACE]} == {16}


def test_a_dry_run_lists_every_session_and_changes_nothing(store_path):
    store = fresh(store_path, migrate=False)
    dry = store.migrate(dry_run=True)
    assert sorted(dry.sessions) == sorted(
        (*scope(key), len(entry["turns"])) for key, entry in SESSIONS.items()
    )
    assert dry.renamed == dry.left == []
    assert store.sessions() == [] and store.users() == []
    log = persistent_client(store_path).get_collection(f"{PREFIX}_turns")
    assert (log.metadata or {}).get("lrm_schema") == 2


def test_lrm_migrate_dry_run_says_what_would_move_and_the_listings_follow(store_path):
    runner, path = cli_runner(), str(store_path)
    dry = runner.invoke(app, ["--path", path, "migrate", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    for key, entry in SESSIONS.items():
        namespace, session_id = scope(key)
        line = f"Would move session {namespace}/{session_id} ({len(entry['turns'])} turns)"
        assert line in dry.output
    assert "rename" not in dry.output.lower()  # 0.2.0 named its vector collections so
    assert fresh(store_path, migrate=False).sessions() == []  # nothing moved
    refused = runner.invoke(app, ["--path", path, "sessions"])  # a read moves nothing
    assert refused.exit_code == 1 and "lrm migrate" in refused.output, refused.output
    assert fresh(store_path, migrate=False).sessions() == []
    moved = runner.invoke(app, ["--path", path, "migrate"])
    assert moved.exit_code == 0, moved.output
    listed = runner.invoke(app, ["--path", path, "sessions"])
    assert listed.exit_code == 0, listed.output
    for entry in SESSIONS.values():
        assert entry["session_id"] in listed.output
    users = runner.invoke(app, ["--path", path, "users"])
    assert users.exit_code == 0, users.output
    assert "ada" in users.output and "bo" in users.output
    again = runner.invoke(app, ["--path", path, "migrate"])
    assert again.exit_code == 0 and "Nothing to migrate" in again.output


def test_a_cleared_session_and_a_forgotten_user_stay_gone(store_path):
    store = fresh(store_path)
    store.clear("default", "hybrid-ada-1")
    assert store.forget_user("default", "ada") == ["ada-trip", "ada-home"]
    other = fresh(store_path)  # a new process: nothing comes back from the legacy log
    gone = {("default", "hybrid-ada-1"), ("default", "ada-trip"), ("default", "ada-home")}
    left = {(s.namespace, s.session_id) for s in other.sessions()}
    assert left == {scope(k) for k in SESSIONS} - gone
    assert [(u.namespace, u.user_id) for u in other.users()] == [
        ("tenant-b", "ada"),
        ("default", "bo"),
    ]
    assert other.turns("default", "hybrid-ada-1") == [] and other.user_facts("default", "ada") == []
    assert data(other.user_facts("tenant-b", "ada")) == USERS["tenant-b/ada"]["facts"]
    facts = persistent_client(store_path).get_collection(f"{PREFIX}_facts").get()["metadatas"]
    assert not [m for m in facts if m.get("ns") == "default" and m.get("uid") == "ada"]
    assert not [m for m in facts if (m.get("ns"), m.get("sid")) in gone]
    now = vector_records(store_path)
    for key in SESSIONS:
        mine = owned_by(now, namespace=scope(key)[0], session_id=scope(key)[1], user_owned=False)
        assert mine == ({SPACE: []} if scope(key) in gone else SESSIONS[key]["vectors"]), key
    assert owned_by(now, namespace="default", user_id="ada", user_owned=True) == {SPACE: []}


def test_a_fold_that_a_crash_left_unflagged_stays_folded(store_path):
    # 0.2.0 wrote a summary version, then flagged its turns: a crash in between left the
    # turns flagged open, and 0.2.0's reads left them out of the window (repair_ids).
    client = persistent_client(store_path)
    log = client.get_collection(f"{PREFIX}_turns")
    got = log.get(where={"$and": [{"sid": "recursive"}, {"ns": "default"}]}, include=["metadatas"])
    named = set(SESSIONS["default/recursive"]["summaries"][-1]["turn_ids"])
    ids = [
        rid for rid, meta in zip(got["ids"], got["metadatas"], strict=True) if meta["tid"] in named
    ]
    open_flag = next(m["open"] for m in got["metadatas"] if m["folded"] == 0)
    log.update(ids=ids, metadatas=[{"folded": 0, "open": open_flag}] * len(ids))
    store = fresh(store_path)
    expected = SESSIONS["default/recursive"]
    assert [stored_turn(s) for s in store.turns("default", "recursive")] == renumbered(
        expected["turns"]
    )
    state = store.session("default", "recursive").summaries.load()
    assert [t.id for t in state.turns] == expected["state"]["unfolded_ids"]


def test_a_session_whose_record_a_crash_left_unwritten_is_moved_from_its_turns(store_path):
    # 0.2.0 wrote a session's turns before its record in the sessions collection.
    client = persistent_client(store_path)
    client.get_collection(f"{PREFIX}_sessions").delete(
        where={"$and": [{"ns": "default"}, {"sid": "lc-history"}]}
    )
    store = fresh(store_path)
    expected = SESSIONS["default/lc-history"]
    turns = store.turns("default", "lc-history")
    assert [stored_turn(s) for s in turns] == renumbered(expected["turns"])
    listed = {(s.namespace, s.session_id): s for s in store.sessions()}
    assert listed["default", "lc-history"].created_at == turns[0].turn.created_at
    assert list(listed) == [(e["namespace"], e["session_id"]) for e in EXPECTED["sessions_list"]]


@pytest.mark.server
def test_two_processes_migrate_into_postgresql_at_once(store_path, pg_url):
    # The row of each session is insert-if-absent: on PostgreSQL the second writer of a
    # session waits for the first to commit, then moves nothing.
    results: list[Any] = []
    errors: list[BaseException] = []

    def open_and_migrate() -> None:
        try:
            results.append(fresh(store_path, database=pg_url, migrate=False).migrate())
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_and_migrate) for _ in range(2)]
    store = fresh(store_path, database=pg_url, migrate=False)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        moved = sorted(s for result in results for s in result.sessions)
        assert moved == sorted((*scope(k), len(e["turns"])) for k, e in SESSIONS.items())
        assert data(store.sessions()) == EXPECTED["sessions_list"]
        for key, entry in SESSIONS.items():
            assert [stored_turn(s) for s in store.turns(*scope(key))] == renumbered(entry["turns"])
            assert data(store.summaries(*scope(key))) == summaries_now(key)
    finally:
        store.db.tables.metadata.drop_all(store.db.engine)
        store.close()


# -- writes: the conversations go on ------------------------------------------------------------


def new_turns(tag: str, count: int, text: str) -> list[Turn]:
    return [
        Turn(
            role="user" if i % 2 == 0 else "assistant",
            text=text.format(i=i),
            id=f"{tag}-{i:02d}",
            created_at=BASE + 30 * 86400 + 60 * i,
        )
        for i in range(count)
    ]


def reads(store: MemoryStore, key: str) -> dict[str, Any]:
    namespace, session_id = scope(key)
    session = store.session(namespace, session_id)
    return {
        "turns": [stored_turn(s) for s in store.turns(namespace, session_id)],
        "summaries": data(store.summaries(namespace, session_id)),
        "facts": data(session.facts.get()),
        "nodes": data(session.nodes.turn_nodes()),
        "events": data(session.nodes.events()),
        "usage": data(store.usage(namespace, session_id)),
        "settings": store.session_settings(namespace, session_id),
        "user": store.session_user(namespace, session_id),
    }


def assert_fresh_reads_the_same(path: Path, store: MemoryStore, *keys: str) -> None:
    other = fresh(path)
    for key in keys:
        assert reads(other, key) == reads(store, key), key


def assert_a_fresh_memory_reads_the_same(path: Path, memory: Any, key: str) -> None:
    """A memory over a store object with caches of its own reads what ``memory`` reads."""
    namespace, session_id = scope(key)
    engine = type(memory)
    refuse = Refuse()
    other = engine(
        session_id,
        store=fresh(path),
        namespace=namespace,
        model=refuse,
        retry=FAST_RETRY,
        **SESSIONS[key]["config"],
    )
    mine, theirs = memory.context(), other.context()
    assert (theirs.summary, [t.id for t in theirs.window], theirs.tokens) == (
        mine.summary,
        [t.id for t in mine.window],
        mine.tokens,
    )
    assert [stored_turn(s) for s in other.turns()] == [stored_turn(s) for s in memory.turns()]
    assert data(other.facts()) == data(memory.facts())
    assert refuse.calls == []


def assert_old_turns_first(key: str, turns: list[Any]) -> None:
    """The old turns come first, in their order, numbered 1..n; only ``folded_in`` may grow."""
    old = renumbered(SESSIONS[key]["turns"])
    now = [stored_turn(s) for s in turns[: len(old)]]
    assert [{**t, "folded_in": n["folded_in"]} for t, n in zip(old, now, strict=True)] == now
    assert all(t["folded_in"] in (0, n["folded_in"]) for t, n in zip(old, now, strict=True))
    assert [s.seq for s in turns] == list(range(1, len(turns) + 1))


def test_a_recursive_session_folds_new_versions_after_the_old_ones(store_path):
    key = "default/recursive"
    store = fresh(store_path)
    memory = RecursiveMemory(
        "recursive",
        store=store,
        model=KeywordSummarizer(max_words=40),
        retry=FAST_RETRY,
        **SESSIONS[key]["config"],
    )
    for turn in new_turns("up", 12, "After the upgrade, note {i}: Toledo costs 7{i} euros."):
        memory.add(turn)
    memory.fold(force=True)
    summaries = store.summaries("default", "recursive")
    old = summaries_now(key)
    assert data(summaries[: len(old)]) == old
    turns = memory.turns()
    assert_old_turns_first(key, turns)
    order = {s.id: s.seq for s in turns}
    covered, last = old[-1]["covered"], old[-1]["last_turn_id"]
    assert len(summaries) > len(old)
    for version, summary in enumerate(summaries[len(old) :], start=len(old) + 1):
        assert (summary.version, summary.method) == (version, "llm")
        assert summary.first_turn_id == old[0]["first_turn_id"]
        assert summary.covered == covered + len(summary.turn_ids)
        assert min(order[t] for t in summary.turn_ids) > order[last]
        assert summary.last_seq == max(order[t] for t in summary.turn_ids)
        covered, last = summary.covered, summary.last_turn_id
    folded = {t for s in summaries for t in s.turn_ids}
    assert all((s.folded_in > 0) == (s.id in folded) for s in turns)
    assert memory.get_summary() == summaries[-1]
    assert_fresh_reads_the_same(store_path, store, key)
    assert_a_fresh_memory_reads_the_same(store_path, memory, key)


def test_a_hybrid_session_updates_an_old_fact(store_path):
    key = "default/hybrid-ada-1"
    store = fresh(store_path)
    memory = HybridMemory(
        "hybrid-ada-1",
        store=store,
        model=FactModel(),
        embedder=BagOfWordsEmbedder(dim=16),
        retry=FAST_RETRY,
        **SESSIONS[key]["config"],
    )
    memory.add(Turn(role="user", text="Update: my home city is Stavanger now.", id="up-city"))
    for turn in new_turns("up", 32, "Let's chat about chess again, round {i}."):
        memory.add(turn)
    assert len(store.summaries("default", "hybrid-ada-1")) > len(SESSIONS[key]["summaries"])
    assert_old_turns_first(key, memory.turns())
    facts = {f.key: f for f in memory.facts()}
    old = {f["key"]: f for f in SESSIONS[key]["facts"]}
    city = facts["user/home_city"]
    assert city.text == "The user's home city is Stavanger now."
    assert city.previous == (*old["user/home_city"]["previous"], old["user/home_city"]["text"])
    assert city.revisions == old["user/home_city"]["revisions"] + 1
    assert city.source_turn_ids == (*old["user/home_city"]["source_turn_ids"], "up-city")
    assert city.created_at == old["user/home_city"]["created_at"]
    assert set(facts) == set(old)
    hits = memory.recall("Which city is my home?", k=3)
    assert hits[0].id == "user/home_city" and hits[0].dense_rank is not None
    assert_fresh_reads_the_same(store_path, store, key)
    assert_a_fresh_memory_reads_the_same(store_path, memory, key)


def test_a_new_session_of_a_user_sees_the_users_facts(store_path):
    store = fresh(store_path)
    memory = HybridMemory(
        "ada-later",
        store=store,
        model=FactModel(),
        retry=FAST_RETRY,
        user_id="ada",
        recall_scope="user",
        max_tokens=500,
        max_summary_tokens=100,
    )
    memory.add(Turn(role="user", text="Hello again, it is me.", id="al-hello"))
    expected = {f["key"]: f["text"] for f in USERS["default/ada"]["facts"]}
    assert {f.key: f.text for f in memory.facts()} == expected
    assert expected["user/home_city"] == "The user's home city is Bergen now."
    hits = memory.recall("Which city is my home?", k=3)
    assert hits[0].id == "user/home_city"
    # The same user id in another namespace is another user.
    other = HybridMemory(
        "ada-later", store=store, namespace="tenant-b", model=FactModel(), user_id="ada"
    )
    other.add(Turn(role="user", text="Hi.", id="bl-hi"))
    assert {f.key: f.text for f in other.facts()} == {
        f["key"]: f["text"] for f in USERS["tenant-b/ada"]["facts"]
    }
    # A new statement updates the user's fact, stated in three sessions now.
    memory.add(Turn(role="user", text="My home city is Tromso.", id="al-city"))
    memory.add(new_turns("al", 20, "Let's chat about skiing, round {i}."))
    memory.fold(force=True)
    city = {f.key: f for f in store.user_facts("default", "ada")}["user/home_city"]
    assert city.text == "The user's home city is Tromso."
    assert [o.session_id for o in city.origins] == ["ada-trip", "ada-home", "ada-later"]
    assert [s.session_id for s in store.user_sessions("default", "ada")] == [
        "ada-trip",
        "ada-home",
        "ada-later",
    ]
    assert_fresh_reads_the_same(store_path, store, "default/ada-trip", "default/ada-home")
    other_store = fresh(store_path)
    assert data(other_store.user_facts("default", "ada")) == data(
        store.user_facts("default", "ada")
    )


@pytest.mark.parametrize("key", ["default/higmem-llm", "default/higmem-plain"])
def test_higmem_indexes_new_turns(store_path, key):
    namespace, session_id = scope(key)
    expected = SESSIONS[key]
    store = fresh(store_path)
    llm = key == "default/higmem-llm"
    memory = HiGMem(
        session_id,
        store=store,
        namespace=namespace,
        model=HiGMemModel() if llm else None,
        embedder=BagOfWordsEmbedder(dim=16) if llm else None,
        retry=FAST_RETRY,
        **expected["config"],
    )
    text = "Jon hired dance teacher number {i} for the studio." if llm else "Puppy day {i}."
    memory.add(new_turns("up", 4, text), flush=True)
    assert_old_turns_first(key, memory.turns())
    nodes = data(memory.turn_nodes())
    assert nodes[: len(expected["nodes"])] == expected["nodes"]  # the old nodes are untouched
    new = nodes[len(expected["nodes"]) :]
    assert [n["turn_id"] for n in new] == [f"up-{i:02d}" for i in range(4)]
    assert {n["method"] for n in new} == {"llm" if llm else "heuristic"}
    events = {e.id: e for e in memory.events()}
    for node in new:
        for event_id in node["event_ids"]:
            assert node["turn_id"] in events[event_id].turn_ids
    if llm:
        assert memory.usage_by_purpose()["higmem-index"].calls == (
            expected["usage"]["higmem-index"]["calls"] + 1
        )
        hits = memory.retrieve("When is the studio opening party?", k=3, use_llm=False)
        assert "hl-09" in [h.turn.id for h in hits]
    else:  # a month later: a new session event; the old ones are unchanged
        assert data(memory.events()[: len(expected["events"])]) == expected["events"]
        assert len(events) == len(expected["events"]) + 1
    assert_fresh_reads_the_same(store_path, store, key)


def test_the_waiting_higmem_turns_are_indexed_at_the_first_read(store_path):
    key = "default/higmem-waiting"
    store = fresh(store_path)
    session = store.session("default", "higmem-waiting")
    assert session.nodes.turn_nodes() == [] and session.nodes.events() == []
    assert session.head().indexed == 0  # they still wait, as in 0.2.0
    memory = HiGMem("higmem-waiting", store=store, retry=FAST_RETRY)
    events = memory.events()  # without a model, a read indexes what waits first
    nodes = memory.turn_nodes()
    assert [n.turn_id for n in nodes] == [f"hw-{i}" for i in range(5)]
    assert {n.method for n in nodes} == {"heuristic"}
    assert {t for e in events for t in e.turn_ids} == {f"hw-{i}" for i in range(5)}
    assert [stored_turn(s) for s in memory.turns()] == renumbered(SESSIONS[key]["turns"])
    assert_fresh_reads_the_same(store_path, store, key)


class ScriptedAgentModel(GenericFakeChatModel):
    """langchain-core's fake chat model, tools bound, recording what it was sent."""

    requests: list[list[BaseMessage]] = []  # noqa: RUF012

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedAgentModel:  # type: ignore[override]
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
        self.requests.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kw)


def test_the_agent_thread_continues_through_the_middleware(store_path):
    key = "default/agent-thread-1"
    store = fresh(store_path)

    @tool
    def lookup(key: str) -> str:
        """Look up where a warehouse item is stored."""
        return f"Item {key} is in bay {sum(map(ord, key)) % 97}."

    script = [
        AIMessage("", tool_calls=[{"name": "lookup", "args": {"key": "H-8"}, "id": "call_up"}]),
        AIMessage("Item H-8 is where the lookup says.", id="up-a"),
    ]
    model = ScriptedAgentModel(messages=iter(script))
    model.requests.clear()
    middleware = RecursiveMemoryMiddleware(
        store=store,
        llm=FactModel(),
        extract_facts=True,
        retry=FAST_RETRY,
        **SESSIONS[key]["config"],
    )
    agent = create_agent(
        model,
        tools=[lookup],
        system_prompt=AGENT_SYSTEM,
        middleware=[middleware],
        checkpointer=InMemorySaver(),  # a new process: the old checkpoints are gone
    )
    config = {"configurable": {"thread_id": "agent-thread-1", "user_id": "bo"}}
    agent.invoke({"messages": [HumanMessage("Where is item H-8?", id="up-q")]}, config)
    turns = store.turns("default", "agent-thread-1")
    assert_old_turns_first(key, turns)
    new = [s.turn for s in turns[len(SESSIONS[key]["turns"]) :]]
    assert [(t.role, t.id) for t in new[:2]] == [("user", "up-q"), ("assistant", new[1].id)]
    assert [t.role for t in new] == ["user", "assistant", "tool", "assistant"]
    first = model.requests[0]
    sent = "\n".join(m.text for m in first)
    summary = store.summaries("default", "agent-thread-1")[0]
    assert summary.text in sent  # the thread's old summary, from the store
    assert "Thanks, that's all for today." in sent  # and its newest old turns verbatim
    assert first[-1].text == "Where is item H-8?"
    assert store.session_user("default", "agent-thread-1") == "bo"
    assert_fresh_reads_the_same(store_path, store, key)
