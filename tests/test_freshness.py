"""Every read answers as a fresh process would (issue 27): the three reported failures.

Each test writes through one object and reads through a long-lived one (which has read
before, so its caches hold something) and through a fresh store object over the same
Chroma client; the two answers must agree, and hold what was written. The model-based
test of the same rule is ``tests/test_freshness_model.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from langchain_recursive_memory.core import (
    HiGMem,
    HybridMemory,
    MemoryStore,
    RetryPolicy,
    Turn,
)
from langchain_recursive_memory.core.cache import StoreCaches

FAST = RetryPolicy(attempts=1, timeout=10.0, cooldown=0.0)
T0 = 1_700_000_000.0
LOCKER = "My locker code is 4471."


def fresh(store: MemoryStore) -> MemoryStore:
    """A store object over the same client and prefix that has read nothing yet."""
    return MemoryStore(store.client, prefix=store.prefix, cache=StoreCaches())


def small_talk(n: int, start: float, topic: str = "weather") -> list[Turn]:
    return [
        Turn(role="user", name="Ada", text=f"Small talk {i} about the {topic}.",
             created_at=start + i * 60)
        for i in range(n)
    ]  # fmt: skip


def hybrid(store: MemoryStore, sid: str, **kw: Any) -> HybridMemory:
    kw.setdefault("max_tokens", 400)
    return HybridMemory(sid, store=store, user_id="u", retry=FAST, recall_scope="user", **kw)


def texts(hits: list[Any]) -> list[str]:
    return [getattr(h, "text", None) or h.turn.text for h in hits]


# -- 1. a user's new conversation is seen by the user's open ones ----------------------------


def test_a_users_new_session_is_listed_at_once(store):
    hybrid(store, "a").add(small_talk(3, T0))
    assert [s.session_id for s in store.user_sessions("default", "u")] == ["a"]
    hybrid(store, "b").add(Turn(role="user", text=LOCKER, created_at=T0 + 9000))
    listed = [s.session_id for s in store.user_sessions("default", "u")]
    assert listed == [s.session_id for s in fresh(store).user_sessions("default", "u")]
    assert listed == ["a", "b"]


@pytest.mark.parametrize("engine", ["hybrid", "higmem"])
def test_a_users_new_session_reaches_the_user_scope_of_an_open_one(store, engine):
    def open_session(s: MemoryStore, sid: str) -> HybridMemory | HiGMem:
        if engine == "higmem":
            return HiGMem(sid, store=s, user_id="u", retry=FAST)
        return hybrid(s, sid)

    def read(memory: HybridMemory | HiGMem) -> list[str]:
        if isinstance(memory, HiGMem):
            return texts(memory.retrieve("What is my locker code?", k=3, scope="user"))
        return texts(memory.recall("What is my locker code?", k=3, kinds=("turn",)))

    a = open_session(store, "a")
    a.add(small_talk(40, T0))
    assert LOCKER not in read(a)  # a's caches now hold the user's sessions: only a
    open_session(store, "b").add(Turn(role="user", text=LOCKER, created_at=T0 + 9000))
    long_lived = read(a)
    assert long_lived == read(open_session(fresh(store), "a"))
    assert LOCKER in long_lived


# -- 2. each engine's state is its own; a mixed user reads the same from any object ----------


def test_a_hybrid_user_scope_reads_a_higmem_session_of_the_user_whole(store):
    """A hybrid session's user scope recalls every turn of the user's HiGMem session.

    HiGMem's "indexed" is not the recursive memory's "folded": the HiGMem session's turns
    are the user's archived turns from the moment they are stored, whichever object reads.
    """
    reader = hybrid(store, "chat")
    reader.add(small_talk(5, T0))
    notes = HiGMem("notes", store=store, user_id="u", retry=FAST)
    notes.add(Turn(role="user", name="Ada", text=LOCKER, created_at=T0 + 1000))
    query = "What is my locker code?"
    assert LOCKER in texts(reader.recall(query, k=3, kinds=("turn",)))  # seen while open
    notes.add(small_talk(40, T0 + 2000, "garden"))  # HiGMem indexes (and closes) them all
    notes.retrieve("garden")
    long_lived = texts(reader.recall(query, k=3, kinds=("turn",)))
    assert long_lived == texts(hybrid(fresh(store), "chat").recall(query, k=3, kinds=("turn",)))
    assert LOCKER in long_lived


def test_a_higmem_user_scope_reads_a_folded_hybrid_session_of_the_user_whole(store):
    writer = hybrid(store, "chat", model=None, max_tokens=200)
    writer.add(Turn(role="user", name="Ada", text=LOCKER, created_at=T0))
    reader = HiGMem("notes", store=store, user_id="u", retry=FAST)
    reader.add(small_talk(3, T0 + 100, "garden"))
    query = "What is my locker code?"
    assert LOCKER in texts(reader.retrieve(query, k=3, scope="user"))
    writer.add(small_talk(60, T0 + 2000))  # folds: the locker turn is archived
    assert writer.get_summary() is not None
    long_lived = texts(reader.retrieve(query, k=3, scope="user"))
    fresh_reader = HiGMem("notes", store=fresh(store), user_id="u", retry=FAST)
    assert long_lived == texts(fresh_reader.retrieve(query, k=3, scope="user"))
    assert LOCKER in long_lived


# -- 3. a new object per request costs what a shared one does --------------------------------


def counting(store: MemoryStore) -> Counter[str]:
    """Count the records the store's Chroma calls return, by what they do (from now on)."""
    seen: Counter[str] = Counter()
    original = store.parts.repos.client.call

    def call(what: str, fn: Callable[[], Any]) -> Any:
        got = original(what, fn)
        if isinstance(got, dict) and "ids" in got:
            ids = got["ids"]
            seen[what] += len(ids[0]) if ids and isinstance(ids[0], list) else len(ids)
        seen["calls"] += 1
        return got

    store.parts.repos.client.call = call  # type: ignore[method-assign]
    return seen


def per_request_read(path: str, sid: str, i: int) -> Counter[str]:
    """A new store and memory for one exchange (the README's ``path=`` pattern)."""
    memory = HybridMemory(sid, path=path, retry=FAST, max_tokens=400)
    seen = counting(memory.store)
    memory.add(small_talk(2, T0 + i * 600, f"topic {i}"))
    memory.context(f"What about topic {i - 7}?")
    return seen


def test_a_new_object_per_request_does_not_read_the_session_whole(tmp_path):
    memory = HybridMemory("long", path=tmp_path, retry=FAST, max_tokens=400)
    for i in range(10):
        memory.add(small_talk(60, T0 + i * 3600, f"topic {i}"))
    memory.context("warm up")
    records = per_request_read(str(tmp_path), "long", 20)
    assert records["read turns"] < 60, records  # never the whole 600-turn log


def test_stores_over_different_databases_never_share_caches_whatever_the_environment(
    tmp_path, monkeypatch
):
    """chromadb reads CHROMA_SERVER_HOST/PORT into every client's settings, local ones too.

    A store's identity (which caches it shares) comes from what the client is, not from
    those settings: two local databases opened while they are set are two databases.
    """
    monkeypatch.setenv("CHROMA_SERVER_HOST", "127.0.0.1")
    monkeypatch.setenv("CHROMA_SERVER_PORT", "9")
    one = MemoryStore.persistent(tmp_path / "one")
    two = MemoryStore.persistent(tmp_path / "two")
    assert one.identity == f"file:{(tmp_path / 'one').resolve()}"
    assert two.identity == f"file:{(tmp_path / 'two').resolve()}"
    assert one.caches is not two.caches
