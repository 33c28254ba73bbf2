"""A pool of turns ranked together: one session's, or every session of a user.

Both engines rank a session's turns with :class:`~.ranking.TurnRanker` over its
:class:`~.index.TurnIndex`, and score them densely through the index's window vectors.
A user's sessions are ranked the same way, as one pool: the ranker sees the indexes of
every session (each keeps its own windows, so no window, lexical or dense, ever crosses a
session; BM25 statistics are those of the whole pool), and each session's windows are
read from that session's own vectors, the ones its folds or its index embedded. There is
no second ranking, and nothing is copied: a pool is a view over the indexes, built per
read, under their locks (:meth:`TurnPool.locked`).

Example:
    >>> from langchain_recursive_memory.core.retrieval.pool import check_scope
    >>> check_scope("user")
    'user'
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager

import numpy as np

from ..errors import InvalidInputError
from ..runtime.effects import Steps, store_call
from ..storage import MemoryStore, SessionHead, StoredTurn
from .index import TurnIndex
from .ranking import RankerParams, TurnRanker
from .view import SessionView, session_view, sync_steps

__all__ = [
    "SCOPES",
    "SESSION",
    "USER",
    "TurnPool",
    "check_scope",
    "user_pool_steps",
]

SESSION = "session"
"""The scope of one conversation (the default)."""
USER = "user"
"""The scope of every session of a user."""
SCOPES = (SESSION, USER)
"""Where archived turns are recalled from: this session, or every session of its user."""


def check_scope(scope: object) -> str:
    """``scope`` if it is ``"session"`` or ``"user"``.

    Raises:
        InvalidInputError: For anything else.
    """
    if not isinstance(scope, str) or scope not in SCOPES:
        raise InvalidInputError.for_value("scope", scope, "use 'session' or 'user'")
    return scope


class TurnPool:
    """The ranked turns of one or more sessions' indexes (see the module doc).

    Build it, and use it, while holding :meth:`locked` (the indexes must not change
    under it); it holds no I/O.

    Args:
        indexes: The sessions' indexes, in a fixed order (the pool's positions follow it).
        sessions: The session id of each index.
        params: The ranking's weights.

    Attributes:
        ranker: The ranker of the pool's positions.
        size: Turns in the pool.
    """

    def __init__(
        self, indexes: Sequence[TurnIndex], sessions: Sequence[str], params: RankerParams
    ) -> None:
        self.indexes = list(indexes)
        self.session_ids = list(sessions)
        self.ranker = TurnRanker.of([ix.ranked for ix in self.indexes], params)
        sizes = [len(ix.ranked_turns) for ix in self.indexes]
        self.offsets = np.cumsum([0, *sizes])
        self.size = int(self.offsets[-1])

    @staticmethod
    @contextmanager
    def locked(indexes: Sequence[TurnIndex]) -> Iterator[None]:
        """Hold the locks of ``indexes`` (in one order for every caller: no deadlock)."""
        with ExitStack() as stack:
            for ix in sorted(set(indexes), key=lambda ix: ix.skey):
                stack.enter_context(ix.lock)
            yield

    def _part(self, position: int) -> tuple[int, int]:
        part = int(np.searchsorted(self.offsets, position, side="right")) - 1
        return part, position - int(self.offsets[part])

    def turn(self, position: int) -> StoredTurn:
        """The stored turn at a pool position."""
        part, local = self._part(position)
        return self.indexes[part].ranked_turns[local]

    def session_of(self, position: int) -> str:
        """The session of a pool position."""
        return self.session_ids[self._part(position)[0]]

    def position(self, session_id: str, turn_id: str) -> int | None:
        """The pool position of a session's turn (None: not ranked)."""
        for part, (sid, ix) in enumerate(zip(self.session_ids, self.indexes, strict=True)):
            if sid == session_id:
                local = ix.ranked_position(turn_id)
                return None if local is None else int(self.offsets[part]) + local
        return None

    def select(
        self,
        question: str,
        k: int,
        *,
        dense: Mapping[int, np.ndarray] | None = None,
        now: dt.date | None = None,
        keep: np.ndarray | None = None,
    ) -> tuple[list[int], np.ndarray]:
        """The positions of the turns a read hands over, best first, and every turn's score.

        The one selection of both engines (hybrid ``recall``, HiGMem's no-LLM
        ``retrieve``) and of the benchmarks: :meth:`~.ranking.TurnRanker.select` (the
        ``k`` best turns with a positive score, near-identical ones once; ``keep``: a
        mask of the positions that may be chosen).
        """
        scores = self.ranker.scores(question, dense, now=now)
        return self.ranker.select(scores, k, keep), scores

    def similarity(self, query: np.ndarray, wanted: np.ndarray) -> dict[int, np.ndarray]:
        """Cosine similarity of a unit query with each window of the pool, per radius.

        NaN where a window has no current vector or is not ``wanted``.
        """
        radii = self.ranker.params.dense_radii
        out = {r: np.full(self.size, np.nan, np.float32) for r in radii}
        for part, ix in enumerate(self.indexes):
            start, stop = int(self.offsets[part]), int(self.offsets[part + 1])
            if stop > start:
                found = ix.windows.similarity(query, wanted[start:stop])
                for r in radii:
                    out[r][start:stop] = found[r]
        return out


