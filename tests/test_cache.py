"""The caches of a store stay within their limits, are shared per session, and per store."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from conftest import FAST_RETRY

from langchain_recursive_memory.core import (
    CacheLimits,
    ConfigurationError,
    FunctionTextModel,
    HiGMem,
    HybridMemory,
    MemoryStore,
    RecursiveMemory,
    Turn,
)
from langchain_recursive_memory.core.cache import (
    HEALTH_CACHE_ENTRIES,
    SESSION_CACHE_ENTRIES,
    SessionCache,
    caches,
    clear_caches,
    session_cache_key,
)
from langchain_recursive_memory.core.recursive import recall
from langchain_recursive_memory.core.retrieval import dense

SESSIONS = 10_000


def test_an_lru_is_bounded_by_entries_and_bytes() -> None:
    cache: SessionCache[str] = SessionCache("t", max_entries=3, max_bytes=100)
    for n in range(5):
        cache.put(("s", n), f"v{n}", 10)
    assert len(cache) == 3 and cache.nbytes == 30
    assert cache.get(("s", 0)) is None and cache.get(("s", 4)) == "v4"
    cache.put(("s", 5), "big", 90)  # over the byte budget: the least recent go
    assert cache.nbytes <= 100 and cache.get(("s", 5)) == "big"
    cache.put(("s", 6), "huge", 500)  # alone over budget: the newest is kept anyway
    assert [k for k, _ in cache.items()] == [("s", 6)]
    assert cache.pop(("s", 6)) == "huge" and cache.nbytes == 0
    with pytest.raises(ConfigurationError, match="max_entries"):
        SessionCache("bad", max_entries=0)


def test_ten_thousand_sessions_keep_every_cache_within_its_limits() -> None:
    store = MemoryStore.in_memory()
    caches = store.caches
    extra = 500
    for n in range(HEALTH_CACHE_ENTRIES + extra):
        RecursiveMemory(f"user-{n}", store=store)  # its fold health is cached at once
    assert len(caches.health) == HEALTH_CACHE_ENTRIES
    first = session_cache_key("default", "user-0")
    assert caches.health.get(first) is None  # the least recently used went first
    vector = np.ones(384, np.float32)
    for n in range(SESSIONS):
        key = session_cache_key("default", f"user-{n}")
        caches.facts.get_or_create(key, recall._SessionRecall)
        caches.sessions.get_or_create((*key, "higmem"), object)
        dense._remember(  # what a read of 100 vectors keeps: ~150 KiB a session
            store,
            (*key, "vectors", "space"),
            dense._SessionVectors(),
            [(f"t{i}", "h", vector) for i in range(100)],
        )
    assert len(caches.facts) == SESSION_CACHE_ENTRIES
    assert len(caches.sessions) <= caches.sessions.max_entries
    assert caches.sessions.nbytes <= caches.limits.nbytes  # 10,000 x 150 KiB did not fit
    vectors = [e for k, e in caches.sessions.items() if "vectors" in k]  # type: ignore[operator]
    assert caches.sessions.nbytes == sum(e.nbytes for e in vectors)
    clear_caches()
    assert all(len(c) == 0 and c.nbytes == 0 for c in caches.all())


def test_two_stores_share_no_cache() -> None:
    one, two = MemoryStore.in_memory(), MemoryStore.in_memory()
    RecursiveMemory("s", store=one).add(Turn(role="user", text="hello"))
    assert len(one.caches.health) == 1 and len(two.caches.health) == 0
    assert all(len(c) == 0 for c in two.caches.all())
    assert set(map(id, caches())) >= {id(c) for c in one.caches.all() + two.caches.all()}


def test_two_higmem_objects_of_one_session_never_index_at_once(store: MemoryStore) -> None:
    calls: list[str] = []
    entered = threading.Event()

    def slow(prompt: str) -> str:
        calls.append(prompt)
        entered.set()
        time.sleep(0.3)
        lines = [
            f'{{"turn": {n}, "keywords": ["k"], "context": "c", "events": ["NEW:talk"]}}'
            for n in range(1, 5)
        ]
        return "<index>\n" + "\n".join(lines) + "\n</index>"

    model = FunctionTextModel(slow)
    first = HiGMem("shared", store=store, model=model, retry=FAST_RETRY)
    second = HiGMem("shared", store=store, model=model, retry=FAST_RETRY)
    turns = [Turn(role="user", text=f"line {i}") for i in range(4)]
    store.session("default", "shared").turns.append(
        turns, [5] * 4, "o200k_base"
    )  # logged, not indexed
    worker = threading.Thread(target=first.flush)
    worker.start()
    assert entered.wait(5)
    assert second.flush() == 0  # busy: the first object is indexing the session
    worker.join(10)
    assert len(calls) == 1  # one analysis of the batch, not one per object
    assert len(second.turn_nodes()) == len(second.turns()) == 4


@pytest.mark.parametrize("name", ["sessions", "nbytes", "small"])
def test_a_cache_limit_below_one_is_a_configuration_error(name: str) -> None:
    with pytest.raises(ConfigurationError, match=f"{name}=0: must be >= 1"):
        CacheLimits(**{name: 0})


def test_the_session_bound_counts_sessions_not_entries() -> None:
    """``CacheLimits(sessions=n)`` keeps the state of n sessions, whatever each holds.

    A hybrid session holds one entry (its archive index), so an entry bound of four per
    session let 1,000 sessions stay (the worker benchmark's 136 MB at 1,000 sessions).
    """
    store = MemoryStore.in_memory(cache=CacheLimits(sessions=3))
    for n in range(10):
        memory = HybridMemory(f"chat-{n}", store=store, max_tokens=300)
        memory.add([Turn(role="user", text=f"I painted a lake number {n} at dawn.")] * 12)
        memory.context("what did I paint?")
        assert store.caches.sessions.sessions <= 3
    assert 1 <= len(store.caches.sessions) <= 3 * 4
    # the least recently used sessions went whole; the newest is kept and still answers
    kept = {key[2] for key, _ in store.caches.sessions.items()}  # type: ignore[index]
    assert "chat-9" in kept and "chat-0" not in kept
    again = HybridMemory("chat-0", store=store, max_tokens=300)
    assert [h.text for h in again.recall("lake number 0", k=1)] == [
        "I painted a lake number 0 at dawn."
    ]


def test_a_session_with_several_entries_goes_whole() -> None:
    cache: SessionCache[object] = SessionCache("t", max_entries=100, max_sessions=2)
    for sid in ("a", "b"):
        for kind in ("index", "vectors", "higmem"):
            cache.get_or_create((*session_cache_key("ns", sid), kind), object)
    cache.get((*session_cache_key("ns", "a"), "index"))  # a is now the most recent
    cache.get_or_create((*session_cache_key("ns", "c"), "index"), object)
    assert sorted({key[2] for key, _ in cache.items()}) == ["a", "c"]  # type: ignore[index]
    assert len(cache) == 4 and cache.sessions == 2
    cache.pop_matching(lambda key: True)
    assert len(cache) == 0 and cache.sessions == 0
