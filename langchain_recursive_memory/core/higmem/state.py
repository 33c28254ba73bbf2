"""A session's HiGMem state (turn nodes, events, what waits), kept current at constant cost.

The session's turns are its :class:`~..retrieval.view.SessionView` (shared with every
reader of the session in the process, kept fresh by the rule of :mod:`..storage`); this
state adds HiGMem's own layers over it, in the store's caches, with the session's
indexing lock (two objects of a process never index the same turns at once):

* **turn nodes and events**, as of the session's indexing number (its head's
  ``indexed``): each indexing writes its events and nodes in one transaction, a
  compare-and-set on that number (:meth:`~..storage.session_store.SessionNodes.commit`);
* **what waits**: the turns without a node, in log order.

:func:`sync_steps` brings it up to the store: the view first (it reads the session's
head), then the nodes and events written by the indexings this state has not taken in
(``link > position``). A state whose view was read again whole (a new process, a
cleared session, a rebuild) reads the nodes and events whole, once.

Turns are ranked over the view's :class:`~..retrieval.index.TurnIndex` (segments of
:func:`~..events.segment_labels` with the memory's ``session_gap``/``max_event_turns``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..cache import session_cache_key
from ..events import Event, TurnNode
from ..retrieval.index import TurnIndex
from ..retrieval.ranking import RankerParams
from ..retrieval.view import SessionView, account, session_view
from ..retrieval.view import sync_steps as sync_views_steps
from ..runtime.effects import Steps, store_call
from ..session import SessionRef
from ..storage import StoredTurn

__all__ = ["NODE_BYTES", "SessionIndex", "session_index", "sync_steps"]

NODE_BYTES = 1500
"""About what a turn node and its share of an event cost in memory (for the cache)."""


@dataclass
class SessionIndex:
    """HiGMem's state of one session, over its view (see the module doc).

    Attributes:
        view: The session's view (its turns, ranked).
        nodes: Turn nodes by turn id.
        events: Events by id.
        members: The turn ids of each segment's nodes, in log order.
        pending: Turn ids without a node, in log order.
        lock: The indexing lock (one indexing of the session at a time in the process).
        generation: The view's generation the nodes were read at (-1: not read).
        seen: How many of the view's ``added`` turn ids this state has looked at.
        position: The last indexing taken in (0: none).
    """

    view: SessionView
    nodes: dict[str, TurnNode] = field(default_factory=dict)
    events: dict[str, Event] = field(default_factory=dict)
    members: dict[str, list[str]] = field(default_factory=dict)
    pending: dict[str, None] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    generation: int = -1
    seen: int = 0
    position: int = 0

    @property
    def index(self) -> TurnIndex:
        """The session's turns, ranked (the view's index; its lock guards this state)."""
        return self.view.index

    @property
    def turns(self) -> list[StoredTurn]:
        """Every turn, oldest first."""
        return self.view.index.turns

    @property
    def current(self) -> bool:
        """Whether the nodes were read at the view's present generation."""
        return self.generation == self.view.generation

    def nbytes(self) -> int:
        """About how many bytes the state holds beside its view (for the cache)."""
        return len(self.nodes) * NODE_BYTES

    def take_added(self) -> None:
        """Mark the turns the view took in since last time as waiting (unless they have a node)."""
        with self.index.lock:
            added = self.view.added[self.seen :]
            self.seen = len(self.view.added)
            fresh = [t for t in added if t not in self.nodes]
            if not fresh:
                return
            self.pending.update(dict.fromkeys(fresh))
            if len(self.pending) > 1:  # keep log order (a late turn lands among them)
                order = {tid: self.index.seq_of(tid) or 0 for tid in self.pending}
                self.pending = dict.fromkeys(sorted(self.pending, key=lambda t: (order[t], t)))

    def pending_positions(self, limit: int | None = None) -> list[int]:
        """The positions (in :attr:`turns`) of the turns without a node, oldest first."""
        with self.index.lock:
            ids = list(self.pending)[:limit] if limit is not None else list(self.pending)
            return [p for p in (self.index.position(t) for t in ids) if p is not None]

    def apply(self, nodes: Sequence[TurnNode], events: Sequence[Event]) -> None:
        """Take in nodes and events (written by this process, or read from a link)."""
        with self.index.lock:
            for node in nodes:
                if node.turn_id not in self.nodes:
                    self.members.setdefault(node.segment, []).append(node.turn_id)
                self.nodes[node.turn_id] = node
                self.pending.pop(node.turn_id, None)
            self.events.update((e.id, e) for e in events)

    def load(self, nodes: Sequence[TurnNode], events: Sequence[Event], position: int) -> None:
        """Replace the nodes and events with what was read whole (at the view's generation)."""
        with self.index.lock:
            by_turn = {n.turn_id: n for n in nodes}
            self.nodes, self.members, self.pending = {}, {}, {}
            for t in self.index.turns:
                node = by_turn.get(t.id)
                if node is None:
                    self.pending[t.id] = None
                else:
                    self.nodes[t.id] = node
                    self.members.setdefault(node.segment, []).append(t.id)
            self.events = {e.id: e for e in events}
            self.generation, self.seen = self.view.generation, len(self.view.added)
            self.position = position

    def forget(self) -> None:
        """Drop everything (after a clear, or before a rebuild)."""
        with self.index.lock:
            self.nodes, self.events, self.members, self.pending = {}, {}, {}, {}
            self.generation, self.seen, self.position = -1, 0, 0
        self.view.reset()


def session_index(
    session: SessionRef,
    params: RankerParams | None = None,
    session_gap: float | None = None,
    max_event_turns: int | None = None,
) -> SessionIndex:
    """The session's HiGMem state (created on first use, in the store's caches)."""
    options: dict[str, float] = {}
    if session_gap is not None:
        options["session_gap"] = session_gap
    if max_event_turns is not None:
        options["max_event_turns"] = max_event_turns
    view = session_view(
        session.store,
        session.namespace,
        session.session_id,
        params,
        **options,  # type: ignore[arg-type]
    )
    key = (*session_cache_key(session.namespace, session.session_id), "higmem", view.key)
    state: SessionIndex = session.store.caches.sessions.get_or_create(
        key, lambda: SessionIndex(view)
    )
    if state.view is not view:  # the view was evicted and made again: read nodes again
        state.view, state.generation = view, -1
    return state


def _account(session: SessionRef, state: SessionIndex) -> None:
    key = (*session_cache_key(session.namespace, session.session_id), "higmem", state.view.key)
    session.store.caches.sessions.resize(key, state.nbytes())
    account(session.store, state.view)


def sync_steps(
    session: SessionRef, state: SessionIndex, *, view_synced: bool = False
) -> Steps[SessionIndex]:
    """Bring the state up to the store (see the module doc).

    ``view_synced``: the caller has just brought the view up (a user's pool, read together).
    """
    store, ns, sid = session.store, session.namespace, session.session_id
    if not view_synced:
        yield from sync_views_steps(store, ns, {sid: state.view})
    head = state.view.head
    indexed = head.indexed if head is not None else 0
    records = session.records.nodes
    if not state.current:
        nodes = yield from store_call(records.turn_nodes)
        events = yield from store_call(records.events)
        state.load(nodes, events, indexed)
    elif indexed > state.position:
        after = state.position
        nodes = yield from store_call(records.turn_nodes, after=after)
        events = yield from store_call(records.events, after=after)
        state.apply(nodes, events)
        with state.index.lock:
            state.position = max(state.position, indexed)
    state.take_added()
    _account(session, state)
    return state
