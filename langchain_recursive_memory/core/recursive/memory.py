"""The recursive summary memory (arXiv 2308.15022) and the hybrid memory: the facades.

Recent messages stay verbatim in a window; when the window overflows its budget, its
oldest part is folded into the running summary, ``S_k = LLM(S_{k-1} + overflow)``, and the
context handed to the model is ``summary + window``, bounded however long the conversation.

:class:`HybridMemory` adds what summaries lose: at each fold it extracts atomic facts
(names, numbers, dates, preferences, decisions) into Chroma, and it recalls facts and
archived turns relevant to the current question (BM25 and embeddings, fused), so the
context becomes ``summary + recalled memories + window`` within the same budget.

The work is done by the parts of this package: :mod:`.planner` (when and what to fold),
:mod:`.fold` (the compare-and-set fold), :mod:`.summarize`, :mod:`.derived` (facts and
vectors), :mod:`.recall` and :mod:`.context` (the one context builder). Each operation is
written once, as steps; the sync methods run them with blocking calls, the async twins
(``aadd``, ``afold``, ``arecall``, ``acontext``...) with ``await``.

Guarantees:

* A message is durable in the turn log when ``add`` returns; it is never deleted by a fold.
* A failing summary model (error, timeout, empty answer) never loses a message and is never
  written in as the summary: the fold is abandoned, logged, retried on a later ``add``
  (after a cool-down), and meanwhile the context still fits the budget because only the
  newest messages that fit are shown; the others wait in the log (and stay recallable).
* With no model configured, folds use :class:`~.summarize.ExtractiveSummarizer` (no LLM
  calls): the summary is a rolling extract of the latest folded messages.
* The summary and its cutoff are persisted, so a restart resumes with zero LLM calls.
* Concurrent folds of one session are harmless: versions are written compare-and-set.
* Facts and vectors are derived state: a failure writing them is logged and never fails
  ``add``; :meth:`RecursiveMemory.reindex` rebuilds the vectors.

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

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from os import PathLike
from typing import Any

from typing_extensions import Unpack

from ..engine import Engine
from ..errors import ConfigurationError
from ..facts import Fact
from ..models import TextModel
from ..options import MemoryKwargs, MemoryOptions
from ..retrieval.hits import RecallHit
from ..runtime.background import BackgroundFolds
from ..runtime.effects import Steps, store_call
from ..storage import DEFAULT_NAMESPACE, MemoryStore, SessionState, StoredTurn, Summary
from ..tokenizer import TokenCounter
from ..turn import Turn, turn_list
from ..usage import UsageRecord
from ..validation import check_count, check_optional_text, check_tokens, check_when
from .archive import ArchiveIndex
from .context import Context, ContextBuilder
from .derived import DerivedWriter
from .fold import FoldResult, FoldRunner
from .rebuild import Rebuilder
from .recall import KINDS, Recaller, check_kinds, check_scope
from .summarize import FACT_MODES, FactSettings, Summarizer

__all__ = ["CONTEXT_RECALL_K", "HybridMemory", "RecursiveMemory"]

logger = logging.getLogger("langchain_recursive_memory")

CONTEXT_RECALL_K = 12
"""Memories considered for the recall share of ``context(query)`` by default."""


class RecursiveMemory(Engine):
    """Recursive summary memory of one session, on a store.

    Args:
        session_id: The conversation's id (any non-empty string up to 1,024 characters).
        model: The summarizer, any :class:`~..models.TextModel` (a cheaper model than the
            chat model is the usual choice). None: the no-LLM extractive summarizer.
        store: A :class:`~..storage.MemoryStore`. Default: an embedded persistent store at
            ``path`` (or :func:`~..storage.default_path`).
        path: Directory of the default embedded store.
        namespace: Isolates tenants or apps sharing a store (default ``"default"``).
        options: The memory options as a :class:`~..options.MemoryOptions`; or give them
            as keyword arguments (``max_tokens=2000``, ``extract_facts=True``...).
        counter: Token counter; default: ``TokenCounter(tokenizer_model)``.
        shorten_attempts: How many times an over-long summary is sent back to be shortened
            before it is truncated (default 1).
        fact_mode: ``"combined"`` (default: facts come from the summary call itself) or
            ``"separate"`` (a second call per fold).
        fact_attempts: Times a malformed facts answer is asked again before the facts of
            that fold are skipped with a warning (default 2).
        on_usage: Called with a :class:`~..usage.UsageRecord` after each operation that
            called the model (also kept in the store: see :meth:`usage`).
        user_id: The user the conversation belongs to (validated like a session id, within
            the namespace; default None: the session alone). The facts of a user's
            sessions are the user's: extracted in any of them, recalled in all of them, a
            later correction updating the same fact. Fixed once recorded (a different one
            is a ``ConfigurationError``); a memory opened without it on a session that has
            one uses the recorded one.
        **option_values: The options of :class:`~..options.MemoryOptions` (each documented
            there): the budget (``max_tokens``, ``max_summary_tokens``, ``keep_tokens``...
            or a whole ``config``), ``extract_facts``, ``embedder``, ``tokenizer_model``,
            ``retry``, ``background_folds`` (reads during a background fold see the state
            before or after it, always within the budget) and ``recall_scope``.

    Raises:
        ConfigurationError: For invalid budgets or conflicting arguments.
        InvalidInputError: For an invalid session id or namespace.
    """

    _recalls_by_default = False  # the recall share by default (HybridMemory: True)

    def __init__(
        self,
        session_id: str,
        *,
        model: TextModel | None = None,
        store: MemoryStore | None = None,
        path: str | PathLike[str] | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        options: MemoryOptions | None = None,
        counter: TokenCounter | None = None,
        shorten_attempts: int = 1,
        fact_mode: str = "combined",
        fact_attempts: int = 2,
        on_usage: Callable[[UsageRecord], None] | None = None,
        user_id: str | None = None,
        **option_values: Unpack[MemoryKwargs],
    ) -> None:
        _check_settings(shorten_attempts, fact_mode, fact_attempts)
        self.options = _merged(options, option_values)
        self.config = self.options.memory_config(recalls=self._recalls_by_default)
        super().__init__(
            session_id, model=model, store=store, path=path, namespace=namespace,
            retry=self.options.retry, embedder=self.options.embedder, on_usage=on_usage,
            counter=counter or TokenCounter(self.options.tokenizer_model), user_id=user_id,
        )  # fmt: skip
        self.recall_scope = self.options.recall_scope
        self.extract_facts = self.options.extract_facts
        self.fact_mode = fact_mode
        self.background_folds = self.options.background_folds
        self._background = BackgroundFolds()
        self.context_builder = ContextBuilder(self.config, self.counter)
        facts = FactSettings(self.extract_facts, fact_mode, fact_attempts)
        session, models, user = self.session, self.models, self.user
        summarizer = Summarizer(
            session, self.config, self.counter, models, facts=facts,
            shorten_attempts=shorten_attempts,
        )  # fmt: skip
        archive = ArchiveIndex(session)
        derived = DerivedWriter(session, models, user, archive)
        self._fold_runner = FoldRunner(
            session, user, summarizer, derived, archive, config=self.config,
            counter=self.counter, retry=self.retry,
        )  # fmt: skip
        self._recaller = Recaller(
            session, models, user, self.context_builder, derived=derived, archive=archive
        )
        self._rebuilder = Rebuilder(
            session, models, user, summarizer, derived=derived, archive=archive
        )
        self._derived = derived
        self._archive = archive
        if model is None:
            _log_no_model(session_id, self.extract_facts)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(session_id={self.session_id!r}, "
            f"namespace={self.namespace!r}, model={self.model!r}, "
            f"max_tokens={self.config.max_tokens})"
        )

    def settings(self) -> dict[str, str | int | float]:
        """The memory's kind and budget, recorded with the session (see ``lrm show``)."""
        cfg = self.config
        hybrid = self.extract_facts or self.embedder is not None or cfg.recall_tokens > 0
        return {
            "memory": "hybrid" if hybrid else "recursive",
            "max_tokens": cfg.max_tokens,
            "max_summary_tokens": cfg.max_summary_tokens,
            "recall_tokens": cfg.recall_tokens,
        }

    @property
    def window_messages(self) -> int | None:
        """How many messages the window held at this process's last look (no I/O).

        The unfolded messages (and the current question when it is folded already), as
        of this process's last read, add or fold of the session; None when it has not
        looked yet. An estimate: another process may have added or folded since.
        """
        window = self._fold_runner.health.window
        return window[1] if window is not None else None

    @property
    def last_fold_error(self) -> Exception | None:
        """The error of the last failed fold, or None if the last fold succeeded."""
        return self._fold_runner.health.last_error

    def _build_context(
        self, state: SessionState, hits: Sequence[RecallHit] = (), *, reserve: int = 0
    ) -> Context:
        """Return the context of a loaded state and recalled hits (pure: no I/O).

        See :class:`~.context.ContextBuilder`; ``reserve`` tokens of ``max_tokens`` are
        left free for what the caller adds itself.
        """
        return self.context_builder.build(state, hits, reserve=reserve)

    # -- steps ------------------------------------------------------------------------------

    def _add_steps(
        self, turns: Sequence[Turn], fold: bool, reserve: int
    ) -> Steps[list[StoredTurn]]:
        check_tokens("reserve", reserve)
        stored, tokens = yield from self._append_steps(turns)
        self._archive.appended(stored)
        if fold and not self._fold_runner.clearly_not_due(tokens, len(stored), reserve):
            yield from self._fold_runner.fold_steps(
                force=False, from_add=True, reserve=reserve, inline=True
            )
        return stored

    def _context_steps(
        self, query: str | None, k: int | None, reserve: int, now: object = None
    ) -> Steps[Context]:
        check_optional_text("query", query)
        day = check_when("now", now)
        if k is not None:
            check_count("k", k)
        check_tokens("reserve", reserve)
        state = yield from store_call(self.session.records.summaries.load)
        self._fold_runner.observe(state.turns, state.question)
        base = self._build_context(state, reserve=reserve)
        if query is None or not query.strip() or self.config.recall_tokens == 0:
            return base
        yield from self.user.scope_steps(self.recall_scope, "recall_scope")
        exclude = {t.id for t in base.window if t.id is not None}
        hits = yield from self._recaller.recall_steps(
            query,
            k or CONTEXT_RECALL_K,
            KINDS,
            exclude=exclude,
            state=state,
            scope=self.recall_scope,
            now=day,
        )
        return self._build_context(state, hits, reserve=reserve)

    def _recall_steps(
        self, query: str, k: int, kinds: Sequence[str], scope: str | None, now: object = None
    ) -> Steps[list[RecallHit]]:
        chosen = check_kinds(kinds)
        day = check_when("now", now)
        scope = check_scope(scope or self.recall_scope)
        return (yield from self._recaller.recall_steps(query, k, chosen, scope=scope, now=day))

    def _reindex_steps(self) -> Steps[int]:
        yield from self.user_steps()
        records = self.session.records
        turns = yield from store_call(records.turns.all)
        facts = yield from store_call(records.facts.get)
        state = yield from store_call(records.summaries.load)
        shown = self._build_context(state).window
        window = {t.id for t in shown} - {state.question.id if state.question else None}
        archived = [t for t in turns if t.id not in window]
        return (yield from self._derived.index_steps(archived, facts, state, refresh_facts=False))

    def _forget(self) -> None:
        self._fold_runner.health.reset()
        self._recaller.forget()

    # -- public API: sync and async twins ---------------------------------------------------

    def add(
        self, turns: Turn | Sequence[Turn], *, fold: bool = True, reserve: int = 0
    ) -> list[StoredTurn]:
        """Store turns durably, then fold if the window is over budget.

        With ``background_folds=True`` the fold runs on a background thread and ``add``
        returns as soon as the turns are stored (see :meth:`wait_for_folds`).

        Args:
            turns: One turn or several, in conversation order.
            fold: Fold if due (default). A failed fold is logged and retried later; it
                never fails ``add``.
            reserve: Tokens of ``max_tokens`` the caller's requests use now beside the
                memory's messages (its system prompt and tools), beyond the configured
                ``reserve_tokens``: the fold keeps the window within what remains.

        Returns:
            The stored turns (with ids and order keys).

        Raises:
            StoreError: When the turns could not be stored (nothing was stored).
        """
        inline = fold and not self.background_folds
        stored = self.runner.run(self._add_steps(turn_list(turns), inline, reserve))
        if fold and self.background_folds:
            self._background.submit(partial(self._background_fold, reserve))
        return stored

    async def aadd(
        self, turns: Turn | Sequence[Turn], *, fold: bool = True, reserve: int = 0
    ) -> list[StoredTurn]:
        """Async twin of :meth:`add` (a background fold is an asyncio task)."""
        inline = fold and not self.background_folds
        stored = await self.runner.arun(self._add_steps(turn_list(turns), inline, reserve))
        if fold and self.background_folds:
            self._background.submit_async(partial(self._abackground_fold, reserve))
        return stored

    def _background_fold(self, reserve: int) -> None:
        self.runner.run(self._fold_runner.fold_steps(force=False, from_add=True, reserve=reserve))

    async def _abackground_fold(self, reserve: int) -> None:
        await self.runner.arun(
            self._fold_runner.fold_steps(force=False, from_add=True, reserve=reserve)
        )

    def wait_for_folds(self, timeout: float | None = None) -> bool:
        """Wait until no background fold of this memory is pending (sync ones).

        Returns:
            True if none is pending, False if ``timeout`` expired first.
        """
        return self._background.wait(timeout)

    async def await_folds(self) -> None:
        """Wait until this memory's background fold tasks (async ones) have finished."""
        await self._background.await_tasks()

    def fold(self, *, force: bool = False, keep: bool = True) -> FoldResult:
        """Fold now if due (or unconditionally with ``force``), ignoring any cool-down.

        Args:
            force: Fold even when the window is within its budget.
            keep: Keep the recent messages verbatim (``keep_tokens``/``keep_messages``).
                ``fold(force=True, keep=False)`` folds every message: when a conversation
                ends, its facts (extracted at folds) reach the user's other sessions now.

        Raises:
            ModelError: When the summary model failed after its retries.
            StoreError: When Chroma failed.
        """
        return self.runner.run(self._fold_runner.fold_steps(force=force, from_add=False, keep=keep))

    async def afold(self, *, force: bool = False, keep: bool = True) -> FoldResult:
        """Async twin of :meth:`fold`."""
        return await self.runner.arun(
            self._fold_runner.fold_steps(force=force, from_add=False, keep=keep)
        )

    def context(
        self,
        query: str | None = None,
        *,
        k: int | None = None,
        reserve: int = 0,
        now: float | dt.datetime | dt.date | None = None,
    ) -> Context:
        """Return the context within ``max_tokens`` (reads the store).

        Args:
            query: The current question. With it (and ``recall_tokens`` > 0), the first
                message also holds the facts and archived turns recalled for it (the
                turns from where ``recall_scope`` says; the user's facts in any case).
            k: Most memories to consider for the recall share (default 12).
            reserve: Tokens of ``max_tokens`` to leave free for what the caller sends
                beside the context (a system prompt it adds itself).
            now: When the question is asked (seconds since the epoch, a datetime or a
                date): relative dates in it ("last week") count from that day. Default:
                the day of the session's newest turn (in a live chat, today).
        """
        return self.runner.run(self._context_steps(query, k, reserve, now))

    async def acontext(
        self,
        query: str | None = None,
        *,
        k: int | None = None,
        reserve: int = 0,
        now: float | dt.datetime | dt.date | None = None,
    ) -> Context:
        """Async twin of :meth:`context`."""
        return await self.runner.arun(self._context_steps(query, k, reserve, now))

    def recall(
        self,
        query: str,
        k: int = 6,
        *,
        kinds: Sequence[str] = KINDS,
        scope: str | None = None,
        now: float | dt.datetime | dt.date | None = None,
    ) -> list[RecallHit]:
        """Return the ``k`` facts and archived turns most relevant to ``query``.

        See :mod:`.recall` for the ranking. Each hit carries its score, its lexical and
        dense ranks and its provenance. The facts of the session's user (if any) are
        recalled whatever the scope.

        Args:
            query: The question.
            k: Most hits.
            kinds: ``"fact"`` and/or ``"turn"``.
            scope: ``"session"`` (this conversation's archived turns) or ``"user"`` (those
                of every session of the user); default: ``recall_scope``.
            now: When the question is asked (see :meth:`context`).

        Raises:
            InvalidInputError: For a query that is not a string, ``k`` < 1, a bad scope
                or a bad ``now``.
            ConfigurationError: For ``scope="user"`` on a session without a user.
        """
        return self.runner.run(self._recall_steps(query, k, kinds, scope, now))

    async def arecall(
        self,
        query: str,
        k: int = 6,
        *,
        kinds: Sequence[str] = KINDS,
        scope: str | None = None,
        now: float | dt.datetime | dt.date | None = None,
    ) -> list[RecallHit]:
        """Async twin of :meth:`recall`."""
        return await self.runner.arun(self._recall_steps(query, k, kinds, scope, now))

    def facts(self) -> list[Fact]:
        """Return the session's facts, oldest first (its user's too, when it has one)."""
        return self.runner.run(self._facts_steps())

    async def afacts(self) -> list[Fact]:
        """Async twin of :meth:`facts`."""
        return await self.runner.arun(self._facts_steps())

    def _facts_steps(self) -> Steps[list[Fact]]:
        yield from self.user_steps()
        return (yield from store_call(self.session.records.facts.get))

    def reindex(self) -> int:
        """Embed every archived turn and fact that has no vector yet.

        Use it after adding an embedder to an existing session, or after an embedding
        failure. Returns how many records were embedded.
        """
        if self.embedder is None:
            return 0
        return self.runner.run(self._reindex_steps())

    async def areindex(self) -> int:
        """Async twin of :meth:`reindex`."""
        if self.embedder is None:
            return 0
        return await self.runner.arun(self._reindex_steps())

    def get_summary(self) -> Summary | None:
        """Return the latest summary version (text and provenance), or None."""
        return self.runner.call(self.session.records.summaries.latest)

    async def aget_summary(self) -> Summary | None:
        """Async twin of :meth:`get_summary`."""
        return await self.runner.acall(self.session.records.summaries.latest)


