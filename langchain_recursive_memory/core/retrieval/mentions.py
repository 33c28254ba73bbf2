"""Dates a turn's text mentions that the question names: the text side of the date cue.

The rule, for a question that names a calendar date (``What happened on 9 March 2024?``):

1. The date is matched to each turn's *own* date by the ranker's date cue, and its words
   are left out of BM25 (:func:`~..dates.without_dates`): ``9 March 2024``, ``March 9th``,
   ``the 9th of March`` and ``2024-03-09`` rank alike, and a turn that mentions another
   day of the month (``booked for 18 March``) gains nothing from sharing ``March``.
2. A turn whose text mentions that same date (``the move is on 9 March``,
   ``3月14日は私の誕生日です``) still counts, at :data:`MENTION_SHARE` of the cue: less than
   a turn said on the day, so a date mentioned inside a text never outranks a turn's own
   date, and above a turn that has neither.

Pure logic: no I/O.

Example:
    >>> from langchain_recursive_memory.core.retrieval.lexical import LexicalIndex
    >>> texts = ["The move is on 9 March.", "Dentist on 18 March.", "Lunch with Sam."]
    >>> mention_fit([LexicalIndex(texts)], texts.__getitem__, "What happened on 9 March?")
    array([1., 0., 0.], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..dates import DateMention, question_dates, without_dates
from .lexical import LexicalIndex, pooled_languages, pooled_term_scores, query_terms

__all__ = ["MENTION_CANDIDATES", "MENTION_SHARE", "date_terms", "mention_fit", "same_date"]

MENTION_SHARE = 0.5
"""The date cue of a turn whose text mentions the question's date, as a share of the cue
of a turn said on that date (a rule, not a fit: below 1 so the turn's own date wins)."""
MENTION_CANDIDATES = 200
"""Turns whose texts are read for dates per question: those sharing most of the date's
words (by their BM25), so the cost does not grow with the pool."""


def date_terms(question: str, languages: Sequence[str]) -> list[str]:
    """The lexical terms of the question's dates (those :func:`without_dates` removes)."""
    kept = set(query_terms(without_dates(question), languages))
    return [t for t in dict.fromkeys(query_terms(question, languages)) if t not in kept]


def same_date(asked: Sequence[DateMention], said: Sequence[DateMention]) -> bool:
    """Whether a text's mentions name a date the question's mentions name.

    The months must agree; a day the question names must be the text's day; years must
    agree when both give one (``on 9 March`` in a text fits ``9 March 2024``).

    Example:
        >>> same_date([(2024, 3, 9)], [(None, 3, 9)]), same_date([(2024, 3, 9)], [(None, 3, 18)])
        (True, False)
    """
    for year, month, day in asked:
        if month is None:
            continue
        for y, m, d in said:
            if m == month and (day is None or d == day) and (None in (year, y) or y == year):
                return True
    return False


def mention_fit(
    indexes: Sequence[LexicalIndex], text_at: Callable[[int], str], question: str
) -> np.ndarray:
    """1 for each turn whose text mentions a date the question names, else 0 (float32).

    Args:
        indexes: The turns' lexical indexes, scored as one pool.
        text_at: The text of the turn at a pool position.
        question: The question.
    """
    out = np.zeros(sum(index.size for index in indexes), np.float32)
    asked = [m for m in question_dates(question) if m[1] is not None]
    terms = date_terms(question, pooled_languages(indexes)) if asked else []
    if not terms:
        return out
    scores = pooled_term_scores(indexes, terms)
    hits = np.flatnonzero(scores > 0)
    if len(hits) > MENTION_CANDIDATES:
        best = np.argpartition(-scores[hits], MENTION_CANDIDATES)[:MENTION_CANDIDATES]
        hits = hits[best]
    for i in hits:
        if same_date(asked, question_dates(text_at(int(i)))):
            out[i] = 1.0
    return out
