"""Fact ranking: BM25 over ``subject + fact`` and embeddings, min-max mixed 0.4/0.6. Pure.

Example:
    >>> import numpy as np
    >>> from langchain_recursive_memory.core.retrieval.facts import mix
    >>> mix(np.array([0.0, 2.0], np.float32), None).tolist()
    [0.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..facts import Fact
from .lexical import LexicalIndex
from .ranking import minmax

__all__ = ["W_DENSE_FACTS", "RankedFact", "fact_texts", "mix", "rank_facts"]

W_DENSE_FACTS = 0.6
"""Weight of the dense score in a fact's mix (the turn ranker's ``w_dense``, tuned on the
LoCoMo dev split, see :mod:`.ranking`)."""

RankedFact = tuple[float, Fact, int | None, int | None]
"""``(score, fact, lexical rank, dense rank)``."""


def fact_texts(facts: Sequence[Fact]) -> list[str]:
    """What a fact is searched by: its subject and its text."""
    return [f"{f.subject} {f.text}" for f in facts]


def mix(lexical: np.ndarray, dense: np.ndarray | None) -> np.ndarray:
    """``0.4 mm(lexical) + 0.6 mm(dense)`` (missing dense values count as the lowest)."""
    if dense is None:
        return minmax(lexical)
    filled = np.where(np.isnan(dense), np.nanmin(dense), dense)
    return (1 - W_DENSE_FACTS) * minmax(lexical) + W_DENSE_FACTS * minmax(filled)


def rank_facts(
    facts: Sequence[Fact], index: LexicalIndex, query: str, dense: Mapping[str, float]
) -> list[RankedFact]:
    """Score every fact for ``query``; those with a positive score, in the facts' order.

    Args:
        facts: The session's facts.
        index: The BM25 index of :func:`fact_texts` of ``facts``.
        query: The question.
        dense: Cosine similarity of the query with each fact's vector, by fact key.
    """
    lexical = index.scores(query)
    vectors = np.array([dense.get(f.key, np.nan) for f in facts], np.float32)
    scores = mix(lexical, vectors if dense else None)
    lexical_rank = {i: r for r, (i, _) in enumerate(index.search(query, len(facts)), 1)}
    dense_order = sorted(dense, key=lambda key: -dense[key])
    dense_rank = {key: r for r, key in enumerate(dense_order, start=1)}
    return [
        (float(scores[i]), fact, lexical_rank.get(i), dense_rank.get(fact.key))
        for i, fact in enumerate(facts)
        if scores[i] > 0
    ]
