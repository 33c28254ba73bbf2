"""Upgrade from 0.1.0: this release opens a store written by the 0.1.0 release.

``tests/data/store-0.1.0`` was written by 0.1.0 (commit ``eadefe5``) with
``tests/data/make_store_0_1_0.py``, and ``expected.json`` beside it is what 0.1.0 read
back from it (see the script's docstring; the store is never regenerated with newer
code). Each test works on a copy in ``tmp_path``: nothing is ever written into
``tests/data``.

0.1.0 kept everything in Chroma. This release keeps the log (sessions, turns, summary
versions, HiGMem's nodes and events, usage) in a database (SQLite, ``memory.sqlite3`` in
the store's folder) and the facts and vectors in Chroma: the first open of the store
moves each session into the database (:mod:`~langchain_recursive_memory.core.storage.
migrations`), once, logged, resumable; ``lrm migrate --dry-run`` says what would move.

Reads must equal what 0.1.0 read, with models that fail if called: opening a session and
reading it needs no model call. What legitimately changed is mapped here explicitly:

* **Order keys.** 0.1.0 ordered turns by a nanosecond clock (``StoredTurn.seq``); the
  database numbers a session's turns 1, 2, 3... in the order the log held them (0.1.0's
  order key, then turn id). So the tests compare the order of the turns, with ``seq``
  being each turn's position (:func:`renumbered`), never 0.1.0's values.
* **``Summary.last_seq``** is in the new numbering: the ``seq`` of the last turn at or
  before the old key (:func:`new_last_seq`). 0.1.0 recorded none (0, "unknown"), so it
  stays 0.
* **``folded_in``** (the version that folded each turn) is kept as 0.1.0 read it.
* ``SessionState.repair_ids`` (turns a crashed fold named but left unflagged; 0.1.0 read
  none here) is gone: the migration marks such turns folded by the version naming them.
* ``HiGMem.notes()`` is ``HiGMem.turn_nodes()`` today (``TurnNote`` is ``TurnNode``).
* Records have fields 0.1.0's had not; 0.1.0's fields must read the same and the new ones
  their documented "unknown, a record of 0.1.0" values: ``Summary.passed_ids`` (),
  ``question_id`` None; ``Fact.stated_at`` 0.0, ``origins`` (); ``SessionInfo.settings``
  {} and ``user_id`` None.
* 0.1.0 had no users and recorded no session settings: today reads none.
* 0.1.0 named an embedder's vector collection ``{embedder}-d{dimension}``, today's
  ``{embedder}``: the migration renames it, and the old vectors read the same under the
  new name.

The migration itself: it runs once (logged), a second open moves nothing, a dry run lists
every session and changes nothing (``lrm migrate --dry-run`` too), the legacy
``lrm_turns`` collection is marked ``lrm_schema=3`` (0.1.0 and 0.2.0 then refuse it) and
keeps its records, a migration that failed after some sessions moved resumes with every
session there exactly once, two processes migrating at once move each session once and
rename the vector collection once, and a turn whose time Chroma dropped (0.1.0 stored NaN
as given) is moved at its write time.

Then ``add`` and ``fold`` keep working on the old sessions (a new summary version
continues the old ones, a fact is updated again, HiGMem indexes the new turns, two old
sessions join a user whose facts merge), and a store object with caches of its own (as a
fresh process) reads what the writing one reads.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import FAST_RETRY, cli_runner, data, new_last_seq, renumbered, stored_turn
from fakes import BagOfWordsEmbedder, FactModel, HiGMemModel, KeywordSummarizer
from langchain_core.messages import messages_to_dict
from sqlalchemy import func, select

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.cli import app
from langchain_recursive_memory.core import (
    HiGMem,
    HybridMemory,
    MemoryStore,
    RecursiveMemory,
    Turn,
)
from langchain_recursive_memory.core.cache import StoreCaches
from langchain_recursive_memory.core.errors import StoreError
from langchain_recursive_memory.core.storage import migrations
from langchain_recursive_memory.core.storage.client import StoreClient, persistent_client
from llamaindex_higmem import RecursiveSummaryMemory

FIXTURE = Path(__file__).parent / "data" / "store-0.1.0"
EXPECTED: dict[str, Any] = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
PREFIX = EXPECTED["prefix"]
SESSIONS: dict[str, dict[str, Any]] = EXPECTED["sessions"]
SPACE = "bagofwordsembedder-d16"  # the vector collection of 0.1.0's BagOfWordsEmbedder(16)
MIGRATED = "bagofwordsembedder"  # its name since 0.2.0 (the migration renames it)
BASE = 1761984000.0  # the fixture's turns were said from 2025-11-01 08:00 UTC on
LEGACY = ("sessions", "summaries", "turns", "hg_turns", "hg_events", "usage")

# The fields 0.1.0's records had; today's have these and more (checked separately).
NEW_SUMMARY_FIELDS = {"passed_ids": [], "question_id": None}
NEW_FACT_FIELDS = {"stated_at": 0.0, "origins": []}


def of_kind(*kinds: str) -> list[str]:
    return [key for key, entry in SESSIONS.items() if entry["kind"] in kinds]


def scope(key: str) -> tuple[str, str]:
    entry = SESSIONS[key]
    return entry["namespace"], entry["session_id"]


def old_fields(got: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    """``got`` cut to the fields 0.1.0 had; a field missing today fails here."""
    missing = set(expected) - set(got)
    assert not missing, f"fields of 0.1.0 missing today: {sorted(missing)}"
    return {k: got[k] for k in expected}


def copy_fixture(target: Path) -> Path:
    shutil.copytree(FIXTURE, target)
    return target


class Refuse:
    """A model and embedder that fail if called (records the attempt first)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def _fail(self, what: str) -> Any:
        self.calls.append(what)
        raise AssertionError(f"a read of a 0.1.0 session called the {what}")

    def complete(self, prompt: str) -> str:
        return self._fail("model")

    async def acomplete(self, prompt: str) -> str:
        return self._fail("model")


