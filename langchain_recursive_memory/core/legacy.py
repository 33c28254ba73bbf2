"""0.1.0 helpers that 0.2.0 no longer uses, kept as they were until 0.3.0.

Reached through their 0.1.0 import paths (``core.recall.rrf``, ``core.window.
select_suffix``, ``core.events.segment_events``, ``core.ranking.TurnRanker``), which warn
(see :mod:`.deprecations`); import nothing from here directly. Recall no longer fuses
rankings (the multi-scale ranking of :mod:`.retrieval.ranking` scores every signal at
once), the window is planned by :mod:`.recursive.window`, HiGMem's no-LLM events are
built by :func:`.higmem.heuristic.segment_events`, whose first parameter is now
``nodes``, and the ranker no longer holds window vectors: the question's similarities
come with each call.

Example:
    >>> from langchain_recursive_memory.core.legacy import rrf
    >>> sorted(rrf([["a", "b"], ["b"]]).items())
    [('a', 0.01639344262295082), ('b', 0.03252247488101534)]
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np

from .events import Event, TurnNode
from .higmem.config import HEURISTIC_KEYWORDS
from .higmem.heuristic import segment_events as _segment_events
from .retrieval.ranking import RankedTurn, RankerParams
from .retrieval.ranking import TurnRanker as _TurnRanker

__all__ = ["RRF_K", "TurnRanker", "rrf", "segment_events", "select_suffix"]

T = TypeVar("T")

#: the ``k`` of reciprocal rank fusion (0.1.0's recall)
RRF_K = 60


def rrf(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal rank fusion: ``sum(1 / (k + rank))`` over the rankings (rank from 1).

    Args:
        rankings: Keys, best first, one sequence per ranking.
        k: The fusion constant.

    Returns:
        Each key's fused score.

    Example:
        >>> rrf([["x"]], k=0)
        {'x': 1.0}
    """
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return fused


def select_suffix(
    units: Sequence[Sequence[T]], costs: Sequence[Sequence[int]], budget: int
) -> list[T]:
    """Return the longest run of whole units, ending with the newest, within ``budget``.

    Args:
        units: Groups of items, oldest first, kept or dropped whole.
        costs: Each item's cost, in the shape of ``units``.
        budget: The most the kept items may cost.

    Returns:
        The kept items, oldest first.

    Example:
        >>> select_suffix([["a"], ["b", "c"]], [[5], [2, 2]], budget=4)
        ['b', 'c']
    """
    kept: list[Sequence[T]] = []
    used = 0
    for unit, cost in zip(reversed(units), reversed(costs), strict=True):
        total = sum(cost)
        if used + total > budget:
            break
        kept.append(unit)
        used += total
    return [item for unit in reversed(kept) for item in unit]


def segment_events(
    notes: Sequence[TurnNode], texts: Mapping[str, str], *, keywords: int = HEURISTIC_KEYWORDS
) -> list[Event]:
    """0.1.0's signature (``notes``) of :func:`.higmem.heuristic.segment_events`.

    Args:
        notes: The turn nodes.
        texts: Each turn's text, by turn id.
        keywords: How many keywords each event's summary names.

    Returns:
        One event per segment.

    Example:
        >>> segment_events([], {})
        []
    """
    return _segment_events(notes, texts, keywords=keywords)


Dense = Mapping[int, np.ndarray]


class TurnRanker(_TurnRanker):
    """0.1.0's ``TurnRanker(turns, vectors, params)``, holding the windows' vectors.

    :meth:`scores` and :meth:`top` take the question's embedding, as in 0.1.0, and pass
    its cosine similarity with each window to the 0.2.0 ranker (they also take 0.2.0's
    per-radius similarities).

    Args:
        turns: The session's turns, oldest first.
        vectors: For each radius of ``params.dense_radii``, an ``(n, d)`` array of the
            L2-normalised embeddings of the windows at that radius; None for a lexical
            ranking.
        params: The weights.

    Example:
        >>> from langchain_recursive_memory.core.retrieval.ranking import RankedTurn
        >>> turns = [RankedTurn("t1", "Ada", "I moved to Lisbon."), RankedTurn("t2", "Bo", "Hi")]
        >>> ranker = TurnRanker(turns, {1: np.eye(2)}, RankerParams(dense_radii=(1,)))
        >>> ranker.top("Lisbon", [1.0, 0.0], k=1)
        ['t1']
    """

    params: RankerParams
    vectors: Dense | None

    def __init__(
        self,
        turns: Sequence[RankedTurn],
        vectors: Dense | None = None,
        params: RankerParams | None = None,
    ) -> None:
        super().__init__(turns, params)
        if vectors is not None:
            for radius in self.params.dense_radii:
                shape = np.asarray(vectors[radius]).shape
                if shape[0] != len(turns):
                    raise ValueError(f"radius {radius}: {shape[0]} vectors, {len(turns)} turns")
        self.vectors = vectors

    def _dense(self, query: Sequence[float] | Dense | None) -> Dense | None:
        """The question's similarity with each window, from its embedding (or as given)."""
        if query is None or isinstance(query, Mapping):
            return query
        if self.vectors is None:
            return None
        q = np.asarray(query, np.float32)
        q = q / (np.linalg.norm(q) or 1.0)
        return {r: np.asarray(self.vectors[r], np.float32) @ q for r in self.params.dense_radii}

    def scores(
        self,
        question: str,
        query_vector: Sequence[float] | Dense | None = None,
        *,
        now: dt.date | None = None,
    ) -> np.ndarray:
        """Return one score per turn (higher is better), given the question's embedding."""
        return super().scores(question, self._dense(query_vector), now=now)

    def top(self, question: str, query_vector: Sequence[float] | Dense | None, k: int) -> list[str]:
        """Return the ids of the ``k`` best turns, best first (ties: older first)."""
        return super().top(question, self._dense(query_vector), k)
