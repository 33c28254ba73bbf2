"""Window vectors: each turn embedded together with its neighbours, for the dense ranking.

The dense part of :class:`~.ranking.TurnRanker` compares the question with *windows* of
neighbouring turns (``±1`` and ``±2`` turns, never across a segment), not with single
turns: the evidence often sits next to the turn that shares the question's words. Both
engines use this one code path: the recursive memory embeds the windows of the turns a
fold archives (when it archives them, not at recall), HiGMem those of the turns it
indexes; recall reads them by id (cached per process, :mod:`.dense`) and embeds only
what is missing or stale (a window whose text changed, a session of 0.1.0).

A window's vector record is ``window_vector_id(session, radius, turn id)`` of kind
``window_kind(radius)``, with the hash of the window's text: a window is re-embedded when
its text changes (a neighbour arrived after it was embedded).

Example:
    >>> from langchain_recursive_memory.core.retrieval.ranking import RankedTurn
    >>> from langchain_recursive_memory.core.retrieval.windows import WindowSet
    >>> turns = [RankedTurn("a", "Ada", "hi", "s1"), RankedTurn("b", "Bob", "hello", "s1")]
    >>> WindowSet("skey", turns, (1,)).texts[1]
    ['Ada: hi Bob: hello', 'Ada: hi Bob: hello']
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..runtime.effects import Steps, embed_documents, store_call
from ..storage import MemoryStore, VectorRecord, text_hash
from ..storage.keys import window_kind, window_vector_id
from .dense import Candidate, remember_vectors, unit, vectors_steps
from .ranking import RankedTurn, window_texts

__all__ = ["WindowSet"]


class WindowSet:
    """The windows of a session's ranked turns at each radius, and their vectors.

    Args:
        skey: The session's key (record ids embed it).
        ranked: The session's turns as ranked, oldest first.
        radii: The window radii (``RankerParams.dense_radii``).
    """

    def __init__(self, skey: str, ranked: Sequence[RankedTurn], radii: Sequence[int]) -> None:
        self.ranked = list(ranked)
        self.radii = tuple(radii)
        self.texts = {r: window_texts(self.ranked, r) for r in self.radii}
        self.candidates = {
            r: [
                Candidate(window_vector_id(skey, r, t.id), window_kind(r), t.id, text_hash(text))
                for t, text in zip(self.ranked, self.texts[r], strict=True)
            ]
            for r in self.radii
        }
        # (radius, positions) -> the positions with a vector and their stacked unit vectors,
        # kept once every vector read was current.
        self._stacked: dict[tuple[int, tuple[int, ...]], tuple[list[int], np.ndarray]] = {}

    def settled(self) -> list[int]:
        """Positions whose windows can no longer change as turns are added.

        A window grows only while its turn has fewer than ``radius`` later turns in its
        segment and the segment may still grow: a later turn of another segment, or
        ``radius`` later turns of the same one, settle it.
        """
        reach = max(self.radii, default=0)
        out = []
        for i, turn in enumerate(self.ranked):
            later = self.ranked[i + 1 : i + 1 + reach]
            if len(later) == reach or any(t.event != turn.event for t in later):
                out.append(i)
        return out

    def _wanted(self, positions: Sequence[int]) -> list[tuple[int, int, Candidate]]:
        return [
            (r, i, self.candidates[r][i])
            for r in self.radii
            for i in positions
            if self.ranked[i].text.strip()
        ]

    def embed_steps(
        self, source: MemoryStore, space: str, scope: tuple[str, str], positions: Sequence[int]
    ) -> Steps[int]:
        """Embed the windows of the turns at ``positions`` that have no current vector.

        Returns:
            How many window vectors were written.
        """
        wanted = self._wanted(positions)
        have = yield from vectors_steps(source, space, scope, [c for _, _, c in wanted])
        missing = [(r, i, c) for r, i, c in wanted if not have.get(c.record_id, (None, False))[1]]
        if not missing:
            return 0
        vectors = yield from embed_documents([self.texts[r][i] for r, i, _ in missing])
        records = [
            VectorRecord(c.record_id, c.kind, c.ref, v, c.text_hash)
            for (_, _, c), v in zip(missing, vectors, strict=True)
        ]
        namespace, session_id = scope
        yield from store_call(source.add_vectors, space, namespace, session_id, records)
        remember_vectors(source, space, scope, [(r.id, r.text_hash, r.vector) for r in records])
        self._stacked.clear()
        return len(records)

    def similarity_steps(
        self,
        source: MemoryStore,
        space: str,
        scope: tuple[str, str],
        query_vector: Sequence[float],
        positions: Sequence[int],
    ) -> Steps[dict[int, np.ndarray]]:
        """Cosine similarity of the query with each window, per radius (NaN where none).

        Only the turns at ``positions`` are scored (the others are NaN); windows without a
        vector are embedded first (see :meth:`embed_steps`).
        """
        n = len(self.ranked)
        query = unit(query_vector)
        out = {r: np.full(n, np.nan, np.float32) for r in self.radii}
        if query is None or not positions:
            return out
        key = tuple(positions)
        if all((r, key) in self._stacked for r in self.radii):
            for r in self.radii:
                rows, matrix = self._stacked[(r, key)]
                if rows and matrix.shape[1] == query.shape[0]:
                    out[r][rows] = matrix @ query
            return out
        yield from self.embed_steps(source, space, scope, positions)
        wanted = self._wanted(positions)
        have = yield from vectors_steps(source, space, scope, [c for _, _, c in wanted])
        current = all(have.get(c.record_id, (None, False))[1] for _, _, c in wanted)
        for r in self.radii:
            found = [
                (i, have[c.record_id][0])
                for rr, i, c in wanted
                if rr == r and c.record_id in have and have[c.record_id][0].shape == query.shape
            ]
            rows = [i for i, _ in found]
            matrix = (
                np.stack([vec for _, vec in found])
                if found
                else np.zeros((0, query.shape[0]), np.float32)
            )
            if rows:
                out[r][rows] = matrix @ query
            if current:
                self._stacked[(r, key)] = (rows, matrix)
        return out
