"""One store surface for users, one session handle for the engines (issues 23 and 29).

``MemoryStore`` is what applications call; ``store.session(namespace, session_id)``
(``SessionStore``: the session bound once, with its turns, summaries, facts, vectors and
nodes) is what the engines read and write through, and ``store.parts`` (``StoreParts``)
what several sessions share. Composition, not mixins: each is a plain class whose state is
set in its ``__init__``.
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
from langchain_recursive_memory.core.storage import SessionStore
from langchain_recursive_memory.core.storage.directory import UserDirectory
from langchain_recursive_memory.core.storage.frontier import Frontier
from langchain_recursive_memory.core.storage.lifecycle import SessionLifecycle
from langchain_recursive_memory.core.storage.markers import RebuildMarkers
from langchain_recursive_memory.core.storage.repositories import Repositories
from langchain_recursive_memory.core.storage.repository import Repository
from langchain_recursive_memory.core.storage.session_store import (
    SessionFacts,
    SessionNodes,
    SessionSummaries,
    SessionTurns,
    SessionVectors,
    StoreParts,
)
from langchain_recursive_memory.core.storage.user_facts import UserFacts
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
    "migrate",
    "persistent",
    "retry",
    "session",
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

PARTS = (SessionTurns, SessionSummaries, SessionFacts, SessionVectors, SessionNodes)


def _public(cls: type) -> set[str]:
    """The public names of ``cls``, but 0.1.0's deprecated store methods (until 0.3.0)."""
    return {
        name
        for name in dir(cls)
        if not name.startswith("_") and not (cls is MemoryStore and name in DEPRECATED_METHODS)
    }


def test_the_user_surface_is_pinned():
    assert sorted(_public(MemoryStore)) == USER_SURFACE


STORAGE = (
    MemoryStore,
    SessionStore,
    UserDirectory,
    UserFacts,
    RebuildMarkers,
    SessionLifecycle,
    Frontier,
    Repositories,
    StoreParts,
)


@pytest.mark.parametrize("cls", STORAGE)
def test_no_storage_mixins(cls):
    assert cls.__mro__ == (cls, object)


@pytest.mark.parametrize("cls", [c for c in STORAGE if not dataclasses.is_dataclass(c)])
def test_no_annotation_only_state(cls):
    assert not inspect.get_annotations(cls)


def test_the_parts_share_one_bundle_of_repositories_and_the_stores_caches():
    store = MemoryStore.in_memory()
    parts = store.parts
    repos = parts.repos
    assert parts.caches is store.caches
    for field in dataclasses.fields(repos):
        value = getattr(repos, field.name)
        if field.name == "client":
            assert value.retry is store.retry
        else:
            assert isinstance(value, Repository | VectorSpaces), field.name
    assert vars(parts.directory) == {"repos": repos, "caches": store.caches}
    assert vars(parts.shared_facts) == {"repos": repos, "caches": store.caches}
    assert vars(parts.markers) == {"repos": repos, "directory": parts.directory}
    assert vars(parts.lifecycle) == {
        "repos": repos,
        "directory": parts.directory,
        "shared_facts": parts.shared_facts,
        "caches": store.caches,
    }
    session = store.session("default", "s1")
    assert session.parts is parts and session.key_owner.session_id == "s1"
    assert {type(getattr(session, name)) for name in ("turns", "summaries", "facts")} == {
        SessionTurns,
        SessionSummaries,
        SessionFacts,
    }


def _recorded(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every call of a session part; make every user-surface method fail if called."""
    calls: list[str] = []
    for cls in (SessionStore, *PARTS):
        for name in _public(cls):
            method = getattr(cls, name)
            if not callable(method) or isinstance(method, property):
                continue

            def wrapper(*a: Any, _name: str = name, _m: Any = method, **kw: Any) -> Any:
                calls.append(_name)
                return _m(*a, **kw)

            monkeypatch.setattr(cls, name, functools.wraps(method)(wrapper))
    for name in _public(MemoryStore) - {"retry", "http", "in_memory", "persistent", "session"}:

        def refuse(*a: Any, _name: str = name, **kw: Any) -> Any:
            raise AssertionError(f"an engine called MemoryStore.{_name}")

        monkeypatch.setattr(store, name, refuse)
    return calls


def test_the_engines_work_end_to_end_through_the_session_handle(monkeypatch):
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
    assert {"append", "load", "claim_lease", "commit", "upsert"} <= set(calls)
    assert {"put", "join_user", "put_turn_nodes", "put_events", "commit_link"} <= set(calls)
    assert {"set_marker", "clear", "usage", "all"} <= set(calls)
    monkeypatch.undo()
    assert store.sessions() and [s.session_id for s in store.sessions()] == ["g1"]
    assert store.count_turns("default", "s1") == 0
