"""Embedders from any framework, resolved to the core's :class:`~.models.Embedder`.

Accepted, without importing either framework:

* a LangChain ``Embeddings`` (or anything with ``embed_documents``/``embed_query``): used
  as is, with its ``aembed_documents``/``aembed_query`` in the async path when present;
* a LlamaIndex ``BaseEmbedding`` (``get_text_embedding_batch``/``get_query_embedding``);
* a Chroma ``EmbeddingFunction`` (called on a list of texts);
* None: no embedder. Recall is then lexical (BM25) only; this is the default, because it
  never downloads a model and never waits on a network. It is logged once.

Example:
    >>> from langchain_recursive_memory.core.embeddings import resolve_embedder
    >>> class Chars:
    ...     def __call__(self, input):
    ...         return [[float(len(t)), 1.0] for t in input]
    >>> embedder = resolve_embedder(Chars())
    >>> embedder.embed_query("abc")
    [3.0, 1.0]
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import Any

from .errors import ConfigurationError
from .models import Embedder

__all__ = ["ChromaEmbedder", "LlamaIndexEmbedder", "embedder_name", "resolve_embedder"]

logger = logging.getLogger("langchain_recursive_memory")

NAME_CHARS = 40
"""Longest embedder name (it names a Chroma collection: at most 60 characters in all)."""
_logged: set[str] = set()


def _log_once(message: str) -> None:
    if message not in _logged:
        _logged.add(message)
        logger.info(message)


class ChromaEmbedder:
    """An :class:`~.models.Embedder` over a Chroma ``EmbeddingFunction``."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function

    def __repr__(self) -> str:
        return f"ChromaEmbedder({type(self.function).__name__})"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents with the function."""
        return [[float(x) for x in v] for v in self.function(input=list(texts))]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (with the function's ``embed_query`` when it has one)."""
        query = getattr(self.function, "embed_query", None)
        if callable(query):
            return [float(x) for x in query(input=[text])[0]]
        return self.embed_documents([text])[0]


class LlamaIndexEmbedder:
    """An :class:`~.models.Embedder` over a LlamaIndex ``BaseEmbedding`` (duck-typed)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def __repr__(self) -> str:
        return f"LlamaIndexEmbedder({type(self.model).__name__})"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents with ``get_text_embedding_batch``."""
        return [list(map(float, v)) for v in self.model.get_text_embedding_batch(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query with ``get_query_embedding``."""
        return list(map(float, self.model.get_query_embedding(text)))

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents`."""
        batch = getattr(self.model, "aget_text_embedding_batch", None)
        if batch is None:
            return await asyncio.to_thread(self.embed_documents, texts)
        return [list(map(float, v)) for v in await batch(list(texts))]

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query`."""
        query = getattr(self.model, "aget_query_embedding", None)
        if query is None:
            return await asyncio.to_thread(self.embed_query, text)
        return list(map(float, await query(text)))


def resolve_embedder(obj: Any) -> Embedder | None:
    """Return ``obj`` as an :class:`~.models.Embedder`, or None for no embedder.

    Raises:
        ConfigurationError: For an object that is none of the accepted kinds.
    """
    if obj is None:
        _log_once("no embedder configured: recall ranks with BM25 only (lexical)")
        return None
    if isinstance(obj, Embedder):
        embedder: Embedder = obj
    elif hasattr(obj, "get_text_embedding_batch") and hasattr(obj, "get_query_embedding"):
        embedder = LlamaIndexEmbedder(obj)
    elif callable(obj):
        embedder = ChromaEmbedder(obj)
    else:
        raise ConfigurationError.for_value(
            "embedder",
            obj,
            "must be a LangChain Embeddings, a LlamaIndex BaseEmbedding, a Chroma "
            "EmbeddingFunction, an object with embed_documents/embed_query, or None",
        )
    _log_once(f"embedder: {embedder_name(embedder)} (recall fuses BM25 and embeddings)")
    return embedder


def embedder_name(embedder: Any) -> str:
    """Return a short, stable name for an embedder (class and model name).

    It is used in logs and in the name of the embedder's Chroma vector collection.

    Example:
        >>> class E:
        ...     model_name = "sentence-transformers/all-MiniLM-L6-v2"
        >>> embedder_name(E())
        'e-all-minilm-l6-v2'
    """
    inner = embedder
    for attr in ("model", "function"):
        value = getattr(embedder, attr, None)
        if value is not None and not isinstance(value, str):
            inner = value
            break
    parts = [type(inner).__name__]
    for attr in ("model_name", "model", "model_id"):
        value = getattr(inner, attr, None)
        if isinstance(value, str) and value:
            parts.append(value.rsplit("/", 1)[-1])
            break
    slug = re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")
    return slug[:NAME_CHARS] or "embedder"
