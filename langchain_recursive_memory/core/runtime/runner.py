"""The runner the engines hold: performs their effects, synchronously or with ``await``.

``run(steps)`` drives a generator of effects with blocking calls, ``await arun(steps)``
with ``await``: model and embedding calls get the retry policy's timeout and bounded
backoff (one retry decision, :class:`~.retry.Retrying`, for both shells). A call's final
failure is thrown into the step as a :class:`~..errors.ModelError` /
:class:`~..errors.EmbeddingError` chained to its cause; the step handles it or lets it
through.

**Store calls and the stack.** The sync runner lets the step make its store call itself
(:data:`~.effects.INLINE`), so the stack at a store call, in a traceback, a profiler or a
debugger, reads ``add -> Runner.run -> _add_steps -> _append_steps -> store_call ->
SessionTurns.append -> TurnLog.write -> StoreClient.call``: the step that asked, and its
callers, above the store's frames. (Before, the runner made the call itself, so a profile
showed ``Runner.run -> _perform -> store method`` with the step a suspended generator; a
traceback named the step only because the failure was thrown back into it.) The async
runner still makes store calls in a worker thread, which is why they stay effects: a
blocking Chroma call must not stall the event loop. Model and embedding calls stay with
the runner, which owns what they share: retries, the repair prompt, accounting.

A model call whose answer its parser cannot use is asked once more with a repair prompt
that quotes the answer and the parser's error (:func:`~.repair.repair_prompt`), not the
identical prompt; a second unusable answer is the call's final error. A call whose parser
carries a JSON schema (:class:`~..models.WithSchema`) is asked for schema-shaped JSON when
the model offers it (:func:`~..models.offers_json`), for the text prompt otherwise.

What each run's model calls spent is handed to ``on_usage`` when the run ends, failed calls
included: an unusable answer counts its tokens, a call that timed out its prompt's.

Example:
    >>> from langchain_recursive_memory.core import FunctionTextModel
    >>> from langchain_recursive_memory.core.runtime import Runner, complete
    >>> def steps():
    ...     answer = yield from complete("say hi", str.upper)
    ...     return answer
    >>> Runner(model=FunctionTextModel(lambda prompt: "hi")).run(steps())
    'HI'
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Generic, TypeVar, cast

from sqlalchemy.util.concurrency import greenlet_spawn

from ..errors import EmbeddingError, ModelError, ModelOutputError, ModelTimeoutError
from ..models import Embedder, TextModel, check_vectors, offers_json
from ..tokenizer import TokenCounter
from ..usage import Usage
from .effects import INLINE, Effect, EmbedCall, Gather, ModelCall, Steps, StoreCall, store_call
from .repair import repair_prompt
from .retry import Retrying, RetryPolicy, acall_with_timeout, call_with_timeout

__all__ = ["DEFAULT_EMBED_BATCH", "Runner"]

logger = logging.getLogger("langchain_recursive_memory")

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_EMBED_BATCH = 64
"""Texts per embedding call; each call gets the retry policy's timeout."""


