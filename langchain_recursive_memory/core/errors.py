"""The package's exception hierarchy.

Every error raised on purpose by ``langchain_recursive_memory`` or ``llamaindex_higmem``
derives from :class:`RecursiveMemoryError`, so one ``except`` clause catches them all::

    RecursiveMemoryError
    ├── ConfigurationError      a parameter or a combination of parameters is invalid
    ├── InvalidInputError       a message, session id or query cannot be accepted
    ├── StoreError              the database or Chroma failed; nothing was half-written
    │   └── WriteOutcomeUnknownError  ... and whether the write landed cannot be told
    ├── ModelError              an LLM call failed after its retries
    │   ├── ModelTimeoutError   ... because it did not answer in time
    │   └── ModelOutputError    ... because its answer was unusable (empty, malformed)
    ├── EmbeddingError          an embedding call failed or returned the wrong shape
    ├── TokenizerError          an encoding is unknown or its data cannot be loaded
    └── MissingDependencyError  an adapter's framework is not installed (names the extra)

``ConfigurationError`` and ``InvalidInputError`` also derive from :class:`ValueError`,
``StoreError`` and ``ModelError`` from :class:`RuntimeError`, ``MissingDependencyError``
from :class:`ImportError`, so code written against the
built-in exceptions keeps working.

Messages name the bad value, for example::

    >>> from langchain_recursive_memory.core.errors import ConfigurationError
    >>> str(ConfigurationError.for_value("max_tokens", -1, "must be a positive integer"))
    'max_tokens=-1: must be a positive integer'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "ConfigurationError",
    "EmbeddingError",
    "InvalidInputError",
    "MissingDependencyError",
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
    """The database or Chroma failed (connection, timeout, rejected write); it names which.

    A database that cannot be reached is named with its password masked.
    """


class WriteOutcomeUnknownError(StoreError):
    """A write failed in a way that leaves unknown whether the database stored it.

    Raised when the commit of an append failed for good (the database may have stored it
    and lost the answer). The turns carry the ids they were given: adding
    ``error.turns`` again, once the store answers, stores each at most once.

    Attributes:
        turns: The :class:`~.turn.Turn` objects of the write, with their ids and creation
            times.

    Example:
        >>> from langchain_recursive_memory.core import Turn
        >>> error = WriteOutcomeUnknownError("timed out", [Turn(role="user", text="hi", id="t1")])
        >>> [t.id for t in error.turns]
        ['t1']
    """

    def __init__(self, message: str, turns: Sequence[Any] = ()) -> None:
        super().__init__(message)
        # Turns (typed Any: this module imports nothing of the package, not even Turn).
        self.turns: tuple[Any, ...] = tuple(turns)


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


EXTRAS = {
    "langchain_core": "langchain",
    "langchain": "agents",
    "langgraph": "agents",
    "llama_index": "llamaindex",
}
"""The framework packages the adapters import, and the extra that installs each."""


class MissingDependencyError(RecursiveMemoryError, ImportError):
    """An adapter's framework is not installed; the message names the extra to install.

    Example:
        >>> error = MissingDependencyError.for_import(
        ...     ModuleNotFoundError("No module named 'langchain'", name="langchain"),
        ...     "RecursiveMemoryMiddleware",
        ... )
        >>> print(error)  # doctest: +NORMALIZE_WHITESPACE
        RecursiveMemoryMiddleware needs the 'langchain' package, which is not installed:
        pip install "langchain-recursive-memory[agents]"
    """

    @classmethod
    def for_import(cls, error: ImportError, feature: str) -> ImportError:
        """The error to raise for a failed import of ``feature``'s framework.

        Args:
            error: The ``ImportError`` the framework's import raised.
            feature: What needs the framework (a class or module name).

        Returns:
            A :class:`MissingDependencyError` naming the extra when the missing module is
            one of the frameworks (:data:`EXTRAS`), else ``error`` itself (a broken
            install or a bug is not reported as a missing extra).
        """
        top = (error.name or "").split(".")[0]
        extra = EXTRAS.get(top)
        if extra is None:
            return error
        return cls(
            f"{feature} needs the {top!r} package, which is not installed: "
            f'pip install "langchain-recursive-memory[{extra}]"',
            name=error.name,
        )