class RefusingEmbedder(Refuse):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._fail("embedder")

    def embed_query(self, text: str) -> list[float]:
        return self._fail("embedder")


@pytest.fixture(scope="module")
def old_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the fixture for the read-only tests."""
    return copy_fixture(tmp_path_factory.mktemp("upgrade") / "store")


@pytest.fixture(scope="module")
def old_store(old_path: Path) -> MemoryStore:
    """The read-only copy, opened (and so migrated) once by today's code."""
    return MemoryStore.persistent(old_path, prefix=PREFIX)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return copy_fixture(tmp_path / "store")


def fresh(path: Path, **options: Any) -> MemoryStore:
    """A store object with caches of its own: what a new process opens (and migrates)."""
    return MemoryStore.persistent(path, prefix=PREFIX, cache=StoreCaches(), **options)


def chroma_state(path: Path) -> dict[str, tuple[dict[str, Any], int]]:
    """Each Chroma collection of the store at ``path``: its metadata and record count."""
    client = persistent_client(path)
    names = sorted(c if isinstance(c, str) else c.name for c in client.list_collections())
    state = {}
    for name in names:
        col = client.get_collection(name)
        state[name] = (dict(col.metadata or {}), col.count())
    return state


def database_sessions(store: MemoryStore) -> list[tuple[str, str]]:
    """The sessions the database holds (namespace, id), by row."""
    s = store.db.tables.sessions
    query = select(s.c.ns, s.c.sid).order_by(s.c.id)
    return [(r.ns, r.sid) for r in store.db.read(lambda c: c.execute(query).all())]


def database_counts(store: MemoryStore) -> dict[str, int]:
    """How many rows each table of the log holds."""
    t = store.db.tables
    tables = {
        "sessions": t.sessions,
        "turns": t.turns,
        "summaries": t.summaries,
        "turn_nodes": t.turn_nodes,
        "events": t.events,
        "usage": t.usage,
    }
    return {
        name: store.db.read(
            lambda c, tb=tb: c.execute(select(func.count()).select_from(tb)).scalar()
        )
        for name, tb in tables.items()
    }


# -- the fixture itself ---------------------------------------------------------------------


def test_the_fixture_was_written_by_0_1_0_and_names_no_absolute_path():
    assert EXPECTED["written_by"]["langchain_recursive_memory"] == "0.1.0"
    assert EXPECTED["written_by"]["release_commit"] == "eadefe5"
    assert len(SESSIONS) == 9
    for path in FIXTURE.rglob("*"):
        if path.is_file():
            raw = path.read_bytes()
            assert b"/tmp/" not in raw and b"/work/" not in raw and b"/home/" not in raw, path


# -- reads: what 0.1.0 read ------------------------------------------------------------------


def test_sessions_activity_and_no_users_or_settings(old_store):
    listed = [data(s) for s in old_store.sessions()]
    assert [old_fields(s, e) for s, e in zip(listed, EXPECTED["sessions_list"], strict=True)] == (
        EXPECTED["sessions_list"]
    )
    assert [(s["settings"], s["user_id"]) for s in listed] == [({}, None)] * len(listed)
    activity = [
        {"namespace": ns, "session_id": sid, "last": last}
        for (ns, sid), last in sorted(old_store.activity().items())
    ]
    assert activity == EXPECTED["activity"]
    assert old_store.users() == []
    for key in SESSIONS:
        assert old_store.session_settings(*scope(key)) == {}
        assert old_store.session_user(*scope(key)) is None


