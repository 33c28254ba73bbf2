"""The archive index of a session: its turn log, ranker and window vectors, per process.

Recall ranks a session's archived turns with the same multi-scale ranking as HiGMem
(:class:`~..retrieval.ranking.TurnRanker`, lexical and dense over windows of neighbouring
turns). What that needs is kept per process and session (:mod:`..cache`):

* the whole turn log, read again only after a fold (folded turns change only when a
  summary version commits; turns added since are unfolded and come with the state);
* the ranker and the :class:`~..retrieval.windows.WindowSet` of those turns, rebuilt only
  when the turns change.

A fold embeds the windows of the turns it archives (:meth:`ArchiveIndex.embed_steps`),
so recall finds them stored and only reads them.

A user's sessions are ranked as one :class:`~..retrieval.pool.TurnPool`
(:class:`UserArchive`): each session's log and windows come from that session's own
archive index, the pool's ranker is kept per user while no session's turns change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..cache import SESSION_CACHE_ENTRIES, SessionCache, session_cache_key
from ..engine import SessionScope
from ..retrieval.pool import SessionBlock, TurnPool, pooled
from ..retrieval.ranking import RankerParams, TurnRanker
from ..retrieval.turns import ranked_turns
from ..retrieval.windows import WindowSet
from ..runtime.effects import Steps, store_call
from ..storage import StoredTurn, Summary

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["ArchiveIndex", "UserArchive"]


@dataclass
class _SessionArchive:
    """What the archive index keeps of a session between calls (in this process)."""

    # The turn log as read at summary version ``log_key`` (version, fold id).
    log_key: tuple[int, str] | None = None
    log: tuple[StoredTurn, ...] = ()
    ranked_signature: tuple[Any, ...] = ()
    ranker: TurnRanker | None = None
    windows: WindowSet | None = None


_ARCHIVE: SessionCache[_SessionArchive] = SessionCache("archive", max_entries=SESSION_CACHE_ENTRIES)


class ArchiveIndex:
    """A session's turn log, ranker and window vectors (see the module doc).

    Args:
        engine: The engine (store, embedder, vector space).
        params: The ranking's weights and window radii.
        scope: The session (default: the engine's; another session of its user).
    """

    def __init__(
        self,
        engine: Engine,
        params: RankerParams | None = None,
        scope: SessionScope | None = None,
    ) -> None:
        self.engine = engine
        self.scope = scope or engine.scope
        self.params = params or RankerParams()
        self._key = session_cache_key(self.scope.store, self.scope.namespace, self.scope.session_id)

    def _cache(self) -> _SessionArchive:
        return _ARCHIVE.get_or_create(self._key, _SessionArchive)

    def forget(self) -> None:
        """Drop what this process cached about the session."""
        _ARCHIVE.pop(self._key)

    def log_steps(
        self, summary: Summary | None, unfolded: Sequence[StoredTurn]
    ) -> Steps[list[StoredTurn]]:
        """The session's whole turn log, oldest first, read again only after a fold.

        Args:
            summary: The latest summary version (None: nothing is folded, and
                ``unfolded`` is every turn).
            unfolded: The unfolded turns just loaded (those added since the log was read).
        """
        if summary is None:
            return list(unfolded)
        key = (summary.version, summary.fold_id)
        cache = self._cache()
        if cache.log_key != key:
            scope = self.scope
            log = yield from store_call(scope.store.turns, scope.namespace, scope.session_id)
            cache.log_key, cache.log = key, tuple(log)
        known = {t.id for t in cache.log}
        extra = [t for t in unfolded if t.id not in known]
        if not extra:
            return list(cache.log)
        return sorted([*cache.log, *extra], key=lambda t: (t.seq, t.id))

    def ranking(self, turns: Sequence[StoredTurn]) -> tuple[TurnRanker, WindowSet]:
        """The ranker and window set of ``turns`` (cached while the turns are the same)."""
        signature = (tuple(t.id for t in turns), hash(tuple(t.turn.text for t in turns)))
        cache = self._cache()
        if cache.ranker is None or cache.windows is None or cache.ranked_signature != signature:
            ranked = ranked_turns(turns)
            cache.ranker = TurnRanker(ranked, self.params)
            cache.windows = WindowSet(self.scope.key, ranked, self.params.dense_radii)
            cache.ranked_signature = signature
        return cache.ranker, cache.windows

    def pool(self, turns: Sequence[StoredTurn]) -> TurnPool:
        """The session's ``turns`` as a one-session pool (its cached ranker and windows)."""
        ranker, windows = self.ranking(turns)
        block = SessionBlock(self.scope.session_id, list(turns), windows)
        return TurnPool([block], self.params, ranker)

    def embed_steps(
        self,
        summary: Summary | None,
        unfolded: Sequence[StoredTurn],
        turn_ids: Sequence[str],
    ) -> Steps[int]:
        """Embed the windows of the given turns that have no current vector (a fold's).

        Args:
            summary: The latest summary version.
            unfolded: The unfolded turns known (see :meth:`log_steps`).
            turn_ids: The turns whose windows to embed.

        Returns:
            How many window vectors were written.
        """
        space = self.engine.space
        if self.engine.embedder is None or space is None or not turn_ids:
            return 0
        store, namespace, session_id = self.scope.store, self.scope.namespace, self.scope.session_id
        if summary is None:  # nothing folded yet (a failed first fold): read the log
            log = yield from store_call(store.turns, namespace, session_id)
        else:
            log = yield from self.log_steps(summary, unfolded)
        _, windows = self.ranking(log)
        wanted = set(turn_ids)
        positions = [i for i, t in enumerate(log) if t.id in wanted]
        return (yield from windows.embed_steps(store, space, (namespace, session_id), positions))


class UserArchive:
    """The turns of every session of a user, ranked as one pool (see the module doc).

    Args:
        engine: The engine (its session is one of the user's).
        own: The engine's own archive index.
    """

    def __init__(self, engine: Engine, own: ArchiveIndex) -> None:
        self.engine = engine
        self.own = own

    def pool_steps(self, user_id: str, own_turns: Sequence[StoredTurn]) -> Steps[TurnPool]:
        """The pool of the user's sessions; the engine's own session ranks ``own_turns``.

        Each other session's whole log is ranked (none of it is in this session's window).
        """
        scope = self.engine.scope
        store, namespace = scope.store, scope.namespace
        sessions = yield from store_call(store.user_sessions, namespace, user_id)
        ids = [s.session_id for s in sessions]
        if scope.session_id not in ids:  # a new session, not stored to yet
            ids.append(scope.session_id)
        blocks = []
        for session_id in ids:
            if session_id == scope.session_id:
                turns = list(own_turns)
                archive = self.own
            else:
                archive = ArchiveIndex(
                    self.engine, self.own.params, SessionScope(store, namespace, session_id)
                )
                state = yield from store_call(store.load, namespace, session_id)
                turns = yield from archive.log_steps(state.summary, state.turns)
            blocks.append(SessionBlock(session_id, turns, archive.ranking(turns)[1]))
        return pooled(store, namespace, user_id, blocks, self.own.params, "archive")
