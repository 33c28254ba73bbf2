"""Folds off the caller's path: a daemon worker thread (sync) or asyncio tasks (async).

Submissions coalesce: while a fold of a memory is queued or running, another request only
marks it to run once more afterwards, so a burst of ``add`` calls costs one or two folds,
not one per call. The worker thread is a daemon: the process never waits for it at exit
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
import queue
import threading
from collections.abc import Awaitable, Callable

__all__ = ["BackgroundFolds"]

logger = logging.getLogger("langchain_recursive_memory")

_queue: queue.Queue[Callable[[], None]] = queue.Queue()
_worker: threading.Thread | None = None
_worker_lock = threading.Lock()


def _work() -> None:
    while True:
        job = _queue.get()
        try:
            job()
        except Exception:  # pragma: no cover - a fold logs its own failures
            logger.exception("background fold failed")
        finally:
            _queue.task_done()


def _ensure_worker() -> None:
    global _worker
    with _worker_lock:
        if _worker is None or not _worker.is_alive():
            _worker = threading.Thread(target=_work, name="lrm-background-folds", daemon=True)
            _worker.start()


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
        """Run ``fold`` on the worker thread (once more if one is already pending)."""
        with self._lock:
            if self._pending:
                self._again = True
                return
            self._pending = True
            self._idle.clear()

        def job() -> None:
            while True:
                try:
                    fold()
                except Exception:  # pragma: no cover - a fold logs its own failures
                    logger.exception("background fold failed")
                with self._lock:
                    if not self._again:
                        self._pending = False
                        self._idle.set()
                        return
                    self._again = False

        _ensure_worker()
        _queue.put(job)

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
