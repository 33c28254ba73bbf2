"""The store: log order, durability, scoping, compare-and-set, one transaction per fold."""

from __future__ import annotations

import threading

import pytest
from conftest import FAST, FAST_TWO_RETRIES, NS
from fakes import KeywordSummarizer

from langchain_recursive_memory.core import (
    ConfigurationError,
    InvalidInputError,
    MemoryStore,
    RecursiveMemory,
    Summary,
    ToolCall,
    Turn,
)
from langchain_recursive_memory.core.storage import default_path, session_key


def put(store: MemoryStore, sid: str, *texts: str) -> list:
    turns = [Turn(role="user", text=t) for t in texts]
    return store.session(NS, sid).turns.append(turns, [5] * len(turns), "o200k_base")


def test_append_keeps_order_and_round_trips_every_field(store):
    turn = Turn(
        role="assistant",
        text="calling",
        blocks=({"type": "text", "text": "calling"}, {"type": "image", "url": "x"}),
        tool_calls=(ToolCall("f", {"a": [1, 2], "b": "ü"}, "c1"),),
        name="bot",
        id="m-1",
        created_at=1700000000.5,
        extra={"response_metadata": {"model": "m"}},
    )
    put(store, "s", *[f"t{i}" for i in range(50)])
    store.session(NS, "s").turns.append([turn], [9], "o200k_base")
    got = store.turns(NS, "s")
    assert [t.turn.text for t in got[:50]] == [f"t{i}" for i in range(50)]
    assert got[-1].turn == turn
    assert got[-1].tokens == 9 and got[-1].folded_in == 0
    assert len({t.seq for t in got}) == 51
    assert store.count_turns(NS, "s") == 51


def test_persistence_across_clients(tmp_path):
    first = MemoryStore.persistent(tmp_path)
    put(first, "s", "durable")
    second = MemoryStore.persistent(tmp_path)
    assert [t.turn.text for t in second.turns(NS, "s")] == ["durable"]
    assert [(s.namespace, s.session_id) for s in second.sessions()] == [(NS, "s")]


def test_default_path_honours_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("LANGCHAIN_RECURSIVE_MEMORY_PATH", str(tmp_path / "x"))
    assert default_path() == tmp_path / "x"
    monkeypatch.delenv("LANGCHAIN_RECURSIVE_MEMORY_PATH")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_path() == tmp_path / "langchain-recursive-memory" / "chroma"


@pytest.mark.parametrize(
    "sid", ['{"$ne": "x"}', "a' OR '1'='1", "$and", "../../etc", "名前", "x" * 1024, " a"]
)
def test_odd_session_ids_are_plain_values(store, sid):
    put(store, "victim", "victim data")
    put(store, sid, "mine")
    assert [t.turn.text for t in store.turns(NS, sid)] == ["mine"]
    assert [t.turn.text for t in store.turns(NS, "victim")] == ["victim data"]
    store.clear(NS, sid)
    assert store.turns(NS, sid) == []
    assert [t.turn.text for t in store.turns(NS, "victim")] == ["victim data"]


@pytest.mark.parametrize("sid", ["", " ", "\t\n", "x" * 1025, "a\x00b", None, 5, "\ud800"])
def test_bad_session_ids_are_rejected(store, sid):
    with pytest.raises(InvalidInputError, match="session_id"):
        put(store, sid, "x")


def test_bad_prefix_is_rejected(store):
    with pytest.raises(ConfigurationError, match="prefix"):
        MemoryStore(store.client, prefix="bad prefix!")


def _summary(version: int, turn_ids: tuple[str, ...], fold_id: str) -> Summary:
    return Summary(
        namespace=NS,
        session_id="s",
        version=version,
        text=f"summary {version}",
        tokens=3,
        turn_ids=turn_ids,
        first_turn_id=turn_ids[0],
        last_turn_id=turn_ids[-1],
        covered=len(turn_ids),
        method="llm",
        fold_id=fold_id,
    )


def test_commit_summary_is_compare_and_set(store):
    ids = [s.id for s in put(store, "s", "a", "b", "c")]
    assert store.session(
        _summary(1, (ids[0],), "winner").namespace, _summary(1, (ids[0],), "winner").session_id
    ).summaries.commit(_summary(1, (ids[0],), "winner"))
    assert not store.session(
        _summary(1, (ids[1],), "loser").namespace, _summary(1, (ids[1],), "loser").session_id
    ).summaries.commit(_summary(1, (ids[1],), "loser"))
    state = store.session(NS, "s").summaries.load()
    assert state.summary is not None and state.summary.fold_id == "winner"
    assert [t.turn.text for t in state.turns] == ["b", "c"]
    # A second store object (another process) sees the same.
    other = MemoryStore(store.client, prefix=store.prefix)
    assert other.session(NS, "s").summaries.load().summary.fold_id == "winner"


