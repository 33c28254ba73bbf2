"""A pool of turns ranked together: one session's, or every session of a user.

Both engines rank a session's turns with :class:`~.ranking.TurnRanker` and score them
densely through the session's :class:`~.windows.WindowSet`. A user's sessions are ranked
the same way, as one pool: the ranker sees the turns of every session (each session's
segments kept apart, so no window, lexical or dense, ever crosses a session), and each
session's windows are read from that session's own vectors, the ones its folds or its
index embedded. There is no second ranking.

Example:
    >>> from langchain_recursive_memory.core.retrieval.pool import relabelled
    >>> from langchain_recursive_memory.core.retrieval.ranking import RankedTurn, window_texts
    >>> a = [RankedTurn("1", "Ada", "my cat is Miso", "1")]
    >>> b = [RankedTurn("1", "Ada", "hello again", "1")]
    >>> window_texts(relabelled([a, b]), 1)
    ['Ada: my cat is Miso', 'Ada: hello again']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..cache import SESSION_CACHE_ENTRIES, SessionCache, user_cache_key
from ..errors import InvalidInputError
from ..runtime.effects import Steps
from ..storage import MemoryStore, StoredTurn
from .ranking import RankedTurn, RankerParams, TurnRanker
from .windows import WindowSet

__all__ = [
    "SCOPES",
    "SESSION",
    "USER",
    "SessionBlock",
    "TurnPool",
    "check_scope",
    "pooled",
    "relabelled",
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


@dataclass(frozen=True)
class SessionBlock:
    """One session's part of a pool.

    Attributes:
        session_id: The session.
        turns: Its turns as ranked, oldest first (aligned with ``windows.ranked``).
        windows: Their windows (see :class:`~.windows.WindowSet`).
    """

    session_id: str
    turns: Sequence[StoredTurn]
    windows: WindowSet


def relabelled(sessions: Sequence[Sequence[RankedTurn]]) -> list[RankedTurn]:
    """The sessions' ranked turns in one list, each id and segment tagged with its session.

    Windows stay inside a segment, so tagging segments by session keeps every window
    inside its session; tagged ids stay unique when two sessions use the same turn id.
    """
    return [
        replace(t, id=f"{number}:{t.id}", event=f"{number}:{t.event}")
        for number, turns in enumerate(sessions)
        for t in turns
    ]


class TurnPool:
    """Turns of one or more sessions, ranked together (see the module doc).

    Args:
        blocks: The sessions' parts, in a fixed order (the pool's positions follow it).
        params: The ranking's weights.
        ranker: A ranker of a one-session pool's turns (the session's cached one).

    Attributes:
        turns: Every turn of the pool, block after block.
        sessions: The session of each position.
        ranker: The ranker of ``turns``.
    """

    def __init__(
        self,
        blocks: Sequence[SessionBlock],
        params: RankerParams,
        ranker: TurnRanker | None = None,
    ) -> None:
        self.blocks = list(blocks)
        self.turns = [t for b in self.blocks for t in b.turns]
        self.sessions = [b.session_id for b in self.blocks for _ in b.turns]
        self.offsets = list(np.cumsum([0, *(len(b.turns) for b in self.blocks)])[:-1])
        if ranker is None:
            ranker = TurnRanker(relabelled([b.windows.ranked for b in self.blocks]), params)
        self.ranker = ranker
        self._positions = {t.id: i for i, t in enumerate(ranker.turns)}

    def position(self, ranked_id: str) -> int:
        """The position of a turn the ranker names (by its id in ``ranker.turns``)."""
        return self._positions[ranked_id]

    def similarity_steps(
        self,
        source: MemoryStore,
        space: str,
        namespace: str,
        query_vector: Sequence[float],
        positions: Sequence[int],
    ) -> Steps[dict[int, np.ndarray]]:
        """Cosine similarity of the query with each window of the pool, per radius.

        Only the turns at ``positions`` are scored (NaN elsewhere, and where a window has
        no vector); each session's windows are read from that session's vectors (those
        without one are embedded into it first).
        """
        n = len(self.turns)
        radii = self.ranker.params.dense_radii
        out = {r: np.full(n, np.nan, np.float32) for r in radii}
        wanted = set(positions)
        for block, start in zip(self.blocks, self.offsets, strict=True):
            local = [i - start for i in range(start, start + len(block.turns)) if i in wanted]
            if not local:
                continue
            scope = (namespace, block.session_id)
            found = yield from block.windows.similarity_steps(
                source, space, scope, query_vector, local
            )
            for r in radii:
                out[r][start : start + len(block.turns)] = found[r]
        return out


@dataclass
class _UserPool:
    """A user's pool as last ranked (in this process), and what it was ranked from."""

    signature: tuple[Any, ...] = ()
    pool: TurnPool | None = None


_USER_POOLS: SessionCache[_UserPool] = SessionCache("user pools", max_entries=SESSION_CACHE_ENTRIES)


def pooled(
    store: MemoryStore,
    namespace: str,
    user_id: str,
    blocks: Sequence[SessionBlock],
    params: RankerParams,
    kind: str,
) -> TurnPool:
    """The pool of a user's ``blocks``, kept per user and ``kind`` of engine.

    The pool (and its ranker, built once) is kept while no session's turns change.
    """
    signature = tuple(
        (b.session_id, tuple(t.id for t in b.turns), hash(tuple(t.turn.text for t in b.turns)))
        for b in blocks
    )
    key = (*user_cache_key(store, namespace, user_id), kind)
    cached = _USER_POOLS.get_or_create(key, _UserPool)
    if cached.pool is None or cached.signature != signature:
        cached.pool, cached.signature = TurnPool(blocks, params), signature
    return cached.pool
