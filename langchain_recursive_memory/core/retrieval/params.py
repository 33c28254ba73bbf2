"""What the turn ranking is given: a turn as the ranker sees it, and the ranking's weights.

Every constant of the ranking is a field of :class:`RankerParams` (or named in
:mod:`.shape` and :mod:`.selection`), each with where it was chosen; the table of them
all, with the measurements, is in ``benchmarks/README.md``.

Example:
    >>> RankedTurn("t1", "Ada", "I moved to Lisbon.", "s1").line
    'Ada: I moved to Lisbon.'
    >>> RankerParams().b
    0.9
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

__all__ = ["EVIDENCE_MIN", "EVIDENCE_RATIO", "RankedTurn", "RankerParams"]


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

    Issue 30 (both dev sets together, ``benchmarks/ranking_grid.py``): the window BM25
    (``w_bm25_window``) lifts neighbours only in a dialogue segment (``dialogue_ratio``,
    see :mod:`.shape`); outside one, a query term said again later in a segment counts
    ``repeat_share`` of what it counts in the turn that first said it; a turn that only
    asks loses ``w_asks``; a turn's score is mixed with its segment's best one
    (``w_segment`` of it): a turn inherits part of its session's match, and the best
    turn keeps its own score.

    Issue 30 item 4 (with an embedder; MiniLM on both dev sets, see
    ``benchmarks/README.md``, "Dense recall with MiniLM at issue 30's ranking"): radius 0
    in ``dense_radii`` (the turn alone) makes the dense windows lift neighbours only in a
    dialogue, as the window BM25 does: outside one a turn's dense part is its own
    similarity. ``w_dense_outside`` (0.3; None: ``w_dense``) is the dense weight outside a
    dialogue, ``w_dense`` (0.6) the weight in one. Every LoCoMo segment is a dialogue
    (its recall is unchanged); on LongMemEval, where an assistant answers at length,
    all@10 is 0.783 against 0.733 with BM25 only (0.683 with windows everywhere).
    Without an embedder neither field changes anything.
    """

    k1: float = 1.2
    b: float = 0.9
    bm25_radius: int = 2
    w_bm25_window: float = 0.5
    dense_radii: tuple[int, ...] = (0, 1, 2)
    w_dense: float = 0.6
    w_speaker: float = 0.1
    w_date: float = 0.5
    date_tolerance_days: int = 7
    # Fields added since 0.1.0 follow its nine, so positional arguments mean what they did.
    evidence_ratio: float = EVIDENCE_RATIO
    evidence_min: int = EVIDENCE_MIN
    date_before_days: int = 2
    dialogue_ratio: float = 3.0
    repeat_share: float = 0.5
    w_asks: float = 0.2
    w_segment: float = 0.1
    w_dense_outside: float | None = 0.3