@pytest.mark.parametrize("key", list(SESSIONS))
def test_turns_read_the_same(old_store, key):
    expected = SESSIONS[key]
    turns = old_store.turns(*scope(key))
    assert [stored_turn(s) for s in turns] == renumbered(expected["turns"])
    assert old_store.count_turns(*scope(key)) == expected["count_turns"]
    head = old_store.session(*scope(key)).head()
    assert head is not None and head.last_seq == len(expected["turns"])


@pytest.mark.parametrize("key", list(SESSIONS))
def test_summaries_and_state_read_the_same(old_store, key):
    expected = SESSIONS[key]
    summaries = [data(s) for s in old_store.summaries(*scope(key))]
    assert [old_fields(s, e) for s, e in zip(summaries, expected["summaries"], strict=True)] == (
        expected["summaries"]
    )
    for summary, was in zip(summaries, expected["summaries"], strict=True):
        assert {k: summary[k] for k in NEW_SUMMARY_FIELDS} == NEW_SUMMARY_FIELDS
        # 0.1.0 recorded no last_seq (0: unknown): 0 in the new numbering too.
        assert summary["last_seq"] == new_last_seq(was.get("last_seq", 0), expected["turns"]) == 0
    latest = old_store.latest_summary(*scope(key))
    assert (latest.version if latest else None) == expected["latest_summary_version"]
    state = old_store.session(*scope(key)).summaries.load()
    # repair_ids (turns a crashed fold left unflagged) are gone: none here in 0.1.0 either.
    assert expected["state"]["repair_ids"] == []
    assert {
        "summary_version": state.summary.version if state.summary else None,
        "unfolded_ids": [t.id for t in state.turns],
    } == {k: v for k, v in expected["state"].items() if k != "repair_ids"}
    assert state.question is None


@pytest.mark.parametrize("key", list(SESSIONS))
def test_facts_usage_and_vectors_read_the_same(old_store, key):
    expected = SESSIONS[key]
    facts = [data(f) for f in old_store.session(*scope(key)).facts.get()]
    assert [old_fields(f, e) for f, e in zip(facts, expected["facts"], strict=True)] == (
        expected["facts"]
    )
    for fact in facts:
        assert {k: fact[k] for k in NEW_FACT_FIELDS} == NEW_FACT_FIELDS
    assert data(old_store.usage(*scope(key))) == expected["usage"]
    for space, records in expected["vectors"].items():
        ids = [r["id"] for r in records]
        space = MIGRATED if space == SPACE else space
        got = old_store.session(*scope(key)).vectors.by_ids(space, ids) if ids else []
        assert (
            sorted(
                ({"id": r.id, "kind": r.kind, "ref": r.ref, "text_hash": r.text_hash} for r in got),
                key=lambda r: r["id"],
            )
            == records
        )
        assert all(len(r.vector) == 16 for r in got)