def embed_missing_steps(
    source: MemoryStore,
    space: str,
    namespace: str,
    parts: Sequence[tuple[str, TurnIndex, np.ndarray]],
) -> Steps[int]:
    """Give the wanted windows of each session's index a vector (read, else embed).

    Args:
        source: The store.
        space: The embedder's vector collection.
        namespace: The namespace.
        parts: ``(session id, index, wanted positions)`` of each session.

    Returns:
        How many window vectors were written.
    """
    written = 0
    for session_id, ix, positions in parts:
        if len(positions):
            written += yield from ix.windows.embed_steps(
                source, space, (namespace, session_id), positions
            )
    return written


def user_pool_steps(
    store: MemoryStore,
    namespace: str,
    session_id: str,
    user_id: str,
    own: SessionView,
    *,
    heads: Mapping[str, SessionHead | None] | None = None,
) -> Steps[tuple[list[str], list[TurnIndex]]]:
    """Every session of a user and its index, brought up to date together: a user's pool.

    Both engines assemble a user's pool this way: the user's sessions and their heads are
    one read (:meth:`~..storage.UserStore.heads`), and every session's view is brought up
    to its head (:func:`~.view.sync_steps`: nothing read for a view that holds it, the new
    turns for one behind), whichever memory wrote it: a HiGMem session's turns are its
    user's from the moment they are stored, folded or not, indexed or not, and so are a
    recursive or hybrid session's.

    Args:
        store: The store.
        namespace: The namespace.
        session_id: The session asking (one of the user's, maybe not stored to yet).
        user_id: The user.
        own: The asking session's view (ranked with the pool's options: the others' views
            share them).
        heads: What the caller has just read of its own session (its head).

    Returns:
        The user's session ids (the asking one last if it is not the user's yet) and
        their indexes, in the same order: a :class:`TurnPool`'s ``sessions`` and
        ``indexes``.
    """
    found: dict[str, SessionHead | None] = dict(
        (yield from store_call(store.user(namespace, user_id).heads))
    )
    ids = list(found)
    if session_id not in found:  # a new session, not stored to (or joined) yet
        ids.append(session_id)
        if heads and session_id in heads:
            found[session_id] = heads[session_id]
    index = own.index
    views = {
        sid: own
        if sid == session_id
        else session_view(
            store,
            namespace,
            sid,
            index.params,
            session_gap=index.session_gap,
            max_event_turns=index.max_event_turns,
        )
        for sid in ids
    }
    yield from sync_steps(store, namespace, views, found)
    return ids, [views[sid].index for sid in ids]
