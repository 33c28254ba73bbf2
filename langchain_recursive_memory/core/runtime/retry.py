"""Bounded retries with exponential backoff, timeouts, and a cool-down after failures.

The policy is plain data; the memory's sync and async shells apply it with
``time.sleep`` / ``asyncio.sleep`` and a thread / ``asyncio.wait_for`` timeout.

Example:
    >>> from langchain_recursive_memory.core import RetryPolicy
    >>> list(RetryPolicy(attempts=4, initial_delay=0.5, max_delay=1.5).delays())
    [0.5, 1.0, 1.5]
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from ..errors import ConfigurationError, ModelTimeoutError
from ..validation import KnownFields
from .workers import call_pool, stopping, wait_unless_stopping

__all__ = [
    "RetryPolicy",
    "Retrying",
    "acall_with_timeout",
    "call_with_timeout",
    "deadline",
    "time_left",
]

T = TypeVar("T")


_SECONDS = (
    "initial_delay",
    "max_delay",
    "multiplier",
    "timeout",
    "cooldown",
    "max_cooldown",
    "fold_deadline",
)


@dataclass(frozen=True, slots=True)
class RetryPolicy(KnownFields):
    """How LLM (and embedding) calls are retried.

    Attributes:
        attempts: Total attempts per call, first one included (default 3).
        initial_delay: Seconds before the first retry (default 0.5).
        max_delay: Upper bound of any single delay (default 8).
        multiplier: Growth of the delay between retries (default 2).
        timeout: Seconds one attempt may take before it counts as failed (default 60).
        cooldown: Seconds during which no new fold is attempted after a fold failed; doubles
            with each consecutive failure up to ``max_cooldown`` (default 5).
        max_cooldown: Upper bound of the cool-down (default 300).
        fold_deadline: Longest time in seconds a fold started by ``add`` may take, its
            calls and retries included (default 20): past it the fold gives up, its
            messages stay unfolded in the log, and a later ``add`` folds them after the
            cool-down. Folds run by ``fold()`` or in the background have no deadline; a
            summarizer that needs longer (a slow local model) needs a longer deadline or
            ``background_folds=True``.
    """

    attempts: int = 3
    initial_delay: float = 0.5
    max_delay: float = 8.0
    multiplier: float = 2.0
    timeout: float = 60.0
    cooldown: float = 5.0
    max_cooldown: float = 300.0
    fold_deadline: float = 20.0

    def __post_init__(self) -> None:
        if not isinstance(self.attempts, int) or isinstance(self.attempts, bool):
            raise ConfigurationError.for_value("attempts", self.attempts, "must be an int")
        if self.attempts < 1:
            raise ConfigurationError.for_value("attempts", self.attempts, "must be >= 1")
        for name in _SECONDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
                raise ConfigurationError.for_value(name, value, "must be a number")
        for name in ("initial_delay", "max_delay", "cooldown", "max_cooldown"):
            if getattr(self, name) < 0:
                raise ConfigurationError.for_value(name, getattr(self, name), "must be >= 0")
        if self.multiplier < 1:
            raise ConfigurationError.for_value("multiplier", self.multiplier, "must be >= 1")
        for name in ("timeout", "fold_deadline"):
            if getattr(self, name) <= 0:
                raise ConfigurationError.for_value(name, getattr(self, name), "must be > 0")

    def delays(self) -> Iterator[float]:
        """Yield the delay before each retry (``attempts - 1`` values)."""
        delay = self.initial_delay
        for _ in range(self.attempts - 1):
            yield min(delay, self.max_delay)
            delay *= self.multiplier

    def cooldown_after(self, consecutive_failures: int) -> float:
        """Return the cool-down after ``consecutive_failures`` failed folds (>= 1)."""
        if consecutive_failures <= 0:
            return 0.0
        return float(min(self.cooldown * 2 ** (consecutive_failures - 1), self.max_cooldown))


_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "lrm_deadline", default=None
)


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Bound every call and retry made inside the block to ``seconds`` from now (None: none).

    Model, embedding and store calls made within get at most the time left as their
    timeout, and :class:`Retrying` gives up instead of waiting past the deadline. Nested
    deadlines keep the earlier one.

    Example:
        >>> with deadline(5.0):
        ...     0 < time_left(60.0) <= 5.0
        True
        >>> time_left(60.0)
        60.0
    """
    if seconds is None:
        yield
        return
    ends = time.monotonic() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set(ends if outer is None else min(outer, ends))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def time_left(timeout: float) -> float:
    """``timeout``, or less when a :func:`deadline` ends sooner (0 when it has passed)."""
    ends = _DEADLINE.get()
    if ends is None:
        return timeout
    return max(0.0, min(timeout, ends - time.monotonic()))