@pytest.mark.parametrize("key", of_kind("recursive", "hybrid"))
def test_recursive_engines_read_the_same_without_a_model_call(old_store, key):
    expected = SESSIONS[key]
    namespace, session_id = scope(key)
    model, embedder = Refuse(), RefusingEmbedder()
    engine = RecursiveMemory if expected["kind"] == "recursive" else HybridMemory
    memory = engine(
        session_id,
        store=old_store,
        namespace=namespace,
        model=model,
        embedder=embedder,
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
    assert [f.key for f in memory.facts()] == [f["key"] for f in expected["facts"]]
    assert data(memory.usage_by_purpose()) == expected["usage"]
    assert model.calls == embedder.calls == []


@pytest.mark.parametrize("key", of_kind("higmem"))
def test_higmem_events_and_turn_nodes_read_the_same_without_a_model_call(old_store, key):
    expected = SESSIONS[key]
    namespace, session_id = scope(key)
    model, embedder = Refuse(), RefusingEmbedder()
    memory = HiGMem(
        session_id,
        store=old_store,
        namespace=namespace,
        model=model,
        embedder=embedder,
        retry=FAST_RETRY,
        **expected["config"],
    )
    assert data(memory.events()) == expected["events"]
    # 0.1.0's notes() is turn_nodes() today.
    assert data(memory.turn_nodes()) == expected["nodes"]
    assert [stored_turn(s) for s in memory.turns()] == renumbered(expected["turns"])
    assert data(memory.usage_by_purpose()) == expected["usage"]
    assert model.calls == embedder.calls == []


def test_old_facts_are_recalled_lexically_without_a_model_call(old_store):
    model = Refuse()
    memory = HybridMemory(
        "hybrid-ada-1", store=old_store, model=model, **SESSIONS["default/hybrid-ada-1"]["config"]
    )
    hits = memory.recall("What is my favourite tea?", k=3)
    assert (hits[0].kind, hits[0].id, hits[0].source_turn_ids) == (
        "fact",
        "user/favourite_tea",
        ("h1-tea",),
    )
    assert model.calls == []


def test_the_adapters_read_the_same_messages(old_store):
    model = Refuse()
    history = RecursiveSummaryChatMessageHistory(
        "lc-history", store=old_store, llm=model, **SESSIONS["default/lc-history"]["config"]
    )
    assert messages_to_dict(history.messages) == SESSIONS["default/lc-history"]["messages"]
    memory = RecursiveSummaryMemory.from_defaults(
        session_id="li-memory",
        store=old_store,
        llm=model,
        token_limit=SESSIONS["default/li-memory"]["config"]["max_tokens"],
    )
    got = [m.model_dump(mode="json") for m in memory.get_all()]
    assert got == SESSIONS["default/li-memory"]["messages"]
    assert model.calls == []


def test_the_command_line_lists_and_shows_old_sessions(old_path):
    path = str(old_path)
    runner = cli_runner()
    listed = runner.invoke(app, ["--path", path, "sessions"])
    assert listed.exit_code == 0, listed.output
    for entry in SESSIONS.values():
        assert entry["session_id"] in listed.output
    shown = runner.invoke(app, ["--path", path, "show", "recursive"])
    assert shown.exit_code == 0, shown.output
    version = SESSIONS["default/recursive"]["latest_summary_version"]
    assert f"Summary v{version} (llm)" in shown.output


# -- the migration -----------------------------------------------------------------------------


def test_the_first_open_moves_every_session_once_and_logs_it(store_path, caplog):
    before = chroma_state(store_path)
    with caplog.at_level(logging.INFO, logger="langchain_recursive_memory"):
        store = fresh(store_path)
    moved = [r.getMessage() for r in caplog.records if r.getMessage().startswith("moved ")]
    turns = sum(len(e["turns"]) for e in SESSIONS.values())
    assert len(moved) == 1, moved
    assert moved[0].startswith(f"moved {len(SESSIONS)} sessions ({turns} turns) of the store ")
    assert f"migrated the vector collection {PREFIX}_vec_{SPACE} to {PREFIX}_vec_{MIGRATED}" in (
        caplog.text
    )
    assert (store_path / "memory.sqlite3").is_file()
    assert sorted(database_sessions(store)) == sorted(scope(k) for k in SESSIONS)
    assert database_counts(store) == {
        "sessions": len(SESSIONS),
        "turns": turns,
        "summaries": sum(len(e["summaries"]) for e in SESSIONS.values()),
        "turn_nodes": sum(len(e.get("nodes", [])) for e in SESSIONS.values()),
        "events": sum(len(e.get("events", [])) for e in SESSIONS.values()),
        "usage": EXPECTED["collections"][f"{PREFIX}_usage"],
    }
    # The legacy collections are left as they were, but for the log's marker and the
    # renamed vector collection.
    after = chroma_state(store_path)
    assert after.pop(f"{PREFIX}_vec_{MIGRATED}") == before.pop(f"{PREFIX}_vec_{SPACE}")
    assert after.pop(f"{PREFIX}_turns") == ({"lrm_schema": 3}, before.pop(f"{PREFIX}_turns")[1])
    assert after == before


def test_a_second_open_moves_nothing(store_path, caplog):
    first = fresh(store_path)
    counts = database_counts(first)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="langchain_recursive_memory"):
        again = fresh(store_path)  # a new process: it checks again
        done = again.migrate()
    assert not done.needed and done.sessions == done.renamed == done.left == []
    assert "moved" not in caplog.text and "migrated the vector collection" not in caplog.text
    assert database_counts(again) == counts
    assert again.migrate(dry_run=True).sessions == []


def test_a_dry_run_lists_every_session_and_changes_nothing(store_path):
    before = chroma_state(store_path)
    store = fresh(store_path, migrate=False)
    dry = store.migrate(dry_run=True)
    assert dry.dry_run and dry.needed
    assert sorted(dry.sessions) == sorted(
        (*scope(key), len(entry["turns"])) for key, entry in SESSIONS.items()
    )
    assert dry.renamed == [(f"{PREFIX}_vec_{SPACE}", f"{PREFIX}_vec_{MIGRATED}")]
    assert dry.left == []
    assert database_sessions(store) == [] and store.sessions() == []
    assert chroma_state(store_path) == before
    assert store.migrate(dry_run=True).sessions == dry.sessions  # still all to move


