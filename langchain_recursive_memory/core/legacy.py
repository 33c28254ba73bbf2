"""0.1.0 helpers that 0.2.0 no longer uses, kept as they were until 0.3.0.

Reached through their 0.1.0 import paths (``core.recall.rrf``, ``core.window.
select_suffix``, ``core.events.segment_events``), which warn (see
:mod:`.deprecations`); import nothing from here directly. Recall no longer fuses rankings
(the multi-scale ranking of :mod:`.retrieval.ranking` scores every signal at once), the
window is planned by :mod:`.recursive.window`, and HiGMem's no-LLM events are built by
:func:`.higmem.heuristic.segment_events`, whose first parameter is now ``nodes``.

Example:
    >>> from langchain_recursive_memory.core.legacy import rrf
    >>> sorted(rrf([["a", "b"], ["b"]]).items())
    [('a', 0.01639344262295082), ('b', 0.03252247488101534)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from .events import Event, TurnNode
from .higmem.config import HEURISTIC_KEYWORDS
from .higmem.heuristic import segment_events as _segment_events

__all__ = ["RRF_K", "rrf", "segment_events", "select_suffix"]

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
