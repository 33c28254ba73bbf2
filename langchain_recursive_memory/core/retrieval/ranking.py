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
BM25 is the Lucene variant with k1=1.2 and b=0.3 (longer turns are not penalised much:
they hold more of the answers). With no embedder, ``score = L + cues``.

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
from dataclasses import dataclass, field

import numpy as np

from ..dates import date_closeness, question_spans
from .lexical import LexicalIndex

__all__ = [
    "RankedTurn",
    "RankerParams",
    "TurnRanker",
    "adaptive_cut",
    "minmax",
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

    ``w_date`` was 0.3 with a yes/no date cue; with the graded cue it is 0.5, chosen on
    the LoCoMo dev split (``benchmarks/locomo.py --embedder none``; 0.3 -> 0.5: questions
    naming a date 0.888 -> 0.935 hybrid, 0.842 -> 0.888 HiGMem). ``date_tolerance_days``
    (days after a date that still fit) is the former tolerance; ``date_before_days`` (2)
    is a rule, not a fit: it changed no dev result.
    """

    k1: float = 1.2
    b: float = 0.3
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


def window_texts(turns: Sequence[RankedTurn], radius: int) -> list[str]:
    """Each turn's line joined with up to ``radius`` neighbours each side, same event only."""
    out = []
    n = len(turns)
    for i, turn in enumerate(turns):
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


@dataclass
class TurnRanker:
    """Scores every turn of a session for a question (see the module doc).

    Args:
        turns: The session's turns, oldest first.
        params: The weights.

    The dense part comes with each question (:meth:`scores`): the query's cosine
    similarity with every window at each radius (:class:`~.windows.WindowSet`).
    """

    turns: Sequence[RankedTurn]
    params: RankerParams = field(default_factory=RankerParams)

    def __post_init__(self) -> None:
        p = self.params
        self._turn_index = LexicalIndex([t.line for t in self.turns], k1=p.k1, b=p.b)
        self._window_index = (
            LexicalIndex(window_texts(self.turns, p.bm25_radius), k1=p.k1, b=p.b)
            if p.w_bm25_window > 0
            else None
        )
        self._speakers = list(dict.fromkeys(t.speaker for t in self.turns))
        self._speaker_of = np.array([t.speaker for t in self.turns], dtype=object)
        self._dates = [t.date for t in self.turns]

    def _lexical(self, question: str) -> tuple[np.ndarray, np.ndarray | None]:
        """Raw BM25 of each turn and of its window (None without a window index)."""
        turn = self._turn_index.term_scores(self._turn_index.query_terms(question))
        if self._window_index is None:
            return turn, None
        window = self._window_index.term_scores(self._window_index.query_terms(question))
        return turn, window

    def lexical_order(self, question: str) -> list[str]:
        """Turn ids with a positive lexical score, best first."""
        turn, window = self._lexical(question)
        raw = turn if window is None else turn + window
        order = np.argsort(-raw, kind="stable")
        return [self.turns[i].id for i in order if raw[i] > 0]

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
        if not self.turns:
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
        cue = np.zeros(len(self.turns), np.float32)
        named = [
            s for s in self._speakers if s and re.search(rf"\b{re.escape(s)}\b", question, re.I)
        ]
        if len(named) == 1 and p.w_speaker:
            cue += p.w_speaker * (self._speaker_of == named[0]).astype(np.float32)
        if not p.w_date:
            return cue
        known = [d for d in self._dates if d is not None]
        spans = question_spans(question, now or (max(known) if known else None))
        if spans:
            fit: dict[dt.date | None, float] = {}
            for i, day in enumerate(self._dates):
                if day not in fit:
                    fit[day] = date_closeness(spans, day, p.date_tolerance_days, p.date_before_days)
                cue[i] += p.w_date * fit[day]
        return cue

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
        order = np.argsort(-scores, kind="stable")[:k]
        return [self.turns[i].id for i in order]
