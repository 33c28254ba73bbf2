"""A session's HiGMem state (turns, turn nodes, events), loaded once and shared in-process.

Two id-only reads tell whether anything changed (here or in another process) since the
state was read; only then are the records read again. The state and the session's
indexing lock are shared by every HiGMem object of the session in the process
(:mod:`..cache`), so two objects never index the same turns at once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from ..cache import SESSION_CACHE_ENTRIES, SessionCache, session_cache_key
from ..engine import SessionScope
from ..events import Event, TurnNote
from ..runtime.effects import Steps, store_call
from ..storage import StoredTurn

__all__ = ["HiGMemState", "SessionIndex", "session_index"]


@dataclass
class HiGMemState:
    """The session's turns (oldest first), turn nodes and events (by id)."""

    turns: list[StoredTurn]
    notes: dict[str, TurnNote]
    events: dict[str, Event]


@dataclass
class SessionIndex:
    """What a process keeps of a session's HiGMem index between calls."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    signature: tuple[Any, ...] | None = None
    state: HiGMemState | None = None
    ranker_signature: tuple[Any, ...] = ()
    ranker: Any = None

    def forget(self) -> None:
        """Drop the loaded state and ranker (after a clear)."""
        self.signature, self.state, self.ranker_signature, self.ranker = None, None, (), None


_INDEXES: SessionCache[SessionIndex] = SessionCache("higmem", max_entries=SESSION_CACHE_ENTRIES)


def session_index(scope: SessionScope) -> SessionIndex:
    """The session's shared index entry (created on first use)."""
    key = session_cache_key(scope.store, scope.namespace, scope.session_id)
    return _INDEXES.get_or_create(key, SessionIndex)


def load_steps(scope: SessionScope, index: SessionIndex) -> Steps[HiGMemState]:
    """The session's state; reused while the turn log and the turn nodes are unchanged."""
    store, ns, sid = scope.store, scope.namespace, scope.session_id
    turn_ids = yield from store_call(store.record_ids, "turns", ns, sid)
    note_ids = yield from store_call(store.record_ids, "hg_turns", ns, sid)
    signature = (tuple(sorted(turn_ids)), tuple(sorted(note_ids)))
    if index.state is not None and index.signature == signature:
        return index.state
    turns = yield from store_call(store.turns, ns, sid)
    notes = yield from store_call(store.get_notes, ns, sid)
    events = yield from store_call(store.get_events, ns, sid)
    state = HiGMemState(turns, {n.turn_id: n for n in notes}, {e.id: e for e in events})
    index.signature, index.state = signature, state
    return state
