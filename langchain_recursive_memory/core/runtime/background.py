"""Folds off the caller's path: the shared fold pool (sync) or asyncio tasks (async).

Submissions coalesce: while a fold of a memory is queued or running, another request only
marks it to run once more afterwards, so a burst of ``add`` calls costs one or two folds,
not one per call. Sync folds run on the package's fold pool (:mod:`.workers`: several
threads, so one slow summarizer does not hold up other sessions); at interpreter exit
queued folds are dropped and running ones stop at their next step, within a bounded time
(an interrupted fold is harmless: versions are compare-and-set and crash-safe).

Example:
    >>> from langchain_recursive_memory.core.runtime.background import BackgroundFolds
    >>> runs = []
    >>> folds = BackgroundFolds()
    >>> folds.submit(lambda: runs.append(1))
    >>> folds.wait(5), runs
    (True, [1])
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable

from .workers import fold_pool, stopping

__all__ = ["BackgroundFolds"]

logger = logging.getLogger("langchain_recursive_memory")


class BackgroundFolds:
    """The background folds of one memory object."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending = False  # queued or running
        self._again = False  # another request came while it ran
        self._idle = threading.Event()
        self._idle.set()
        self._tasks: set[asyncio.Task[None]] = set()

    def submit(self, fold: Callable[[], None]) -> None:
        """Run ``fold`` on the fold pool (once more if one is already pending).

        Nothing runs once the package is stopping (interpreter exit).
        """
        with self._lock:
            if self._pending:
                self._again = True
                return
            self._pending = True
            self._idle.clear()

        def job() -> None:
            while True:
                if not stopping():  # at exit a queued fold is dropped
                    try:
                        fold()
                    except Exception:  # pragma: no cover - a fold logs its own failures
                        logger.exception("background fold failed")
                with self._lock:
                    if not self._again or stopping():
                        self._pending = False
                        self._again = False
                        self._idle.set()
                        return
                    self._again = False

        if not fold_pool().submit(job):
            with self._lock:
                self._pending = False
                self._idle.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no fold submitted with :meth:`submit` is pending."""
        return self._idle.wait(timeout)

    def submit_async(self, fold: Callable[[], Awaitable[None]]) -> None:
        """Run ``fold`` as a task of the running event loop (coalesced like :meth:`submit`)."""
        if any(not t.done() for t in self._tasks):
            self._again = True
            return

        async def run() -> None:
            while True:
                self._again = False
                try:
                    await fold()
                except Exception:  # pragma: no cover - a fold logs its own failures
                    logger.exception("background fold failed")
                if not self._again:
                    return

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def await_tasks(self) -> None:
        """Wait for the tasks started by :meth:`submit_async`."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