def test_the_legacy_log_is_marked_and_its_records_are_left(store_path):
    store = fresh(store_path)
    log = persistent_client(store_path).get_collection(f"{PREFIX}_turns")
    assert (log.metadata or {}).get("lrm_schema") == migrations.LOG_SCHEMA == 3
    assert log.count() == EXPECTED["collections"][f"{PREFIX}_turns"]
    # 0.1.0 and 0.2.0 check a collection's lrm_schema before they use it, as today's
    # client does for the collections it uses: the moved log is refused, naming its schema.
    with pytest.raises(StoreError, match="lrm_schema=3"):
        StoreClient(persistent_client(store_path)).collection(f"{PREFIX}_turns")
    assert store.sessions()  # today's store reads the database


def test_an_interrupted_migration_resumes_with_every_session_once(store_path, monkeypatch):
    write = migrations._LegacySession.write
    calls: list[str] = []

    def failing(self: Any, conn: Any) -> bool:
        calls.append(self.owner.session_id)
        moved = write(self, conn)  # written, then the transaction fails: nothing stays
        if len(calls) == 4:
            raise StoreError("the database went away (simulated)")
        return moved

    monkeypatch.setattr(migrations._LegacySession, "write", failing)
    with pytest.raises(StoreError, match="simulated"):
        fresh(store_path)
    partial_store = fresh(store_path, migrate=False)
    assert len(database_sessions(partial_store)) == 3  # the fourth rolled back
    assert (persistent_client(store_path).get_collection(f"{PREFIX}_turns").metadata or {}).get(
        "lrm_schema"
    ) == 2  # not marked: the move is not done
    pending = partial_store.migrate(dry_run=True).sessions
    assert len(pending) == len(SESSIONS) - 3
    monkeypatch.setattr(migrations._LegacySession, "write", write)
    resumed = fresh(store_path, migrate=False).migrate()
    assert sorted(resumed.sessions) == sorted(pending)  # the rest, and only the rest
    store = fresh(store_path)
    held = database_sessions(store)
    assert sorted(held) == sorted(scope(k) for k in SESSIONS)  # each exactly once
    for key, entry in SESSIONS.items():
        assert [stored_turn(s) for s in store.turns(*scope(key))] == renumbered(entry["turns"])
        assert [s.version for s in store.summaries(*scope(key))] == [
            s["version"] for s in entry["summaries"]
        ]
    assert fresh(store_path).migrate().sessions == []


def test_a_turn_whose_time_chroma_dropped_is_moved_at_its_write_time(store_path, caplog):
    # 0.1.0 stored a NaN creation time as given; Chroma drops NaN metadata values.
    log = persistent_client(store_path).get_collection(f"{PREFIX}_turns")
    got = log.get(where={"tid": "r-03"}, include=["metadatas"])
    (record,), (meta,) = got["ids"], got["metadatas"]
    log.update(ids=[record], metadatas=[{"created": None}])
    assert "created" not in log.get(ids=[record], include=["metadatas"])["metadatas"][0]
    store = fresh(store_path)
    turns = {s.id: s for s in store.turns("default", "recursive")}
    assert turns["r-03"].turn.created_at == meta["seq"] / 1e9
    expected = renumbered(SESSIONS["default/recursive"]["turns"])
    assert [stored_turn(s) for s in turns.values()] == [
        {**t, "created_at": meta["seq"] / 1e9} if t["id"] == "r-03" else t for t in expected
    ]
    assert "skipped a damaged turn record" not in caplog.text


def test_two_processes_migrating_at_once_move_each_session_once(store_path, monkeypatch):
    init = migrations._LegacySession.__init__
    other: list[migrations.Migration] = []
    raced: list[bool] = []

    def racing(self: Any, *args: Any, **kwargs: Any) -> None:
        if not raced:  # meanwhile another process opens the store and moves it all
            raced.append(True)
            other.append(fresh(store_path, migrate=False).migrate())
        init(self, *args, **kwargs)

    monkeypatch.setattr(migrations._LegacySession, "__init__", racing)
    store = fresh(store_path, migrate=False)
    done = store.migrate()  # no error: what the other moved is skipped
    assert done.sessions == []
    assert sorted(other[0].sessions) == sorted(
        (*scope(key), len(entry["turns"])) for key, entry in SESSIONS.items()
    )
    assert sorted(database_sessions(store)) == sorted(scope(k) for k in SESSIONS)
    assert database_counts(store)["turns"] == sum(len(e["turns"]) for e in SESSIONS.values())


