"""Against a real PostgreSQL server: the log, folds, concurrency, isolation, failures.

The server is the CI's (``LRM_TEST_DATABASE_URL``, started by .ci/run) or one of our own
(:class:`LocalPostgres`, once per session). Every test writes under its own table prefix
and drops its tables afterwards, so tests (and xdist workers) share one database.
"""

from __future__ import annotations

import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import FAST_RETRY, NS, check_consistent
from fakes import FactModel

from langchain_recursive_memory.core import (
    HybridMemory,
    MemoryStore,
    RecursiveMemory,
    StoreError,
    Turn,
)
from langchain_recursive_memory.core.cache import StoreCaches
from langchain_recursive_memory.core.storage import client as chroma_client

pytestmark = pytest.mark.server


MakeStore = Callable[..., MemoryStore]


@pytest.fixture
def make_store(pg_url: str) -> Iterator[MakeStore]:
    """Stores over the database, by default under one fresh prefix; their tables are dropped."""
    default_prefix = f"t{uuid.uuid4().hex[:12]}"
    made: list[MemoryStore] = []

    def make(prefix: str = default_prefix, **kwargs: Any) -> MemoryStore:
        kwargs.setdefault("database", pg_url)
        store = MemoryStore(chroma_client.in_memory_client(), prefix=prefix, **kwargs)
        made.append(store)
        return store

    yield make
    dropped: set[str] = set()
    for store in made:
        if store.prefix not in dropped:
            store.db.tables.metadata.drop_all(store.db.engine)
            dropped.add(store.prefix)
    for store in made:
        store.close()


def exchange(i: int) -> list[Turn]:
    topics = ["weather", "football", "recipes", "music", "traffic", "gardening", "movies"]
    topic = topics[i % len(topics)]
    if i == 3:
        question = "By the way, my locker code is 4471."
    elif i == 20:
        question = "Also: my home city is Trondheim."
    else:
        question = f"Let's chat about {topic} again, round {i}, Alice and Bob {i * 7}."
    return [
        Turn(role="user", text=question),
        Turn(role="assistant", text=f"Sure, {topic} is a fine topic for round {i}."),
    ]


def hybrid(store: MemoryStore, session: str = "conv") -> HybridMemory:
    return HybridMemory(
        session,
        store=store,
        model=FactModel(),
        retry=FAST_RETRY,
        max_tokens=600,
        max_summary_tokens=120,
    )


def log_rows(store: MemoryStore, session: str) -> list[tuple[Any, ...]]:
    return [
        (t.id, t.seq, t.turn.role, t.turn.text, t.tokens, t.folded_in)
        for t in store.turns(NS, session)
    ]


def test_a_long_conversation_is_logged_in_order_folds_and_reads_the_same_elsewhere(make_store):
    store = make_store()
    memory = hybrid(store)
    expected: list[str] = []
    for i in range(60):
        turns = exchange(i)
        memory.add(turns)
        expected += [t.text for t in turns]
        assert memory.context().tokens <= 600
    log = store.turns(NS, "conv")
    assert [t.turn.text for t in log] == expected
    assert [t.seq for t in log] == list(range(1, 121))
    assert [t.turn.role for t in log] == ["user", "assistant"] * 60
    summaries = store.summaries(NS, "conv")
    assert len(summaries) >= 2, "60 exchanges in 600 tokens must fold"
    check_consistent(store, "conv", 120)
    facts = {f.key: f.text for f in memory.facts()}
    assert facts["user/locker_code"] == "The user's locker code is 4471."

    # Another worker: its own store object and caches, the same database and prefix.
    other = make_store(store.prefix, cache=StoreCaches())
    assert log_rows(other, "conv") == log_rows(store, "conv")
    assert other.summaries(NS, "conv") == summaries
    assert other.latest_summary(NS, "conv") == memory.get_summary()
    again = hybrid(other)
    for query in (None, "What is my locker code?", "Which city is home?"):
        mine, theirs = memory.context(query), again.context(query)
        assert theirs.turns == mine.turns
        assert theirs.summary == mine.summary
        assert theirs.tokens == mine.tokens
    assert {f.key: f.text for f in again.facts()} == facts
    assert [s.session_id for s in other.sessions()] == ["conv"]


def test_an_unreachable_database_fails_fast_naming_it_without_the_password():
    client = chroma_client.in_memory_client()
    url = "postgresql+psycopg://postgres:secret@127.0.0.1:1/nope"  # nothing listens on 1
    start = time.monotonic()
    with pytest.raises(StoreError) as info:
        MemoryStore(client, database=url, prefix=f"t{uuid.uuid4().hex[:12]}")
    elapsed = time.monotonic() - start
    assert elapsed < 15, f"took {elapsed:.1f}s"
    message = str(info.value)
    assert "postgresql+psycopg://postgres:***@127.0.0.1:1/nope" in message
    assert "secret" not in message
    shown = "".join(traceback.format_exception(info.value))
    assert "secret" not in shown.replace(url, ""), "the password leaks through the cause"


