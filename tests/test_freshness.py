"""Every read answers as a fresh process would (issues 27 and 33).

Each test writes through one object and reads through a long-lived one (which has read
before, so its caches hold something) and through a fresh store object over the same
database; the two answers must agree, and hold what was written. The model-based test of
the same rule is ``tests/test_freshness_model.py``. Since the log is in a database, the
rule is one statement per read (the session's head) and ``seq > last seen``: the
statements a read makes are counted here too.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from conftest import FAST, T0

from langchain_recursive_memory.core import (
    HiGMem,
    HybridMemory,
    MemoryStore,
    Turn,
)
from langchain_recursive_memory.core.cache import StoreCaches

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


def per_request_read(path: str, sid: str, i: int, requests_of: Any) -> Any:
    """A new store and memory for one exchange (the docs' ``path=`` pattern)."""
    memory = HybridMemory(sid, path=path, retry=FAST, max_tokens=400)
    seen = requests_of(memory.store)
    memory.add(small_talk(2, T0 + i * 600, f"topic {i}"))
    memory.context(f"What about topic {i - 7}?")
    return seen


def test_a_new_object_per_request_does_not_read_the_session_whole(tmp_path, requests_of):
    memory = HybridMemory("long", path=tmp_path, retry=FAST, max_tokens=400)
    for i in range(10):
        memory.add(small_talk(60, T0 + i * 3600, f"topic {i}"))
    memory.context("warm up")
    seen = per_request_read(str(tmp_path), "long", 20, requests_of)
    assert seen.rows < 60, seen.counts  # never the whole 600-turn log


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
    assert one.identity.startswith(f"file:{(tmp_path / 'one').resolve()}|sqlite:///")
    assert two.identity.startswith(f"file:{(tmp_path / 'two').resolve()}|sqlite:///")
    assert one.caches is not two.caches


# -- 4. a user-scope read in steady state costs the same however many sessions -----------


def user_memory(engine: str, store: MemoryStore, sid: str) -> HybridMemory | HiGMem:
    if engine == "higmem":
        return HiGMem(sid, store=store, user_id="u", retry=FAST)
    return hybrid(store, sid)


def user_read(memory: HybridMemory | HiGMem) -> list[str]:
    if isinstance(memory, HiGMem):
        return texts(memory.retrieve("What is my locker code?", k=3, scope="user"))
    return texts(memory.recall("What is my locker code?", k=3, kinds=("turn",)))


def steady_user_reads(engine: str, sessions: int, requests_of: Any) -> Any:
    """The requests of three live exchanges of a user with ``sessions`` other sessions."""
    store = MemoryStore.in_memory()
    for n in range(sessions):
        user_memory(engine, store, f"old{n}").add(small_talk(12, T0 + n * 9000, f"topic {n}"))
    reader = user_memory(engine, store, "now")
    reader.add(small_talk(2, T0 + 50_000))
    user_read(reader)  # the first read reads every session once
    seen = requests_of(store)
    for i in range(3):
        reader.add(small_talk(2, T0 + 60_000 + i * 600, "garden"))
        user_read(reader)
    seen.close()
    return seen


@pytest.mark.parametrize("engine", ["hybrid", "higmem"])
def test_a_steady_user_scope_read_reads_no_turn_of_an_unchanged_session(engine, requests_of):
    few, many = steady_user_reads(engine, 1, requests_of), steady_user_reads(engine, 6, requests_of)
    assert many.total() == few.total(), (few.counts, many.counts)
    # the user's sessions and their heads are one statement; the others' turns are not read
    assert many.counts["SELECT sessions"] == few.counts["SELECT sessions"], many.counts
    assert many.rows == few.rows, (few.rows, many.rows)


@pytest.mark.parametrize("change", ["new session", "joined", "cleared", "expired", "forgotten"])
def test_every_change_of_a_users_sessions_reaches_a_long_lived_user_scope(store, change):
    """Whatever changes the user's set of sessions, through another object, is seen at once."""
    other = fresh(store)
    reader = hybrid(store, "a")
    reader.add(small_talk(3, T0))
    user_read(reader)
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


def test_a_long_lived_view_catches_up_with_what_another_object_appended_and_folded(store):
    from langchain_recursive_memory.core.retrieval.view import session_view, sync_steps
    from langchain_recursive_memory.core.runtime.runner import Runner

    writer = hybrid(fresh(store), "s", max_tokens=200)
    writer.add(small_talk(5, T0))
    view = session_view(store, "default", "s")
    Runner().run(sync_steps(store, "default", {"s": view}))
    writer.add(small_talk(40, T0 + 1000, "garden"))  # appends and folds elsewhere
    assert writer.get_summary() is not None
    Runner().run(sync_steps(store, "default", {"s": view}))
    other = fresh(store)
    again = session_view(other, "default", "s")
    Runner().run(sync_steps(other, "default", {"s": again}))
    order = [(t.id, t.seq) for t in again.index.turns]
    assert [(t.id, t.seq) for t in view.index.turns] == order
    assert [seq for _, seq in order] == list(range(1, 46))


def test_a_long_lived_view_starts_again_after_a_clear_elsewhere(store):
    from langchain_recursive_memory.core.retrieval.view import session_view, sync_steps
    from langchain_recursive_memory.core.runtime.runner import Runner

    hybrid(store, "s").add(small_talk(5, T0))
    view = session_view(store, "default", "s")
    Runner().run(sync_steps(store, "default", {"s": view}))
    other = hybrid(fresh(store), "s")
    other.clear()
    other.add(Turn(role="user", text=LOCKER, created_at=T0 + 9000))
    Runner().run(sync_steps(store, "default", {"s": view}))
    assert [t.turn.text for t in view.index.turns] == [LOCKER]
