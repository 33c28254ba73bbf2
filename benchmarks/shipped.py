"""The library's turn ranking exactly as it ships, over turns given directly (no Chroma).

Both engines rank a session's turns the same way: a :class:`TurnIndex` of the session (its
turns in log order, segmented, turns without text left out), a :class:`TurnPool` over
it, window vectors with an embedder, and :meth:`TurnPool.select` (the ``k`` best turns,
cut as the ranker says). Hybrid ``recall`` and HiGMem's no-LLM ``retrieve`` call exactly
that; so does this module, with the turns put straight into the index instead of going
through a store first. So a haystack is indexed once and ranked under any number of
``RankerParams`` variants, in milliseconds, and what is measured is what ships:
``tests/test_shipped_ranking.py`` checks that it returns what the two memories return.

Window vectors go through the library's own code too (``embed_missing_steps`` driven by a
``Runner`` with the embedder): a stand-in store holds no vector, so every window the read
needs is embedded, as a fresh memory would.

Example:
    >>> from langchain_recursive_memory.core import Turn
    >>> turns = [
    ...     Turn(role="user", text="My locker code is 4512.", id="a", created_at=0.0),
    ...     Turn(role="assistant", text="Noted.", id="b", created_at=5.0),
    ...     Turn(role="user", text="", id="c", created_at=10.0),
    ... ]
    >>> ShippedRanking(turns).top("What is my locker code?", 2)  # the empty turn is never ranked
    ['a', 'b']
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import numpy as np

from langchain_recursive_memory.core import Turn
from langchain_recursive_memory.core.retrieval.dense import unit
from langchain_recursive_memory.core.retrieval.index import TurnIndex
from langchain_recursive_memory.core.retrieval.pool import TurnPool, embed_missing_steps
from langchain_recursive_memory.core.retrieval.ranking import RankerParams
from langchain_recursive_memory.core.runtime import Runner
from langchain_recursive_memory.core.storage import StoredTurn

__all__ = ["ShippedRanking", "stored_turns"]

SESSION = "haystack"
"""The session id the turns are ranked as."""
SPACE = "bench"
"""The vector space name window vectors are kept under."""


def stored_turns(turns: Sequence[Turn]) -> list[StoredTurn]:
    """``turns`` as the log stores them, in order (the order key is the position)."""
    return [StoredTurn(t, n, 0, "o200k_base") for n, t in enumerate(turns, start=1)]


class _NoVectors:
    """A session's vectors in a store that holds none and keeps none (windows get embedded)."""

    def by_ids(self, *_args: Any) -> list[Any]:
        return []

    def put(self, *_args: Any) -> None:
        return None


class _NoSession:
    vectors = _NoVectors()


class _NoStore:
    """The store's one method the window embedding calls: ``session(namespace, id)``."""

    def session(self, *_args: Any) -> _NoSession:
        return _NoSession()


class ShippedRanking:
    """A haystack's turns indexed once, as both engines index a session's turns.

    Args:
        turns: The turns, oldest first (ids set).
        params: The ranking's weights (the ``TurnIndex`` keeps windows of its radii).
        embedder: With one, every window gets a vector (embedded through the library's
            path) and reads rank densely too.
    """

    def __init__(
        self,
        turns: Sequence[Turn],
        params: RankerParams | None = None,
        embedder: Any = None,
    ) -> None:
        self.params = params or RankerParams()
        self.index = TurnIndex(SESSION, self.params)
        self.index.merge(stored_turns(turns))
        self.embedder = embedder
        if embedder is not None:
            positions = np.arange(len(self.index.ranked_turns))
            steps = embed_missing_steps(
                _NoStore(),  # type: ignore[arg-type]
                SPACE,
                "bench",
                [(SESSION, self.index, positions)],
            )
            Runner(embedder=embedder).run(steps)

    def ranked(
        self,
        question: str,
        k: int,
        *,
        now: dt.date | None = None,
        params: RankerParams | None = None,
        query_vector: Sequence[float] | None = None,
    ) -> tuple[list[str], list[float]]:
        """The ids and scores of what a read hands over, best first.

        Args:
            question: The question.
            k: Most turns.
            now: The day the question is asked (None: the newest turn's).
            params: Other weights (same window radii and BM25 ``k1``/``b``: the index's
                lexical statistics are kept with the index's own; only the weights may
                differ). Default: the index's.
            query_vector: The question's embedding (default: the embedder's, if any).
        """
        pool = TurnPool([self.index], [SESSION], params or self.params)
        dense = None
        if self.embedder is not None:
            vector = (
                query_vector if query_vector is not None else self.embedder.embed_query(question)
            )
            query = unit(vector)
            if query is not None:
                dense = pool.similarity(query, np.ones(pool.size, bool))
        top, scores = pool.select(question, k, dense=dense, now=now)
        return [pool.turn(i).id for i in top], [float(scores[i]) for i in top]

    def top(self, question: str, k: int, **kwargs: Any) -> list[str]:
        """The ids of :meth:`ranked`."""
        return self.ranked(question, k, **kwargs)[0]