def test_two_processes_renaming_the_vector_collection_at_once(store_path, monkeypatch):
    plan = migrations.legacy_vector_collections
    other: list[migrations.Migration] = []
    raced: list[bool] = []

    def racing(names: list[str], prefix: str) -> dict[str, list[str]]:
        found = plan(names, prefix)
        if not raced:  # meanwhile another process opens the store and renames it
            raced.append(True)
            other.append(fresh(store_path, migrate=False).migrate())
        return found

    monkeypatch.setattr(migrations, "legacy_vector_collections", racing)
    store = fresh(store_path)  # no error: the other process renamed it
    assert other[0].renamed == [(f"{PREFIX}_vec_{SPACE}", f"{PREFIX}_vec_{MIGRATED}")]
    names = {c.name for c in chromadb_names(store_path)}
    assert f"{PREFIX}_vec_{SPACE}" not in names and f"{PREFIX}_vec_{MIGRATED}" in names
    records = SESSIONS["default/hybrid-ada-1"]["vectors"][SPACE]
    got = store.session("default", "hybrid-ada-1").vectors.by_ids(
        MIGRATED, [r["id"] for r in records]
    )
    assert len(got) == len(records)


def test_opening_migrates_the_vector_collection_once(store_path):
    names = {c.name for c in chromadb_names(store_path)}
    assert f"{PREFIX}_vec_{SPACE}" in names and f"{PREFIX}_vec_{MIGRATED}" not in names
    store = MemoryStore.persistent(store_path, prefix=PREFIX)  # migrates
    names = {c.name for c in chromadb_names(store_path)}
    assert f"{PREFIX}_vec_{SPACE}" not in names and f"{PREFIX}_vec_{MIGRATED}" in names
    again = store.migrate(dry_run=True)
    assert not again.needed


