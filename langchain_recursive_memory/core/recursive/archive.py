"""The archive of a session: its turns as recall ranks them, kept current at constant cost.

Recall ranks a session's archived turns with the same multi-scale ranking as HiGMem,
over the session's :class:`~..retrieval.index.TurnIndex` (in the store's caches). The
index follows the session without reading its whole log again:

* the turns this process appends and folds are put in as it writes them
  (:meth:`ArchiveIndex.appended`, :meth:`ArchiveIndex.folded`);
* every read brings the session's state (:meth:`~..storage.SessionRecords.load`: the latest
  summary version and the unfolded turns); :meth:`ArchiveIndex.sync_steps` merges the
  unfolded turns (other writers' included) and, when versions were committed that this
  process has not seen, reads those versions and their turns by id;
* only a process that has never seen the session (or whose view went stale: the session
  was cleared, or rolled back by another writer) reads the whole log, once.

So a read costs the same at 10,000 turns as at 1,000 (DESIGN.md, invariant 7). A fold
embeds the windows of the turns it archives (:meth:`ArchiveIndex.embed_steps`), so
recall finds them stored and only reads them.

A user's sessions are ranked as one pool (:class:`UserArchive`): each session's index is
kept the same way; their state is read for all of them at once (their new summary
versions and unfolded turns: two reads, whatever the number of sessions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..cache import session_cache_key
from ..retrieval.index import TurnIndex
from ..retrieval.pool import user_pool_steps
from ..retrieval.ranking import RankerParams
from ..runtime.effects import Steps, store_call
from ..session import SessionRef
from ..storage import MemoryStore, SessionState, StoredTurn, Summary

__all__ = ["ArchiveIndex", "UserArchive"]


@dataclass
class _Archived:
    """A session's turn index, and the summary version it holds every turn up to."""

    index: TurnIndex
    summary: Summary | None = None
    complete: bool = False  # holds every turn of the log up to ``summary``

    @property
    def version(self) -> int:
        return self.summary.version if self.summary is not None else 0

    def mark(self, summary: Summary | None) -> None:
        """Record that the index holds every turn up to ``summary`` (never going back)."""
        version = summary.version if summary is not None else 0
        if not self.complete or version >= self.version:
            self.summary, self.complete = summary, True


class ArchiveIndex:
    """A session's turn index as the recursive memory keeps it (see the module doc).

    Args:
        scope: The session.
        params: The ranking's weights and window radii.
    """

    def __init__(self, session: SessionRef, params: RankerParams | None = None) -> None:
        self.session = session
        self.params = params or RankerParams()
        self._key = (
            *session_cache_key(session.namespace, session.session_id),
            "archive",
            self.params,
        )

    def _holder(self) -> _Archived:
        cache = self.session.store.caches.sessions
        holder: _Archived = cache.get_or_create(
            self._key, lambda: _Archived(TurnIndex(self.session.key, self.params))
        )
        return holder

    def _account(self, holder: _Archived) -> None:
        self.session.store.caches.sessions.resize(self._key, holder.index.nbytes())

    def forget(self) -> None:
        """Drop what this process keeps of the session."""
        self.session.store.caches.sessions.pop(self._key)

    # -- what this process writes -----------------------------------------------------------

    def appended(self, turns: Sequence[StoredTurn]) -> None:
        """Put in turns this process has just appended to the log."""
        holder = self._holder()
        with holder.index.lock:
            holder.index.merge(turns)
        self._account(holder)

    def folded(self, summary: Summary, chunk: Sequence[StoredTurn]) -> None:
        """Record a version this process has just committed (``chunk``: its turns)."""
        holder = self._holder()
        with holder.index.lock:
            holder.index.merge(chunk)
            if holder.complete and holder.version == summary.version - 1:
                holder.mark(summary)
        self._account(holder)

    # -- reads --------------------------------------------------------------------------------

    def state(self) -> tuple[Summary | None, bool]:
        """The version this process's index is complete up to, and whether it is."""
        holder = self._holder()
        with holder.index.lock:
            return holder.summary, holder.complete

    def sync_steps(self, state: SessionState) -> Steps[TurnIndex]:
        """The session's index, brought up to ``state`` (a fresh ``store.records.load``).

        Reads nothing when this process has seen every version of ``state``; the versions
        it has not seen (and their turns not in the index) by id; the whole log once when
        it has never seen the session or its view went stale (cleared, or another writer's
        version replaced the one it saw).
        """
        holder = self._holder()
        summary = state.summary
        version = summary.version if summary is not None else 0
        with holder.index.lock:
            seen = holder.summary
            if holder.complete and (
                version < holder.version
                or (seen is not None and version == seen.version and summary != seen)
            ):
                holder.index.reset()
                holder.summary, holder.complete = None, False
            known = holder.version if holder.complete else None
        fetched = yield from self._missing_steps(holder, known, version)
        if fetched is None:  # a version is missing (being written): read the whole log
            fetched = yield from self._missing_steps(holder, None, version)
        with holder.index.lock:
            holder.index.merge(fetched or ())
            holder.index.merge(state.turns)
            holder.mark(summary)
        self._account(holder)
        return holder.index

    def _missing_steps(
        self, holder: _Archived, known: int | None, version: int
    ) -> Steps[list[StoredTurn] | None]:
        """The turns of versions ``known`` (exclusive) to ``version`` not in the index.

        ``known`` None: the whole log. None when a version between is missing.
        """
        session = self.session
        if known is None:
            if not version:
                return []  # nothing folded: the unfolded turns are the whole log
            return (
                yield from store_call(
                    session.store.records.turns, session.namespace, session.session_id
                )
            )
        if version <= known:
            return []
        newer = yield from store_call(
            session.store.records.summaries_since, session.namespace, {session.session_id: known}
        )
        versions = [v for v in newer[session.session_id] if v.version <= version]
        if [v.version for v in versions] != list(range(known + 1, version + 1)):
            return None
        with holder.index.lock:
            ids = [t for v in versions for t in v.turn_ids if t not in holder.index]
        if not ids:
            return []
        return (
            yield from store_call(
                session.store.records.get_turns, session.namespace, session.session_id, ids
            )
        )

    def embed_steps(self, state: SessionState, space: str, turn_ids: Sequence[str]) -> Steps[int]:
        """Embed the windows of the given turns that have no current vector (a fold's).

        Args:
            state: The session's state after the fold (its latest version and the
                unfolded turns): the windows are read from the log as it stands.
            space: The embedder's vector collection.
            turn_ids: The turns whose windows to embed.

        Returns:
            How many window vectors were written.
        """
        if not turn_ids:
            return 0
        index = yield from self.sync_steps(state)
        with index.lock:
            found = [index.ranked_position(t) for t in turn_ids]
            positions = np.array([p for p in found if p is not None], np.int64)
        if not len(positions):
            return 0
        session = self.session
        written = yield from index.windows.embed_steps(
            session.store, space, (session.namespace, session.session_id), positions
        )
        self._account(self._holder())
        return written


