"""A session's view: its turns as readers rank them, kept fresh by one rule, at constant cost.

Both engines, and a user's pool of sessions, rank a session's turns over its
:class:`~.index.TurnIndex`. A :class:`SessionView` holds that index for one session (in
the store's caches, shared by every object of the process over the same database) and
what it was built from: the session's stamp epoch, its position in the session's chain
(the summary versions of the recursive memory, the index links of HiGMem), and the
order key of every turn it holds. :func:`sync_steps` brings views up to the store by the
rule of :mod:`..storage.heads`:

1. one request by id: each session's stamp and the links of its chain from the view's
   position on (the link at the position too: the store must still hold it, unchanged);
2. one filtered request: the ids of each session's open turns;
3. by id, only what the view does not hold: turns named by new links, open turns it has
   not seen (every open turn of a session whose stamp's ``moved`` token changed: a fold
   gave some new order keys), and turns a new summary version names that had landed late
   (a fold moves those after the previous version's turns).

A view whose stamp epoch changed (the session started again, or a rebuild dropped derived
state), or whose link the store no longer holds, is read again whole: the chain's
position, then the whole log. So is a view this process never built.

What the process writes itself is put in as it writes it (:meth:`SessionView.appended`,
:meth:`SessionView.linked`), so the reads that follow find nothing new and read nothing.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore, Turn
    >>> from langchain_recursive_memory.core.runtime.runner import Runner
    >>> store = MemoryStore.in_memory()
    >>> _ = store.session("default", "s1").turns.append([Turn(role="user", text="hi")], [2], "e")
    >>> view = session_view(store, "default", "s1")
    >>> Runner().run(sync_steps(store, "default", {"s1": view}))
    >>> [t.turn.text for t in view.index.turns], view.complete
    (['hi'], True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cache import session_cache_key
from ..events import DEFAULT_MAX_EVENT_TURNS, DEFAULT_SESSION_GAP
from ..runtime.effects import Steps, store_call
from ..storage import MemoryStore, SessionStore, StoredTurn
from ..storage.heads import INDEX_CHAIN, SUMMARY_CHAIN, Head, HeadRequest, chain_of
from ..storage.keys import SessionOwner, UserOwner
from ..storage.records import IndexLink, SessionStamp, Summary
from ..storage.turns import OpenTurns
from .index import TurnIndex
from .ranking import RankerParams

__all__ = ["SessionView", "session_view", "sync_steps"]

Link = Summary | IndexLink


def _number(link: Link) -> int:
    return link.version if isinstance(link, Summary) else link.number


def _token(link: Link) -> str:
    return link.fold_id if isinstance(link, Summary) else link.token


@dataclass
class SessionView:
    """What a process keeps of one session's turns (see the module doc).

    Attributes:
        index: The session's turns, ranked; its lock guards everything here.
        chain: The chain the view follows (``"v"``: summary versions, ``"h"``: HiGMem's
            index links).
        complete: Whether it holds the whole session as of its position.
        epoch: The session's stamp epoch it was built at ("" : the session had none).
        position: The last link of the chain it has taken in (0: none).
        token: That link's identity (a version's fold id, a link's token).
        last_seq: That summary version's highest order key (0: none, or the index chain).
        generation: Grows whenever the view is read again whole.
        added: The turn ids taken in since that, in the order they came (HiGMem finds the
            turns it has not indexed from here, without scanning the session).
        links: The index links taken in since that (HiGMem reads their nodes and events).
        moved: The stamp's ``moved`` token the open turns' order keys were read at.
        key: Its key in the store's caches.
    """

    index: TurnIndex
    chain: str = SUMMARY_CHAIN
    complete: bool = False
    epoch: str = ""
    position: int = 0
    token: str = ""
    last_seq: int = 0
    generation: int = 0
    added: list[str] = field(default_factory=list)
    links: list[IndexLink] = field(default_factory=list)
    moved: str = ""
    key: tuple[Any, ...] = ()

    def nbytes(self) -> int:
        """About how many bytes the view holds (for the cache's byte bound)."""
        return self.index.nbytes()

    def appended(self, turns: Sequence[StoredTurn]) -> None:
        """Take in turns this process has just appended to the log (they are open)."""
        with self.index.lock:
            self._merge(turns)

    def linked(self, link: Link, turns: Sequence[StoredTurn]) -> None:
        """Take in a link this process has just written, and the turns it names.

        The view moves to it when it was at the link before; otherwise the turns are
        merged and the next read catches up along the chain.
        """
        ours = isinstance(link, Summary) == (self.chain == SUMMARY_CHAIN)
        with self.index.lock:
            self._merge(turns)
            if self.complete and ours and _number(link) == self.position + 1:
                self._advance(link)

    def _merge(self, turns: Sequence[StoredTurn]) -> None:
        fresh = [t.id for t in turns if t.id not in self.index]
        self.index.merge(turns)
        self.added.extend(dict.fromkeys(fresh))

    def _advance(self, link: Link) -> None:
        self.position, self.token = _number(link), _token(link)
        if isinstance(link, Summary):
            self.last_seq = link.last_seq or self.last_seq
        else:
            self.links.append(link)

    def reset(self) -> None:
        """Forget everything (the next read builds the view again from the store)."""
        with self.index.lock:
            self.index.reset()
            self.complete, self.epoch, self.position, self.token = False, "", 0, ""
            self.last_seq, self.moved = 0, ""
            self.generation += 1
            self.added, self.links = [], []

    # -- following the store (no I/O) --------------------------------------------------------

    def check(self, head: Head) -> bool:
        """Whether ``head`` (read from the view's position) continues what the view holds."""
        stamp = head.stamp
        if not self.complete or (stamp.epoch if stamp is not None else "") != self.epoch:
            return False
        if stamp is not None and stamp.memory and chain_of(stamp.memory) != self.chain:
            return False
        if not self.position:
            return True
        at = next((x for x in self._links(head) if _number(x) == self.position), None)
        return at is not None and _token(at) == self.token

    def _links(self, head: Head) -> list[Link]:
        return list(head.versions) if self.chain == SUMMARY_CHAIN else list(head.links)

    def wanted(self, head: Head, found: OpenTurns) -> list[str]:
        """The turn ids to read by id: named by new links and not held, or landed late."""
        new = [x for x in self._links(head) if _number(x) > self.position]
        out = []
        floor = self.last_seq
        for link in new:
            for tid in link.turn_ids:
                seq = self.index.seq_of(tid)
                if seq is None or (self.chain == SUMMARY_CHAIN and seq <= floor):
                    out.append(tid)
            if isinstance(link, Summary):
                floor = link.last_seq or floor
        return [t for t in dict.fromkeys(out) if t not in found.seqs]

    def follow(self, head: Head, found: OpenTurns, fetched: Sequence[StoredTurn]) -> None:
        """Take in what a read found after :meth:`check` said it continues the view."""
        self._merge([*fetched, *found.turns])
        self.moved = _moved(head)
        for link in self._links(head):
            if _number(link) == self.position + 1:
                self._advance(link)

    def rebuilt(
        self, epoch: str, position: Link | None, turns: Sequence[StoredTurn], chain: str
    ) -> None:
        """Replace everything with a whole read: the stamp, the chain's last link, the log."""
        self.index.reset()
        self.generation += 1
        self.added, self.links = [], []
        self.chain, self.epoch = chain, epoch
        self.position = _number(position) if position is not None else 0
        self.token = _token(position) if position is not None else ""
        self.last_seq = position.last_seq if isinstance(position, Summary) else 0
        self._merge(turns)
        self.complete = True


def _moved(head: Head) -> str:
    return head.stamp.moved if head.stamp is not None else ""


def session_view(
    store: MemoryStore,
    namespace: str,
    session_id: str,
    params: RankerParams | None = None,
    *,
    chain: str = SUMMARY_CHAIN,
    session_gap: float = DEFAULT_SESSION_GAP,
    max_event_turns: int = DEFAULT_MAX_EVENT_TURNS,
) -> SessionView:
    """The session's view in the store's caches (created on first use, following ``chain``).

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
        return SessionView(index, chain, key=key)

    view: SessionView = store.caches.sessions.get_or_create(key, create)
    return view


def account(store: MemoryStore, view: SessionView) -> None:
    """Report the view's size to the cache (it may evict other sessions)."""
    store.caches.sessions.resize(view.key, view.nbytes())


def sync_steps(
    store: MemoryStore,
    namespace: str,
    views: Mapping[str, SessionView],
    given: Mapping[str, tuple[Head, OpenTurns, int]] | None = None,
    user: UserOwner | None = None,
) -> Steps[str | None]:
    """Bring the views of several sessions of a namespace up to the store (module doc).

    Args:
        store: The store.
        namespace: The namespace.
        views: Session id -> its view.
        given: Session id -> what the caller has just read of it (a head read from a
            start, and its open turns): those sessions are not read again unless the
            head does not reach back to the view's position.
        user: A user whose stamp token to read in the request of the heads (a user's
            pool: is its list of sessions still the one it holds?).

    Returns:
        The user's stamp token (None: no ``user``, or it has no stamp record).
    """
    given = dict(given or {})
    frontier = store.parts.frontier
    owners = {sid: SessionOwner.of(namespace, sid) for sid in views}
    with_given = {sid for sid, (_, _, start) in given.items() if _reaches(views[sid], start)}
    warm = [sid for sid, v in views.items() if v.complete and sid not in with_given]
    heads: dict[str, Head] = {sid: given[sid][0] for sid in with_given}
    token: str | None = None
    if warm or user is not None:
        requests = [HeadRequest(owners[s], views[s].chain, views[s].position) for s in warm]
        found, token = yield from store_call(frontier.heads_of_user, requests, user)
        heads.update((sid, found[owners[sid].key]) for sid in warm)
    going = [sid for sid in heads if views[sid].check(heads[sid])]
    opened = {sid: given[sid][1] for sid in going if sid in with_given}
    reading = [sid for sid in going if sid not in opened]
    if reading:
        chains = {owners[sid]: views[sid].chain for sid in reading}
        held = {owners[sid].key: views[sid].index.seq_map() for sid in reading}
        exact = [owners[s].key for s in reading if _moved(heads[s]) != views[s].moved]
        got = yield from store_call(frontier.open_turns, chains, held, exact)
        opened.update((sid, got[owners[sid].key]) for sid in reading)
    for sid in going:
        view = views[sid]
        with view.index.lock:
            wanted = view.wanted(heads[sid], opened[sid])
        fetched = []
        if wanted:
            records = store.session(namespace, sid)
            fetched = yield from store_call(records.turns.by_ids, wanted)
        with view.index.lock:
            if view.check(heads[sid]):
                view.follow(heads[sid], opened[sid], fetched)
        account(store, view)
    for sid, view in views.items():
        if sid not in going:
            yield from _rebuild_steps(store, owners[sid], view)
    return token


def _reaches(view: SessionView, start: int) -> bool:
    """Whether a head read from ``start`` shows the view's own position (to check it)."""
    return view.complete and (start <= view.position or (view.position == 0 and start <= 1))


def _rebuild_steps(store: MemoryStore, owner: SessionOwner, view: SessionView) -> Steps[None]:
    """Read a view whole: the stamp, the chain's last link, then the log (in that order).

    A link written between those reads names turns the log read shows: the next read
    finds it after the position and takes it in. A session stored before stamps existed
    gets one now (so that a clear of it is seen).
    """
    records = store.session(owner.namespace, owner.session_id)
    head = yield from store_call(records.head, None, 0)
    stamp = head.stamp
    chain = chain_of(stamp.memory) if stamp is not None and stamp.memory else view.chain
    last = yield from _last_link_steps(records, chain, stamp)
    turns = yield from store_call(records.turns.all)
    if stamp is None and turns:
        yield from store_call(records.stamp, "higmem" if chain == INDEX_CHAIN else "recursive")
        again = yield from store_call(records.head, None, 0)
        stamp = again.stamp
    with view.index.lock:
        view.rebuilt(stamp.epoch if stamp is not None else "", last, turns, chain)
        view.moved = stamp.moved if stamp is not None else ""
    account(store, view)


def _last_link_steps(
    records: SessionStore, chain: str, stamp: SessionStamp | None
) -> Steps[Link | None]:
    """The last link of a session's chain, read on from a recent one (a hint)."""
    if chain == SUMMARY_CHAIN:
        start = yield from store_call(records.summaries.hint)
    else:
        start = stamp.index_hint if stamp is not None else 0
    head = yield from store_call(records.head, chain, start)
    links: list[Link] = list(head.versions) if chain == SUMMARY_CHAIN else list(head.links)
    if not links and start > 1:  # a stale hint (the session started again): from the first
        head = yield from store_call(records.head, chain, 1)
        links = list(head.versions) if chain == SUMMARY_CHAIN else list(head.links)
    return links[-1] if links else None
