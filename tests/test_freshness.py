"""Every read answers as a fresh process would (issue 27): the three reported failures.

Each test writes through one object and reads through a long-lived one (which has read
before, so its caches hold something) and through a fresh store object over the same
Chroma client; the two answers must agree, and hold what was written. The model-based
test of the same rule is ``tests/test_freshness_model.py``.
"""

from __future__ import annotations

import time
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


# -- 4. a user-scope read in steady state reads by id, not by filter -------------------------


class Spy:
    """A chromadb collection that records its filtered ``get`` calls (and what they include)."""

    def __init__(self, collection: Any, name: str, seen: list[tuple[str, tuple[str, ...]]]):
        self._collection, self._name, self._seen = collection, name, seen

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._collection, attr)

    def get(self, **kw: Any) -> Any:
        if kw.get("where") is not None:
            self._seen.append((self._name, tuple(kw.get("include") or ())))
        return self._collection.get(**kw)


def spying(store: MemoryStore) -> list[tuple[str, tuple[str, ...]]]:
    """The filtered gets of the store's repositories from now on: (collection, include)."""
    seen: list[tuple[str, tuple[str, ...]]] = []
    repos = store.parts.repos
    for repo in (repos.session_list, repos.turn_log, repos.heads, repos.summary_log):
        if not isinstance(repo.collection, Spy):
            repo.collection = Spy(repo.collection, repo.name, seen)
        else:
            repo.collection._seen = seen
    return seen


def user_memory(engine: str, store: MemoryStore, sid: str) -> HybridMemory | HiGMem:
    if engine == "higmem":
        return HiGMem(sid, store=store, user_id="u", retry=FAST)
    return hybrid(store, sid)


def user_read(memory: HybridMemory | HiGMem) -> list[str]:
    if isinstance(memory, HiGMem):
        return texts(memory.retrieve("What is my locker code?", k=3, scope="user"))
    return texts(memory.recall("What is my locker code?", k=3, kinds=("turn",)))


@pytest.mark.parametrize("engine", ["hybrid", "higmem"])
def test_a_steady_user_scope_read_lists_no_sessions_and_reads_open_turns_as_ids(store, engine):
    for n in range(3):
        user_memory(engine, store, f"old{n}").add(small_talk(12, T0 + n * 9000, f"topic {n}"))
    reader = user_memory(engine, store, "now")
    reader.add(small_talk(2, T0 + 50_000))
    user_read(reader)  # the first read lists the user's sessions
    seen = spying(store)
    for i in range(3):
        reader.add(small_talk(2, T0 + 60_000 + i * 600, "garden"))
        user_read(reader)
    assert not [s for s in seen if s[0] == "sessions"], seen
    assert [s for s in seen if s[0] == "turns" and s[1]] == (
        [("turns", ("documents", "metadatas"))] * 3 if engine == "hybrid" else []
    ), seen  # the hybrid memory's own context reads its unfolded turns whole


@pytest.mark.parametrize("change", ["new session", "joined", "cleared", "expired", "forgotten"])
def test_every_change_of_a_users_sessions_reaches_a_long_lived_user_scope(store, change):
    """Whatever changes the user's set of sessions, through another object, is seen at once."""
    other = fresh(store)
    reader = hybrid(store, "a")
    reader.add(small_talk(3, T0))
    user_read(reader)
    listed = store.parts.directory.listed_sessions("default", "u")
    assert listed is not None and listed.token is not None  # the reader keeps the list
    if change == "new session":
        hybrid(other, "b").add(Turn(role="user", text=LOCKER, created_at=T0 + 9000))
    elif change == "joined":
        HybridMemory("b", store=other, retry=FAST, max_tokens=400).add(
            Turn(role="user", text=LOCKER, created_at=T0 + 9000)
        )
        user_read(reader)  # b is no session of the user yet
        hybrid(fresh(store), "b").add(small_talk(1, T0 + 9500))
    else:
        hybrid(other, "b").add(Turn(role="user", text=LOCKER, created_at=T0 + 9000))
        assert LOCKER in user_read(reader)
        if change == "cleared":
            hybrid(fresh(store), "b").clear()
        elif change == "expired":
            fresh(store).expire(3600, now=time.time() + 7200)  # both go
        else:
            fresh(store).forget_user("default", "u")
    long_lived = user_read(reader)
    assert long_lived == user_read(hybrid(fresh(store), "a"))
    assert (LOCKER in long_lived) == (change in ("new session", "joined")), long_lived


def test_open_turns_moved_by_a_fold_are_read_again_by_a_long_lived_view(store):
    from langchain_recursive_memory.core.retrieval.view import session_view, sync_steps
    from langchain_recursive_memory.core.runtime.runner import Runner
    from langchain_recursive_memory.core.storage.records import SessionState, Summary

    session = store.session("default", "s")
    stored = session.turns.append(small_talk(3, T0), [5, 5, 5], "e")
    view = session_view(store, "default", "s")
    Runner().run(sync_steps(store, "default", {"s": view}))
    top = max(t.seq for t in stored)
    summary = Summary("default", "s", 1, "", 0, (), None, None, 0, "extractive", last_seq=top)
    writer = fresh(store).session("default", "s")
    writer.turns.settle(SessionState(summary, tuple(stored[:2])))  # a fold moves two turns
    Runner().run(sync_steps(store, "default", {"s": view}))
    other = fresh(store)
    again = session_view(other, "default", "s")
    Runner().run(sync_steps(other, "default", {"s": again}))
    order = [(t.id, t.seq) for t in again.index.turns]
    assert [(t.id, t.seq) for t in view.index.turns] == order
    assert order[0][0] == stored[2].id  # the two moved turns come after the third now
