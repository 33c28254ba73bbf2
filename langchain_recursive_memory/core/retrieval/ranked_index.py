"""One session's turns as the ranker scores them, kept as turns arrive. Pure logic.

:class:`RankedIndex` holds what :class:`~.ranking.TurnRanker` reads of a session: the
BM25 index of its turns, the lengths of each turn's window, and per turn its segment,
speaker, day and whether it only asks (:func:`~.shape.asks`), in growable columns
(:class:`Column`), so a new turn costs the turns it touches, never the whole session.

Example:
    >>> from langchain_recursive_memory.core.retrieval.params import RankedTurn, RankerParams
    >>> index = RankedIndex(RankerParams(), [RankedTurn("1", "Ada", "Where to?", "s1")])
    >>> len(index), index.asking.values.tolist()
    (1, [True])
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import numpy as np

from .lexical import LexicalIndex
from .params import RankedTurn, RankerParams
from .shape import asks, dialogue_mask

__all__ = ["COLUMN_START", "RANKED_TURN_BYTES", "Column", "RankedIndex", "window_texts"]


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
        self.asking = Column(np.bool_)  # each turn: whether it only asks
        self.version = 0
        """Changes with every extend or truncate (what a ranker's memo is keyed on)."""
        self._dialogue: tuple[tuple[int, float], np.ndarray] | None = None
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
        self.asking.extend([asks(t.text) for t in turns])
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
        self.asking.truncate(size)
        self.segments.truncate(size)
        self._rewindow(size)

    def dialogue(self, ratio: float) -> np.ndarray:
        """For each turn, whether its segment is a dialogue (:func:`~.shape.dialogue_mask`).

        Kept until the turns change.
        """
        key = (self.version, ratio)
        if self._dialogue is None or self._dialogue[0] != key:
            mask = dialogue_mask(
                self.segments.values, self.speakers.values, self.turn_lex.lengths, ratio
            )
            self._dialogue = (key, mask)
        return self._dialogue[1]

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
