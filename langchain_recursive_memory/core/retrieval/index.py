"""A session's turn index: its turns in log order as the ranker sees them, kept current.

Both engines rank a session's turns (:mod:`.ranking`) and score them densely against
windows of neighbouring turns (:mod:`.windows`). A :class:`TurnIndex` holds what that
needs for one session and follows the session as it grows: new turns are appended, a
turn that arrives out of order (another process's turn read after this process's own
later ones were put in) cuts the index back to where it belongs and the cut tail is
appended again. A change costs the turns it touches, never
the whole session, so a read at 10,000 turns costs what it does at 1,000 (the cost of a
turn must not grow with what the memory already holds).

What it holds:

* the turns, oldest first (``(seq, id)`` order), and their segments (a segment is a
  conversation session: windows never cross one; :class:`~..events.Segmenter`);
* the turns with text, as a :class:`~.ranking.RankedIndex` (BM25 of each turn and each
  window, speakers, days): turns without text are never ranked;
* the window texts and, per vector space, the unit vectors of the windows
  (:class:`~.windows.WindowVectors`).

The index belongs to the store's cache (:class:`~..cache.StoreCaches`); its lock
serialises the changes and reads of its users in a process.

Example:
    >>> from langchain_recursive_memory.core import Turn
    >>> from langchain_recursive_memory.core.storage import StoredTurn
    >>> from langchain_recursive_memory.core.retrieval.index import TurnIndex
    >>> index = TurnIndex("skey")
    >>> index.merge([StoredTurn(Turn(role="user", text="hi", id="a", created_at=0.0), 2, 1, "e")])
    1
    >>> index.merge([StoredTurn(Turn(role="user", text="yo", id="b", created_at=0.0), 1, 1, "e")])
    1
    >>> [t.id for t in index.turns]
    ['b', 'a']
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Iterable, Sequence

import numpy as np

from ..dates import utc_date
from ..events import DEFAULT_MAX_EVENT_TURNS, DEFAULT_SESSION_GAP, Segmenter
from ..storage import StoredTurn
from .ranking import Column, RankedIndex, RankedTurn, RankerParams
from .windows import WindowVectors

__all__ = ["STORED_TURN_BYTES", "TurnIndex"]

STORED_TURN_BYTES = 600
"""About what a turn held by an index costs in memory beside its text (for the cache)."""


class TurnIndex:
    """One session's turns, ranked and windowed, kept as they arrive (see the module doc).

    Args:
        skey: The session's key (window vector record ids embed it).
        params: The ranking's weights and window radii.
        session_gap: Seconds of silence that start a new segment.
        max_event_turns: Longest segment.

    Attributes:
        skey: The session's key.
        params: The ranking's weights and window radii.
        session_gap: Seconds of silence that start a new segment.
        max_event_turns: Longest segment.
        turns: Every turn, oldest first.
        segments: The segment of each turn.
        ranked_turns: The turns with text, oldest first (the ranker's positions).
        ranked: Their :class:`~.ranking.RankedIndex`.
        windows: Their window texts and vectors.
        lock: Held by whoever changes or reads the index.
        version: Grows at every change (a reader's cached results key on it).
    """

    def __init__(
        self,
        skey: str,
        params: RankerParams | None = None,
        *,
        session_gap: float = DEFAULT_SESSION_GAP,
        max_event_turns: int = DEFAULT_MAX_EVENT_TURNS,
    ) -> None:
        self.skey = skey
        self.params = params or RankerParams()
        self.session_gap = session_gap
        self.max_event_turns = max_event_turns
        self.lock = threading.RLock()
        self.version = 0
        self._start = Segmenter(session_gap, max_event_turns)
        self.turns: list[StoredTurn] = []
        self.segments: list[str] = []
        self._after: list[Segmenter] = []  # the segmenter after each turn
        self._keys: list[tuple[int, str]] = []
        self._seq: dict[str, int] = {}
        self._text_bytes = 0
        self.ranked_turns: list[StoredTurn] = []
        self._ranked_before = Column(np.int32)  # turns with text before each turn
        self.ranked = RankedIndex(self.params)
        self.windows = WindowVectors(skey, self.params.dense_radii, self.lock)

    def __len__(self) -> int:
        return len(self.turns)

    def __contains__(self, turn_id: object) -> bool:
        return turn_id in self._seq

    def seq_of(self, turn_id: str) -> int | None:
        """The order key the index holds for a turn (None: not in it)."""
        return self._seq.get(turn_id)

    @property
    def last_seq(self) -> int:
        """The highest order key held (0 when empty)."""
        return self._keys[-1][0] if self._keys else 0

    def nbytes(self) -> int:
        """About how many bytes the index holds (for the cache's byte bound)."""
        return (
            self._text_bytes
            + len(self.turns) * STORED_TURN_BYTES
            + self.ranked.nbytes()
            + self.windows.nbytes()
        )

    # -- changes ----------------------------------------------------------------------------

    def merge(self, turns: Iterable[StoredTurn]) -> int:
        """Put turns in their place (``(seq, id)`` order); return how many were new or moved.

        A turn already held with the same order key is skipped; one held with another
        (given another order key) is moved. Only the tail from the first change is redone.
        """
        fresh = {t.id: t for t in turns if self._seq.get(t.id) != t.seq}
        if not fresh:
            return 0
        cut = min(bisect_left(self._keys, (t.seq, t.id)) for t in fresh.values())
        for tid in fresh:
            old = self._seq.get(tid)
            if old is not None:
                cut = min(cut, bisect_left(self._keys, (old, tid)))
        tail = [t for t in self.turns[cut:] if t.id not in fresh]
        self.truncate(cut)
        self._extend(sorted([*tail, *fresh.values()], key=lambda t: (t.seq, t.id)))
        return len(fresh)

    def truncate(self, size: int) -> None:
        """Drop the turns from position ``size`` on."""
        if size >= len(self.turns):
            return
        for t in self.turns[size:]:
            del self._seq[t.id]
            self._text_bytes -= len(t.turn.text)
        kept = int(self._ranked_before.values[size])
        del self.turns[size:], self.segments[size:], self._after[size:], self._keys[size:]
        self._ranked_before.truncate(size)
        del self.ranked_turns[kept:]
        self.ranked.truncate(kept)
        self.windows.follow(self.ranked.turns, kept)
        self.version += 1

    def reset(self) -> None:
        """Drop every turn (after the session was cleared)."""
        self.truncate(0)

    def _extend(self, turns: Sequence[StoredTurn]) -> None:
        if not turns:
            return
        segmenter = self._after[-1] if self._after else self._start
        first_ranked = len(self.ranked_turns)
        ranked: list[RankedTurn] = []
        before = []
        for t in turns:
            label = t.turn.extra.get("session")
            segment, segmenter = segmenter.push(
                str(label) if label is not None else None, t.turn.created_at
            )
            before.append(first_ranked + len(ranked))
            self.turns.append(t)
            self.segments.append(segment)
            self._after.append(segmenter)
            self._keys.append((t.seq, t.id))
            self._seq[t.id] = t.seq
            self._text_bytes += len(t.turn.text)
            if t.turn.text.strip():
                self.ranked_turns.append(t)
                ranked.append(
                    RankedTurn(
                        t.id,
                        t.turn.name or t.turn.role,
                        t.turn.text,
                        segment,
                        utc_date(t.turn.created_at),
                    )
                )
        self._ranked_before.extend(before)
        self.ranked.extend(ranked)
        self.windows.follow(self.ranked.turns, first_ranked)
        self.version += 1

    # -- reads ------------------------------------------------------------------------------

    def position(self, turn_id: str) -> int | None:
        """The position of a turn in :attr:`turns` (None: not held)."""
        seq = self._seq.get(turn_id)
        return None if seq is None else bisect_left(self._keys, (seq, turn_id))

    def ranked_position(self, turn_id: str) -> int | None:
        """The ranker's position of a turn (None: not held, or without text)."""
        seq = self._seq.get(turn_id)
        if seq is None:
            return None
        i = bisect_left(self._keys, (seq, turn_id))
        j = int(self._ranked_before.values[i])
        ok = j < len(self.ranked_turns) and self.ranked_turns[j].id == turn_id
        return j if ok else None
