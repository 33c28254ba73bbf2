"""What the core needs from an LLM and from an embedding model.

The core depends on two small protocols, not on any framework:

* :class:`TextModel`: ``complete(prompt) -> str`` and its async twin ``acomplete``.
* :class:`Embedder`: ``embed_documents(texts)`` and ``embed_query(text)``.

Adapters wrap LangChain chat models and ``Embeddings``, LlamaIndex LLMs and
``BaseEmbedding``, and Chroma ``EmbeddingFunction``; :class:`FunctionTextModel` wraps plain
callables.

Example:
    >>> from langchain_recursive_memory.core import FunctionTextModel, TextModel
    >>> model = FunctionTextModel(lambda prompt: prompt.upper())
    >>> isinstance(model, TextModel), model.complete("hi")
    (True, 'HI')
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from .errors import ConfigurationError, EmbeddingError

__all__ = ["Embedder", "FunctionTextModel", "TextModel", "resolve_model"]


@runtime_checkable
class TextModel(Protocol):
    """A text-in, text-out LLM.

    Implementations should raise on failure (any exception) rather than return an error
    text: the memory retries failed calls and never writes a failure in as a summary.
    """

    def complete(self, prompt: str) -> str:
        """Return the model's answer to ``prompt``."""
        ...

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """An embedding model."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Return one vector per text."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """Return the vector of a search query."""
        ...


class FunctionTextModel:
    """A :class:`TextModel` made of a function (and optionally its async twin).

    Args:
        fn: ``prompt -> answer``.
        afn: ``async prompt -> answer``; when omitted, ``fn`` runs in a worker thread.
        name: Shown in ``repr`` and logs.
    """

    def __init__(
        self,
        fn: Callable[[str], str],
        afn: Callable[[str], Awaitable[str]] | None = None,
        *,
        name: str = "function",
    ) -> None:
        self._fn = fn
        self._afn = afn
        self.name = name

    def __repr__(self) -> str:
        return f"FunctionTextModel(name={self.name!r})"

    def complete(self, prompt: str) -> str:
        """Call the wrapped function."""
        return self._fn(prompt)

    async def acomplete(self, prompt: str) -> str:
        """Call the async function, or the sync one in a worker thread."""
        if self._afn is not None:
            return await self._afn(prompt)
        return await asyncio.to_thread(self._fn, prompt)


def resolve_model(
    obj: Any, native: type, wrap: Callable[[Any], TextModel], *, accepted: str
) -> TextModel | None:
    """What a user passes as ``llm``, as a :class:`TextModel` (or None).

    None, a framework model (an instance of ``native``, wrapped), or a ``TextModel``
    already. The framework's type is checked first: its models also have ``complete``.

    Raises:
        ConfigurationError: For anything else (``accepted`` says what is).
    """
    if obj is None:
        return None
    if isinstance(obj, native):
        return wrap(obj)
    if isinstance(obj, TextModel):
        return obj
    raise ConfigurationError.for_value("llm", obj, f"must be None, {accepted}")


def check_vectors(vectors: Sequence[Sequence[float]], expected: int) -> list[list[float]]:
    """Return ``vectors`` as lists of floats, checking their count and common dimension.

    Raises:
        EmbeddingError: On a count mismatch, an empty vector or mixed dimensions.
    """
    out = [[float(x) for x in v] for v in vectors]
    if len(out) != expected:
        raise EmbeddingError(f"the embedder returned {len(out)} vectors for {expected} texts")
    dims = {len(v) for v in out}
    if len(dims) > 1 or 0 in dims:
        raise EmbeddingError(f"the embedder returned vectors of dimensions {sorted(dims)}")
    return out
