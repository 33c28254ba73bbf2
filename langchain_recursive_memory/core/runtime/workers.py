"""Worker threads the package reuses, and a bounded, clean stop at interpreter exit.

Two pools serve the package: the *call* pool runs blocking model and embedding calls so
that a timeout can stop waiting for them (a worker is reused call after call, never a new
thread per call), and the *fold* pool runs background folds (several workers, so one slow
summarizer does not hold up other sessions' folds).

At interpreter exit (``atexit``) the package stops: queued background folds are dropped
(folds are derived state; the next ``add`` folds again), running ones stop at their next
step (see :func:`stopping`), and exit waits at most :data:`EXIT_DRAIN_SECONDS` for them.
0.1.0 let a daemon fold thread run on inside Chroma while the interpreter finalized, and
the process died with SIGSEGV.

Example:
    >>> from langchain_recursive_memory.core.runtime.workers import WorkerPool
    >>> import threading
    >>> pool = WorkerPool("example", max_workers=2, refuse_when_stopping=False)
    >>> done = threading.Event()
    >>> pool.submit(done.set)
    True
    >>> done.wait(5)
    True
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
from collections.abc import Callable

__all__ = [
    "CALL_WORKERS",
    "EXIT_DRAIN_SECONDS",
    "FOLD_WORKERS",
    "WorkerPool",
    "call_pool",
    "fold_pool",
    "stop",
    "stopping",
    "wait_unless_stopping",
]

logger = logging.getLogger("langchain_recursive_memory")

CALL_WORKERS = 32
"""Most threads of the call pool (a call that hangs past its timeout keeps one busy)."""
FOLD_WORKERS = 4
"""Most threads of the background-fold pool: this many slow folds run side by side."""
EXIT_DRAIN_SECONDS = 10.0
"""Longest wait at interpreter exit for running background folds to stop."""

_stopping = threading.Event()
_STOP_POLL_SECONDS = 0.25


def stopping() -> bool:
    """Whether the package is stopping (interpreter exit): long work should end early."""
    return _stopping.is_set()


def wait_unless_stopping(event: threading.Event, timeout: float) -> bool:
    """Wait for ``event`` at most ``timeout`` seconds, or until the package stops.

    Returns:
        Whether ``event`` is set.
    """
    deadline = time.monotonic() + timeout
    while not event.is_set():
        left = deadline - time.monotonic()
        if left <= 0 or stopping():
            break
        event.wait(min(left, _STOP_POLL_SECONDS))
    return event.is_set()


class WorkerPool:
    """Daemon worker threads fed from one queue, started on demand up to ``max_workers``.

    Args:
        name: Thread name prefix.
        max_workers: Most threads; a job submitted while all are busy waits in the queue.
        refuse_when_stopping: Refuse new jobs once the package is stopping.
    """

    def __init__(self, name: str, max_workers: int, *, refuse_when_stopping: bool) -> None:
        self.name = name
        self.max_workers = max_workers
        self.refuse_when_stopping = refuse_when_stopping
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers = 0
        self._idle = 0
        self._running = 0
        self._settled = threading.Condition(self._lock)

    @property
    def threads(self) -> int:
        """How many worker threads have been started (alive or not)."""
        return self._workers

    def submit(self, job: Callable[[], None]) -> bool:
        """Queue ``job``; False (not queued) if the pool refuses jobs while stopping."""
        if self.refuse_when_stopping and stopping():
            return False
        with self._lock:
            if self._idle:
                self._idle -= 1
            elif self._workers < self.max_workers:
                self._workers += 1
                threading.Thread(
                    target=self._work, name=f"lrm-{self.name}-{self._workers}", daemon=True
                ).start()
        self._queue.put(job)
        return True

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            with self._lock:
                self._running += 1
            try:
                job()
            except Exception:  # pragma: no cover - jobs log their own failures
                logger.exception("%s job failed", self.name)
            finally:
                with self._lock:
                    self._running -= 1
                    self._idle += 1
                    self._settled.notify_all()

    def drain(self, timeout: float) -> bool:
        """Wait until no job runs and none is queued, at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._running or not self._queue.empty():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._settled.wait(left)
        return True


_call_pool = WorkerPool("call", CALL_WORKERS, refuse_when_stopping=False)
_fold_pool = WorkerPool("fold", FOLD_WORKERS, refuse_when_stopping=True)


def call_pool() -> WorkerPool:
    """The pool of blocking model and embedding calls."""
    return _call_pool


def fold_pool() -> WorkerPool:
    """The pool of background folds."""
    return _fold_pool


def stop(timeout: float = EXIT_DRAIN_SECONDS) -> bool:
    """Stop the package's background work: drop queued folds, wait for running ones.

    Runs at interpreter exit; call it yourself to stop earlier (a server's shutdown hook).
    Background folds submitted afterwards are not run.

    Returns:
        True if every running fold stopped within ``timeout`` seconds.
    """
    _stopping.set()
    drained = _fold_pool.drain(timeout)
    if not drained:
        logger.warning(
            "background folds still running after %.1fs at exit; they are abandoned", timeout
        )
    return drained


atexit.register(stop)
