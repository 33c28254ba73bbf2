"""Typed effects: what the engines' steps ask the outside world to do.

The engines' operations (add, fold, recall, retrieve...) are written once, as generators
(:data:`Steps`) that yield an effect and receive its result:

* :class:`StoreCall` - a blocking store call (run directly, or in a worker thread when
  async);
* :class:`ModelCall` - a model call with a parser (a parse failure counts as a failed
  attempt);
* :class:`EmbedCall` - an embedding call (documents, or one query);
* :class:`Gather` - several model calls at once (in turn when sync, concurrently when
  async); their results or their exceptions come back in order.

Steps never yield effects directly; they call the typed helpers below with ``yield from``,
which give the result its type::

    state = yield from store_call(session.records.summaries.load)  # a SessionState

A :class:`~.runner.Runner` performs the effects, with blocking calls or with ``await``.

Example:
    >>> from langchain_recursive_memory.core.runtime import Runner, store_call
    >>> def steps():
    ...     value = yield from store_call(lambda: 20)
    ...     return value + 1
    >>> Runner().run(steps())
    21
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar, cast

__all__ = [
    "INLINE",
    "ON_LOOP",
    "EmbedCall",
    "Gather",
    "ModelCall",
    "Steps",
    "StoreCall",
    "complete",
    "embed_documents",
    "embed_query",
    "first_error",
    "gather",
    "on_loop",
    "store_call",
]

T = TypeVar("T")
R = TypeVar("R")


ON_LOOP = "lrm_on_loop"
"""The attribute that marks a store method whose only I/O is the database's: the async
shell runs it on the event loop, the database's async driver awaiting its I/O (SQLAlchemy's
greenlet bridge), instead of in a worker thread (:func:`on_loop`)."""


def on_loop(fn: Callable[..., T]) -> Callable[..., T]:
    """Mark a store method whose only I/O is the database's (see :data:`ON_LOOP`)."""
    setattr(fn, ON_LOOP, True)
    return fn


@dataclass(frozen=True, slots=True)
class StoreCall(Generic[T]):
    """A blocking store call.

    Run directly; by the async shell in a worker thread, or on the event loop when the
    call is marked :func:`on_loop`.
    """

    fn: Callable[[], T]

    @property
    def on_loop(self) -> bool:
        """Whether the call's only I/O is the database's (:func:`on_loop`)."""
        fn = getattr(self.fn, "func", self.fn)
        return bool(getattr(fn, ON_LOOP, False))


@dataclass(frozen=True, slots=True)
class ModelCall(Generic[T]):
    """A model call; ``parse`` turns the answer into the result (a failure is a failed attempt).

    Attributes:
        prompt: The prompt.
        parse: Validates and converts the model's answer; raising counts as a failed attempt.
        purpose: Labels the call in the upkeep accounting (``"fold"``, ``"facts"``...).
    """

    prompt: str
    parse: Callable[[str], T]
    purpose: str = "fold"


@dataclass(frozen=True, slots=True)
class EmbedCall:
    """An embedding call: documents, or one query (``query=True``)."""

    texts: tuple[str, ...]
    query: bool = False


@dataclass(frozen=True, slots=True)
class Gather:
    """Several model calls at once; their results or exceptions come back in order."""

    calls: tuple[ModelCall[Any], ...]


Effect = StoreCall[Any] | ModelCall[Any] | EmbedCall | Gather
"""Anything a step may yield."""

Steps = Generator[Effect, Any, R]
"""An operation written once: a generator of effects that returns ``R``."""


class _Inline:
    """What the sync runner answers a :class:`StoreCall` with: make the call here."""

    def __repr__(self) -> str:
        return "INLINE"


INLINE = _Inline()
"""The sync runner's answer to a store call: the step makes it in its own frame, so a
traceback, a profiler or a debugger sees the step that asked (and its callers) above the
store's frames; the async runner makes the call in a worker thread and sends the result."""


def store_call(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Steps[T]:
    """Call ``fn(*args, **kwargs)`` against the store and return its result.

    With the sync runner the call is made right here, in the step's frame (:data:`INLINE`).
    """
    call = partial(fn, *args, **kwargs) if args or kwargs else fn
    value = yield StoreCall(call)
    if value is INLINE:
        return call()
    return cast(T, value)


def complete(prompt: str, parse: Callable[[str], T], purpose: str = "fold") -> Steps[T]:
    """Ask the model, parse the answer, return the parsed value (retried on failure)."""
    value = yield ModelCall(prompt, parse, purpose)
    return cast(T, value)


def embed_documents(texts: Sequence[str]) -> Steps[list[list[float]]]:
    """Embed documents (in batches of the runner's ``embed_batch_size``)."""
    value = yield EmbedCall(tuple(texts))
    return cast("list[list[float]]", value)


def embed_query(text: str) -> Steps[list[float]]:
    """Embed one search query."""
    value = yield EmbedCall((text,), query=True)
    return cast("list[float]", value)


def gather(calls: Sequence[ModelCall[T]]) -> Steps[list[T | Exception]]:
    """Make several model calls at once; each result is the parsed value or the exception."""
    if not calls:
        return []
    value = yield Gather(tuple(calls))
    return cast("list[T | Exception]", value)


def first_error(results: Sequence[T | Exception]) -> list[T]:
    """Return the results of :func:`gather`, raising the first exception among them."""
    for item in results:
        if isinstance(item, Exception):
            raise item
    return cast("list[T]", list(results))
