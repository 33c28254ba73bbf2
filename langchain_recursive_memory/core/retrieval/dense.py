"""Exact cosine search over a session's vectors, read by id and cached per process.

Recall scores a session's records exactly (a dot product with every vector) instead of
asking Chroma for a filtered kNN: the filtered HNSW search costs ~80 ms in a
100,000-vector collection whatever the session's size, a read by id does not, and exact
search cannot miss (``benchmarks/overhead.py``). The unit vectors of facts and events are
cached per session in the store's caches (:attr:`~..cache.StoreCaches.vectors`, bounded
by bytes; window vectors live in the session's turn index); a cached vector is used only
while its stored text hash matches the current text (a corrected fact, an id reused after
``clear()``), and a vector whose stored hash differs is used but not cached, so the next
search reads it again.

Example:
    >>> import numpy as np
    >>> from langchain_recursive_memory.core.retrieval.dense import cosine_top
    >>> cosine_top(np.array([1.0, 0.0]), [np.array([0.0, 1.0]), np.array([1.0, 0.0])], 1)
    [(1, 1.0)]
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..cache import session_cache_key
from ..runtime.effects import Steps, store_call
from ..storage import MemoryStore

__all__ = [
    "Candidate",
    "cosine_top",
    "nearest_steps",
    "unit",
    "vectors_steps",
]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A record to score: its vector record id, what it is, and its current text's hash."""

    record_id: str
    kind: str
    ref: str
    text_hash: str


@dataclass
class _SessionVectors:
    """Unit vectors of a session's records: record id -> (text hash, vector)."""

    vectors: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)
    nbytes: int = 0


_LOCK = threading.Lock()


def unit(vector: Sequence[float] | np.ndarray) -> np.ndarray | None:
    """``vector`` scaled to length 1 (float32), or None for a zero or non-finite vector."""
    arr = np.asarray(vector, np.float32)
    norm = float(np.linalg.norm(arr))
    if norm == 0.0 or not np.isfinite(norm):
        return None
    return arr / norm


def cosine_top(query: np.ndarray, vectors: Sequence[np.ndarray], n: int) -> list[tuple[int, float]]:
    """The ``n`` best ``(position, similarity)`` of unit ``vectors`` against unit ``query``."""
    if not vectors:
        return []
    similarity = np.stack(list(vectors)) @ query
    best = np.argsort(-similarity, kind="stable")[:n]
    return [(int(i), float(similarity[i])) for i in best]


def vectors_steps(
    source: MemoryStore, space: str, scope: tuple[str, str], wanted: Sequence[Candidate]
) -> Steps[dict[str, tuple[np.ndarray, bool]]]:
    """The unit vectors of the ``wanted`` records of a session, read by id and cached.

    Args:
        source: The store.
        space: The embedder's vector collection.
        scope: ``(namespace, session_id)``.
        wanted: The records (those without a stored vector are left out).

    Returns:
        Record id -> ``(unit vector, current)``; ``current`` is whether the vector was
        embedded from the candidate's current text (its stored hash matches).
    """
    namespace, session_id = scope
    key = (*session_cache_key(namespace, session_id), "vectors", space)
    entry = source.caches.sessions.get(key) or _SessionVectors()
    found: dict[str, tuple[np.ndarray, bool]] = {}
    missing = []
    for cand in wanted:
        hit = entry.vectors.get(cand.record_id)
        if hit is not None and hit[0] == cand.text_hash:
            found[cand.record_id] = (hit[1], True)
        else:
            missing.append(cand.record_id)
    if not missing:
        return found
    records = yield from store_call(
        source.session(namespace, session_id).vectors.by_ids, space, missing
    )
    digests = {c.record_id: c.text_hash for c in wanted}
    fresh = []
    for rec in records:
        vec = unit(rec.vector)
        if vec is None:
            continue
        current = rec.text_hash == digests[rec.id]
        found[rec.id] = (vec, current)
        if current:
            fresh.append((rec.id, rec.text_hash, vec))
    if fresh:
        _remember(source, key, entry, fresh)
    return found


def nearest_steps(
    source: MemoryStore,
    space: str,
    scope: tuple[str, str],
    vector: Sequence[float],
    wanted: Sequence[Candidate],
    *,
    n: int,
) -> Steps[list[tuple[Candidate, float]]]:
    """Exact cosine search of ``vector`` over the ``wanted`` records of a session.

    Args:
        source: The store.
        space: The embedder's vector collection.
        scope: ``(namespace, session_id)``.
        vector: The query's embedding.
        wanted: The records to score (records without a stored vector are left out).
        n: Most results.

    Returns:
        Up to ``n`` ``(candidate, similarity)``, most similar first.
    """
    query = unit(vector)
    if query is None or not wanted:
        return []
    found = yield from vectors_steps(source, space, scope, wanted)
    order = [
        c for c in wanted if c.record_id in found and found[c.record_id][0].shape == query.shape
    ]
    best = cosine_top(query, [found[c.record_id][0] for c in order], n)
    return [(order[i], similarity) for i, similarity in best]


def _remember(
    source: MemoryStore,
    key: tuple[str, ...],
    entry: _SessionVectors,
    items: Sequence[tuple[str, str, np.ndarray]],
) -> None:
    """Add ``(record id, text hash, unit vector)`` items to a session's cached vectors."""
    with _LOCK:
        for record_id, digest, vec in items:
            old = entry.vectors.get(record_id)
            if old is not None:
                entry.nbytes -= old[1].nbytes
            entry.vectors[record_id] = (digest, vec)
            entry.nbytes += vec.nbytes
        source.caches.sessions.put(key, entry, entry.nbytes)