@pytest.mark.parametrize("objects", ["one store", "a store per thread"])
def test_concurrent_appends_to_one_session_are_each_stored_once_in_order(make_store, objects):
    first = make_store()
    stores = (
        [first] * 4
        if objects == "one store"
        else [first] + [make_store(first.prefix, cache=StoreCaches()) for _ in range(3)]
    )
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            memory = RecursiveMemory(
                "shared", store=stores[w], retry=FAST_RETRY, max_tokens=100_000
            )
            barrier.wait()
            for i in range(50):
                memory.add(Turn(role="user", text=f"writer {w} turn {i}"), fold=False)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(t.is_alive() for t in threads), "a writer hangs"
    assert errors == []

    log = make_store(first.prefix, cache=StoreCaches()).turns(NS, "shared")
    texts = [t.turn.text for t in log]
    assert len(texts) == 200
    assert sorted(texts) == sorted(f"writer {w} turn {i}" for w in range(4) for i in range(50))
    assert [t.seq for t in log] == list(range(1, 201)), "gaps or duplicate order keys"
    assert len({t.id for t in log}) == 200
    for w in range(4):
        mine = [int(x.rsplit(" ", 1)[1]) for x in texts if x.startswith(f"writer {w} ")]
        assert mine == list(range(50)), f"writer {w}'s turns out of order"


def test_two_prefixes_in_one_database_do_not_see_each_other(make_store):
    a = make_store(f"a{uuid.uuid4().hex[:12]}")
    b = make_store(f"b{uuid.uuid4().hex[:12]}")
    RecursiveMemory("same", store=a, retry=FAST_RETRY).add(Turn(role="user", text="alpha says hi"))
    RecursiveMemory("same", store=b, retry=FAST_RETRY).add(Turn(role="user", text="beta says hi"))
    RecursiveMemory("only-b", store=b, retry=FAST_RETRY).add(Turn(role="user", text="beta alone"))

    assert [t.turn.text for t in a.turns(NS, "same")] == ["alpha says hi"]
    assert [t.turn.text for t in b.turns(NS, "same")] == ["beta says hi"]
    assert [s.session_id for s in a.sessions()] == ["same"]
    assert sorted(s.session_id for s in b.sessions()) == ["only-b", "same"]
    assert a.count_turns(NS, "only-b") == 0
    assert a.turns(NS, "only-b") == []
    # A clear in one prefix leaves the other's session of the same id alone.
    a.clear(NS, "same")
    assert a.sessions() == []
    assert [t.turn.text for t in b.turns(NS, "same")] == ["beta says hi"]


async def test_async_twins_use_psycopgs_async_driver(make_store: MakeStore) -> None:
    from sqlalchemy import event
    from sqlalchemy.ext.asyncio import AsyncEngine

    store = make_store()
    memory = HybridMemory(
        "async", store=store, max_tokens=400, max_summary_tokens=60, retry=FAST_RETRY
    )
    for i in range(30):
        await memory.aadd(exchange(i))
    engine = store.db._async_engine()
    assert isinstance(engine, AsyncEngine) and engine.url.drivername == "postgresql+psycopg"
    seen = []
    event.listen(engine.sync_engine, "before_cursor_execute", lambda *a: seen.append(1))
    await memory.aadd(exchange(30))
    context = await memory.acontext("What about the weather?")
    assert seen and context.tokens <= 400
    again = make_store(cache=StoreCaches())
    assert [t.id for t in again.turns(NS, "async")] == [t.id for t in await memory.aturns()]
    await engine.dispose()


def test_processes_recording_one_setting_at_once_all_succeed_and_one_value_wins(make_store):
    # Two 0.2.0 stores migrating at once both record that the move is done: under
    # PostgreSQL's read-committed isolation a delete-then-insert of the same key lets both
    # transactions insert, and one failed with a duplicate key (CI, stop 37).
    stores = [make_store() for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def record(store: MemoryStore, n: int) -> None:
        try:
            for round_ in range(25):
                barrier.wait(10)
                store.db.set_meta(f"setting-{round_}", f"from {n}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=record, args=(s, n)) for n, s in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    for round_ in range(25):
        assert stores[0].db.get_meta(f"setting-{round_}") in {f"from {n}" for n in range(4)}