class _Spend:
    """What one run's model calls spent, per purpose (failed calls included)."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.by_purpose: dict[str, Usage] = {}

    def _usage(self, purpose: str) -> Usage:
        return self.by_purpose.setdefault(purpose, Usage())

    @contextmanager
    def counting(self, purpose: str, prompt: str) -> Iterator[None]:
        """Count a failed call when the block raises (a timed-out one with its prompt)."""
        try:
            yield
        except Exception as exc:
            usage = self._usage(purpose)
            usage.failed_calls += 1
            if isinstance(exc, ModelTimeoutError):  # the provider was working on it
                usage.input_tokens += self.counter.count_text(prompt)
            raise

    def _tokens(self, usage: Usage, prompt: str, answer: str) -> bool:
        """Add the call's tokens (the provider's numbers when reported); whether reported."""
        reported_in = getattr(answer, "input_tokens", None)
        reported_out = getattr(answer, "output_tokens", None)
        if isinstance(reported_in, int) and isinstance(reported_out, int):
            usage.input_tokens += reported_in
            usage.output_tokens += reported_out
            return True
        usage.input_tokens += self.counter.count_text(prompt)
        usage.output_tokens += self.counter.count_text(str(answer))
        return False

    def answered(self, purpose: str, prompt: str, answer: str) -> None:
        """Count a call whose answer was used."""
        usage = self._usage(purpose)
        usage.calls += 1
        usage.reported_calls += self._tokens(usage, prompt, answer)

    def unusable(self, purpose: str, prompt: str, answer: str) -> None:
        """Count a call whose answer could not be used (a failed call, its tokens spent)."""
        usage = self._usage(purpose)
        usage.failed_calls += 1
        self._tokens(usage, prompt, answer)


class _Attempts(Generic[T]):
    """The attempts of one model call: its prompt, then once a repair prompt.

    An answer the parser cannot use is counted, and the next attempt sends
    :func:`~.repair.repair_prompt` (the answer and the error quoted); a second unusable
    answer is not retried (:meth:`retryable`). Failures of the call itself (an error, a
    timeout) are retried with the prompt as it is.
    """

    def __init__(self, call: ModelCall[T], spend: _Spend) -> None:
        self.call = call
        self.spend = spend
        self.prompt = call.prompt
        self.schema = getattr(call.parse, "schema", None)
        self.repaired = False
        self.final: Exception | None = None

    def ask(self, model: TextModel) -> Callable[[], str]:
        """The blocking request of this attempt (structured output when offered)."""
        prompt, schema = self.prompt, self.schema
        if schema is not None and offers_json(model):
            return lambda: model.complete_json(prompt, schema)
        return lambda: model.complete(prompt)

    def aask(self, model: TextModel) -> Awaitable[str]:
        """The awaitable request of this attempt (structured output when offered)."""
        if self.schema is not None and offers_json(model):
            return model.acomplete_json(self.prompt, self.schema)
        return model.acomplete(self.prompt)

    def parsed(self, answer: str) -> T:
        """The parsed answer, counted as used; an unusable one sets up the repair."""
        purpose, prompt = self.call.purpose, self.prompt
        try:
            value = self.call.parse(answer)
        except Exception as exc:
            self.spend.unusable(purpose, prompt, answer)
            error = exc if isinstance(exc, ModelError) else ModelOutputError(f"unusable: {exc}")
            if self.repaired:
                self.final = error
            else:
                self.prompt = repair_prompt(self.call.prompt, str(answer), str(exc))
                self.repaired = True
            raise error from exc
        self.spend.answered(purpose, prompt, answer)
        return value

    def retryable(self, exc: Exception) -> bool:
        """Whether another attempt may follow ``exc`` (not after a repaired answer failed)."""
        return exc is not self.final


class _Drive:
    """One run of steps: what is sent in next (a result or an error), and the outcome."""

    def __init__(self, steps: Steps[Any]) -> None:
        self.steps = steps
        self.send: Any = None
        self.error: Exception | None = None
        self.value: Any = None
        self.done = False

    def next(self) -> Effect | None:
        """Resume the steps with the last result or error; their next effect, or None."""
        try:
            if self.error is not None:
                effect = self.steps.throw(self.error)
            else:
                effect = self.steps.send(self.send)
        except StopIteration as stop:
            self.value, self.done = stop.value, True
            return None
        self.send, self.error = None, None
        return effect

    def close(self) -> None:
        """Run the steps' ``finally`` blocks now (locks) when they did not finish."""
        if not self.done:
            self.steps.close()


