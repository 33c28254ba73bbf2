"""A session's view: its turns as readers rank them, kept fresh by one rule, at constant cost.

Both engines, and a user's pool of sessions, rank a session's turns over its
:class:`~.index.TurnIndex`. A :class:`SessionView` holds that index for one session (in
the store's caches, shared by every object of the process over the same database) and
the session's head it was built from (:class:`~..storage.SessionHead`). :func:`sync_steps`
brings views up to the store by the rule of :mod:`..storage` ("How the memory stays
fresh"): given the session's head (read by the caller in a read it makes anyway, or read
here with the turns), a view whose epoch and ``last_seq`` match reads nothing; one behind
reads the turns after its ``last_seq``; one whose epoch changed (the session was cleared
and written again, or rebuilt) reads the log again whole, as does a view this process
never built.

What the process appends itself is put in as it writes it (:meth:`SessionView.appended`),
so the read that follows finds nothing new and reads nothing.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore, Turn
    >>> from langchain_recursive_memory.core.runtime.runner import Runner
    >>> store = MemoryStore.in_memory()
    >>> _ = store.session("default", "s1").turns.append([Turn(role="user", text="hi")], [2], "e")
    >>> view = session_view(store, "default", "s1")
    >>> Runner().run(sync_steps(store, "default", {"s1": view}))
    >>> [t.turn.text for t in view.index.turns], view.last_seq
    (['hi'], 1)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cache import session_cache_key
from ..events import DEFAULT_MAX_EVENT_TURNS, DEFAULT_SESSION_GAP
from ..runtime.effects import Steps, store_call
from ..storage import MemoryStore, SessionHead, StoredTurn
from ..storage.keys import SessionOwner
from .index import TurnIndex
from .ranking import RankerParams

__all__ = ["SessionView", "account", "session_view", "sync_steps"]

_UNREAD = "unread"


@dataclass
class SessionView:
    """What a process keeps of one session's turns (see the module doc).

    Attributes:
        index: The session's turns, ranked; its lock guards everything here.
        epoch: The session's epoch it was built at (``"unread"``: never read; ``""``: the
            session had no row).
        last_seq: The order key up to which it holds every turn.
        head: The session's head as last read (None: no row, or never read).
        generation: Grows whenever the view is read again whole.
        added: The turn ids taken in since that, in the order they came (HiGMem finds the
            turns it has not indexed from here, without scanning the session).
        key: Its key in the store's caches.
    """

    index: TurnIndex
    epoch: str = _UNREAD
    last_seq: int = 0
    head: SessionHead | None = None
    generation: int = 0
    added: list[str] = field(default_factory=list)
    key: tuple[Any, ...] = ()

    def nbytes(self) -> int:
        """About how many bytes the view holds (for the cache's byte bound)."""
        return self.index.nbytes()

    @property
    def read(self) -> bool:
        """Whether a read has built the view (else its first read reads the log whole)."""
        return self.epoch != _UNREAD

    def current(self, head: SessionHead | None) -> bool:
        """Whether the view holds the session as ``head`` shows it (nothing to read)."""
        if head is None:
            return self.epoch == ""
        return self.epoch == head.epoch and self.last_seq >= head.last_seq

    def appended(self, turns: Sequence[StoredTurn]) -> None:
        """Take in turns this process has just appended to the log."""
        with self.index.lock:
            if not turns:
                return
            self._merge(turns)  # a view never read is read whole at its first read
            if self.epoch != _UNREAD and turns[0].seq == self.last_seq + 1:
                self.last_seq = max(self.last_seq, turns[-1].seq)

    def _merge(self, turns: Sequence[StoredTurn]) -> None:
        fresh = [t.id for t in turns if t.id not in self.index]
        self.index.merge(turns)
        self.added.extend(dict.fromkeys(fresh))

    def reset(self) -> None:
        """Forget everything (the next read builds the view again from the store)."""
        with self.index.lock:
            self.index.reset()
            self.epoch, self.last_seq, self.head = _UNREAD, 0, None
            self.generation += 1
            self.added = []

    def take(
        self, head: SessionHead | None, turns: Sequence[StoredTurn], whole: bool, read_at: str
    ) -> None:
        """Take in what a read found: the turns after :attr:`last_seq`, or the whole log.

        ``read_at``: the view's epoch when the read started (a view reset meanwhile takes
        in only a whole log).
        """
        with self.index.lock:
            if not whole and self.epoch != read_at:
                return
            if whole:
                self.index.reset()
                self.generation += 1
                self.added = []
            self._merge(turns)
            self.head = head
            self.epoch = head.epoch if head is not None else ""
            self.last_seq = head.last_seq if head is not None else 0


def session_view(
    store: MemoryStore,
    namespace: str,
    session_id: str,
    params: RankerParams | None = None,
    *,
    session_gap: float = DEFAULT_SESSION_GAP,
    max_event_turns: int = DEFAULT_MAX_EVENT_TURNS,
) -> SessionView:
    """The session's view in the store's caches (created on first use).

    One view per session and ranking options: the recursive memory, HiGMem and every
    user's pool that ranks the session with the same options share it.
    """
    params = params or RankerParams()
    key = (
        *session_cache_key(namespace, session_id),
        "view",
        params,
        session_gap,
        max_event_turns,
    )

    def create() -> SessionView:
        skey = SessionOwner.of(namespace, session_id).key
        index = TurnIndex(skey, params, session_gap=session_gap, max_event_turns=max_event_turns)
        return SessionView(index, key=key)

    view: SessionView = store.caches.sessions.get_or_create(key, create)
    return view


def account(store: MemoryStore, view: SessionView) -> None:
    """Report the view's size to the cache (it may evict other sessions)."""
    store.caches.sessions.resize(view.key, view.nbytes())


_NOT_READ = object()


def sync_steps(
    store: MemoryStore,
    namespace: str,
    views: Mapping[str, SessionView],
    heads: Mapping[str, SessionHead | None] | None = None,
) -> Steps[None]:
    """Bring the views of several sessions of a namespace up to the store (module doc).

    Args:
        store: The store.
        namespace: The namespace.
        views: Session id -> its view.
        heads: Session id -> its head as the caller has just read it (None: no row): a
            view that holds it reads nothing. The others read their head with the turns.
    """
    given = heads or {}
    for sid, view in views.items():
        head = given.get(sid, _NOT_READ)
        if head is not _NOT_READ:
            with view.index.lock:
                if view.current(head):  # type: ignore[arg-type]
                    view.head = head  # type: ignore[assignment]
                    continue
        with view.index.lock:
            epoch, after = view.epoch, view.last_seq
        turns = store.session(namespace, sid).turns
        found, new, whole = yield from store_call(turns.catch_up, epoch, after)
        view.take(found, new, whole, epoch)
        account(store, view)
