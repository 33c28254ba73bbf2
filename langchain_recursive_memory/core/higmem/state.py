"""A session's HiGMem state (turns, turn nodes, events), kept current at constant cost.

The state lives in the store's caches (:attr:`~..cache.StoreCaches.higmem`), shared by
every HiGMem object of the session in the process, with the session's indexing lock (two
objects never index the same turns at once). It follows the session without reading it
whole again:

* the turns this process appends go in as they are written (:meth:`SessionIndex.appended`),
  the nodes and events it writes as it writes them (:meth:`SessionIndex.apply`);
* each operation reads two small records (:func:`sync_steps`): the session's *head*
  token, which every write of nodes changes (another process indexed the session: the
  state is read again, whole), and the turns not indexed yet (any writer's: a turn is
  closed once indexed, see :meth:`~..storage.SessionRecords.close_turns`; closing is
  batched, so that read returns a few recent turns);
* only a process that has never seen the session, or that finds another's head token,
  reads the turns, nodes and events whole.

Turns are ranked over the state's :class:`~..retrieval.index.TurnIndex` (the segments of
:func:`~..events.segment_labels` with the memory's ``session_gap``/``max_event_turns``).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..cache import session_cache_key
from ..events import Event, TurnNode
from ..retrieval.index import TurnIndex
from ..retrieval.ranking import RankerParams
from ..runtime.effects import Steps, store_call
from ..session import SessionRef
from ..storage import StoredTurn

__all__ = [
    "CLOSE_BATCH",
    "NODE_BYTES",
    "SessionIndex",
    "account",
    "close_steps",
    "new_head",
    "session_index",
    "sync_many_steps",
    "sync_steps",
]

CLOSE_BATCH = 16
"""Indexed turns closed in the store together (the turns not indexed yet read: a few)."""
NODE_BYTES = 1500
"""About what a turn node and its share of an event cost in memory (for the cache)."""


@dataclass
class SessionIndex:
    """What a process keeps of a session's HiGMem index between calls (see the module doc).

    Attributes:
        index: The session's turns, ranked (its lock guards everything here).
        nodes: Turn nodes by turn id.
        events: Events by id.
        members: The turn ids of each segment's nodes, in log order.
        pending: Turn ids without a node, in log order.
        lock: The indexing lock (one indexing of the session at a time in the process).
        head: The head token this process last wrote or read (None: none yet).
        complete: Whether the state holds every turn, node and event as of ``head``.
    """

    index: TurnIndex
    nodes: dict[str, TurnNode] = field(default_factory=dict)
    events: dict[str, Event] = field(default_factory=dict)
    members: dict[str, list[str]] = field(default_factory=dict)
    pending: dict[str, None] = field(default_factory=dict)
    to_close: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    head: str | None = None
    complete: bool = False

    @property
    def turns(self) -> list[StoredTurn]:
        """Every turn, oldest first."""
        return self.index.turns

    def nbytes(self) -> int:
        """About how many bytes the state holds (for the cache's byte bound)."""
        return self.index.nbytes() + len(self.nodes) * NODE_BYTES

    def appended(self, turns: Sequence[StoredTurn]) -> None:
        """Put in turns this process has just appended (they wait for their nodes)."""
        with self.index.lock:
            self._merge(turns)

    def _merge(self, turns: Sequence[StoredTurn]) -> None:
        self.index.merge(turns)
        for t in turns:
            if t.id not in self.nodes:
                self.pending[t.id] = None
        if len(self.pending) > 1:  # keep log order (a late turn lands among them)
            order = {tid: self.index.seq_of(tid) or 0 for tid in self.pending}
            self.pending = dict.fromkeys(sorted(self.pending, key=lambda t: (order[t], t)))

    def pending_positions(self, limit: int | None = None) -> list[int]:
        """The positions (in :attr:`turns`) of the turns without a node, oldest first."""
        with self.index.lock:
            ids = list(self.pending)[:limit] if limit is not None else list(self.pending)
            return [p for p in (self.index.position(t) for t in ids) if p is not None]

    def apply(self, nodes: Sequence[TurnNode], events: Sequence[Event], head: str) -> None:
        """Take in nodes and events this process has just written (with the head token)."""
        with self.index.lock:
            for node in nodes:
                if node.turn_id not in self.nodes:
                    self.members.setdefault(node.segment, []).append(node.turn_id)
                    self.to_close.append(node.turn_id)
                self.nodes[node.turn_id] = node
                self.pending.pop(node.turn_id, None)
            self.events.update((e.id, e) for e in events)
            self.head = head

    def forget(self) -> None:
        """Drop everything (after a clear, or before a rebuild)."""
        with self.index.lock:
            self.index.reset()
            self.nodes, self.events, self.members = {}, {}, {}
            self.pending, self.to_close = {}, []
            self.head, self.complete = None, False

    def load(
        self,
        turns: Sequence[StoredTurn],
        nodes: Sequence[TurnNode],
        events: Sequence[Event],
        head: str | None,
    ) -> None:
        """Replace everything with what was read whole from the store."""
        self.forget()
        with self.index.lock:
            self.index.merge(turns)
            by_turn = {n.turn_id: n for n in nodes}
            for t in self.index.turns:
                node = by_turn.get(t.id)
                if node is None:
                    self.pending[t.id] = None
                else:
                    self.nodes[t.id] = node
                    self.members.setdefault(node.segment, []).append(t.id)
            self.events = {e.id: e for e in events}
            self.head, self.complete = head, True


def session_index(
    session: SessionRef,
    params: RankerParams | None = None,
    session_gap: float | None = None,
    max_event_turns: int | None = None,
) -> SessionIndex:
    """The session's shared state (created on first use, in the store's caches)."""
    key = (*session_cache_key(session.namespace, session.session_id), "higmem")

    def create() -> SessionIndex:
        options = {}
        if session_gap is not None:
            options["session_gap"] = session_gap
        if max_event_turns is not None:
            options["max_event_turns"] = max_event_turns
        return SessionIndex(TurnIndex(session.key, params, **options))  # type: ignore[arg-type]

    state: SessionIndex = session.store.caches.sessions.get_or_create(key, create)
    return state


def account(session: SessionRef, state: SessionIndex) -> None:
    """Report the state's size to the cache (it may evict other sessions)."""
    key = (*session_cache_key(session.namespace, session.session_id), "higmem")
    session.store.caches.sessions.resize(key, state.nbytes())


def sync_steps(session: SessionRef, state: SessionIndex) -> Steps[SessionIndex]:
    """Bring the state up to the store (see the module doc): two small reads.

    The head token and the turns not indexed yet; the whole session when this process
    has never read it, or another process has indexed it since.
    """
    store, ns, sid = session.store, session.namespace, session.session_id
    heads = yield from store_call(store.records.index_heads, ns, [sid])
    head = heads[sid]
    with state.index.lock:
        whole = not state.complete or head != state.head
    if whole:
        turns = yield from store_call(store.records.turns, ns, sid)
        nodes = yield from store_call(store.records.get_turn_nodes, ns, sid)
        events = yield from store_call(store.records.get_events, ns, sid)
        found = yield from store_call(store.records.unfolded_turns, ns, [sid])
        state.load(turns, nodes, events, head)
        # Indexed turns still open (indexed before heads existed, or by a process that
        # stopped before closing them) are closed, so the read of open turns stays small.
        with state.index.lock:
            state.to_close = [t.id for t in found[sid] if t.id in state.nodes]
    else:
        found = yield from store_call(store.records.unfolded_turns, ns, [sid])
        with state.index.lock:
            state._merge(found[sid])
    yield from close_steps(session, state)
    account(session, state)
    return state


def sync_many_steps(session: SessionRef, states: dict[str, SessionIndex]) -> Steps[None]:
    """Bring several sessions' states up to the store (a user's): two reads for all.

    Their head tokens and their turns not indexed yet, read together; a session this
    process has never read, or that another process indexed since, is read whole.
    """
    store, ns = session.store, session.namespace
    if not states:
        return
    heads = yield from store_call(store.records.index_heads, ns, list(states))
    found = yield from store_call(store.records.unfolded_turns, ns, list(states))
    for sid, state in states.items():
        with state.index.lock:
            whole = not state.complete or heads[sid] != state.head
            if not whole:
                state._merge(found[sid])
        if whole:
            yield from sync_steps(SessionRef(store, ns, sid), state)


def close_steps(session: SessionRef, state: SessionIndex, force: bool = False) -> Steps[None]:
    """Close the indexed turns still open in the store, once there are :data:`CLOSE_BATCH`."""
    with state.index.lock:
        if not state.to_close or (len(state.to_close) < CLOSE_BATCH and not force):
            return
        doomed, state.to_close = state.to_close, []
    yield from store_call(
        session.store.records.close_turns, session.namespace, session.session_id, doomed
    )


def new_head() -> str:
    """A new head token (written with the nodes)."""
    return uuid.uuid4().hex