class Runner:
    """Performs the effects of steps for one engine.

    Args:
        model: The model of :class:`~.effects.ModelCall` effects (None: such a call fails).
        embedder: The embedder of :class:`~.effects.EmbedCall` effects.
        retry: Attempts, delays and timeout of model and embedding calls.
        counter: Counts prompt and answer tokens the provider did not report.
        on_usage: Called after each run whose model calls spent something.
        embed_batch_size: Texts per embedding call.
    """

    def __init__(
        self,
        *,
        model: TextModel | None = None,
        embedder: Embedder | None = None,
        retry: RetryPolicy | None = None,
        counter: TokenCounter | None = None,
        on_usage: Callable[[dict[str, Usage]], None] | None = None,
        embed_batch_size: int = DEFAULT_EMBED_BATCH,
    ) -> None:
        self.model = model
        self.embedder = embedder
        self.retry = retry or RetryPolicy()
        self.counter = counter or TokenCounter()
        self.on_usage = on_usage
        self.embed_batch_size = embed_batch_size

    # -- drivers ----------------------------------------------------------------------------

    def run(self, steps: Steps[R]) -> R:
        """Drive ``steps`` with blocking calls and return their result."""
        drive, spend = _Drive(steps), _Spend(self.counter)
        try:
            while (effect := drive.next()) is not None:
                try:
                    if isinstance(effect, Gather):
                        drive.send = [self._captured(call, spend) for call in effect.calls]
                    else:
                        drive.send = self._perform(effect, spend)
                except Exception as exc:  # handed to the step, which decides
                    drive.error = exc
            return cast(R, drive.value)
        finally:
            drive.close()
            self._report(spend)

    async def arun(self, steps: Steps[R]) -> R:
        """Drive ``steps`` with ``await`` and return their result."""
        drive, spend = _Drive(steps), _Spend(self.counter)
        try:
            while (effect := drive.next()) is not None:
                try:
                    if isinstance(effect, Gather):
                        calls = (self._acomplete(call, spend) for call in effect.calls)
                        drive.send = list(await asyncio.gather(*calls, return_exceptions=True))
                    else:
                        drive.send = await self._aperform(effect, spend)
                except Exception as exc:
                    drive.error = exc
            return cast(R, drive.value)
        finally:
            drive.close()  # cancellation included: release the step's locks at once
            if spend.by_purpose:
                await asyncio.to_thread(self._report, spend)

    def call(self, fn: Callable[..., R], /, *args: Any) -> R:
        """One store call, ``fn(*args)``, made as :meth:`run` makes a step's."""
        return self.run(store_call(fn, *args))

    async def acall(self, fn: Callable[..., R], /, *args: Any) -> R:
        """Async twin of :meth:`call` (in a worker thread, or on the loop: :func:`on_loop`)."""
        return await self.arun(store_call(fn, *args))

    def _report(self, spend: _Spend) -> None:
        if not spend.by_purpose or self.on_usage is None:
            return
        try:
            self.on_usage(spend.by_purpose)
        except Exception as exc:  # accounting never breaks an operation
            logger.warning("upkeep usage not recorded: %s", exc)

    def _captured(self, call: ModelCall[Any], spend: _Spend) -> Any:
        try:
            return self._complete(call, spend)
        except Exception as exc:
            return exc

    def _perform(self, effect: StoreCall[Any] | ModelCall[Any] | EmbedCall, spend: _Spend) -> Any:
        if isinstance(effect, StoreCall):
            return INLINE  # the step makes the call in its own frame
        if isinstance(effect, ModelCall):
            return self._complete(effect, spend)
        return self._embed(effect)

    async def _aperform(
        self, effect: StoreCall[Any] | ModelCall[Any] | EmbedCall, spend: _Spend
    ) -> Any:
        if isinstance(effect, StoreCall):
            if effect.on_loop:  # the database's async driver awaits on this loop
                return await greenlet_spawn(effect.fn)
            return await asyncio.to_thread(effect.fn)
        if isinstance(effect, ModelCall):
            return await self._acomplete(effect, spend)
        return await self._aembed(effect)

    # -- the one retry path, in its two shells ----------------------------------------------

    def _retried(self, attempt: Callable[[], T], retrying: Retrying, what: str) -> T:
        while True:
            try:
                return attempt()
            except Exception as exc:
                delay = retrying.failed(exc)  # raises the final error when none is left
                logger.info("%s attempt %d failed: %s", what, retrying.attempt, exc)
                time.sleep(delay)

    async def _aretried(
        self, attempt: Callable[[], Awaitable[T]], retrying: Retrying, what: str
    ) -> T:
        while True:
            try:
                return await attempt()
            except Exception as exc:
                delay = retrying.failed(exc)
                logger.info("%s attempt %d failed: %s", what, retrying.attempt, exc)
                await asyncio.sleep(delay)

    # -- model calls ------------------------------------------------------------------------

    def _require_model(self) -> TextModel:
        if self.model is None:
            raise ModelError("no model is configured for this call")
        return self.model

    def _complete(self, call: ModelCall[T], spend: _Spend) -> T:
        model = self._require_model()
        attempts = _Attempts(call, spend)

        def attempt() -> T:
            with spend.counting(call.purpose, attempts.prompt):
                answer = call_with_timeout(attempts.ask(model), self.retry.timeout, "model")
            return attempts.parsed(answer)

        retrying = Retrying(self.retry, model_error, attempts.retryable)
        return self._retried(attempt, retrying, "model")

    async def _acomplete(self, call: ModelCall[T], spend: _Spend) -> T:
        model = self._require_model()
        attempts = _Attempts(call, spend)

        async def attempt() -> T:
            with spend.counting(call.purpose, attempts.prompt):
                answer = await acall_with_timeout(attempts.aask(model), self.retry.timeout, "model")
            return attempts.parsed(answer)

        retrying = Retrying(self.retry, model_error, attempts.retryable)
        return await self._aretried(attempt, retrying, "model")

    # -- embedding calls --------------------------------------------------------------------

    def _require_embedder(self) -> Embedder:
        if self.embedder is None:
            raise EmbeddingError("no embedder is configured for this call")
        return self.embedder

    def _batches(self, effect: EmbedCall) -> list[tuple[str, ...]]:
        size = self.embed_batch_size
        if effect.query or len(effect.texts) <= size:
            return [effect.texts]
        return [effect.texts[i : i + size] for i in range(0, len(effect.texts), size)]

    def _embed(self, effect: EmbedCall) -> Any:
        embedder = self._require_embedder()
        vectors: list[list[float]] = []
        for part in self._batches(effect):

            def attempt(part: tuple[str, ...] = part) -> list[list[float]]:
                raw = call_with_timeout(
                    lambda: _embed_raw(embedder, part, effect.query), self.retry.timeout, "embedder"
                )
                return check_vectors(raw, len(part))

            retrying = Retrying(self.retry, embedding_error)
            vectors.extend(self._retried(attempt, retrying, "embedder"))
        return vectors[0] if effect.query else vectors

    async def _aembed(self, effect: EmbedCall) -> Any:
        embedder = self._require_embedder()
        vectors: list[list[float]] = []
        for part in self._batches(effect):

            async def attempt(part: tuple[str, ...] = part) -> list[list[float]]:
                raw = await acall_with_timeout(
                    _aembed_raw(embedder, part, effect.query), self.retry.timeout, "embedder"
                )
                return check_vectors(raw, len(part))

            retrying = Retrying(self.retry, embedding_error)
            vectors.extend(await self._aretried(attempt, retrying, "embedder"))
        return vectors[0] if effect.query else vectors