def _check_settings(shorten_attempts: int, fact_mode: str, fact_attempts: int) -> None:
    """Check the engine settings that are not options (``ConfigurationError``, named)."""
    if shorten_attempts < 0:
        raise ConfigurationError.for_value("shorten_attempts", shorten_attempts, "must be >= 0")
    if fact_mode not in FACT_MODES:
        raise ConfigurationError.for_value("fact_mode", fact_mode, f"must be in {FACT_MODES}")
    if fact_attempts < 1:
        raise ConfigurationError.for_value("fact_attempts", fact_attempts, "must be >= 1")


def _log_no_model(session_id: str, extract_facts: bool) -> None:
    logger.info(
        "session %r: no summary model configured; folds use the extractive summarizer "
        "(no LLM calls)%s",
        session_id,
        "; facts are not extracted" if extract_facts else "",
    )


def _merged(options: MemoryOptions | None, values: Mapping[str, Any]) -> MemoryOptions:
    """``options`` or the options of keyword ``values``; both given is an error."""
    if options is None:
        return MemoryOptions(**values)
    if values:
        raise ConfigurationError.for_value(
            "options", options, f"give either options or {sorted(values)}, not both"
        )
    return options


class HybridMemory(RecursiveMemory):
    """Recursive summary plus facts and recall: ``summary + recalled + window``.

    The same engine as :class:`RecursiveMemory` with other defaults: facts are extracted at
    each fold (in the summary call), and a quarter of ``max_tokens`` is reserved for the
    facts and archived turns recalled for the current question
    (``context(query)``, ``recall(query, k)``). With no embedder, recall is BM25 only.

    Args:
        session_id: The conversation's id.
        options: A whole :class:`~..options.MemoryOptions` (taken as given).
        **kwargs: Everything :class:`RecursiveMemory` takes; ``extract_facts`` defaults to
            True and ``recall_tokens`` to ``max_tokens // 4``
            (:meth:`~..options.MemoryOptions.memory_config`).

    Example:
        >>> from langchain_recursive_memory.core import HybridMemory, MemoryStore, Turn
        >>> memory = HybridMemory("s", store=MemoryStore.in_memory(), max_tokens=500)
        >>> _ = memory.add(Turn(role="user", text="My locker code is 4471."))
        >>> for i in range(30):
        ...     _ = memory.add(Turn(role="user", text=f"Small talk number {i} about weather."))
        >>> [h.text for h in memory.recall("What is my locker code?", k=1)]
        ['My locker code is 4471.']
    """

    _recalls_by_default = True

    def __init__(
        self, session_id: str, *, options: MemoryOptions | None = None, **kwargs: Any
    ) -> None:
        if options is None:
            kwargs.setdefault("extract_facts", True)
        super().__init__(session_id, options=options, **kwargs)
