"""Window vectors: each turn embedded together with its neighbours, for the dense ranking.

The dense part of :class:`~.ranking.TurnRanker` compares the question with *windows* of
neighbouring turns (``±1`` and ``±2`` turns, never across a segment) in a dialogue segment,
where the evidence often sits next to the turn that shares the question's words, and with
the turn alone (radius 0) outside one. Both
engines use this one code path: the recursive memory embeds the windows of the turns a
fold archives (when it archives them, not at recall), HiGMem those of the turns it
indexes; a read embeds only what is missing or stale (a window whose text changed, a
session of 0.1.0).

A window's vector record is ``window_vector_id(session, radius, turn id)`` of kind
``window_kind(radius)``, with the hash of the window's text: a window is re-embedded when
its text changes (a neighbour arrived after it was embedded).

:class:`WindowVectors` belongs to a session's :class:`~.index.TurnIndex` and follows it:
windows are recomputed only around the turns that changed, and the unit vectors of the
windows are kept in one matrix per radius, so scoring a question is one matrix product.

Example:
    >>> from langchain_recursive_memory.core.retrieval.ranking import RankedTurn
    >>> from langchain_recursive_memory.core.retrieval.windows import WindowVectors
    >>> turns = [RankedTurn("a", "Ada", "hi", "s1"), RankedTurn("b", "Bob", "hello", "s1")]
    >>> windows = WindowVectors("skey", (1,))
    >>> windows.follow(turns, 0)
    >>> windows.texts[1]
    ['Ada: hi Bob: hello', 'Ada: hi Bob: hello']
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from ..runtime.effects import Steps, embed_documents, store_call
from ..storage import MemoryStore, VectorRecord, text_hash
from ..storage.keys import window_kind, window_vector_id
from .dense import Candidate, unit
from .ranking import COLUMN_START, Column, RankedTurn, window_texts

__all__ = ["WINDOW_BYTES", "WindowVectors"]

WINDOW_BYTES = 110
"""About what a window costs in memory (its text's hash and flag; its vector apart)."""


class _Radius:
    """The windows of one radius: their texts' hashes and unit vectors, by position."""

    def __init__(self) -> None:
        self.hashes: list[str] = []
        self.have = Column(np.bool_)
        self.matrix: np.ndarray | None = None

    def set_rows(self, rows: Sequence[int], vectors: Sequence[np.ndarray]) -> None:
        dim = len(vectors[0])
        if self.matrix is None or self.matrix.shape[1] != dim:
            self.matrix = np.zeros((max(COLUMN_START, len(self.hashes)), dim), np.float32)
            self.have.values[:] = False
        if len(self.matrix) < len(self.hashes):
            grown = np.zeros((max(len(self.hashes), 2 * len(self.matrix)), dim), np.float32)
            grown[: len(self.matrix)] = self.matrix
            self.matrix = grown
        for row, vec in zip(rows, vectors, strict=True):
            self.matrix[row] = vec
            self.have.values[row] = True


class WindowVectors:
    """The windows of a session's ranked turns at each radius, and their vectors.

    Args:
        skey: The session's key (record ids embed it).
        radii: The window radii (``RankerParams.dense_radii``).
        lock: The lock of the index it belongs to (changes and reads hold it).
    """

    def __init__(
        self, skey: str, radii: Sequence[int], lock: threading.RLock | None = None
    ) -> None:
        self.skey = skey
        self.lock = lock or threading.RLock()
        self.radii = tuple(radii)
        self._space: str | None = None
        self._by_radius = {r: _Radius() for r in self.radii}
        self._turns: Sequence[RankedTurn] = []
        self._dirty = 0  # windows from this position on are recomputed when next needed

    @property
    def texts(self) -> dict[int, list[str]]:
        """The window texts of each radius, by position (made again: only hashes are kept)."""
        return {r: window_texts(self._turns, r) for r in self.radii}

    def text(self, radius: int, position: int) -> str:
        """The text of one window."""
        return window_texts(self._turns, radius, position, position + 1)[0]

    def candidate(self, radius: int, position: int) -> Candidate:
        """The vector record of one window (its id, kind, turn and text hash)."""
        turn_id = self._turns[position].id
        return Candidate(
            window_vector_id(self.skey, radius, turn_id),
            window_kind(radius),
            turn_id,
            self._by_radius[radius].hashes[position],
        )

    def nbytes(self) -> int:
        """About how many bytes the windows and their vectors hold."""
        out = 0
        for w in self._by_radius.values():
            out += len(w.hashes) * WINDOW_BYTES
            out += w.matrix.nbytes if w.matrix is not None else 0
        return out

    def follow(self, turns: Sequence[RankedTurn], changed: int) -> None:
        """Note that the windows that can see a turn from position ``changed`` on changed.

        They are recomputed when next needed (a session ranked without an embedder never
        needs them); a window whose text did not change keeps its vector.
        """
        self._turns = turns
        self._dirty = min(self._dirty, changed)

    def _refresh(self) -> None:
        """Recompute the windows :meth:`follow` marked (call it holding the lock)."""
        if self._dirty >= len(self._turns) and all(
            len(w.hashes) == len(self._turns) for w in self._by_radius.values()
        ):
            self._dirty = len(self._turns)
            return
        turns, changed = self._turns, self._dirty
        for r, w in self._by_radius.items():
            first = max(0, min(changed, len(w.hashes)) - r)
            old = w.hashes[first:]
            old_have = w.have.values[first:].copy()
            hashes = [text_hash(text) for text in window_texts(turns, r, first)]
            del w.hashes[first:]
            w.have.truncate(first)
            w.hashes.extend(hashes)
            w.have.extend(
                [j < len(old) and old[j] == h and bool(old_have[j]) for j, h in enumerate(hashes)]
            )
        self._dirty = len(turns)

    def settled(self) -> list[int]:
        """Positions whose windows can no longer change as turns are added.

        A window grows only while its turn has fewer than ``radius`` later turns in its
        segment and the segment may still grow: a later turn of another segment, or
        ``radius`` later turns of the same one, settle it.
        """
        reach = max(self.radii, default=0)
        turns = self._turns
        n = len(turns)
        out = list(range(max(0, n - reach)))
        for i in range(max(0, n - reach), n):
            later = turns[i + 1 : i + 1 + reach]
            if len(later) == reach or any(t.event != turns[i].event for t in later):
                out.append(i)
        return out

    def _use_space(self, space: str) -> None:
        if space != self._space:
            self._space = space
            for w in self._by_radius.values():
                w.have.values[:] = False
                w.matrix = None

    def _missing(self, positions: Sequence[int] | np.ndarray) -> list[tuple[int, int, Candidate]]:
        self._refresh()
        wanted = np.asarray(positions, np.int64)
        out = []
        for r, w in self._by_radius.items():
            for i in wanted[~w.have.values[wanted]].tolist():
                out.append((r, i, self.candidate(r, i)))
        return out

    def embed_steps(
        self,
        source: MemoryStore,
        space: str,
        scope: tuple[str, str],
        positions: Sequence[int] | np.ndarray,
    ) -> Steps[int]:
        """Make the windows at ``positions`` have a current vector (read, else embed).

        Vectors already stored (by a fold, HiGMem's index, another process) are read by
        id; windows with none, or with one of another text, are embedded and written.
        The lock is held only between store calls, never across one.

        Returns:
            How many window vectors were written.
        """
        with self.lock:
            self._use_space(space)
            missing = self._missing(positions)
        if not missing:
            return 0
        namespace, session_id = scope
        ids = [c.record_id for _, _, c in missing]
        records = yield from store_call(
            source.session(namespace, session_id).vectors.by_ids, space, ids
        )
        stored = {rec.id: rec for rec in records}
        still: list[tuple[int, int, Candidate]] = []
        found: list[tuple[int, int, Candidate, np.ndarray]] = []
        for r, i, cand in missing:
            rec = stored.get(cand.record_id)
            vec = unit(rec.vector) if rec is not None and rec.text_hash == cand.text_hash else None
            if vec is None:
                still.append((r, i, cand))
            else:
                found.append((r, i, cand, vec))
        self._apply(space, found)
        if not still:
            return 0
        with self.lock:  # windows that changed meanwhile are left for the next read
            still = [(r, i, c) for r, i, c in still if self._current(r, i, c)]
            texts = [self.text(r, i) for r, i, _ in still]
        if not still:
            return 0
        vectors = yield from embed_documents(texts)
        new = [
            VectorRecord(c.record_id, c.kind, c.ref, v, c.text_hash)
            for (_, _, c), v in zip(still, vectors, strict=True)
        ]
        yield from store_call(source.session(namespace, session_id).vectors.put, space, new)
        units = [(r, i, c, unit(v)) for (r, i, c), v in zip(still, vectors, strict=True)]
        self._apply(space, [(r, i, c, v) for r, i, c, v in units if v is not None])
        return len(new)

    def _apply(self, space: str, found: Sequence[tuple[int, int, Candidate, np.ndarray]]) -> None:
        """Keep vectors read or embedded, where the window is still the one they are of."""
        with self.lock:
            if space != self._space:
                return
            for r, i, cand, vec in found:
                if self._current(r, i, cand):
                    self._by_radius[r].set_rows([i], [vec])

    def _current(self, radius: int, position: int, cand: Candidate) -> bool:
        """Whether the window at ``position`` is still the one ``cand`` names."""
        self._refresh()
        return position < len(self._turns) and self.candidate(radius, position) == cand

    def similarity(self, query: np.ndarray, wanted: np.ndarray) -> dict[int, np.ndarray]:
        """Cosine similarity of a unit query with each window, per radius.

        NaN where a window has no current vector, or its position is not ``wanted`` (a
        boolean mask over the positions).
        """
        self._refresh()
        n = len(self._turns)
        out = {}
        for r, w in self._by_radius.items():
            sims = np.full(n, np.nan, np.float32)
            if w.matrix is not None and w.matrix.shape[1] == query.shape[0] and n:
                m = min(n, len(w.matrix))  # rows past the matrix have no vector yet
                rows = (w.have.values & wanted)[:m]
                sims[:m] = np.where(rows, w.matrix[:m] @ query, np.nan)
            out[r] = sims
        return out
