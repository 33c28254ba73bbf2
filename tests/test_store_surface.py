"""One store surface for users, one protocol for the engines (issue 23, item 3).

``MemoryStore`` is what applications call; ``MemoryStore.records`` (``SessionRecords``) is
what the engines and adapters read and write through. Composition, not mixins: each is a
plain class whose state is set in its ``__init__``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any

import pytest
from fakes import BagOfWordsEmbedder, FactModel, HiGMemModel

from langchain_recursive_memory.core import (
    HiGMem,
    HybridMemory,
    MemoryStore,
    RetryPolicy,
    Turn,
)
from langchain_recursive_memory.core.cache import StoreCaches
from langchain_recursive_memory.core.storage import SessionRecords
from langchain_recursive_memory.core.storage.lifecycle import SessionLifecycle
from langchain_recursive_memory.core.storage.repositories import Repositories
from langchain_recursive_memory.core.storage.repository import Repository
from langchain_recursive_memory.core.storage.users import UserDirectory
from langchain_recursive_memory.core.storage.vectors import VectorSpaces
from langchain_recursive_memory.core.store_compat import DEPRECATED_METHODS

FAST = RetryPolicy(attempts=1, timeout=5.0, cooldown=0.0)

USER_SURFACE = [
    "activity",
    "clear",
    "count_turns",
    "describe_session",
    "expire",
    "forget_user",
    "http",
    "in_memory",
    "latest_summary",
    "persistent",
    "retry",
    "session_settings",
    "session_user",
    "sessions",
    "summaries",
    "turns",
    "usage",
    "user_facts",
    "user_sessions",
    "users",
]

# What the engines call that applications do not (a sample that must stay off MemoryStore).
ENGINE_ONLY_SAMPLE = {
    "add_usage",
    "add_vectors",
    "append",
    "bind_user",
    "claim_fold",
    "commit_link",
    "commit_summary",
    "drop_facts",
    "drop_nodes",
    "drop_user_facts",
    "drop_vectors",
    "get_events",
    "get_facts",
    "get_turn_nodes",
    "get_turns",
    "heads",
    "join_user",
    "load",
    "put_events",
    "put_turn_nodes",
    "rebuild_marker",
    "release_fold",
    "set_rebuild_marker",
    "settle",
    "open_turns",
    "upsert_facts",
    "vector_ids",
    "vectors_by_ids",
}


def _public(cls: type) -> set[str]:
    """The public names of ``cls``, but 0.1.0's deprecated store methods (until 0.3.0)."""
    return {
        name
        for name in dir(cls)
        if not name.startswith("_") and not (cls is MemoryStore and name in DEPRECATED_METHODS)
    }


def test_the_user_surface_is_pinned():
    assert sorted(_public(MemoryStore)) == USER_SURFACE


def test_the_engines_protocol_is_not_on_the_user_surface():
    protocol = _public(SessionRecords)
    assert protocol >= ENGINE_ONLY_SAMPLE
    engine_only = protocol - set(USER_SURFACE)
    assert engine_only >= ENGINE_ONLY_SAMPLE
    assert not _public(MemoryStore) & engine_only
    # What both offer, MemoryStore offers by delegating to the protocol.
    shared = _public(MemoryStore) & protocol
    assert shared == {"clear", "count_turns", "describe_session", "forget_user"} | {
        "latest_summary",
        "summaries",
        "turns",
        "usage",
        "user_sessions",
    }


@pytest.mark.parametrize(
    "cls", [MemoryStore, SessionRecords, UserDirectory, SessionLifecycle, Repositories]
)
def test_no_storage_mixins(cls):
    assert cls.__mro__ == (cls, object)


@pytest.mark.parametrize("cls", [MemoryStore, SessionRecords, UserDirectory, SessionLifecycle])
def test_no_annotation_only_state(cls):
    assert not inspect.get_annotations(cls)


def test_the_protocol_object_sets_its_state_in_init():
    store = MemoryStore.in_memory()
    records = store.records
    assert isinstance(records, SessionRecords)
    state = vars(records)
    assert set(state) == {"caches", "repos", "directory", "lifecycle"}
    assert isinstance(state["caches"], StoreCaches) and state["caches"] is store.caches
    repos = state["repos"]
    for field in dataclasses.fields(repos):
        value = getattr(repos, field.name)
        if field.name == "client":
            assert value.retry is store.retry
        else:
            assert isinstance(value, Repository | VectorSpaces), field.name
    # The parts share the one bundle of repositories and the store's caches.
    assert vars(records.directory) == {"repos": repos, "caches": store.caches}
    assert vars(records.lifecycle) == {
        "repos": repos,
        "directory": records.directory,
        "caches": store.caches,
    }


def _recorded(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every protocol call; make every user-surface method fail if called."""
    calls: list[str] = []
    for name in _public(SessionRecords):
        method = getattr(store.records, name)

        def wrapper(*a: Any, _name: str = name, _m: Any = method, **kw: Any) -> Any:
            calls.append(_name)
            return _m(*a, **kw)

        monkeypatch.setattr(store.records, name, functools.wraps(method)(wrapper))
    for name in _public(MemoryStore) - {"retry", "http", "in_memory", "persistent"}:

        def refuse(*a: Any, _name: str = name, **kw: Any) -> Any:
            raise AssertionError(f"an engine called MemoryStore.{_name}")

        monkeypatch.setattr(store, name, refuse)
    return calls


def test_the_engines_work_end_to_end_against_the_protocol(monkeypatch):
    store = MemoryStore.in_memory()
    calls = _recorded(store, monkeypatch)
    mem = HybridMemory(
        "s1",
        store=store,
        model=FactModel(),
        embedder=BagOfWordsEmbedder(),
        retry=FAST,
        user_id="ada",
        max_tokens=400,
        max_summary_tokens=80,
    )
    mem.add(Turn(role="user", text="Hello, my city is Lisbon."))
    for i in range(30):
        mem.add(Turn(role="user", text=f"Small talk number {i} about the weather and tea."))
    mem.fold(force=True, keep=False)
    assert any("Lisbon" in f.text for f in mem.facts())
    assert mem.context("Where do I live?").tokens <= 400
    assert mem.recall("Lisbon city")
    mem.rebuild()
    graph = HiGMem("g1", store=store, model=HiGMemModel(), retry=FAST, batch_size=2)
    graph.add([Turn(role="user", text="My cat Miso is two."), Turn(role="user", text="Nice.")])
    assert graph.turn_nodes() and graph.events()
    graph.rebuild()
    assert mem.turns() and mem.usage()
    mem.clear()
    assert {"append", "load", "claim_fold", "commit_summary", "upsert_facts"} <= set(calls)
    assert {"add_vectors", "join_user", "put_turn_nodes", "put_events", "drop_nodes"} <= set(calls)
    assert {"set_rebuild_marker", "clear", "usage", "turns"} <= set(calls)
    monkeypatch.undo()
    assert store.sessions() and [s.session_id for s in store.sessions()] == ["g1"]
    assert store.count_turns("default", "s1") == 0
