"""One logic, two shells: steps yield effects; a sync and an async driver perform them.

The memories' operations (add, fold, recall, retrieve...) are written once, as generators
that *yield* the I/O they need and receive its result:

* :class:`_Io` - a blocking store call (run directly, or in a worker thread when async);
* :class:`_Llm` - a model call with a parser (a parse failure counts as a failed attempt);
* :class:`_Embed` - an embedding call;
* :class:`_Gather` - several effects at once (sequential when sync, concurrent when async).

:class:`EffectRunner` drives them: ``_run(steps)`` with blocking calls, ``await
_arun(steps)`` with ``await``. Model and embedding calls get the retry policy's timeout and
bounded exponential backoff; their final failure is thrown into the step as a
``ModelError`` / ``EmbeddingError``, which the step handles or lets through.

Example:
    >>> from langchain_recursive_memory.core.effects import EffectRunner, _Io
    >>> def steps():
    ...     value = yield _Io(lambda: 20)
    ...     return value + 1
    >>> EffectRunner()._run(steps())
    21
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from .errors import EmbeddingError, ModelError
from .models import Embedder, TextModel, check_vectors
from .runtime.retry import RetryPolicy, acall_with_timeout, call_with_timeout
from .tokenizer import TokenCounter
from .usage import Usage

__all__ = ["EffectRunner", "Steps"]

logger = logging.getLogger("langchain_recursive_memory")

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class _Io:
    """A blocking store call (run directly, or in a worker thread by the async shell)."""

    fn: Callable[[], Any]


@dataclass(frozen=True, slots=True)
class _Llm:
    """A model call; ``parse`` validates the answer (a failure counts as a failed attempt).

    ``purpose`` labels the call in the upkeep accounting (``"fold"``, ``"facts"``...).
    """

    prompt: str
    parse: Callable[[object], Any]
    purpose: str = "fold"


@dataclass(frozen=True, slots=True)
class _Embed:
    """An embedding call: documents, or one query (``query=True``)."""

    texts: tuple[str, ...]
    query: bool = False


@dataclass(frozen=True, slots=True)
class _Gather:
    """Several effects at once.

    The result is the list of their results, or of the exceptions they raised, in order.
    """

    effects: tuple[_Io | _Llm | _Embed, ...]


Effect = _Io | _Llm | _Embed | _Gather
Steps = Generator[Effect, Any, R]


class EffectRunner:
    """Performs the effects of steps, synchronously or asynchronously.

    Subclasses set ``model`` (a :class:`~.models.TextModel` or None), ``embedder``,
    ``retry`` and, optionally, ``embed_batch_size`` (texts per embedding call, default 64).
    """

    model: TextModel | None = None
    embedder: Embedder | None = None
    retry: RetryPolicy = RetryPolicy()
    embed_batch_size: int = 64
    """Texts per embedding call; each call gets the retry policy's timeout."""
    _usage_lock: threading.Lock | None = None
    _usage_acc: dict[str, Usage] | None = None

    # -- upkeep accounting ------------------------------------------------------------------

    def _account(self, purpose: str, prompt: str, answer: object | None) -> None:
        """Add one model call to this runner's pending usage."""
        if self._usage_lock is None:
            self._usage_lock = threading.Lock()
        with self._usage_lock:
            if self._usage_acc is None:
                self._usage_acc = {}
            usage = self._usage_acc.setdefault(purpose, Usage())
            if answer is None:
                usage.failed_calls += 1
                return
            text = answer if isinstance(answer, str) else str(answer)
            reported_in = getattr(answer, "input_tokens", None)
            reported_out = getattr(answer, "output_tokens", None)
            counter = self._usage_counter()
            usage.calls += 1
            if isinstance(reported_in, int) and isinstance(reported_out, int):
                usage.reported_calls += 1
                usage.input_tokens += reported_in
                usage.output_tokens += reported_out
            else:
                usage.input_tokens += counter.count_text(prompt)
                usage.output_tokens += counter.count_text(text)

    def _usage_counter(self) -> TokenCounter:
        counter = getattr(self, "counter", None)
        if isinstance(counter, TokenCounter):
            return counter
        return TokenCounter()

    def _take_usage(self) -> dict[str, Usage]:
        if self._usage_lock is None:
            return {}
        with self._usage_lock:
            taken, self._usage_acc = self._usage_acc or {}, {}
        return taken

    def _emit_usage(self, usage: dict[str, Usage]) -> None:
        """Called after each run with what its model calls spent (override to record it)."""

    # -- drivers ----------------------------------------------------------------------------

    def _run(self, steps: Steps[R]) -> R:
        try:
            return self._drive(steps)
        except BaseException:
            steps.close()  # run the step's finally blocks now (locks), not at GC time
            raise
        finally:
            self._flush_usage()

    def _flush_usage(self) -> None:
        usage = self._take_usage()
        if usage:
            try:
                self._emit_usage(usage)
            except Exception as exc:  # accounting never breaks an operation
                logger.warning("upkeep usage not recorded: %s", exc)

    def _drive(self, steps: Steps[R]) -> R:
        send: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = steps.throw(error) if error is not None else steps.send(send)
            except StopIteration as stop:
                return cast(R, stop.value)
            send, error = None, None
            try:
                if isinstance(effect, _Gather):
                    send = [self._perform_captured(e) for e in effect.effects]
                else:
                    send = self._perform(effect)
            except Exception as exc:  # handed to the step, which decides
                error = exc

    async def _arun(self, steps: Steps[R]) -> R:
        try:
            return await self._adrive(steps)
        except BaseException:
            steps.close()  # cancellation included: release the step's locks at once
            raise
        finally:
            if self._usage_acc:
                await asyncio.to_thread(self._flush_usage)

    async def _adrive(self, steps: Steps[R]) -> R:
        send: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = steps.throw(error) if error is not None else steps.send(send)
            except StopIteration as stop:
                return cast(R, stop.value)
            send, error = None, None
            try:
                if isinstance(effect, _Gather):
                    send = list(
                        await asyncio.gather(
                            *(self._aperform(e) for e in effect.effects), return_exceptions=True
                        )
                    )
                else:
                    send = await self._aperform(effect)
            except Exception as exc:
                error = exc

    def _perform_captured(self, effect: _Io | _Llm | _Embed) -> Any:
        try:
            return self._perform(effect)
        except Exception as exc:
            return exc

    def _perform(self, effect: _Io | _Llm | _Embed) -> Any:
        if isinstance(effect, _Io):
            return effect.fn()
        if isinstance(effect, _Llm):
            return self._complete(effect)
        return self._embed(effect)

    async def _aperform(self, effect: _Io | _Llm | _Embed) -> Any:
        if isinstance(effect, _Io):
            return await asyncio.to_thread(effect.fn)
        if isinstance(effect, _Llm):
            return await self._acomplete(effect)
        return await self._aembed(effect)

    # -- model calls ------------------------------------------------------------------------

    def _complete(self, effect: _Llm) -> Any:
        model = self.model
        if model is None:
            raise ModelError("no model is configured for this call")
        delays = list(self.retry.delays())
        last: Exception | None = None
        for attempt in range(self.retry.attempts):
            try:
                answer = call_with_timeout(
                    lambda: model.complete(effect.prompt), self.retry.timeout, "model"
                )
                parsed = effect.parse(answer)
                self._account(effect.purpose, effect.prompt, answer)
                return parsed
            except Exception as exc:
                self._account(effect.purpose, effect.prompt, None)
                last = exc
                logger.info("model attempt %d failed: %s", attempt + 1, exc)
                if attempt < len(delays):
                    time.sleep(delays[attempt])
        raise _model_error(last, self.retry.attempts)

    async def _acomplete(self, effect: _Llm) -> Any:
        model = self.model
        if model is None:
            raise ModelError("no model is configured for this call")
        delays = list(self.retry.delays())
        last: Exception | None = None
        for attempt in range(self.retry.attempts):
            try:
                answer = await acall_with_timeout(
                    model.acomplete(effect.prompt), self.retry.timeout, "model"
                )
                parsed = effect.parse(answer)
                self._account(effect.purpose, effect.prompt, answer)
                return parsed
            except Exception as exc:
                self._account(effect.purpose, effect.prompt, None)
                last = exc
                logger.info("model attempt %d failed: %s", attempt + 1, exc)
                if attempt < len(delays):
                    await asyncio.sleep(delays[attempt])
        raise _model_error(last, self.retry.attempts)

    # -- embedding calls --------------------------------------------------------------------

    def _embed_call(self, effect: _Embed) -> Callable[[], Any]:
        embedder = self.embedder
        if embedder is None:
            raise EmbeddingError("no embedder is configured for this call")
        if effect.query:
            return lambda: [embedder.embed_query(effect.texts[0])]
        return lambda: embedder.embed_documents(list(effect.texts))

    def _embed(self, effect: _Embed) -> Any:
        if effect.query or len(effect.texts) <= self.embed_batch_size:
            return self._embed_batch(effect)
        vectors: list[list[float]] = []
        for part in _batches(effect.texts, self.embed_batch_size):
            vectors.extend(self._embed_batch(_Embed(part)))
        return vectors

    def _embed_batch(self, effect: _Embed) -> Any:
        delays = list(self.retry.delays())
        last: Exception | None = None
        for attempt in range(self.retry.attempts):
            try:
                raw = call_with_timeout(self._embed_call(effect), self.retry.timeout, "embedder")
                return _embedded(effect, raw)
            except Exception as exc:
                last = exc
                if attempt < len(delays):
                    time.sleep(delays[attempt])
        raise _embedding_error(last, self.retry.attempts)

    async def _aembed(self, effect: _Embed) -> Any:
        if effect.query or len(effect.texts) <= self.embed_batch_size:
            return await self._aembed_batch(effect)
        vectors: list[list[float]] = []
        for part in _batches(effect.texts, self.embed_batch_size):
            vectors.extend(await self._aembed_batch(_Embed(part)))
        return vectors

    async def _aembed_batch(self, effect: _Embed) -> Any:
        embedder = self.embedder
        if embedder is None:
            raise EmbeddingError("no embedder is configured for this call")
        delays = list(self.retry.delays())
        last: Exception | None = None
        for attempt in range(self.retry.attempts):
            try:
                if effect.query and hasattr(embedder, "aembed_query"):
                    coro = embedder.aembed_query(effect.texts[0])
                    raw = [await acall_with_timeout(coro, self.retry.timeout, "embedder")]
                elif not effect.query and hasattr(embedder, "aembed_documents"):
                    coro = embedder.aembed_documents(list(effect.texts))
                    raw = await acall_with_timeout(coro, self.retry.timeout, "embedder")
                else:
                    raw = await acall_with_timeout(
                        asyncio.to_thread(self._embed_call(effect)), self.retry.timeout, "embedder"
                    )
                return _embedded(effect, raw)
            except Exception as exc:
                last = exc
                if attempt < len(delays):
                    await asyncio.sleep(delays[attempt])
        raise _embedding_error(last, self.retry.attempts)


def _batches(texts: tuple[str, ...], size: int) -> list[tuple[str, ...]]:
    return [texts[i : i + size] for i in range(0, len(texts), size)]


def gathered(results: Sequence[Any]) -> list[Any]:
    """Return the results of a :class:`_Gather`, raising the first exception among them."""
    for item in results:
        if isinstance(item, BaseException):
            raise item
    return list(results)


def _embedded(effect: _Embed, raw: Any) -> Any:
    vectors = check_vectors(raw, len(effect.texts))
    return vectors[0] if effect.query else vectors


def _model_error(last: Exception | None, attempts: int) -> ModelError:
    if isinstance(last, ModelError):
        return type(last)(f"{last} (after {attempts} attempts)")
    return ModelError(f"the model failed after {attempts} attempts: {last!r}")


def _embedding_error(last: Exception | None, attempts: int) -> EmbeddingError:
    if isinstance(last, EmbeddingError):
        return EmbeddingError(f"{last} (after {attempts} attempts)")
    return EmbeddingError(f"the embedder failed after {attempts} attempts: {last!r}")