def _embed_raw(
    embedder: Embedder, texts: tuple[str, ...], query: bool
) -> Sequence[Sequence[float]]:
    """One embedding call."""
    if query:
        return [embedder.embed_query(texts[0])]
    return embedder.embed_documents(list(texts))


async def _aembed_raw(
    embedder: Embedder, texts: tuple[str, ...], query: bool
) -> Sequence[Sequence[float]]:
    """One embedding call, with the embedder's async methods when it has them."""
    if query:
        aquery = getattr(embedder, "aembed_query", None)
        if aquery is not None:
            return [await aquery(texts[0])]
        return [await asyncio.to_thread(embedder.embed_query, texts[0])]
    adocs = getattr(embedder, "aembed_documents", None)
    if adocs is not None:
        return cast("Sequence[Sequence[float]]", await adocs(list(texts)))
    return await asyncio.to_thread(embedder.embed_documents, list(texts))


def model_error(last: Exception, attempts: int) -> ModelError:
    """The final error of a model call (a ``ModelError`` keeps its kind: timeout, output)."""
    if isinstance(last, ModelError):
        return type(last)(f"{last} (after {attempts} attempts)")
    return ModelError(f"the model failed after {attempts} attempts: {last!r}")


def embedding_error(last: Exception, attempts: int) -> EmbeddingError:
    """The final error of an embedding call."""
    if isinstance(last, EmbeddingError):
        return EmbeddingError(f"{last} (after {attempts} attempts)")
    return EmbeddingError(f"the embedder failed after {attempts} attempts: {last!r}")
