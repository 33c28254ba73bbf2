"""What the core needs from an LLM and from an embedding model.

The core depends on two small protocols, not on any framework:

* :class:`TextModel`: ``complete(prompt) -> str`` and its async twin ``acomplete``.
* :class:`JsonTextModel` (optional): also ``complete_json(prompt, schema) -> str``, the
  answer asked for as JSON shaped by a JSON schema (structured output, JSON mode). The
  engines use it for the answers they parse as JSON (a parser that carries its schema,
  :class:`WithSchema`) when the model offers it (:func:`offers_json`), the text prompt
  otherwise.
* :class:`Embedder`: ``embed_documents(texts)`` and ``embed_query(text)``.

:class:`ModelSettings` are the call settings the adapters pass to a model they build from
a ``"provider:model"`` name (temperature, output limit, timeout, provider retries).

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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeGuard, TypeVar, runtime_checkable

from .errors import ConfigurationError, EmbeddingError

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MODEL_TIMEOUT",
    "DEFAULT_PROVIDER_RETRIES",
    "DEFAULT_TEMPERATURE",
    "Embedder",
    "FunctionTextModel",
    "JsonTextModel",
    "ModelSettings",
    "TextModel",
    "WithSchema",
    "offers_json",
    "resolve_model",
]

T = TypeVar("T")

DEFAULT_TEMPERATURE = 0.0
"""Temperature of the memory's model calls (the papers' setting; provider defaults are
often 1)."""
DEFAULT_MAX_OUTPUT_TOKENS = 4096
"""Output limit of one call: room for an index answer of a batch with its event updates
(about 1,500 tokens for 4 LoCoMo turns) and a capped summary with its facts, so neither is
cut off; the provider's own default can be far lower (1,024 for Anthropic in LangChain)."""
DEFAULT_MODEL_TIMEOUT = 50.0
"""Seconds the provider's client waits for one call: below :class:`~.runtime.RetryPolicy`'s
60 s, so the client cancels a hung request before the memory gives up on it (the memory's
own timeout cannot cancel a blocking call)."""
DEFAULT_PROVIDER_RETRIES = 0
"""Retries inside the provider's client: none, the memory's retry policy retries (stacked
retries multiply the attempts and the wait)."""


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
class JsonTextModel(TextModel, Protocol):
    """A :class:`TextModel` that can also be asked for JSON shaped by a JSON schema.

    ``complete_json`` returns the JSON as text (a :class:`~.usage.ModelText` may carry the
    provider's token usage); the engines parse it with the parser of the text answer,
    which reads both. An adapter that cannot honour the schema for a given model answers
    the prompt as text instead, or says so with a ``supports_json`` attribute of False.
    """

    def complete_json(self, prompt: str, schema: Mapping[str, Any]) -> str:
        """Return the model's answer to ``prompt`` as JSON text matching ``schema``."""
        ...

    async def acomplete_json(self, prompt: str, schema: Mapping[str, Any]) -> str:
        """Async twin of :meth:`complete_json`."""
        ...


def offers_json(model: object) -> TypeGuard[JsonTextModel]:
    """Whether ``model`` offers :meth:`JsonTextModel.complete_json` (and does not decline)."""
    return isinstance(model, JsonTextModel) and bool(getattr(model, "supports_json", True))


@dataclass(frozen=True, slots=True)
class WithSchema(Generic[T]):
    """A parser of a JSON answer that carries the answer's JSON schema.

    The runner asks a model that :func:`offers_json` for ``schema``-shaped JSON, any other
    model for the text prompt; ``parse`` reads either answer.

    Example:
        >>> import json
        >>> parse = WithSchema(json.loads, {"type": "object"})
        >>> parse('{"a": 1}'), parse.schema
        ({'a': 1}, {'type': 'object'})
    """

    parse: Callable[[str], T]
    schema: Mapping[str, Any]

    def __call__(self, answer: str) -> T:
        """Parse ``answer``."""
        return self.parse(answer)


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """How an adapter calls a model it builds from a ``"provider:model"`` name.

    Attributes:
        temperature: Sampling temperature (default 0.0, the papers' setting).
        max_output_tokens: Output limit per call (default 4096: no index answer or summary
            with facts is cut off; None: the provider's default).
        timeout: Seconds the provider's client waits for a call (default 50, below the
            retry policy's 60 s; the client can cancel a call, the memory cannot).
        max_retries: Retries inside the provider's client (default 0: the memory's retry
            policy retries; stacked retries multiply).

    Raises:
        ConfigurationError: For a negative temperature or retries, or a zero limit or
            timeout.

    Example:
        >>> ModelSettings().temperature, ModelSettings(max_output_tokens=512).max_output_tokens
        (0.0, 512)
    """

    temperature: float | None = DEFAULT_TEMPERATURE
    max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS
    timeout: float | None = DEFAULT_MODEL_TIMEOUT
    max_retries: int | None = DEFAULT_PROVIDER_RETRIES

    def __post_init__(self) -> None:
        if self.temperature is not None and self.temperature < 0:
            raise ConfigurationError.for_value("temperature", self.temperature, "must be >= 0")
        if self.max_output_tokens is not None and self.max_output_tokens < 1:
            raise ConfigurationError.for_value(
                "max_output_tokens", self.max_output_tokens, "must be >= 1 (or None)"
            )
        if self.timeout is not None and self.timeout <= 0:
            raise ConfigurationError.for_value("timeout", self.timeout, "must be > 0 (or None)")
        if self.max_retries is not None and self.max_retries < 0:
            raise ConfigurationError.for_value("max_retries", self.max_retries, "must be >= 0")


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