def test_lrm_migrate_says_what_it_does_and_does_it_once(store_path):
    runner, path = cli_runner(), str(store_path)
    before = chroma_state(store_path)
    dry = runner.invoke(app, ["--path", path, "migrate", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    for key, entry in SESSIONS.items():
        namespace, session_id = scope(key)
        line = f"Would move session {namespace}/{session_id} ({len(entry['turns'])} turns)"
        assert line in dry.output
    assert f"Would rename {PREFIX}_vec_{SPACE} -> {PREFIX}_vec_{MIGRATED}" in dry.output
    assert chroma_state(store_path) == before
    assert database_sessions(fresh(store_path, migrate=False)) == []
    done = runner.invoke(app, ["--path", path, "migrate"])
    assert done.exit_code == 0, done.output
    assert f"Renamed {PREFIX}_vec_{SPACE}" in done.output
    assert "Moved session default/recursive (28 turns) into the database" in done.output
    again = runner.invoke(app, ["--path", path, "migrate"])
    assert again.exit_code == 0 and "Nothing to migrate" in again.output


def test_a_legacy_collection_whose_new_name_exists_is_left_and_reported(store_path, caplog):
    client = persistent_client(store_path)
    client.create_collection(f"{PREFIX}_vec_{MIGRATED}", embedding_function=None)
    with caplog.at_level("WARNING", logger="langchain_recursive_memory"):
        store = MemoryStore.persistent(store_path, prefix=PREFIX)
    assert f"{PREFIX}_vec_{SPACE} (0.1.0 naming) was left as it is" in caplog.text
    left = store.migrate(dry_run=True).left
    assert left == [(f"{PREFIX}_vec_{SPACE}", f"{PREFIX}_vec_{MIGRATED} exists already")]
    names = {c.name for c in chromadb_names(store_path)}
    assert f"{PREFIX}_vec_{SPACE}" in names  # never deleted: reindex() embeds again


def chromadb_names(path: Path) -> list[Any]:
    return list(persistent_client(path).list_collections())


def test_old_fact_vectors_are_used_with_the_same_embedder(store_path):
    store = MemoryStore.persistent(store_path, prefix=PREFIX)
    memory = HybridMemory(
        "hybrid-ada-1",
        store=store,
        model=Refuse(),
        embedder=BagOfWordsEmbedder(dim=16),
        **SESSIONS["default/hybrid-ada-1"]["config"],
    )
    hits = memory.recall("What is my favourite tea?", k=3)
    fact = next(h for h in hits if h.kind == "fact")
    assert fact.id == "user/favourite_tea"
    assert fact.dense_rank is not None


def test_reindex_gives_old_facts_their_dense_rank_again(store_path):
    # reindex() also embeds again what has no vector yet.
    store = MemoryStore.persistent(store_path, prefix=PREFIX)
    memory = HybridMemory(
        "hybrid-ada-1",
        store=store,
        model=Refuse(),
        embedder=BagOfWordsEmbedder(dim=16),
        **SESSIONS["default/hybrid-ada-1"]["config"],
    )
    assert memory.reindex() > len(SESSIONS["default/hybrid-ada-1"]["facts"])  # windows too
    hits = memory.recall("What is my favourite tea?", k=3)
    fact = next(h for h in hits if h.kind == "fact")
    assert (fact.id, fact.dense_rank) == ("user/favourite_tea", 1)


# -- writes: the old sessions keep working --------------------------------------------------


def new_turns(tag: str, count: int, text: str) -> list[Turn]:
    return [
        Turn(
            role="user" if i % 2 == 0 else "assistant",
            text=text.format(i=i),
            id=f"{tag}-{i:02d}",
            created_at=BASE + 7 * 86400 + 60 * i,
        )
        for i in range(count)
    ]


def assert_versions_continue(key: str, summaries: list[Any], turns: list[Any]) -> None:
    """The old versions are unchanged; the new ones follow them, in log order."""
    expected = SESSIONS[key]
    old = expected["summaries"]
    assert [old_fields(data(s), e) for s, e in zip(summaries, old, strict=False)] == old
    new = summaries[len(old) :]
    assert new, "no new summary version"
    covered = old[-1]["covered"]
    last = old[-1]["last_turn_id"]
    order = {s.id: i for i, s in enumerate(turns)}
    for version, summary in enumerate(new, start=len(old) + 1):
        assert summary.version == version
        assert summary.first_turn_id == old[0]["first_turn_id"]
        assert summary.covered == covered + len(summary.turn_ids)
        assert min(order[t] for t in summary.turn_ids) > order[last]
        covered, last = summary.covered, summary.last_turn_id
    folded = {t for s in summaries for t in s.turn_ids}
    for s in turns:
        assert (s.folded_in > 0) == (s.id in folded), s.id
    old_turns = renumbered(expected["turns"])
    assert [stored_turn(s) for s in turns[: len(old_turns)]] == [
        {**t, "folded_in": now.folded_in} for t, now in zip(old_turns, turns, strict=False)
    ]  # the old turns first, in their order, numbered 1..n; the new ones after them
    for was, now in zip(old_turns, turns, strict=False):
        assert was["folded_in"] in (0, now.folded_in)
    assert [s.seq for s in turns] == list(range(1, len(turns) + 1))


def fresh_reads(path: Path, key: str) -> dict[str, Any]:
    """What a store object with caches of its own (a new process) reads of the session."""
    return reads(fresh(path), key)


def reads(store: MemoryStore, key: str) -> dict[str, Any]:
    namespace, session_id = scope(key)
    return {
        "turns": [stored_turn(s) for s in store.turns(namespace, session_id)],
        "summaries": data(store.summaries(namespace, session_id)),
        "facts": data(store.session(namespace, session_id).facts.get()),
        "nodes": data(store.session(namespace, session_id).nodes.turn_nodes()),
        "events": data(store.session(namespace, session_id).nodes.events()),
        "usage": data(store.usage(namespace, session_id)),
        "settings": store.session_settings(namespace, session_id),
    }


@pytest.mark.parametrize(
    ("key", "summarizer"),
    [
        ("default/recursive", KeywordSummarizer(max_words=40)),
        ("default/tools-会話", KeywordSummarizer(max_words=40)),
        ("tenant-b/recursive", None),
    ],
    ids=["llm", "tools", "extractive"],
)
def test_recursive_sessions_fold_new_versions_that_continue_the_old_ones(
    store_path, key, summarizer
):
    namespace, session_id = scope(key)
    store = MemoryStore.persistent(store_path, prefix=PREFIX)
    memory = RecursiveMemory(
        session_id,
        store=store,
        namespace=namespace,
        model=summarizer,
        retry=FAST_RETRY,
        **SESSIONS[key]["config"],
    )
    for turn in new_turns("up", 12, "After the upgrade, note {i}: Toledo costs 7{i} euros."):
        memory.add(turn)
    memory.fold(force=True)
    summaries = store.summaries(namespace, session_id)
    assert_versions_continue(key, summaries, memory.turns())
    method = "llm" if summarizer is not None else "extractive"
    assert {s.method for s in summaries[len(SESSIONS[key]["summaries"]) :]} == {method}
    assert memory.get_summary() == summaries[-1]
    assert store.session_settings(namespace, session_id)["memory"] == "recursive"
    assert fresh_reads(store_path, key) == reads(store, key)


def test_the_hybrid_session_updates_an_old_fact_and_embeds_it_again(store_path):
    key = "default/hybrid-ada-1"
    store = MemoryStore.persistent(store_path, prefix=PREFIX)
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
    summaries = store.summaries("default", "hybrid-ada-1")
    assert_versions_continue(key, summaries, memory.turns())
    facts = {f.key: f for f in memory.facts()}
    city = facts["user/home_city"]
    old = {f["key"]: f for f in SESSIONS[key]["facts"]}["user/home_city"]
    assert city.text == "The user's home city is Stavanger now."
    assert city.previous == (*old["previous"], old["text"])
    assert city.revisions == old["revisions"] + 1
    assert city.source_turn_ids == (*old["source_turn_ids"], "up-city")
    assert city.created_at == old["created_at"]
    assert set(facts) == {f["key"] for f in SESSIONS[key]["facts"]}
    # The updated fact is embedded again, with its text hash, under the record id 0.1.0
    # gave it, in today's collection of the embedder (0.1.0's, renamed).
    old_ids = [r["id"] for r in SESSIONS[key]["vectors"][SPACE]]
    records = store.session("default", "hybrid-ada-1").vectors.by_ids(memory.space, old_ids)
    by_ref = {(r.kind, r.ref): r for r in records}
    assert by_ref["fact", "user/home_city"].text_hash
    hits = memory.recall("Which city is my home?", k=3)
    assert hits[0].id == "user/home_city"
    assert fresh_reads(store_path, key) == reads(store, key)


@pytest.mark.parametrize("key", of_kind("higmem"))
def test_higmem_sessions_index_new_turns(store_path, key):
    namespace, session_id = scope(key)
    expected = SESSIONS[key]
    store = MemoryStore.persistent(store_path, prefix=PREFIX)
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
    memory.add(new_turns("up", 4, text))
    nodes = data(memory.turn_nodes())
    old_ids = [n["turn_id"] for n in expected["nodes"]]
    assert nodes[: len(old_ids)] == expected["nodes"]  # the old nodes are untouched
    new = nodes[len(old_ids) :]
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
    else:  # a week later: a new session event; the old ones are unchanged
        assert data(memory.events()[: len(expected["events"])]) == expected["events"]
        assert len(events) == len(expected["events"]) + 1
    assert fresh_reads(store_path, key) == reads(store, key)


def test_two_old_sessions_join_a_user_and_their_facts_merge(store_path):
    store = MemoryStore.persistent(store_path, prefix=PREFIX)
    memories = {
        sid: HybridMemory(
            sid,
            store=store,
            model=FactModel(),
            retry=FAST_RETRY,
            user_id="ada",
            **SESSIONS[f"default/{sid}"]["config"],
        )
        for sid in ("hybrid-ada-1", "hybrid-ada-2")
    }
    for sid, memory in memories.items():
        memory.add(Turn(role="user", text="Hello again.", id=f"up-hello-{sid}"))
    assert [u.user_id for u in store.users()] == ["ada"]
    assert [s.session_id for s in store.user_sessions("default", "ada")] == list(memories)
    # Their 0.1.0 facts stay the sessions' own until a rebuild (docs/users.md).
    assert store.user_facts("default", "ada") == []
    result = memories["hybrid-ada-1"].rebuild("user")
    assert result.sessions == ("hybrid-ada-1", "hybrid-ada-2")
    facts = {f.key: f for f in store.user_facts("default", "ada")}
    assert set(facts) == {"user/name", "user/home_city", "user/favourite_tea", "user/locker_code"}
    city = facts["user/home_city"]
    # Stated in both sessions: Oslo, then Bergen (session 1), then Trondheim (session 2).
    assert city.text == "The user's home city is Trondheim."
    assert city.previous == ("The user's home city is Oslo.", "The user's home city is Bergen now.")
    assert [o.session_id for o in city.origins] == ["hybrid-ada-1", "hybrid-ada-1", "hybrid-ada-2"]
    assert city.source_turn_ids == ("h1-city", "h1-city2", "h2-city")
    for memory in memories.values():
        assert {f.key for f in memory.facts()} == set(facts)
    other = fresh(store_path)
    assert data(other.user_facts("default", "ada")) == data(store.user_facts("default", "ada"))
    assert [s.user_id for s in other.user_sessions("default", "ada")] == ["ada", "ada"]
