"""What every framework adapter of the recursive memory offers beyond its framework's API.

The LangChain chat history and the LlamaIndex memory both expose the summary, a forced
fold, the upkeep spend, the erasure of the session's user and the rebuild of derived
state of their engine; they inherit them from :class:`SummaryFacade`.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore, RecursiveMemory
    >>> from langchain_recursive_memory.core.recursive.facade import SummaryFacade
    >>> class Adapter(SummaryFacade):
    ...     def __init__(self, memory):
    ...         self.engine = memory
    ...     def _summary_engine(self):
    ...         return self.engine
    >>> Adapter(RecursiveMemory("s", store=MemoryStore.in_memory())).summary is None
    True
"""

from __future__ import annotations

from ..rebuild import OnProgress, RebuildResult
from ..retrieval.pool import SESSION
from ..storage import Summary
from ..usage import Usage
from .fold import FoldResult
from .memory import RecursiveMemory

__all__ = ["SummaryFacade"]


class SummaryFacade:
    """Summary, fold and usage methods over the adapter's engine."""

    def _summary_engine(self) -> RecursiveMemory:
        """The engine behind the adapter."""
        raise NotImplementedError

    @property
    def summary(self) -> str | None:
        """The current summary's text (of :meth:`get_summary`), or None before the first fold."""
        latest = self._summary_engine().get_summary()
        return latest.text if latest is not None else None

    def get_summary(self) -> Summary | None:
        """The latest summary version with its provenance (turn ids, version, method)."""
        return self._summary_engine().get_summary()

    async def aget_summary(self) -> Summary | None:
        """Async twin of :meth:`get_summary`."""
        return await self._summary_engine().aget_summary()

    def fold(self, *, force: bool = False, keep: bool = True) -> FoldResult:
        """Fold now if due (or always with ``force``); raises if the summarizer fails.

        ``fold(force=True, keep=False)`` folds every message (a conversation that ends:
        its facts reach the user's other sessions now).
        """
        return self._summary_engine().fold(force=force, keep=keep)

    async def afold(self, *, force: bool = False, keep: bool = True) -> FoldResult:
        """Async twin of :meth:`fold`."""
        return await self._summary_engine().afold(force=force, keep=keep)

    def usage(self) -> Usage:
        """What this session's memory upkeep has spent (LLM calls, input/output tokens)."""
        return self._summary_engine().usage()

    async def ausage(self) -> Usage:
        """Async twin of :meth:`usage`."""
        return await self._summary_engine().ausage()

    def forget_user(self) -> list[str]:
        """Delete every session, fact, vector and usage record of the session's user.

        Returns:
            The ids of the sessions deleted.

        Raises:
            ConfigurationError: When the session belongs to no user.
        """
        return self._summary_engine().forget_user()

    async def aforget_user(self) -> list[str]:
        """Async twin of :meth:`forget_user`."""
        return await self._summary_engine().aforget_user()

    def rebuild(self, scope: str = SESSION, *, on_progress: OnProgress = None) -> RebuildResult:
        """Derive facts and vectors again from the turn log (resumable).

        Args:
            scope: ``"session"`` (default) or ``"user"`` (every session of its user).
            on_progress: Called after each step with a ``RebuildProgress``.
        """
        return self._summary_engine().rebuild(scope, on_progress=on_progress)

    async def arebuild(
        self, scope: str = SESSION, *, on_progress: OnProgress = None
    ) -> RebuildResult:
        """Async twin of :meth:`rebuild`."""
        return await self._summary_engine().arebuild(scope, on_progress=on_progress)