class UserArchive:
    """The archives of every session of a user, read together (see the module doc).

    Args:
        own: The archive of the session asking (one of the user's).
    """

    def __init__(self, own: ArchiveIndex) -> None:
        self.own = own

    def indexes_steps(
        self, user_id: str, own: TurnIndex
    ) -> Steps[tuple[list[str], list[TurnIndex]]]:
        """The user's sessions and their indexes (this session's is ``own``), brought up to date.

        Two reads for the other sessions together (their new versions and their unfolded
        turns), beside the list of the user's sessions; a session this process has never
        seen is read whole, once.
        """
        session = self.own.session
        return (
            yield from user_pool_steps(
                session.store,
                session.namespace,
                session.session_id,
                user_id,
                own,
                self._others_steps,
            )
        )

    def _others_steps(self, ids: list[str]) -> Steps[dict[str, TurnIndex]]:
        """The indexes of the user's other sessions ``ids``, brought up to date."""
        session = self.own.session
        store, namespace = session.store, session.namespace
        others = {
            sid: ArchiveIndex(SessionRef(store, namespace, sid), self.own.params) for sid in ids
        }
        states = yield from _states_steps(store, namespace, others)
        out = {}
        for sid in ids:
            out[sid] = yield from others[sid].sync_steps(states[sid])
        return out


def _states_steps(
    store: MemoryStore, namespace: str, archives: dict[str, ArchiveIndex]
) -> Steps[dict[str, SessionState]]:
    """Each session's state (its latest version, its unfolded turns not held yet).

    Two reads for all the sessions this process has seen (their new versions; the ids of
    their unfolded turns, those not held read by id); one ``load`` for each it has not
    (the first time only: then its whole log is read anyway).
    """
    seen = {sid: archive.state() for sid, archive in archives.items()}
    known = {sid: s.version if s is not None else 0 for sid, (s, done) in seen.items() if done}
    out: dict[str, SessionState] = {}
    if known:
        newer = yield from store_call(store.records.summaries_since, namespace, known)
        held = {sid: archives[sid]._holder().index for sid in known}
        unfolded = yield from store_call(store.records.unfolded_turns, namespace, list(known), held)
        for sid in known:
            latest = newer[sid][-1] if newer[sid] else seen[sid][0]
            out[sid] = SessionState(latest, tuple(unfolded[sid]), ())
    for sid in archives:
        if sid not in known:
            out[sid] = yield from store_call(store.records.load, namespace, sid)
    return out
