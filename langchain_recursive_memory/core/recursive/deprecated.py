"""0.1.0's names on the recursive engines, working until 0.3.0 with a ``DeprecationWarning``.

:class:`DeprecatedNames` is a base of :class:`~.memory.RecursiveMemory` (and so of
``HybridMemory``): ``summary()``/``asummary()`` (now ``get_summary()``/
``aget_summary()``), ``build_context()`` (internal since 0.2.0: use ``context()``) and the
``shorten_attempts``/``fact_attempts`` attributes (read-only now: the values given to the
constructor). Removing this base in 0.3.0 removes them.

Example:
    >>> import warnings
    >>> from langchain_recursive_memory.core import MemoryStore, RecursiveMemory
    >>> memory = RecursiveMemory("s1", store=MemoryStore.in_memory(), fact_attempts=3)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     memory.fact_attempts
    3
    >>> caught[0].category.__name__
    'DeprecationWarning'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..deprecations import warn_deprecated

if TYPE_CHECKING:
    from ..retrieval.hits import RecallHit
    from ..storage import SessionState, Summary
    from .context import Context

__all__ = ["DeprecatedNames"]

#: ``stacklevel`` of a warning given from a property's helper: the user's line
PROPERTY_CALLER = 4


class _Engine(Protocol):
    """What the deprecated members use of the engine."""

    _attempts: dict[str, int]

    def get_summary(self) -> Summary | None: ...

    async def aget_summary(self) -> Summary | None: ...

    def _build_context(
        self, state: SessionState, hits: Sequence[RecallHit] = (), *, reserve: int = 0
    ) -> Context: ...


def _old(engine: object, name: str) -> str:
    return f"{type(engine).__name__}.{name}"


class DeprecatedNames:
    """The deprecated 0.1.0 members of the recursive engines (see the module doc)."""

    def summary(self: _Engine) -> Summary | None:
        """Deprecated since 0.2.0 (gone in 0.3.0): use ``get_summary()``."""
        warn_deprecated(_old(self, "summary()"), _old(self, "get_summary()"))
        return self.get_summary()

    async def asummary(self: _Engine) -> Summary | None:
        """Deprecated since 0.2.0 (gone in 0.3.0): use ``aget_summary()``."""
        warn_deprecated(_old(self, "asummary()"), _old(self, "aget_summary()"))
        return await self.aget_summary()

    def build_context(
        self: _Engine, state: SessionState, hits: Sequence[RecallHit] = ()
    ) -> Context:
        """Deprecated since 0.2.0 (gone in 0.3.0): use ``context()`` (this was internal).

        Returns the context of a loaded state (``store.records.load(...)``) and hits.
        """
        warn_deprecated(_old(self, "build_context()"), _old(self, "context()"))
        return self._build_context(state, hits)

    @property
    def shorten_attempts(self: _Engine) -> int:
        """Deprecated since 0.2.0 (gone in 0.3.0): the ``shorten_attempts`` given (read-only)."""
        return _given(self, "shorten_attempts")

    @property
    def fact_attempts(self: _Engine) -> int:
        """Deprecated since 0.2.0 (gone in 0.3.0): the ``fact_attempts`` given (read-only)."""
        return _given(self, "fact_attempts")


def _given(engine: _Engine, name: str) -> int:
    instead = f"the {name}= argument you passed"
    warn_deprecated(_old(engine, name), instead, stacklevel=PROPERTY_CALLER)
    return engine._attempts[name]