def test_a_fold_that_fails_mid_transaction_leaves_neither_version_nor_marks(store, monkeypatch):
    """A version and the marks of its turns are one transaction: all or nothing."""
    from langchain_recursive_memory.core import StoreError
    from langchain_recursive_memory.core.storage import summaries

    ids = [s.id for s in put(store, "s", "a", "b", "c", "d")]

    def crash(*args, **kwargs):
        raise RuntimeError("the process died here")

    monkeypatch.setattr(summaries, "mark_folded", crash)
    session = store.session(NS, "s")
    with pytest.raises((RuntimeError, StoreError)):
        session.summaries.commit(_summary(1, (ids[0], ids[1]), "crashed"))
    monkeypatch.undo()
    fresh = MemoryStore(store.client, prefix=store.prefix)
    state = fresh.session(NS, "s").summaries.load()
    assert state.summary is None and [t.turn.text for t in state.turns] == ["a", "b", "c", "d"]
    assert fresh.session(NS, "s").summaries.commit(_summary(1, (ids[0], ids[1]), "next"))
    flags = {t.turn.text: t.folded_in for t in fresh.turns(NS, "s")}
    assert flags == {"a": 1, "b": 1, "c": 0, "d": 0}


def test_concurrent_folds_in_threads_fold_each_turn_once(store):
    model = KeywordSummarizer()
    retry = FAST
    writers = [
        RecursiveMemory(
            "shared",
            store=MemoryStore(store.client, prefix=store.prefix),
            model=model,
            retry=retry,
            max_tokens=400,
            max_summary_tokens=80,
        )
        for _ in range(4)
    ]
    errors: list[BaseException] = []

    def work(w: int) -> None:
        try:
            for i in range(25):
                writers[w].add(Turn(role="user", text=f"writer {w} message {i} about Oslo"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    log = store.turns(NS, "shared")
    assert len(log) == 100
    for w in range(4):  # each writer's order kept
        mine = [t.turn.text for t in log if t.turn.text.startswith(f"writer {w} ")]
        assert mine == [f"writer {w} message {i} about Oslo" for i in range(25)]
    versions = store.summaries(NS, "shared")
    assert [v.version for v in versions] == list(range(1, len(versions) + 1))
    named = [tid for v in versions for tid in v.turn_ids]
    assert len(named) == len(set(named)), "a turn was folded twice"
    state = store.session(NS, "shared").summaries.load()
    window = {t.id for t in state.turns}
    assert window.isdisjoint(named)
    assert window | set(named) == {t.id for t in log}


def test_record_id_formats_are_pinned(store):
    """Chroma's records are read back by these formats: changing one needs a new schema."""
    from langchain_recursive_memory.core.storage import keys

    skey = session_key(NS, "s")
    assert keys.SCHEMA == 2
    assert len(skey) == 24 and skey != session_key("other", "s")
    assert keys.fact_record_id(skey, "ab") == f"{skey}:f:ab"
    ukey = keys.user_key(NS, "ada")
    assert keys.owned_fact_record_id(NS, "s", None, "ab") == f"{skey}:f:ab"
    assert keys.owned_fact_record_id(NS, "s", "ada", "ab") == f"{ukey}:uf:ab"
    assert keys.window_vector_id(skey, 3, "m1") == f"{skey}:hw3:m1"
    assert keys.window_kind(3) == "hg_w3"
    assert keys.event_vector_id(skey, "e1") == f"{skey}:he:e1"
    assert keys.kinds_filter(skey, ["turn"]) == {"skk": f"{skey}:turn"}
    # The session's row is keyed by exactly this key.
    store.session(NS, "s").turns.append([Turn(role="user", text="x", id="m1")], [5], "o200k_base")
    assert store.session(NS, "s").head().row > 0
    rows = store.db.read(lambda c: c.execute(store.db.tables.sessions.select()).mappings().all())
    assert [(r["skey"], r["ns"], r["sid"]) for r in rows] == [(skey, NS, "s")]


def test_chroma_calls_retry_transient_failures_only():
    import httpx

    from langchain_recursive_memory.core import RecursiveMemoryError, StoreError
    from langchain_recursive_memory.core.storage.client import StoreClient

    chroma = StoreClient(None, FAST_TWO_RETRIES)
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise httpx.ConnectError("down")
        return "ok"

    assert chroma.call("read", flaky) == "ok" and len(calls) == 3

    def down() -> None:
        calls.append(1)
        raise httpx.ConnectError("still down")

    calls.clear()
    with pytest.raises(StoreError, match="Chroma failed to read: ConnectError") as info:
        chroma.call("read", down)
    assert len(calls) == 3 and isinstance(info.value.__cause__, httpx.ConnectError)

    def rejected() -> None:
        calls.append(1)
        raise ValueError("bad request")

    calls.clear()
    with pytest.raises(StoreError, match="ValueError: bad request"):
        chroma.call("write", rejected)
    assert len(calls) == 1  # not a network failure: no retry

    own = RecursiveMemoryError("ours")

    def ours() -> None:
        raise own

    with pytest.raises(RecursiveMemoryError) as info2:
        chroma.call("write", ours)
    assert info2.value is own


async def test_async_twins_do_their_database_io_on_the_loop(tmp_path):
    """With an async driver (aiosqlite here, psycopg for PostgreSQL) the async shell does
    its database I/O on the event loop: the sync engine runs no statement meanwhile."""
    from sqlalchemy import event
    from sqlalchemy.ext.asyncio import AsyncEngine

    store = MemoryStore.persistent(tmp_path)
    memory = RecursiveMemory("s", store=store, max_tokens=300, max_summary_tokens=60)
    counts = {"sync": 0, "async": 0}

    def counter(name):
        def count(*args):
            counts[name] += 1

        return count

    event.listen(store.db.engine, "before_cursor_execute", counter("sync"))
    for i in range(30):
        await memory.aadd([Turn(role="user", text=f"Message {i} about the garden.")])
    context = await memory.acontext()
    engine = store.db._async_engine()
    assert isinstance(engine, AsyncEngine)
    event.listen(engine.sync_engine, "before_cursor_execute", counter("async"))
    await memory.aadd([Turn(role="user", text="One more.")])
    await memory.acontext()
    assert counts["async"] > 0 and counts["sync"] == 0, counts
    assert context.tokens <= 300 and store.count_turns(NS, "s") == 31
    assert (await memory.aturns())[-1].turn.text == "One more."


def test_a_conversation_without_a_model_leaves_its_log_in_the_database_not_in_chroma():
    """300 exchanges of a hybrid memory with no LLM and no embedder: the turns, summaries
    and stamps are rows; Chroma holds only what is searched by similarity (here: nothing,
    no model extracts facts). 0.2.0 left 617 records in Chroma."""
    from conftest import chroma_records, database_rows

    from langchain_recursive_memory.core import HybridMemory

    store = MemoryStore.in_memory()
    memory = HybridMemory("s", store=store, max_tokens=600)
    for i in range(300):
        memory.add(
            [
                Turn(role="user", text=f"Question {i}: what about the garden plan {i % 17}?"),
                Turn(role="assistant", text=f"Answer {i}: water the plot number {i % 11}."),
            ]
        )
        memory.context(f"What about the garden plan {(i + 3) % 17}?")
    in_chroma = sum(len(rows) for rows in chroma_records(store).values())
    assert in_chroma < 100, in_chroma
    rows = database_rows(store)
    assert len(rows[f"{store.prefix}_turns"]) == 600
    assert rows[f"{store.prefix}_summaries"]  # folded, in the database


def test_a_dropped_in_memory_store_takes_its_collections_and_the_suites_sweep_lets_it(
    in_memory_client,
):
    """Dropping the last in-memory store deletes its collections (a finalizer, which may run
    at any allocation); the suite's per-module sweep of leftover collections must not fail
    when one it listed went that way meanwhile (CI, stop 38: NotFoundError at teardown)."""
    import gc

    from conftest import collection_names, drop_collections, hybrid
    from fakes import BagOfWordsEmbedder, FactModel

    before = set(collection_names(in_memory_client))
    store = MemoryStore.in_memory()
    memory = hybrid(
        store,
        model=FactModel(),
        embedder=BagOfWordsEmbedder(),
        max_tokens=400,
        max_summary_tokens=60,
    )
    for i in range(12):
        memory.add(Turn(role="user", text=f"filler {i}: the gate code is 4417."))
    memory.wait_for_folds()
    del memory
    listed = set(collection_names(in_memory_client)) - before
    assert any(name.startswith(f"{store.prefix}_") for name in listed)
    del store
    gc.collect()  # the finalizer runs between the sweep's list and its deletes
    assert not set(collection_names(in_memory_client)) & listed
    drop_collections(in_memory_client, listed)
