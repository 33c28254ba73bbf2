"""Multi-scale hybrid turn ranking: the no-LLM retrieval of HiGMem turns. Pure logic.

Conversational evidence is often not in the turn that shares the question's words but next
to it (the answer follows the other speaker's question), so turns are scored both alone and
inside windows of their neighbours, lexically and densely, and two cheap cues are added:

* lexical ``L = 0.5 mm(BM25(turn)) + 0.5 mm(BM25(window ±2))``
* dense ``D = 0.5 mm(cos(q, window ±1)) + 0.5 mm(cos(q, window ±2))``
* ``score = 0.4 L + 0.6 D + 0.1 speaker + 0.5 date``

``mm`` is min-max normalisation over the session's turns for this question; windows never
cross an event (a session) boundary; ``speaker`` is 1 for turns of the one speaker the
question names; ``date`` is how well the turn's day fits the days the question's dates
cover (:func:`~..dates.question_spans`: ``on 9 May``, ``in June``, ``the week before X``,
``as of December 2023``, ``between X and Y``, ``last week``...; relative dates count from
``now``, by default the newest turn's day): 1 inside, falling linearly to 0 past 7 days
after and 2 days before (evidence is told on the day or soon after; a session before the
day can only hold plans).
BM25 is the Lucene variant with k1=1.2 and b=0.9: nearly full length normalisation, so a
turn's term frequencies count relative to its length and a long turn (an assistant's
1,400-character answer) does not outrank the short one that holds the evidence merely by
repeating the question's words. With no embedder, ``score = L + cues``.

On the LoCoMo dev split this reaches evidence recall 0.80 at 8 turns with all-MiniLM-L6-v2
(see ``benchmarks/README.md``); min-max fusion beat reciprocal rank fusion there, and
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
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dates import date_closeness, question_spans, without_dates
from .lexical import (
    LexicalIndex,
    PooledIndex,
    bm25_part,
    idf_of,
    pooled_languages,
    query_terms,
)
from .mentions import MENTION_SHARE, mention_fit

__all__ = [
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


@dataclass(frozen=True, slots=True)
class RankedTurn:
    """What the ranker needs of a turn.

    Attributes:
        id: The turn id.
        speaker: Who spoke (a name, or the role).
        text: The text (image captions included).
        event: The event (session) it belongs to; windows stay inside it.
        date: Its calendar date, for the date cue.
    """

    id: str
    speaker: str
    text: str
    event: str = ""
    date: dt.date | None = None

    @property
    def line(self) -> str:
        """``"speaker: text"``, the unit of the lexical and dense indexes."""
        return f"{self.speaker}: {self.text}"


EVIDENCE_RATIO = 0.0
"""Default ``RankerParams.evidence_ratio`` (0: a fixed ``k``; see :func:`adaptive_cut`)."""
EVIDENCE_MIN = 1
"""Default ``RankerParams.evidence_min``."""


@dataclass(frozen=True, slots=True)
class RankerParams:
    """Weights of the ranking (the defaults are the measured ones, see the module doc).

    ``b`` (BM25 length normalisation of turns and windows) is 0.9, chosen on both dev sets
    together (``benchmarks/ranking_grid.py``, BM25 only): LoCoMo recall@8 is flat in
    ``b`` (0.763-0.768 for 0.3-0.9: its turns are of similar length), LongMemEval, where
    assistant turns are ~5x longer than the user turns that hold the evidence, rises with
    it (recall_all@10 0.643 at 0.3, 0.709 at 0.75, 0.722 at 0.9). It was 0.3 (tuned on
    LoCoMo only). ``w_date`` was 0.3 with a yes/no date cue; with the graded cue it is
    0.5, chosen on the LoCoMo dev split (``benchmarks/locomo.py --embedder none``; 0.3 ->
    0.5: questions naming a date 0.888 -> 0.935 hybrid, 0.842 -> 0.888 HiGMem).
    ``date_tolerance_days``
    (days after a date that still fit) is the former tolerance; ``date_before_days`` (2)
    is a rule, not a fit: it changed no dev result.
    """

    k1: float = 1.2
    b: float = 0.9
    evidence_ratio: float = EVIDENCE_RATIO
    evidence_min: int = EVIDENCE_MIN
    bm25_radius: int = 2
    w_bm25_window: float = 0.5
    dense_radii: tuple[int, ...] = (1, 2)
    w_dense: float = 0.6
    w_speaker: float = 0.1
    w_date: float = 0.5
    date_tolerance_days: int = 7
    date_before_days: int = 2


def window_texts(
    turns: Sequence[RankedTurn], radius: int, start: int = 0, stop: int | None = None
) -> list[str]:
    """Each turn's line joined with up to ``radius`` neighbours each side, same event only.

    ``start`` and ``stop``: the windows of those positions only (default: every turn's).
    """
    out = []
    n = len(turns)
    for i in range(start, n if stop is None else stop):
        turn = turns[i]
        lo, hi = max(0, i - radius), min(n, i + radius + 1)
        out.append(" ".join(turns[j].line for j in range(lo, hi) if turns[j].event == turn.event))
    return out


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

COLUMN_START = 16
"""Room a new :class:`Column` has before it first grows."""


class Column:
    """A numpy array that grows and shrinks at its end (amortised appends)."""

    def __init__(self, dtype: Any) -> None:
        self._data = np.zeros(COLUMN_START, dtype)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    @property
    def values(self) -> np.ndarray:
        """The current values (a view: copy it to keep it past a change)."""
        return self._data[: self._size]

    def extend(self, values: Sequence[Any] | np.ndarray) -> None:
        """Append values."""
        need = self._size + len(values)
        if need > len(self._data):
            grown = np.zeros(max(need, 2 * len(self._data)), self._data.dtype)
            grown[: self._size] = self._data[: self._size]
            self._data = grown
        self._data[self._size : need] = values
        self._size = need

    def truncate(self, size: int) -> None:
        """Drop the values from position ``size`` on."""
        self._size = min(self._size, max(size, 0))


class RankedIndex:
    """One session's turns as the ranker scores them, kept as turns arrive.

    The lexical indexes (each turn, and each turn's window of ``bm25_radius``
    neighbours), the speakers and the days of the turns, grown and cut at the end
    (:meth:`extend`, :meth:`truncate`): a change costs the turns it touches, never the
    whole session. Not thread-safe (the session index that owns it holds a lock).

    Args:
        params: The ranking's weights (``k1``, ``b``, ``bm25_radius``...).
        turns: The first turns, oldest first.
    """

    def __init__(self, params: RankerParams, turns: Sequence[RankedTurn] = ()) -> None:
        self.params = params
        self.turns: list[RankedTurn] = []
        self.turn_lex = LexicalIndex(k1=params.k1, b=params.b)
        self._segment_code: dict[str, int] = {}
        self.segments = Column(np.int32)  # each turn's segment, as a number
        self.window_lengths = Column(np.float32)  # tokens of each turn's BM25 window
        self._speaker_code: dict[str, int] = {}
        self._speaker_count: list[int] = []
        self.speakers = Column(np.int32)
        self._day_code: dict[dt.date | None, int] = {}
        self.day_list: list[dt.date | None] = []
        self.days = Column(np.int32)
        self.version = 0
        """Changes with every extend or truncate (what a ranker's memo is keyed on)."""
        self.extend(turns)

    def __len__(self) -> int:
        return len(self.turns)

    def named_speakers(self) -> list[str]:
        """The speakers of the turns, in order of first appearance."""
        return [s for s, c in self._speaker_code.items() if self._speaker_count[c] > 0]

    def extend(self, turns: Sequence[RankedTurn]) -> None:
        """Append turns (their windows and the windows of the turns before them follow)."""
        if not turns:
            return
        self.version += 1
        start = len(self.turns)
        self.turns.extend(turns)
        self.turn_lex.extend([t.line for t in turns])
        codes = []
        for t in turns:
            code = self._speaker_code.setdefault(t.speaker, len(self._speaker_count))
            if code == len(self._speaker_count):
                self._speaker_count.append(0)
            self._speaker_count[code] += 1
            codes.append(code)
        self.speakers.extend(codes)
        self.days.extend([self._day(t.date) for t in turns])
        self.segments.extend(
            [self._segment_code.setdefault(t.event, len(self._segment_code)) for t in turns]
        )
        self._rewindow(start)

    def truncate(self, size: int) -> None:
        """Drop the turns from position ``size`` on."""
        if size >= len(self.turns):
            return
        self.version += 1
        for code in self.speakers.values[size:]:
            self._speaker_count[int(code)] -= 1
        del self.turns[size:]
        self.turn_lex.truncate(size)
        self.speakers.truncate(size)
        self.days.truncate(size)
        self.segments.truncate(size)
        self._rewindow(size)

    def _rewindow(self, changed: int) -> None:
        """The window lengths of every position that can see a turn from ``changed`` on."""
        radius = self.params.bm25_radius
        first = max(0, changed - radius)
        self.window_lengths.truncate(first)
        n = len(self.turns)
        if first >= n:
            return
        lengths, segments = self.turn_lex.lengths, self.segments.values
        positions = np.arange(first, n)
        total = np.zeros(len(positions), np.float32)
        for offset in range(-radius, radius + 1):
            j = positions + offset
            ok = (j >= 0) & (j < n)
            ok[ok] &= segments[j[ok]] == segments[positions[ok]]
            total[ok] += lengths[j[ok]]
        self.window_lengths.extend(total)

    def _day(self, date: dt.date | None) -> int:
        code = self._day_code.get(date)
        if code is None:
            code = self._day_code[date] = len(self.day_list)
            self.day_list.append(date)
        return code

    def nbytes(self) -> int:
        """About how many bytes the index holds (for cache accounting)."""
        return self.turn_lex.nbytes() + len(self.turns) * RANKED_TURN_BYTES


RANKED_TURN_BYTES = 400
"""About what a :class:`RankedTurn` costs in memory beside its text."""


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
        self._memo: tuple[str, tuple[int, ...], tuple[np.ndarray, np.ndarray | None]] | None = None

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

    def _lexical(self, question: str) -> tuple[np.ndarray, np.ndarray | None]:
        """Raw BM25 of each turn and of its window (None when windows weigh nothing).

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

    def _lexical_uncached(self, question: str) -> tuple[np.ndarray, np.ndarray | None]:
        turn_indexes = [p.turn_lex for p in self.parts]
        if self.params.w_date:  # the date cue matches its dates to turns' own days
            question = without_dates(question)
        terms = query_terms(question, pooled_languages(turn_indexes))
        pool = PooledIndex(turn_indexes)
        turn = pool.term_scores(terms)
        if self.params.w_bm25_window <= 0:
            return turn, None
        return turn, self._window_scores(pool, terms)

    def _window_scores(self, pool: PooledIndex, terms: Sequence[str]) -> np.ndarray:
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
        # A segment code unique across the pool: windows never cross sessions.
        segments = np.concatenate(
            [
                part.segments.values.astype(np.int64) + (i << SESSION_SHIFT)
                for i, part in enumerate(self.parts)
            ]
        )
        for term in terms:
            found = pool.postings(term)
            if found is None:
                continue
            tf = _window_tf(*found, segments, p.bm25_radius)
            hit = np.flatnonzero(tf)
            idf = idf_of(len(hit), self.size)
            out[hit] += bm25_part(tf[hit], lengths[hit], idf, avgdl, p.k1, p.b)
        return out.astype(np.float32)

    def lexical_scores(self, question: str) -> np.ndarray:
        """Raw BM25 of each turn plus that of its window (what its lexical rank follows)."""
        turn, window = self._lexical(question)
        return turn if window is None else turn + window

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
        turn, window = self._lexical(question)
        lexical = (1 - p.w_bm25_window) * minmax(turn)
        if window is not None:
            lexical = lexical + p.w_bm25_window * minmax(window)
        score = lexical
        columns = [dense[r] for r in p.dense_radii if r in dense] if dense is not None else []
        columns = [c for c in columns if not np.all(np.isnan(c))]
        if columns:
            windows = sum(minmax(_filled(c)) for c in columns) / len(columns)
            score = (1 - p.w_dense) * lexical + p.w_dense * windows
        return np.asarray(score + self._cues(question, now), np.float32)

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

    def top(self, question: str, dense: Mapping[int, np.ndarray] | None, k: int) -> list[str]:
        """Return the ids of the ``k`` best turns, best first (ties: older first)."""
        scores = self.scores(question, dense)
        return [self.turn_at(int(i)).id for i in best_first(scores, k)]


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