class Retrying:
    """The one retry decision of the package: when to try again, how long to wait, what to raise.

    The sync and async shells (model, embedding and store calls) loop over attempts and ask
    :meth:`failed` after each failure; it returns the delay before the next attempt, or
    raises the final error, chained to the last failure (``raise ... from``).

    Args:
        policy: Attempts and delays.
        final: Builds the final error from the last failure and the number of attempts.
        retryable: Whether a failure is worth another attempt (default: every failure).

    Example:
        >>> retrying = Retrying(RetryPolicy(attempts=2, initial_delay=0.1), RuntimeError)
        >>> retrying.failed(ValueError("boom"))
        0.1
        >>> try:
        ...     retrying.failed(ValueError("boom again"))
        ... except RuntimeError as exc:
        ...     print(repr(exc.__cause__))
        ValueError('boom again')
    """

    def __init__(
        self,
        policy: RetryPolicy,
        final: Callable[[Exception, int], Exception],
        retryable: Callable[[Exception], bool] | None = None,
    ) -> None:
        self._delays = list(policy.delays())
        self._final = final
        self._retryable = retryable
        self.attempt = 0

    def failed(self, exc: Exception) -> float:
        """Record a failed attempt; return the delay before the next one.

        Raises:
            Exception: The final error (from ``final``), chained to ``exc``, when no attempt
                is left or ``exc`` is not retryable.
        """
        self.attempt += 1
        more = self.attempt <= len(self._delays)
        if more and time_left(self._delays[self.attempt - 1]) < self._delays[self.attempt - 1]:
            more = False  # the wait would pass the deadline
        if not more or (self._retryable is not None and not self._retryable(exc)):
            raise self._final(exc, self.attempt) from exc
        return self._delays[self.attempt - 1]


def call_with_timeout(fn: Callable[[], T], timeout: float, what: str) -> T:
    """Run ``fn`` on the call pool and wait at most ``timeout`` seconds for it.

    The pool's daemon threads are reused from call to call (:func:`~.workers.call_pool`).
    A call that times out keeps running on its worker (Python cannot cancel it) but its
    result is discarded, and it never blocks interpreter exit.

    Raises:
        ModelTimeoutError: When ``fn`` did not return in time.
    """
    box: dict[str, object] = {}
    done = threading.Event()
    context = contextvars.copy_context()  # callbacks and tracing follow the call

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.set()

    allowed = time_left(timeout)
    if allowed <= 0:
        raise ModelTimeoutError(f"{what} not started: the deadline has passed")
    call_pool().submit(lambda: context.run(target))
    if not wait_unless_stopping(done, allowed):
        if stopping():
            raise ModelTimeoutError(f"{what} abandoned: the interpreter is exiting")
        raise ModelTimeoutError(f"{what} did not answer within {allowed:.3g}s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


async def acall_with_timeout(coro: Awaitable[T], timeout: float, what: str) -> T:
    """Await ``coro`` for at most ``timeout`` seconds (cancelling it on timeout).

    Raises:
        ModelTimeoutError: When ``coro`` did not finish in time.
    """
    allowed = time_left(timeout)
    try:
        return await asyncio.wait_for(coro, allowed)
    except asyncio.TimeoutError as exc:
        raise ModelTimeoutError(f"{what} did not answer within {allowed:.3g}s") from exc
