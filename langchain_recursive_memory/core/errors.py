"""The package's exception hierarchy.

Every error raised on purpose by ``langchain_recursive_memory`` or ``llamaindex_higmem``
derives from :class:`RecursiveMemoryError`, so one ``except`` clause catches them all::

    RecursiveMemoryError
    ├── ConfigurationError      a parameter or a combination of parameters is invalid
    ├── InvalidInputError       a message, session id or query cannot be accepted
    ├── StoreError              Chroma failed; nothing was half-written
    │   └── WriteOutcomeUnknownError  ... and whether the write landed cannot be told
    ├── ModelError              an LLM call failed after its retries
    │   ├── ModelTimeoutError   ... because it did not answer in time
    │   └── ModelOutputError    ... because its answer was unusable (empty, malformed)
    ├── EmbeddingError          an embedding call failed or returned the wrong shape
    └── TokenizerError          an encoding is unknown or its data cannot be loaded

``ConfigurationError`` and ``InvalidInputError`` also derive from :class:`ValueError`,
``StoreError`` and ``ModelError`` from :class:`RuntimeError`, so code written against the
built-in exceptions keeps working.

Messages name the bad value, for example::

    >>> from langchain_recursive_memory.core.errors import ConfigurationError
    >>> str(ConfigurationError.for_value("max_tokens", -1, "must be a positive integer"))
    'max_tokens=-1: must be a positive integer'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .turn import Turn

__all__ = [
    "ConfigurationError",
    "EmbeddingError",
    "InvalidInputError",
    "ModelError",
    "ModelOutputError",
    "ModelTimeoutError",
    "RecursiveMemoryError",
    "StoreError",
    "TokenizerError",
    "WriteOutcomeUnknownError",
]


SHOWN_VALUE_CHARS = 80
"""Longest rendering of a bad value in an error message (longer ones end in ``...``)."""


def _short(value: Any) -> str:
    text = repr(value)
    if len(text) <= SHOWN_VALUE_CHARS:
        return text
    return text[: SHOWN_VALUE_CHARS - len("...")] + "..."


class RecursiveMemoryError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigurationError(RecursiveMemoryError, ValueError):
    """A parameter, or a combination of parameters, is invalid."""

    @classmethod
    def for_value(cls, name: str, value: Any, problem: str) -> ConfigurationError:
        """Build an error that names the parameter and its bad value.

        Args:
            name: The parameter's name.
            value: The value that was given.
            problem: What is wrong with it.

        Returns:
            The error, ready to raise.
        """
        return cls(f"{name}={_short(value)}: {problem}")


class InvalidInputError(RecursiveMemoryError, ValueError):
    """A message, session id or query cannot be accepted as given."""

    @classmethod
    def for_value(cls, name: str, value: Any, problem: str) -> InvalidInputError:
        """Build an error that names the input and its bad value.

        Args:
            name: What the input is (``"session_id"``, ``"message"``...).
            value: The value that was given (shortened in the message).
            problem: What is wrong with it.

        Returns:
            The error, ready to raise.
        """
        return cls(f"{name}={_short(value)}: {problem}")


class StoreError(RecursiveMemoryError, RuntimeError):
    """The Chroma store failed (connection, timeout, rejected write)."""


class WriteOutcomeUnknownError(StoreError):
    """A write failed in a way that leaves unknown whether Chroma stored it.

    Raised when a request timed out (the server may have stored it and lost the answer)
    and reading the records back failed too. The turns carry the ids they were given:
    adding ``error.turns`` again, once the store answers, stores each at most once.

    Attributes:
        turns: The turns of the write, with their ids and creation times.

    Example:
        >>> from langchain_recursive_memory.core import Turn
        >>> error = WriteOutcomeUnknownError("timed out", [Turn(role="user", text="hi", id="t1")])
        >>> [t.id for t in error.turns]
        ['t1']
    """

    def __init__(self, message: str, turns: Sequence[Turn] = ()) -> None:
        super().__init__(message)
        self.turns: tuple[Turn, ...] = tuple(turns)


class ModelError(RecursiveMemoryError, RuntimeError):
    """An LLM call failed after its retries."""


class ModelTimeoutError(ModelError, TimeoutError):
    """An LLM call did not answer within its timeout."""


class ModelOutputError(ModelError):
    """An LLM answered, but the answer cannot be used (empty or malformed)."""


class EmbeddingError(RecursiveMemoryError, RuntimeError):
    """An embedding call failed or returned vectors of the wrong shape."""


class TokenizerError(RecursiveMemoryError, RuntimeError):
    """A tiktoken encoding is unknown or its bundled data cannot be loaded."""
