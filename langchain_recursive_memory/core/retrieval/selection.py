"""Which ranked turns a read hands over: the best ones, each thing said counted once.

Users repeat themselves: a question asked again every few hundred exchanges ("What is
my locker code?"), a greeting, a reply the assistant gave each time. Ranked by
relevance, all the copies score alike and fill the top ``k`` ahead of the one turn that
answered. So the top ``k`` is taken best first and a turn *near-identical* to one already
taken (the same content words, at least :data:`NEAR_DUPLICATE` of them shared: Jaccard
of their token sets) is passed over: it counts once, and the place goes to the next turn
that says something else. A diversity penalty it is not: nothing is pushed down for
being on the same topic or in the same session (penalties of that kind cost recall on
both dev sets: the evidence of a question clusters).

Example:
    >>> import numpy as np
    >>> terms = [frozenset({"lock", "code"}), frozenset({"code", "lock"}), frozenset({"4512"})]
    >>> pick(np.array([0.9, 0.8, 0.5]), 2, np.ones(3, bool), terms.__getitem__)
    [0, 2]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["NEAR_DUPLICATE", "best_first", "near_identical", "pick"]

NEAR_DUPLICATE = 0.8
"""Jaccard similarity of two turns' token sets from which they count as one.

A rule, not a fit: 0.8 joins the same sentence re-asked with a word changed or dropped
(``"what is my locker code"`` / ``"so what is my locker code again"``), never two
statements that differ in a fact (``"the code is 4512"`` / ``"the code is 9981"``: 0.5).
It changed no dev result (LoCoMo and LongMemEval repeat almost nothing)."""


def best_first(scores: np.ndarray, k: int, keep: np.ndarray | None = None) -> list[int]:
    """The positions of the ``k`` best scores, best first (ties: lower position first).

    ``keep``: a mask of the positions that may be chosen. Costs a partial sort, not a
    full one, whatever the number of scores.
    """
    values = scores if keep is None else np.where(keep, scores, -np.inf)
    n = len(values)
    if k <= 0 or n == 0:
        return []
    if k < n:
        threshold = np.partition(values, n - k)[n - k]
        chosen = np.flatnonzero(values >= threshold)
    else:
        chosen = np.arange(n)
    order = chosen[np.lexsort((chosen, -values[chosen]))][:k]
    if keep is not None:
        order = order[keep[order]]
    return [int(i) for i in order]


EXTRA_CANDIDATES = 4
"""Turns looked at per turn handed over, at first (more only when many are copies)."""


def near_identical(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two token sets are near-identical (Jaccard >= :data:`NEAR_DUPLICATE`).

    Two empty sets are identical (two turns with only stopwords or emoji alike).

    Example:
        >>> near_identical(frozenset("abcde"), frozenset("abcd"))
        True
        >>> near_identical(frozenset("ab"), frozenset("ac"))
        False
    """
    if a == b:
        return True
    union = len(a | b)
    return union > 0 and len(a & b) / union >= NEAR_DUPLICATE


def pick(
    scores: np.ndarray,
    k: int,
    allowed: np.ndarray,
    terms: Callable[[int], frozenset[str]],
) -> list[int]:
    """The positions of up to ``k`` best turns, best first, near-identical ones once.

    Args:
        scores: Every turn's score.
        k: Most turns.
        allowed: A mask of the positions that may be chosen.
        terms: A position's token set.

    Returns:
        Positions, best first (ties: lower position first); of near-identical turns the
        best (or oldest) one.
    """
    if k <= 0:
        return []
    chosen: list[int] = []
    kept: list[frozenset[str]] = []
    want = EXTRA_CANDIDATES * k
    seen = 0
    while True:
        order = best_first(scores, want, allowed)
        for i in order[seen:]:
            mine = terms(i)
            if not any(near_identical(mine, other) for other in kept):
                chosen.append(i)
                kept.append(mine)
                if len(chosen) == k:
                    return chosen
        if len(order) < want:  # every allowed turn was looked at
            return chosen
        seen, want = len(order), 2 * want
