"""The recursive summary memory (Wang et al., arXiv 2310.10168), framework-free.

Recent messages stay verbatim in a window; when the window overflows its budget, its
oldest part is folded into the running summary, ``S_k = LLM(S_{k-1} + overflow)``, and the
context handed to the model is ``summary + window``, bounded however long the conversation.

One logic, two shells: the steps of ``add``, ``fold`` and ``context`` are written once, as
generators that *yield* the I/O they need (a store call, an LLM call); the sync methods
run them with blocking calls, the async twins (``aadd``, ``afold``, ``acontext``...) with
``await``. Nothing else differs between the two.

Guarantees:

* A message is durable in the turn log when ``add`` returns; it is never deleted by a fold.
* A failing summary model (error, timeout, empty answer) never loses a message and is never
  written in as the summary: the fold is abandoned, logged, retried on a later ``add``
  (after a cool-down), and meanwhile the context still fits the budget because only the
  newest messages that fit are shown; the others wait in the log.
* With no model configured, folds use :class:`~.summarizer.ExtractiveSummarizer` (no LLM
  calls): the summary is a rolling extract of the latest folded messages.
* The summary and its cutoff are persisted, so a restart resumes with zero LLM calls.
* Concurrent folds of one session are harmless: versions are written compare-and-set.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore, RecursiveMemory, Turn
    >>> memory = RecursiveMemory("demo", store=MemoryStore.in_memory(), max_tokens=400)
    >>> for i in range(40):
    ...     _ = memory.add([Turn(role="user", text=f"Message number {i} about the garden.")])
    >>> ctx = memory.context()
    >>> ctx.tokens <= 400, len(memory.turns())
    (True, 40)
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from functools import partial
from os import PathLike
from typing import Any, TypeVar, cast

from .config import MemoryConfig
from .errors import ConfigurationError, ModelError, StoreError
from .models import TextModel
from .retry import RetryPolicy, acall_with_timeout, call_with_timeout
from .store import DEFAULT_NAMESPACE, MemoryStore, SessionState, StoredTurn, Summary, validate_scope
from .summarizer import ExtractiveSummarizer, clean_summary, shorten_prompt, summary_prompt
from .tokenizer import REPLY_PRIMING_TOKENS, TokenCounter
from .turn import Turn
from .window import plan_fold, select_suffix, window_units

__all__ = ["Context", "FoldResult", "RecursiveMemory"]

logger = logging.getLogger("langchain_recursive_memory")

R = TypeVar("R")


# -- effects: the I/O a step asks its shell to perform --------------------------------------


@dataclass(frozen=True, slots=True)
class _Io:
    """A blocking store call (run directly, or in a worker thread by the async shell)."""

    fn: Callable[[], Any]


@dataclass(frozen=True, slots=True)
class _Llm:
    """A model call; ``parse`` validates the answer (a failure counts as a failed attempt)."""

    prompt: str
    parse: Callable[[object], Any]


Steps = Generator["_Io | _Llm", Any, R]


# -- results ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Context:
    """What the memory hands to the model: the summary, then the window.

    Attributes:
        summary: The summary version shown, or None.
        summary_turn: The summary as one message (role from the config), or None.
        window: The recent messages, verbatim, oldest first.
        tokens: Tokens of the whole context (messages plus reply priming).
        max_tokens: The budget ``tokens`` stays within.
        hidden: Unfolded messages not shown because they do not fit (a fold is pending).
    """

    summary: Summary | None
    summary_turn: Turn | None
    window: tuple[Turn, ...]
    tokens: int
    max_tokens: int
    hidden: int = 0

    @property
    def turns(self) -> list[Turn]:
        """The summary message (if any) followed by the window."""
        head = [self.summary_turn] if self.summary_turn is not None else []
        return head + list(self.window)


@dataclass(frozen=True, slots=True)
class FoldResult:
    """What a fold did.

    Attributes:
        versions: Summary versions written (0 when nothing was due).
        folded: Messages folded into the summary.
        summary: The latest summary after the fold.
        error: The failure that stopped the fold, if any (the messages wait in the log).
        skipped: Why no fold was attempted (``"busy"``, ``"cooldown"``), if so.
    """

    versions: int = 0
    folded: int = 0
    summary: Summary | None = None
    error: Exception | None = None
    skipped: str | None = None


@dataclass
class _Health:
    failures: int = 0
    retry_at: float = 0.0
    last_error: Exception | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class RecursiveMemory:
    """Recursive summary memory of one session, on a Chroma store.

    Args:
        session_id: The conversation's id (any non-empty string up to 1,024 characters).
        model: The summarizer, any :class:`~.models.TextModel` (a cheaper model than the
            chat model is the usual choice). None: the no-LLM extractive summarizer.
        store: A :class:`~.store.MemoryStore`. Default: an embedded persistent store at
            ``path`` (or :func:`~.store.default_path`).
        path: Directory of the default embedded store.
        namespace: Isolates tenants or apps sharing a store (default ``"default"``).
        config: A :class:`~.config.MemoryConfig`; or give its fields as keyword arguments
            (``max_tokens=2000``, ``max_summary_tokens=300``, ...).
        counter: Token counter; default: ``TokenCounter(tokenizer_model)``.
        tokenizer_model: Model name whose encoding counts tokens (default ``"gpt-4o"``).
        retry: Retries, timeouts and cool-down of model calls.
        shorten_attempts: How many times an over-long summary is sent back to be shortened
            before it is truncated (default 1).
        **config_fields: Fields of :class:`~.config.MemoryConfig`.

    Raises:
        ConfigurationError: For invalid budgets or conflicting arguments.
        InvalidInputError: For an invalid session id or namespace.
    """

    def __init__(
        self,
        session_id: str,
        *,
        model: TextModel | None = None,
        store: MemoryStore | None = None,
        path: str | PathLike[str] | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        config: MemoryConfig | None = None,
        counter: TokenCounter | None = None,
        tokenizer_model: str = "gpt-4o",
        retry: RetryPolicy | None = None,
        shorten_attempts: int = 1,
        **config_fields: Any,
    ) -> None:
        validate_scope(namespace, session_id)
        if config is not None and config_fields:
            raise ConfigurationError.for_value(
                "config", config, f"give either config or {sorted(config_fields)}, not both"
            )
        if store is not None and path is not None:
            raise ConfigurationError.for_value("path", path, "give either store or path")
        if model is not None and not isinstance(model, TextModel):
            raise ConfigurationError.for_value(
                "model", model, "must have complete(prompt) and acomplete(prompt)"
            )
        if shorten_attempts < 0:
            raise ConfigurationError.for_value("shorten_attempts", shorten_attempts, "must be >= 0")
        self.session_id = session_id
        self.namespace = namespace
        self.config = config or MemoryConfig(**config_fields)
        self.counter = counter or TokenCounter(tokenizer_model)
        self.model = model
        self.retry = retry or RetryPolicy()
        self.shorten_attempts = shorten_attempts
        self.store = store if store is not None else MemoryStore.persistent(path)
        self._extractive = ExtractiveSummarizer(self.counter)
        self._health = _Health()
        if model is None:
            logger.info(
                "session %r: no summary model configured; folds use the extractive "
                "summarizer (no LLM calls)",
                session_id,
            )

    def __repr__(self) -> str:
        return (
            f"RecursiveMemory(session_id={self.session_id!r}, namespace={self.namespace!r}, "
            f"model={self.model!r}, max_tokens={self.config.max_tokens})"
        )

    @property
    def last_fold_error(self) -> Exception | None:
        """The error of the last failed fold, or None if the last fold succeeded."""
        return self._health.last_error

    # -- steps (the one logic) --------------------------------------------------------------

    def _add_steps(self, turns: Sequence[Turn], fold: bool) -> Steps[list[StoredTurn]]:
        items = list(turns)
        counts = [self.counter.count_turn(t) for t in items]
        enc = self.counter.encoding_name
        stored: list[StoredTurn] = yield _Io(
            lambda: self.store.append(self.namespace, self.session_id, items, counts, enc)
        )
        if fold:
            yield from self._fold_steps(force=False, from_add=True)
        return stored

    def _fold_steps(self, force: bool, from_add: bool) -> Steps[FoldResult]:
        health = self._health
        if from_add and time.monotonic() < health.retry_at:
            return FoldResult(skipped="cooldown", error=health.last_error)
        if not health.lock.acquire(blocking=False):
            return FoldResult(skipped="busy")
        versions = folded = 0
        summary: Summary | None = None
        try:
            for _ in range(5):  # reloads after losing a compare-and-set to another writer
                state: SessionState = yield _Io(
                    lambda: self.store.load(self.namespace, self.session_id)
                )
                summary = state.summary
                plan = plan_fold(state.turns, self.config, self.counter, force=force)
                if plan is None:
                    break
                repair = state.repair_ids
                lost = False
                for chunk in plan.chunks:
                    text, method = yield from self._summarize_steps(summary, chunk)
                    new = Summary(
                        namespace=self.namespace,
                        session_id=self.session_id,
                        version=(summary.version if summary else 0) + 1,
                        text=text,
                        tokens=self.counter.count_text(text),
                        turn_ids=tuple(t.id for t in chunk),
                        first_turn_id=summary.first_turn_id if summary else chunk[0].id,
                        last_turn_id=chunk[-1].id,
                        covered=(summary.covered if summary else 0) + len(chunk),
                        method=method,
                    )
                    won: bool = yield _Io(partial(self.store.commit_summary, new, repair))
                    if not won:
                        lost = True
                        break
                    summary, repair = new, ()
                    versions += 1
                    folded += len(chunk)
                if not lost:
                    break
                force = False
        except (ModelError, StoreError) as exc:
            health.failures += 1
            health.last_error = exc
            health.retry_at = time.monotonic() + self.retry.cooldown_after(health.failures)
            logger.warning(
                "session %r: fold failed (%s); the messages stay unfolded in the log and the "
                "fold is retried later",
                self.session_id,
                exc,
            )
            if not from_add:
                raise
            return FoldResult(versions, folded, summary, error=exc)
        finally:
            health.lock.release()
        health.failures = 0
        health.last_error = None
        health.retry_at = 0.0
        return FoldResult(versions, folded, summary)

    def _summarize_steps(
        self, previous: Summary | None, chunk: Sequence[StoredTurn]
    ) -> Steps[tuple[str, str]]:
        cap = self.config.max_summary_tokens
        turns = [s.turn for s in chunk]
        prev_text = previous.text if previous else None
        if self.model is None:
            return self._extractive.summarize(prev_text, turns, cap=cap), "extractive"
        prompt = summary_prompt(
            prev_text,
            turns,
            cap=cap,
            counter=self.counter,
            max_message_tokens=self.config.max_prompt_message_tokens,
        )
        text: str = yield _Llm(prompt, clean_summary)
        for _ in range(self.shorten_attempts):
            if self.counter.count_text(text) <= cap:
                break
            try:
                text = yield _Llm(shorten_prompt(text, cap=cap), clean_summary)
            except ModelError:
                break  # keep the long answer; it is truncated below
        if self.counter.count_text(text) > cap:
            text = self.counter.truncate(text, cap)
        return text, "llm"

    def _context_steps(self) -> Steps[Context]:
        state: SessionState = yield _Io(lambda: self.store.load(self.namespace, self.session_id))
        return self.build_context(state)

    def build_context(self, state: SessionState) -> Context:
        """Return the context for a loaded state (pure: no I/O).

        The summary message comes first, then the newest whole units of messages that fit
        ``max_tokens``; older unfolded messages are counted in ``hidden``.
        """
        cfg = self.config
        summary_turn: Turn | None = None
        summary_tokens = 0
        summary = state.summary
        if summary is not None and summary.text:
            text = summary.text
            if summary.tokens > cfg.max_summary_tokens:  # written under a larger cap
                text = self.counter.truncate(text, cfg.max_summary_tokens)
            summary_turn = Turn(
                role=cfg.summary_role,
                text=f"{cfg.summary_prefix}\n{text}" if cfg.summary_prefix else text,
                id=f"summary-v{summary.version}",
                created_at=summary.created_at,
                extra={"lrm_kind": "summary", "lrm_version": summary.version},
            )
            summary_tokens = self.counter.count_turn(summary_turn)
        available = cfg.max_tokens - REPLY_PRIMING_TOKENS - summary_tokens
        units, costs = window_units(state.turns, self.counter)
        window = select_suffix(units, costs, available)
        cost_of = {
            id(s): c
            for unit, cs in zip(units, costs, strict=True)
            for s, c in zip(unit, cs, strict=True)
        }
        tokens = REPLY_PRIMING_TOKENS + summary_tokens + sum(cost_of[id(s)] for s in window)
        return Context(
            summary=summary,
            summary_turn=summary_turn,
            window=tuple(s.turn for s in window),
            tokens=tokens,
            max_tokens=cfg.max_tokens,
            hidden=len(state.turns) - len(window),
        )

    # -- shells -----------------------------------------------------------------------------

    def _run(self, steps: Steps[R]) -> R:
        send: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = steps.throw(error) if error is not None else steps.send(send)
            except StopIteration as stop:
                return cast(R, stop.value)
            send, error = None, None
            try:
                send = effect.fn() if isinstance(effect, _Io) else self._complete(effect)
            except Exception as exc:  # handed to the step, which decides
                error = exc

    async def _arun(self, steps: Steps[R]) -> R:
        send: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = steps.throw(error) if error is not None else steps.send(send)
            except StopIteration as stop:
                return cast(R, stop.value)
            send, error = None, None
            try:
                if isinstance(effect, _Io):
                    send = await asyncio.to_thread(effect.fn)
                else:
                    send = await self._acomplete(effect)
            except Exception as exc:
                error = exc

    def _complete(self, effect: _Llm) -> Any:
        model = self.model
        assert model is not None
        delays = list(self.retry.delays())
        last: Exception | None = None
        for attempt in range(self.retry.attempts):
            try:
                answer = call_with_timeout(
                    lambda: model.complete(effect.prompt), self.retry.timeout, "summary model"
                )
                return effect.parse(answer)
            except Exception as exc:
                last = exc
                logger.info("summary model attempt %d failed: %s", attempt + 1, exc)
                if attempt < len(delays):
                    time.sleep(delays[attempt])
        raise _model_error(last, self.retry.attempts)

    async def _acomplete(self, effect: _Llm) -> Any:
        model = self.model
        assert model is not None
        delays = list(self.retry.delays())
        last: Exception | None = None
        for attempt in range(self.retry.attempts):
            try:
                answer = await acall_with_timeout(
                    model.acomplete(effect.prompt), self.retry.timeout, "summary model"
                )
                return effect.parse(answer)
            except Exception as exc:
                last = exc
                logger.info("summary model attempt %d failed: %s", attempt + 1, exc)
                if attempt < len(delays):
                    await asyncio.sleep(delays[attempt])
        raise _model_error(last, self.retry.attempts)

    # -- public API: sync and async twins ---------------------------------------------------

    def add(self, turns: Turn | Sequence[Turn], *, fold: bool = True) -> list[StoredTurn]:
        """Store turns durably, then fold if the window is over budget.

        Args:
            turns: One turn or several, in conversation order.
            fold: Fold now if due (default). A failed fold is logged and retried later; it
                never fails ``add``.

        Returns:
            The stored turns (with ids and order keys).

        Raises:
            StoreError: When the turns could not be stored (nothing was stored).
        """
        return self._run(self._add_steps(_as_list(turns), fold))

    async def aadd(self, turns: Turn | Sequence[Turn], *, fold: bool = True) -> list[StoredTurn]:
        """Async twin of :meth:`add`."""
        return await self._arun(self._add_steps(_as_list(turns), fold))

    def fold(self, *, force: bool = False) -> FoldResult:
        """Fold now if due (or unconditionally with ``force``), ignoring any cool-down.

        Raises:
            ModelError: When the summary model failed after its retries.
            StoreError: When Chroma failed.
        """
        return self._run(self._fold_steps(force=force, from_add=False))

    async def afold(self, *, force: bool = False) -> FoldResult:
        """Async twin of :meth:`fold`."""
        return await self._arun(self._fold_steps(force=force, from_add=False))

    def context(self) -> Context:
        """Return the summary and window within ``max_tokens`` (reads the store)."""
        return self._run(self._context_steps())

    async def acontext(self) -> Context:
        """Async twin of :meth:`context`."""
        return await self._arun(self._context_steps())

    def summary(self) -> Summary | None:
        """Return the latest summary version, or None."""
        return self.store.latest_summary(self.namespace, self.session_id)

    async def asummary(self) -> Summary | None:
        """Async twin of :meth:`summary`."""
        return await asyncio.to_thread(self.summary)

    def turns(self) -> list[StoredTurn]:
        """Return the whole turn log of the session, oldest first."""
        return self.store.turns(self.namespace, self.session_id)

    async def aturns(self) -> list[StoredTurn]:
        """Async twin of :meth:`turns`."""
        return await asyncio.to_thread(self.turns)

    def clear(self) -> None:
        """Delete the session's turns and summaries from the store."""
        self.store.clear(self.namespace, self.session_id)
        self._health = _Health()

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await asyncio.to_thread(self.clear)


def _as_list(turns: Turn | Sequence[Turn]) -> list[Turn]:
    if isinstance(turns, Turn):
        return [turns]
    items = list(turns)
    for item in items:
        if not isinstance(item, Turn):
            from .errors import InvalidInputError

            raise InvalidInputError.for_value("turn", item, "must be a Turn")
    return items


def _model_error(last: Exception | None, attempts: int) -> ModelError:
    if isinstance(last, ModelError):
        return type(last)(f"{last} (after {attempts} attempts)")
    return ModelError(f"the summary model failed after {attempts} attempts: {last!r}")
