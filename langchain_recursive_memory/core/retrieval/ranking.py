"""Multi-scale hybrid turn ranking: the no-LLM retrieval of HiGMem turns. Pure logic.

Conversational evidence is often not in the turn that shares the question's words but next
to it (the answer follows the other speaker's question), so turns are scored both alone and
inside windows of their neighbours, lexically and densely, and cheap cues are added:

* lexical ``L = (1 - w d) mm(T) + w d mm(BM25(window ±2))``, ``w = 0.5``, where ``d`` is 1
  in a dialogue segment and 0 elsewhere (:func:`~.shape.dialogue_mask`: windows lift
  neighbours only where the speakers' turns are of similar length), and ``T`` is the
  turn's BM25, its terms already said by an earlier turn of the segment counted at half
  weight outside a dialogue (:func:`~.shape.first_mentions`);
* dense ``D = 0.5 mm(cos(q, window ±1)) + 0.5 mm(cos(q, window ±2))`` in a dialogue
  segment, ``D = mm(cos(q, turn))`` elsewhere (radius 0 among ``dense_radii``);
* ``s = (1 - v) L + v D + 0.1 speaker + 0.5 date - 0.2 asks``, ``v`` = 0.6 in a dialogue
  and 0.3 elsewhere (``L`` alone without an embedder), then
  ``score = 0.9 s + 0.1 max(s over the turn's segment)``.

``mm`` is min-max normalisation over the session's turns for this question; windows never
cross an event (a session) boundary; ``speaker`` is 1 for turns of the one speaker the
question names; ``asks`` is 1 for a turn whose every sentence is a question
(:func:`~.shape.asks`); ``date`` is how well the turn's day fits the days the question's
dates cover (:func:`~..dates.question_spans`: ``on 9 May``, ``in June``, ``the week before
X``, ``as of December 2023``, ``between X and Y``, ``last week``...; relative dates count
from ``now``, by default the newest turn's day): 1 inside, falling linearly to 0 past 7
days after and 2 days before (evidence is told on the day or soon after; a session before
the day can only hold plans).
BM25 is the Lucene variant with k1=1.2 and b=0.9: nearly full length normalisation, so a
turn's term frequencies count relative to its length and a long turn (an assistant's
1,400-character answer) does not outrank the short one that holds the evidence merely by
repeating the question's words. What a read hands over is :meth:`TurnRanker.select`: the
best turns with a positive score, near-identical ones counted once
(:func:`~.selection.pick`).

The weights are :class:`~.params.RankerParams`; where each was chosen, on both dev sets, is
in ``benchmarks/README.md``. Min-max fusion beat reciprocal rank fusion on LoCoMo, and
adaptive cut-offs never beat a fixed ``k``.

Example:
    >>> from langchain_recursive_memory.core.retrieval.ranking import RankedTurn, TurnRanker
    >>> turns = [
    ...     RankedTurn("1", "Ada", "Where did you go last week?", "s1"),
    ...     RankedTurn("2", "Bob", "To Lisbon, with my sister.", "s1"),
    ...     RankedTurn("3", "Ada", "I bought a red bike.", "s2"),
    ... ]
    >>> TurnRanker(turns).top("Where did Ada go last week?", None, 2)
    ['1', '2']
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from ..dates import date_closeness, question_spans, without_dates
from .lexical import (
    PooledIndex,
    bm25_part,
    idf_of,
    pooled_languages,
    query_terms,
)
from .mentions import MENTION_SHARE, mention_fit
from .params import EVIDENCE_MIN, EVIDENCE_RATIO, RankedTurn, RankerParams
from .ranked_index import COLUMN_START, RANKED_TURN_BYTES, Column, RankedIndex, window_texts
from .selection import best_first, pick
from .shape import first_mentions, segment_best

__all__ = [
    "COLUMN_START",
    "EVIDENCE_MIN",
    "EVIDENCE_RATIO",
    "RANKED_TURN_BYTES",
    "RankedTurn",
    "RankerParams",
    "TurnRanker",
    "Column",
    "RankedIndex",
    "adaptive_cut",
    "best_first",
    "minmax",
    "rank_of",
    "window_texts",
]


def adaptive_cut(scores: Sequence[float], cap: int, ratio: float, minimum: int = 1) -> int:
    """How many of the best turns to hand over: those within ``ratio`` of the best score.

    A confident ranking (one turn far ahead) hands over few turns; a flat one (several
    turns of a multi-hop answer scoring alike) up to ``cap``. Turns with no signal (score
    <= 0) are never counted.

    Args:
        scores: The turns' scores, best first.
        cap: Most turns.
        ratio: A turn is kept when its score is at least ``ratio`` times the best one.
        minimum: Fewest turns kept when there are that many with a signal.

    Example:
        >>> adaptive_cut([2.0, 0.4, 0.3], cap=8, ratio=0.7), adaptive_cut([1.0, 0.9, 0.8], 2, 0.7)
        (1, 2)
    """
    positive = [s for s in scores[:cap] if s > 0]
    if not positive:
        return 0
    floor = ratio * positive[0]
    within = sum(1 for s in positive if s >= floor)
    return max(within, min(minimum, len(positive)))


def _filled(similarity: np.ndarray) -> np.ndarray:
    """Similarities with NaN (no vector) raised to the lowest present value."""
    x = np.asarray(similarity, np.float32)
    return np.where(np.isnan(x), np.nanmin(x), x)


def minmax(x: np.ndarray) -> np.ndarray:
    """Min-max normalise to [0, 1]; all-equal values map to 1 when positive, else 0."""
    lo, hi = float(x.min()), float(x.max())
    if hi > lo:
        return (x - lo) / (hi - lo)
    # All equal (one turn, or no discrimination): a positive signal stays a signal.
    return (x > 0).astype(x.dtype)


def rank_of(
    values: np.ndarray, positions: Sequence[int], *, positive: bool = True
) -> list[int | None]:
    """The 1-based rank of each position by ``values`` (best first, ties: older first).

    None for a position whose value is NaN, or (``positive``) not above 0: unranked.
    Costs a pass over ``values`` per position asked, not a sort.
    """
    out: list[int | None] = []
    for i in positions:
        v = values[i]
        if np.isnan(v) or (positive and not v > 0):
            out.append(None)
            continue
        out.append(int((values > v).sum() + (values[:i] == v).sum()) + 1)
    return out


SESSION_SHIFT = 32
"""Bits a segment code is shifted by per pooled session (codes unique across the pool)."""


class TurnRanker:
    """Scores the turns of one session (or of several, as one pool) for a question.

    Args:
        turns: A session's turns, oldest first (one part); or use :meth:`of` for the
            indexes of several sessions ranked as one pool (windows stay in their session,
            BM25 statistics are those of the whole pool).
        params: The weights.

    Positions run over the parts in order. The dense part comes with each question
    (:meth:`scores`): the query's cosine similarity with every window at each radius.
    """

    def __init__(
        self, turns: Sequence[RankedTurn] = (), params: RankerParams | None = None
    ) -> None:
        self.params = params or RankerParams()
        self.parts: list[RankedIndex] = [RankedIndex(self.params, turns)]
        self._offsets = [0, len(turns)]
        self._memo: tuple[str, tuple[int, ...], _Lexical] | None = None

    @classmethod
    def of(cls, parts: Sequence[RankedIndex], params: RankerParams) -> TurnRanker:
        """A ranker of several sessions' indexes as one pool (they are not copied)."""
        ranker = cls.__new__(cls)
        ranker.params = params
        ranker.parts = list(parts)
        ranker._offsets = [0, *np.cumsum([len(p) for p in parts]).tolist()]
        ranker._memo = None
        return ranker

    @property
    def size(self) -> int:
        """Turns in the pool."""
        return self._offsets[-1]

    @property
    def turns(self) -> list[RankedTurn]:
        """Every turn of the pool, part after part (a new list)."""
        return [t for part in self.parts for t in part.turns]

    def turn_at(self, position: int) -> RankedTurn:
        """The turn at a pool position."""
        part = int(np.searchsorted(self._offsets, position, side="right")) - 1
        return self.parts[part].turns[position - self._offsets[part]]

    def _lexical(self, question: str) -> _Lexical:
        """Raw BM25 of each turn, of its repeated terms and of its window.

        Kept for the last question: a read asks for the scores and then the lexical ranks
        of its hits, with the indexes locked in between.
        """
        memo = self._memo
        versions = tuple(part.version for part in self.parts)
        if memo is not None and memo[0] == question and memo[1] == versions:
            return memo[2]
        found = self._lexical_uncached(question)
        self._memo = (question, versions, found)
        return found

    def _segments(self) -> np.ndarray:
        """Each position's segment, as a code unique across the pool's sessions."""
        return np.concatenate(
            [
                part.segments.values.astype(np.int64) + (i << SESSION_SHIFT)
                for i, part in enumerate(self.parts)
            ]
            or [np.zeros(0, np.int64)]
        )

    def _lexical_uncached(self, question: str) -> _Lexical:
        turn_indexes = [p.turn_lex for p in self.parts]
        if self.params.w_date:  # the date cue matches its dates to turns' own days
            question = without_dates(question)
        terms = query_terms(question, pooled_languages(turn_indexes))
        pool = PooledIndex(turn_indexes)
        segments = self._segments()
        turn = pool.term_scores(terms)
        repeated = self._repeated_scores(pool, terms, segments)
        if self.params.w_bm25_window <= 0:
            return _Lexical(turn, repeated, None)
        return _Lexical(turn, repeated, self._window_scores(pool, terms, segments))

    def _repeated_scores(
        self, pool: PooledIndex, terms: Sequence[str], segments: np.ndarray
    ) -> np.ndarray:
        """BM25 of each turn's query terms that an earlier turn of its segment said."""
        out = np.zeros(self.size, np.float64)
        if not self.size or not pool.total:
            return out.astype(np.float32)
        avgdl = pool.total / pool.size
        k1, b = self.params.k1, self.params.b
        for term in terms:
            found = pool.postings(term)
            if found is None:
                continue
            docs, tf = found
            again = ~first_mentions(docs, segments)
            if again.any():
                idf = idf_of(len(docs), self.size)
                part = bm25_part(tf[again], pool.lengths[docs[again]], idf, avgdl, k1=k1, b=b)
                out[docs[again]] += part
        return out.astype(np.float32)

    def _window_scores(
        self, pool: PooledIndex, terms: Sequence[str], segments: np.ndarray
    ) -> np.ndarray:
        """BM25 of each turn's window over the pool (windows as documents).

        A window is the turn with ``bm25_radius`` neighbours each side in its segment (of
        its session), so its frequencies are its turns' summed: derived from the turns'
        pooled postings, a few array operations per term however many sessions.
        """
        p = self.params
        out = np.zeros(self.size, np.float64)
        lengths = np.concatenate([part.window_lengths.values for part in self.parts])
        total = float(lengths.sum())
        if not self.size or not total:
            return out.astype(np.float32)
        avgdl = total / self.size
        for term in terms:
            found = pool.postings(term)
            if found is None:
                continue
            tf = _window_tf(*found, segments, p.bm25_radius)
            hit = np.flatnonzero(tf)
            idf = idf_of(len(hit), self.size)
            out[hit] += bm25_part(tf[hit], lengths[hit], idf, avgdl, k1=p.k1, b=p.b)
        return out.astype(np.float32)

    def dialogue(self) -> np.ndarray:
        """For each position, whether its segment is a dialogue (:func:`~.shape.dialogue_mask`)."""
        ratio = self.params.dialogue_ratio
        return np.concatenate([part.dialogue(ratio) for part in self.parts] or [np.zeros(0, bool)])

    def _segment_best(self, score: np.ndarray) -> np.ndarray:
        """Each position's segment's best score (segments never cross a session)."""
        out = np.empty_like(score)
        for i, part in enumerate(self.parts):
            start, stop = self._offsets[i], self._offsets[i + 1]
            out[start:stop] = segment_best(score[start:stop], part.segments.values)
        return out

    def lexical_scores(self, question: str) -> np.ndarray:
        """Raw BM25 of each turn plus that of its window (what its lexical rank follows)."""
        found = self._lexical(question)
        return found.turn if found.window is None else found.turn + found.window

    def scores(
        self,
        question: str,
        dense: Mapping[int, np.ndarray] | None = None,
        *,
        now: dt.date | None = None,
    ) -> np.ndarray:
        """Return one score per turn (higher is better).

        Args:
            question: The question.
            dense: For each radius of ``params.dense_radii``, the question's cosine
                similarity with each turn's window (NaN where a turn has no vector: it
                counts as the lowest); None for a lexical ranking.
            now: The day relative dates of the question ("last week") count from;
                default: the newest turn's.
        """
        p = self.params
        if not self.size:
            return np.zeros(0, np.float32)
        lexical = self._lexical_part(question)
        score = lexical
        similar = self._dense_part(dense)
        if similar is not None:
            score = (1 - p.w_dense) * lexical + p.w_dense * similar
            if p.w_dense_outside is not None:  # another weight outside a dialogue
                w = p.w_dense_outside
                score = np.where(self.dialogue(), score, (1 - w) * lexical + w * similar)
        asking = np.concatenate([part.asking.values for part in self.parts])
        score = score + self._cues(question, now) - p.w_asks * asking
        if p.w_segment:  # a turn inherits part of its segment's best match
            best = self._segment_best(score)
            score = (1 - p.w_segment) * score + p.w_segment * best
        return np.asarray(score, np.float32)

    def _dense_part(self, dense: Mapping[int, np.ndarray] | None) -> np.ndarray | None:
        """``D``: the mean min-max similarity of each turn's windows (None: no vectors).

        With radius 0 among ``dense_radii`` (the turn alone), windows lift neighbours only
        in a dialogue, as the window BM25 does: outside one a turn's dense part is its own
        similarity, inside one the mean of its windows of the other radii.
        """
        p = self.params
        found = {
            r: minmax(_filled(dense[r]))
            for r in p.dense_radii
            if dense is not None and r in dense and not np.all(np.isnan(dense[r]))
        }
        if not found:
            return None
        alone = found.pop(0, None)
        if not found:
            return alone
        windows = np.asarray(sum(found.values()) / len(found))
        if alone is None:
            return windows
        return np.where(self.dialogue(), windows, alone)

    def _lexical_part(self, question: str) -> np.ndarray:
        """``L``: each turn's BM25 (repeats discounted outside a dialogue) and its window's."""
        p = self.params
        found = self._lexical(question)
        dialogue = self.dialogue()
        own = found.turn - (1 - p.repeat_share) * np.where(dialogue, 0.0, found.repeated)
        if found.window is None:
            return minmax(own)
        on = p.w_bm25_window * dialogue  # windows lift neighbours in a dialogue only
        return np.asarray((1 - on) * minmax(own) + on * minmax(found.window))

    def _cues(self, question: str, now: dt.date | None) -> np.ndarray:
        """The speaker cue plus the date cue of each turn."""
        p = self.params
        parts = self.parts
        speakers = list(dict.fromkeys(s for part in parts for s in part.named_speakers()))
        named = [s for s in speakers if s and re.search(rf"\b{re.escape(s)}\b", question, re.I)]
        cue = np.zeros(self.size, np.float32)
        if len(named) == 1 and p.w_speaker:
            cue += p.w_speaker * np.concatenate(
                [_speaker_mask(part, named[0]) for part in parts]
            ).astype(np.float32)
        if not p.w_date:
            return cue
        if now is None:
            known = [d for part in parts for d in part.day_list if d is not None]
            now = max(known) if known else None
        spans = question_spans(question, now)
        if not spans:
            return cue
        fit: dict[dt.date | None, float] = {}
        columns = []
        for part in parts:
            for day in part.day_list:
                if day not in fit:
                    fit[day] = date_closeness(spans, day, p.date_tolerance_days, p.date_before_days)
            table = np.array([fit[day] for day in part.day_list] or [0.0], np.float32)
            columns.append(table[part.days.values])
        # A turn said on the day beats one whose text only mentions it (see .mentions).
        own = np.concatenate(columns)
        said = MENTION_SHARE * mention_fit([x.turn_lex for x in parts], self._text_at, question)
        return cue + p.w_date * np.where(own >= said, own, said)

    def _text_at(self, position: int) -> str:
        return self.turn_at(position).text

    def cut(self, best_scores: Sequence[float], k: int) -> int:
        """How many of the best turns (``best_scores``, best first) to hand over, at most ``k``.

        With ``params.evidence_ratio`` > 0, an adaptive set (:func:`adaptive_cut`); else
        the ``k`` best with a positive score.
        """
        p = self.params
        if p.evidence_ratio > 0:
            return adaptive_cut(best_scores, k, p.evidence_ratio, p.evidence_min)
        return sum(1 for s in best_scores[:k] if s > 0)

    def select(self, scores: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[int]:
        """The positions a read hands over: at most ``k``, best first.

        The best turns with a positive score (``allowed``: a mask of the positions that
        may be chosen), near-identical turns counted once (:func:`~.selection.pick`), cut
        by :meth:`cut`.
        """
        ok = scores > 0 if allowed is None else allowed & (scores > 0)
        top = pick(scores, k, ok, self._terms_at)
        return top[: self.cut([float(scores[i]) for i in top], k)]

    def _terms_at(self, position: int) -> frozenset[str]:
        part = int(np.searchsorted(self._offsets, position, side="right")) - 1
        return self.parts[part].turn_lex.doc_terms(position - self._offsets[part])

    def top(self, question: str, dense: Mapping[int, np.ndarray] | None, k: int) -> list[str]:
        """The ids of what a read hands over for ``question`` (:meth:`select`), best first."""
        scores = self.scores(question, dense)
        return [self.turn_at(i).id for i in self.select(scores, k)]


class _Lexical(NamedTuple):
    """Raw BM25 scores of a question over the pool's turns."""

    turn: np.ndarray
    """Of each turn."""
    repeated: np.ndarray
    """Of the query terms each turn says after an earlier turn of its segment said them."""
    window: np.ndarray | None
    """Of each turn's window (None when windows weigh nothing)."""


def _speaker_mask(part: RankedIndex, speaker: str) -> np.ndarray:
    code = part._speaker_code.get(speaker)
    if code is None:
        return np.zeros(len(part), bool)
    return np.asarray(part.speakers.values == code, bool)


def _window_tf(docs: np.ndarray, tf: np.ndarray, segments: np.ndarray, radius: int) -> np.ndarray:
    """How often a term occurs in each position's window, from its postings (docs, tf)."""
    n = len(segments)
    out = np.zeros(n, np.float32)
    for offset in range(-radius, radius + 1):
        window = docs + offset
        ok = (window >= 0) & (window < n)
        ok[ok] &= segments[window[ok]] == segments[docs[ok]]
        out[window[ok]] += tf[ok]  # one position per window at a given offset: no repeats
    return out
