"""The window: which unfolded messages the model is shown, and how they are cut to fit.

Rules, in order (see :class:`Window`):

1. Whole units (a tool-calling message with all its results) are shown, never split; a
   tool result whose call is not shown is left out; an invalid tool call left without a
   result (not in the newest unit, which may still await it) gets a placeholder result.
2. The window is the newest units that fit the budget, when that includes the newest user
   message (the current question).
3. Otherwise the current question and the newest unit (what the model has not seen yet)
   are shown with the newest units between them that still fit; when even those two do
   not fit, the largest tool results are cut to fit, then every message with text, each
   marked as cut (``[... N more tokens not shown]``; the log keeps them whole). Calls and
   result ids are never cut. When not even that fits, the question alone is shown, cut.

One path for every oversized message: a 60,000-token tool result, parallel results that
overflow together, or a pasted document as the question.

Example:
    >>> from langchain_recursive_memory.core import TokenCounter, Turn
    >>> from langchain_recursive_memory.core.storage import StoredTurn
    >>> from langchain_recursive_memory.core.recursive.window import Window
    >>> counter = TokenCounter()
    >>> turns = [Turn(role="user", text="Summarise this: " + "word " * 500)]
    >>> stored = [StoredTurn(t, 0, counter.count_turn(t), "o200k_base") for t in turns]
    >>> shown, costs = Window(counter).fit(stored, 100)
    >>> sum(costs) <= 100, shown[0].turn.text.endswith("more tokens not shown]")
    (True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ..storage import StoredTurn
from ..tokenizer import TokenCounter
from ..turn import Turn
from .units import drop_orphan_results, placeholder_results, suffix_start, window_units

__all__ = ["CUT_MARKER_TOKENS", "MIN_CUT_TOKENS", "Window"]

CUT_MARKER_TOKENS = 24
"""Tokens kept free for the ``[... N more tokens not shown]`` marker of a cut message."""
MIN_CUT_TOKENS = 16
"""A message is shown cut only if at least this many tokens of its text fit."""

Units = list[list[StoredTurn]]
Costs = list[list[int]]


class Window:
    """Chooses and cuts the window (see the module doc).

    Args:
        counter: Counts tokens exactly.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter

    def fit(
        self, turns: Sequence[StoredTurn], available: int
    ) -> tuple[list[StoredTurn], list[int]]:
        """The messages to show of the unfolded ``turns`` within ``available`` tokens.

        Returns:
            The messages (placeholders and cut messages included, oldest first) and their
            costs.
        """
        units, costs = self._units(turns)
        if not units:
            return [], []
        start = suffix_start(costs, available)
        question = next(
            (i for i in range(len(units) - 1, -1, -1) if units[i][0].turn.role == "user"), None
        )
        if start < len(units) and (question is None or start <= question):
            return self._flat(units[start:], costs[start:])
        newest = len(units) - 1
        required = sorted({newest} if question is None else {question, newest})
        rest = available - sum(sum(costs[i]) for i in required)
        if rest >= 0:  # the question, the newest unit, and the newest units between that fit
            middle = list(range(required[0] + 1, required[-1]))
            chosen = middle[suffix_start([costs[i] for i in middle], rest) :]
            order = [required[0], *chosen, *required[1:]]
            return self._flat([units[i] for i in order], [costs[i] for i in order])
        flat, flat_costs = self._flat([units[i] for i in required], [costs[i] for i in required])
        cut = self._shrink(flat, flat_costs, available)
        if cut is None and question is not None and len(required) > 1:
            alone, alone_costs = self._flat([units[question]], [costs[question]])
            cut = self._shrink(alone, alone_costs, available)
        return cut or ([], [])

    def _units(self, turns: Sequence[StoredTurn]) -> tuple[Units, Costs]:
        """The units of ``turns``, with placeholder results for unanswered invalid calls."""
        units, costs = window_units(turns, self.counter)
        for i in range(len(units) - 1):  # not the newest: it may still await its results
            stand_ins = [self._stand_in(t) for t in placeholder_results(units[i])]
            if stand_ins:
                units[i] = [*units[i], *stand_ins]
                costs[i] = [*costs[i], *(s.tokens for s in stand_ins)]
        return units, costs

    def _stand_in(self, turn: Turn) -> StoredTurn:
        """A placeholder turn as a stored one (order key -1: it is not in the log)."""
        return StoredTurn(turn, -1, self.counter.count_turn(turn), self.counter.encoding_name)

    @staticmethod
    def _flat(units: Units, costs: Costs) -> tuple[list[StoredTurn], list[int]]:
        """The units' messages in order, orphan results left out, with their costs."""
        cost_of = {
            id(s): c
            for unit, cs in zip(units, costs, strict=True)
            for s, c in zip(unit, cs, strict=True)
        }
        window = drop_orphan_results([s for unit in units for s in unit])
        return window, [cost_of[id(s)] for s in window]

    # -- cutting ----------------------------------------------------------------------------

    def _shrink(
        self, turns: list[StoredTurn], costs: list[int], available: int
    ) -> tuple[list[StoredTurn], list[int]] | None:
        """``turns`` with their largest texts cut so that they fit ``available``, or None.

        Tool results are cut first (largest first, to a common cap); when that is not
        enough, every message with text is.
        """
        phases: list[Callable[[StoredTurn], bool]] = [
            lambda s: s.turn.role == "tool" and bool(s.turn.text),
            lambda s: bool(s.turn.text),
        ]
        for cuttable in phases:
            targets = self._targets(turns, costs, available, cuttable)
            if targets is None:
                continue
            shown = self._cut_all(turns, costs, targets)
            if shown is not None:
                return shown
        return None

    def _cut_all(
        self, turns: list[StoredTurn], costs: list[int], targets: list[int]
    ) -> tuple[list[StoredTurn], list[int]] | None:
        """Each message cut to its target cost (those within it unchanged), or None."""
        out: list[StoredTurn] = []
        out_costs: list[int] = []
        for stored, cost, target in zip(turns, costs, targets, strict=True):
            if cost <= target:
                out.append(stored)
                out_costs.append(cost)
                continue
            cut = self.cut_to_fit(stored, target)
            if cut is None:
                return None
            out.append(cut)
            out_costs.append(cut.tokens)
        return out, out_costs

    def _targets(
        self,
        turns: list[StoredTurn],
        costs: list[int],
        available: int,
        cuttable: Callable[[StoredTurn], bool],
    ) -> list[int] | None:
        """The cost each message may keep: the cuttable ones down to a common cap."""
        floors = [self._floor(s) if cuttable(s) else c for s, c in zip(turns, costs, strict=True)]

        def total(cap: int) -> int:
            return sum(min(c, max(cap, f)) for c, f in zip(costs, floors, strict=True))

        if total(0) > available:
            return None
        lo, hi = 0, max(costs)
        while lo < hi:  # the largest cap that fits
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if total(mid) <= available else (lo, mid - 1)
        return [min(c, max(lo, f)) for c, f in zip(costs, floors, strict=True)]

    def _floor(self, stored: StoredTurn) -> int:
        """The fewest tokens a cut of ``stored`` can cost."""
        bare = self.counter.count_turn(replace(stored.turn, text="", blocks=None))
        return bare + CUT_MARKER_TOKENS + MIN_CUT_TOKENS

    def cut_to_fit(self, stored: StoredTurn, available: int) -> StoredTurn | None:
        """A copy of ``stored`` whose text is cut to fit ``available`` tokens, or None."""
        turn = stored.turn
        overhead = self.counter.count_turn(replace(turn, text="", blocks=None))
        room = available - overhead - CUT_MARKER_TOKENS
        if room < MIN_CUT_TOKENS:
            return None
        total = self.counter.count_text(turn.text)
        head = self.counter.truncate(turn.text, room)
        hidden = total - self.counter.count_text(head)
        text = f"{head} [... {hidden} more tokens not shown]"
        cut = replace(turn, text=text, blocks=None, extra={**turn.extra, "lrm_cut": hidden})
        cost = self.counter.count_turn(cut)
        if cost > available:
            return None
        return StoredTurn(cut, stored.seq, cost, self.counter.encoding_name, stored.folded_in)
