"""The recursive summary memory (arXiv 2310.10168) and the hybrid memory, framework-free.

Recent messages stay verbatim in a window; when the window overflows its budget, its
oldest part is folded into the running summary, ``S_k = LLM(S_{k-1} + overflow)``, and the
context handed to the model is ``summary + window``, bounded however long the conversation.

:class:`HybridMemory` adds what summaries lose: at each fold it extracts atomic facts
(names, numbers, dates, preferences, decisions) into Chroma, and it recalls facts and
archived turns relevant to the current question (BM25 and embeddings, fused), so the
context becomes ``summary + recalled memories + window`` within the same budget.

One logic, two shells: the steps of ``add``, ``fold``, ``recall`` and ``context`` are
written once, as generators that *yield* the I/O they need (a store call, an LLM call, an
embedding call); the sync methods run them with blocking calls, the async twins
(``aadd``, ``afold``, ``arecall``, ``acontext``...) with ``await``.

Guarantees:

* A message is durable in the turn log when ``add`` returns; it is never deleted by a fold.
* A failing summary model (error, timeout, empty answer) never loses a message and is never
  written in as the summary: the fold is abandoned, logged, retried on a later ``add``
  (after a cool-down), and meanwhile the context still fits the budget because only the
  newest messages that fit are shown; the others wait in the log (and stay recallable).
* With no model configured, folds use :class:`~.summarizer.ExtractiveSummarizer` (no LLM
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

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import partial
from os import PathLike
from typing import Any, TypeVar

import numpy as np

from .background import BackgroundFolds
from .config import MemoryConfig
from .effects import EffectRunner, Steps, _Embed, _Io, _Llm
from .embeddings import embedder_name, resolve_embedder
from .errors import (
    ConfigurationError,
    EmbeddingError,
    InvalidInputError,
    ModelError,
    StoreError,
)
from .events import segment_labels
from .facts import Fact, facts_prompt, parse_combined, parse_facts, render_known_facts
from .models import Embedder, TextModel
from .ranking import RankedTurn, TurnRanker
from .recall import LexicalIndex, RecallHit
from .runtime.retry import RetryPolicy
from .store import (
    DEFAULT_NAMESPACE,
    MemoryStore,
    SessionState,
    StoredTurn,
    Summary,
    VectorRecord,
    text_hash,
    validate_scope,
)
from .summarizer import (
    ExtractiveSummarizer,
    clean_summary,
    render_transcript,
    shorten_prompt,
    summary_prompt,
)
from .tokenizer import REPLY_PRIMING_TOKENS, TokenCounter
from .turn import Turn
from .usage import Usage, UsageRecord
from .window import (
    drop_orphan_results,
    plan_fold,
    select_suffix,
    turn_tokens,
    window_units,
)

__all__ = ["Context", "FoldResult", "HybridMemory", "RecursiveMemory"]

logger = logging.getLogger("langchain_recursive_memory")

R = TypeVar("R")
FACT_MODES = ("combined", "separate")
KNOWN_FACTS_IN_PROMPT = 20


# -- results ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Context:
    """What the memory hands to the model: the summary (and recalled memories), then the window.

    Attributes:
        summary: The summary version shown, or None.
        summary_turn: The first message: the summary and, for a question, the recalled
            memories (role from the config); None when there is neither.
        window: The recent messages, verbatim, oldest first.
        tokens: Tokens of the whole context (messages plus reply priming).
        max_tokens: The budget ``tokens`` stays within.
        hidden: Unfolded messages not shown because they do not fit (a fold is pending).
        recalled: The recalled memories included in the first message.
    """

    summary: Summary | None
    summary_turn: Turn | None
    window: tuple[Turn, ...]
    tokens: int
    max_tokens: int
    hidden: int = 0
    recalled: tuple[RecallHit, ...] = ()

    @property
    def turns(self) -> list[Turn]:
        """The first message (if any) followed by the window."""
        head = [self.summary_turn] if self.summary_turn is not None else []
        return head + list(self.window)


@dataclass(frozen=True, slots=True)
class FoldResult:
    """What a fold did.

    Attributes:
        versions: Summary versions written (0 when nothing was due).
        folded: Messages folded into the summary.
        summary: The latest summary after the fold.
        facts: Facts written or updated by the fold.
        error: The failure that stopped the fold, if any (the messages wait in the log).
        skipped: Why no fold was attempted (``"busy"``, ``"cooldown"``), if so.
    """

    versions: int = 0
    folded: int = 0
    summary: Summary | None = None
    facts: int = 0
    error: Exception | None = None
    skipped: str | None = None


@dataclass(frozen=True, slots=True)
class _Summarized:
    text: str
    method: str
    facts: list[Fact] | None = None


@dataclass
class _Health:
    failures: int = 0
    retry_at: float = 0.0
    last_error: Exception | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    # This process's view of the unfolded window: (tokens, messages), None when unknown.
    window: tuple[int, int] | None = None


_HEALTH: dict[tuple[str, str, str, str], _Health] = {}
_HEALTH_LOCK = threading.Lock()


def _health_for(store: MemoryStore, namespace: str, session_id: str) -> _Health:
    """The fold health of a session, shared by every memory object of this process.

    A new history object per request (the usual ``RunnableWithMessageHistory`` factory)
    still sees the cool-down of a failing summarizer.
    """
    key = (store.identity, store.prefix, namespace, session_id)
    with _HEALTH_LOCK:
        health = _HEALTH.get(key)
        if health is None:
            health = _HEALTH[key] = _Health()
        return health


@dataclass
class _LexicalCache:
    signature: tuple[Any, ...] = ()
    index: LexicalIndex | None = None
    ranker_signature: tuple[Any, ...] = ()
    ranker: Any = None
    # The session's turn log as read at summary version ``turns_key`` (version, fold id):
    # while no fold commits, the log only grows by unfolded turns, which load() returns.
    turns_key: tuple[int, str] | None = None
    turns: tuple[StoredTurn, ...] = ()
    # Text hashes of turns (turn id -> hash), to match their vectors; ids are reused only
    # after clear(), which also changes ``turns_key``.
    turn_hashes: dict[str, str] = field(default_factory=dict)


@dataclass
class _SessionVectors:
    """Unit vectors of a session's records: record id -> (text hash, vector)."""

    vectors: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)
    nbytes: int = 0


# Recall scores a session's archived turns and facts exactly (a dot product with every
# vector) instead of asking Chroma for a filtered kNN: the filtered HNSW search costs
# ~80 ms in a 100,000-vector collection whatever the session's size, a read by id does
# not, and exact search cannot miss. A cached vector is used only while its stored text
# hash matches the current text (a corrected fact, a turn id reused after clear()); the
# cache is per process, least recently used sessions out beyond VECTOR_CACHE_BYTES.
VECTOR_CACHE_BYTES = 256 * 1024 * 1024
_VECTORS: OrderedDict[tuple[str, str, str, str, str], _SessionVectors] = OrderedDict()
_VECTORS_LOCK = threading.Lock()
_vectors_bytes = 0


def _vectors_key(
    store: MemoryStore, namespace: str, session_id: str, space: str
) -> tuple[str, str, str, str, str]:
    return (store.identity, store.prefix, namespace, session_id, space)


def _session_vectors(key: tuple[str, str, str, str, str]) -> _SessionVectors:
    """The cached vectors of a session (an empty entry if none), marked recently used."""
    with _VECTORS_LOCK:
        entry = _VECTORS.get(key)
        if entry is None:
            return _SessionVectors()
        _VECTORS.move_to_end(key)
        return entry


def _remember_vectors(
    key: tuple[str, str, str, str, str],
    entry: _SessionVectors,
    items: Sequence[tuple[str, str, np.ndarray]],
) -> None:
    """Add ``(record id, text hash, unit vector)`` items to a session's cached vectors."""
    global _vectors_bytes
    with _VECTORS_LOCK:
        if _VECTORS.get(key) is not entry:  # new, or evicted meanwhile: (re)insert it
            replaced = _VECTORS.pop(key, None)
            if replaced is not None:
                _vectors_bytes -= replaced.nbytes
            _VECTORS[key] = entry
            _vectors_bytes += entry.nbytes
        for rid, digest, vec in items:
            old = entry.vectors.get(rid)
            if old is not None:
                entry.nbytes -= old[1].nbytes
                _vectors_bytes -= old[1].nbytes
            entry.vectors[rid] = (digest, vec)
            entry.nbytes += vec.nbytes
            _vectors_bytes += vec.nbytes
        while _vectors_bytes > VECTOR_CACHE_BYTES and len(_VECTORS) > 1:
            _, evicted = _VECTORS.popitem(last=False)
            _vectors_bytes -= evicted.nbytes


# Sessions (for windows of neighbouring turns) as HiGMem cuts them.
SESSION_GAP = 1800.0
MAX_SEGMENT_TURNS = 40


def _date_of(ts: float | None) -> Any:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).date()


def _mix(lexical: np.ndarray, dense: np.ndarray | None) -> np.ndarray:
    """``0.4 mm(lexical) + 0.6 mm(dense)`` (missing dense values count as the lowest)."""
    from .ranking import minmax

    if dense is None:
        return minmax(lexical)
    filled = np.where(np.isnan(dense), np.nanmin(dense), dense)
    return 0.4 * minmax(lexical) + 0.6 * minmax(filled)


_LEXICAL: OrderedDict[tuple[str, str, str, str], _LexicalCache] = OrderedDict()
_LEXICAL_SIZE = 256


def _lexical_cache_for(store: MemoryStore, namespace: str, session_id: str) -> _LexicalCache:
    """The BM25 index cache of a session, shared in the process (least recently used out)."""
    key = (store.identity, store.prefix, namespace, session_id)
    with _HEALTH_LOCK:
        cache = _LEXICAL.pop(key, None) or _LexicalCache()
        _LEXICAL[key] = cache
        while len(_LEXICAL) > _LEXICAL_SIZE:
            _LEXICAL.popitem(last=False)
        return cache


def _turn_hash(memo: dict[str, str], turn: StoredTurn) -> str:
    digest = memo.get(turn.id)
    if digest is None:
        digest = memo[turn.id] = text_hash(turn.turn.text)
    return digest


def _fmt_time(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


class RecursiveMemory(EffectRunner):
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
        retry: Retries, timeouts and cool-down of model and embedding calls.
        shorten_attempts: How many times an over-long summary is sent back to be shortened
            before it is truncated (default 1).
        embedder: For dense recall: a LangChain ``Embeddings``, a LlamaIndex
            ``BaseEmbedding``, a Chroma ``EmbeddingFunction`` or a core ``Embedder``.
            None (default): recall is lexical (BM25) only.
        extract_facts: Extract atomic facts at each fold (needs ``model``; default False,
            True in :class:`HybridMemory`).
        fact_mode: ``"combined"`` (default: facts come from the summary call itself) or
            ``"separate"`` (a second call per fold).
        fact_attempts: Times a malformed facts answer is asked again before the facts of
            that fold are skipped with a warning (default 2).
        on_usage: Called with a :class:`~.usage.UsageRecord` after each operation that
            called the model (also kept in the store: see :meth:`usage`).
        background_folds: Fold on a background thread (sync) or task (async) so that
            ``add`` returns as soon as the turns are stored (default False). Reads during a
            fold see the state before or after it, always within the budget.
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
        embedder: Any = None,
        extract_facts: bool = False,
        fact_mode: str = "combined",
        fact_attempts: int = 2,
        background_folds: bool = False,
        on_usage: Callable[[UsageRecord], None] | None = None,
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
        if fact_mode not in FACT_MODES:
            raise ConfigurationError.for_value("fact_mode", fact_mode, f"must be in {FACT_MODES}")
        if fact_attempts < 1:
            raise ConfigurationError.for_value("fact_attempts", fact_attempts, "must be >= 1")
        self.session_id = session_id
        self.namespace = namespace
        self.config = config or MemoryConfig(**config_fields)
        self.counter = counter or TokenCounter(tokenizer_model)
        self.model = model
        self.retry = retry or RetryPolicy()
        self.shorten_attempts = shorten_attempts
        self.embedder: Embedder | None = resolve_embedder(embedder)
        self.extract_facts = extract_facts
        self.fact_mode = fact_mode
        self.fact_attempts = fact_attempts
        self.background_folds = background_folds
        self.usage_listeners: list[Callable[[UsageRecord], None]] = [on_usage] if on_usage else []
        self._background = BackgroundFolds()
        self.store = store if store is not None else MemoryStore.persistent(path)
        self._extractive = ExtractiveSummarizer(self.counter)
        self._health = _health_for(self.store, namespace, session_id)
        # The embedder's vector collection, named from the embedder alone, so that a new
        # object (a restart) finds the vectors already stored and embeds nothing twice.
        self._space: str | None = embedder_name(self.embedder) if self.embedder else None
        if model is None:
            logger.info(
                "session %r: no summary model configured; folds use the extractive "
                "summarizer (no LLM calls)%s",
                session_id,
                "; facts are not extracted" if extract_facts else "",
            )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(session_id={self.session_id!r}, "
            f"namespace={self.namespace!r}, model={self.model!r}, "
            f"max_tokens={self.config.max_tokens})"
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
        if fold and not self._fold_clearly_not_due(sum(counts), len(items)):
            yield from self._fold_steps(force=False, from_add=True)
        return stored

    def _fold_clearly_not_due(self, tokens: int, messages: int) -> bool:
        """Whether this process's view of the window says no fold is due after an add.

        The view comes from the last read or fold of the session in this process plus the
        turns added since; when it is unknown, or the add may reach the budget, the store is
        read and the fold decided on the real state. Another process's turns are seen at
        the next read (every read is budget-checked on its own).
        """
        health = self._health
        view = health.window
        if view is None:
            return False
        tokens += view[0]
        messages += view[1]
        cfg = self.config
        if tokens > cfg.window_budget or (
            cfg.max_messages is not None and messages > cfg.max_messages
        ):
            return False
        health.window = (tokens, messages)
        return True

    def _observe_window(self, turns: Sequence[StoredTurn]) -> None:
        tokens = sum(turn_tokens(t, self.counter) for t in turns)
        self._health.window = (tokens, len(turns))

    def _fold_steps(self, force: bool, from_add: bool) -> Steps[FoldResult]:
        health = self._health
        if from_add and time.monotonic() < health.retry_at:
            return FoldResult(skipped="cooldown", error=health.last_error)
        if not health.lock.acquire(blocking=False):
            return FoldResult(skipped="busy")
        versions = folded = facts = 0
        summary: Summary | None = None
        pending: list[StoredTurn] = []
        try:
            for _ in range(5):  # reloads after losing a compare-and-set to another writer
                state: SessionState = yield _Io(
                    lambda: self.store.load(self.namespace, self.session_id)
                )
                summary = state.summary
                plan = plan_fold(state.turns, self.config, self.counter, force=force)
                self._observe_window(state.turns)
                if plan is None:
                    break
                pending = list(plan.folded)
                done_ids: set[str] = set()
                repair = state.repair_ids
                lost = False
                for chunk in plan.chunks:
                    done = yield from self._summarize_steps(summary, chunk)
                    new = Summary(
                        namespace=self.namespace,
                        session_id=self.session_id,
                        version=(summary.version if summary else 0) + 1,
                        text=done.text,
                        tokens=self.counter.count_text(done.text),
                        turn_ids=tuple(t.id for t in chunk),
                        first_turn_id=summary.first_turn_id if summary else chunk[0].id,
                        last_turn_id=chunk[-1].id,
                        covered=(summary.covered if summary else 0) + len(chunk),
                        method=done.method,
                    )
                    won: bool = yield _Io(partial(self.store.commit_summary, new, repair))
                    if not won:
                        lost = True
                        break
                    summary, repair = new, ()
                    versions += 1
                    folded += len(chunk)
                    done_ids.update(new.turn_ids)
                    self._observe_window([t for t in state.turns if t.id not in done_ids])
                    pending = pending[len(chunk) :]
                    facts += yield from self._derived_steps(chunk, done.facts)
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
            # While the fold waits, the messages it could not fold stay recallable.
            yield from self._derived_steps(pending, None)
            if not from_add:
                raise
            return FoldResult(versions, folded, summary, facts, error=exc)
        finally:
            health.lock.release()
        health.failures = 0
        health.last_error = None
        health.retry_at = 0.0
        return FoldResult(versions, folded, summary, facts)

    def _summarize_steps(
        self, previous: Summary | None, chunk: Sequence[StoredTurn]
    ) -> Steps[_Summarized]:
        cap = self.config.max_summary_tokens
        turns = [s.turn for s in chunk]
        prev_text = previous.text if previous else None
        if self.model is None:
            return _Summarized(self._extractive.summarize(prev_text, turns, cap=cap), "extractive")
        facts: list[Fact] | None = None
        known: str | None = None
        related: list[Fact] = []
        if self.extract_facts:
            related = yield from self._related_facts_steps(turns)
            known = render_known_facts(related)
        ids = [t.id for t in chunk]
        combined = self.extract_facts and self.fact_mode == "combined"
        prompt = summary_prompt(
            prev_text,
            turns,
            cap=cap,
            counter=self.counter,
            max_message_tokens=self.config.max_prompt_message_tokens,
            known_facts=known if combined else None,
        )
        if combined:
            problem = ""
            text, facts, problem = yield _Llm(prompt, partial(parse_combined, turn_ids=ids))
            for _ in range(self.fact_attempts - 1):
                if facts is not None:
                    break
                try:
                    _, facts, problem = yield _Llm(prompt, partial(parse_combined, turn_ids=ids))
                except ModelError as exc:  # keep the summary we already have
                    problem = str(exc)
                    break
            if facts is None:
                logger.warning(
                    "session %r: facts of this fold skipped after %d malformed answers (%s); "
                    "the summary and every message are kept",
                    self.session_id,
                    self.fact_attempts,
                    problem,
                )
        else:
            text = yield _Llm(prompt, clean_summary)
        for _ in range(self.shorten_attempts):
            if self.counter.count_text(text) <= cap:
                break
            try:
                text = yield _Llm(shorten_prompt(text, cap=cap), clean_summary, "shorten")
            except ModelError:
                break  # keep the long answer; it is truncated below
        if self.counter.count_text(text) > cap:
            text = self.counter.truncate(text, cap)
        if self.extract_facts and not combined:
            transcript = render_transcript(
                turns, self.counter, self.config.max_prompt_message_tokens, numbered=True
            )
            try:
                facts = yield _Llm(
                    facts_prompt(transcript, related),
                    partial(parse_facts, turn_ids=ids),
                    "facts",
                )
            except ModelError as exc:
                logger.warning(
                    "session %r: facts of this fold skipped (%s); the summary and every "
                    "message are kept",
                    self.session_id,
                    exc,
                )
        return _Summarized(text, "llm", facts)

    def _related_facts_steps(self, turns: Sequence[Turn]) -> Steps[list[Fact]]:
        """The stored facts most related to ``turns`` (shown to the model to update them)."""
        stored: list[Fact] = yield _Io(
            lambda: self.store.get_facts(self.namespace, self.session_id)
        )
        if len(stored) <= KNOWN_FACTS_IN_PROMPT:
            return stored
        index = LexicalIndex([f"{f.key} {f.text}" for f in stored])
        query = " ".join(t.text for t in turns)
        best = [i for i, _ in index.search(query, KNOWN_FACTS_IN_PROMPT)]
        return [stored[i] for i in sorted(best)]

    def _derived_steps(self, turns: Sequence[StoredTurn], facts: list[Fact] | None) -> Steps[int]:
        """Write a fold's facts and the vectors of its turns and facts (derived state).

        Failures are logged, never raised: the turns are safe in the log, and the facts and
        vectors can be rebuilt.
        """
        written: list[Fact] = []
        try:
            if facts:
                written = yield _Io(
                    partial(self.store.upsert_facts, self.namespace, self.session_id, facts)
                )
            if self.embedder is not None and (turns or written):
                yield from self._index_steps(turns, written)
        except (StoreError, EmbeddingError) as exc:
            logger.warning(
                "session %r: facts or vectors of a fold not written (%s); the messages are "
                "safe in the log and reindex() rebuilds the vectors",
                self.session_id,
                exc,
            )
        return len(written)

    def _space_name(self, dimension: int) -> str:
        """The vector collection's name (Chroma rejects vectors of another dimension)."""
        if self._space is None:
            self._space = embedder_name(self.embedder)
        return self._space

    def _index_steps(
        self, turns: Sequence[StoredTurn], facts: Sequence[Fact], *, refresh_facts: bool = True
    ) -> Steps[int]:
        """Embed the turns (and facts) without a vector; return how many were written.

        With ``refresh_facts`` the given facts are re-embedded even if they have a vector
        (a fold may have just changed their text).
        """
        records = [
            (self._turn_record(t.id), "turn", t.id, t.turn.text)
            for t in turns
            if t.turn.text.strip()
        ] + [
            (self.store.fact_record_id(self.namespace, self.session_id, f), "fact", f.key, f.text)
            for f in facts
        ]
        if not records:
            return 0
        if self._space is not None:
            have: set[str] = yield _Io(
                partial(self.store.vector_ids, self._space, [r[0] for r in records])
            )
            records = [r for r in records if r[0] not in have or (refresh_facts and r[1] == "fact")]
        if not records:
            return 0
        vectors: list[list[float]] = yield _Embed(tuple(r[3] for r in records))
        space = self._space_name(len(vectors[0]))
        yield _Io(
            partial(
                self.store.add_vectors,
                space,
                self.namespace,
                self.session_id,
                [
                    VectorRecord(r[0], r[1], r[2], v, text_hash(r[3]))
                    for r, v in zip(records, vectors, strict=True)
                ],
            )
        )
        return len(records)

    def _turn_record(self, turn_id: str) -> str:
        from .store import session_key

        return f"{session_key(self.namespace, self.session_id)}:t:{turn_id}"

    def _reindex_steps(self) -> Steps[int]:
        turns: list[StoredTurn] = yield _Io(
            lambda: self.store.turns(self.namespace, self.session_id)
        )
        facts: list[Fact] = yield _Io(lambda: self.store.get_facts(self.namespace, self.session_id))
        state: SessionState = yield _Io(lambda: self.store.load(self.namespace, self.session_id))
        window = {t.id for t in self.build_context(state).window}
        archived = [t for t in turns if t.id not in window]
        return (yield from self._index_steps(archived, facts, refresh_facts=False))

    def _recall_steps(
        self,
        query: str,
        k: int,
        kinds: tuple[str, ...],
        exclude: set[str] | None,
        state: SessionState | None = None,
    ) -> Steps[list[RecallHit]]:
        """Rank archived turns and facts for ``query``; see :meth:`recall`."""
        if not isinstance(query, str):
            raise InvalidInputError.for_value("query", query, "must be a str")
        if k < 1:
            raise InvalidInputError.for_value("k", k, "must be >= 1")
        if state is None:
            state = yield _Io(lambda: self.store.load(self.namespace, self.session_id))
        everything = yield from self._session_turns_steps(state)
        if exclude is None:
            exclude = {t.id for t in self.build_context(state).window if t.id is not None}
        facts: list[Fact] = []
        if "fact" in kinds:
            facts = yield _Io(lambda: self.store.get_facts(self.namespace, self.session_id))
        archived = (
            {t.id for t in everything if t.id not in exclude and t.turn.text.strip()}
            if "turn" in kinds
            else set()
        )
        if not query.strip() or not (archived or facts):
            return []
        pool = max(4 * k, 20)
        dense_turns: dict[str, float] = {}
        dense_facts: dict[str, float] = {}
        if self.embedder is not None:
            try:
                vector: list[float] = yield _Embed((query,), query=True)
                space = self._space_name(len(vector))
                hashes = _lexical_cache_for(self.store, self.namespace, self.session_id).turn_hashes
                wanted = [
                    (self._turn_record(t.id), "turn", t.id, _turn_hash(hashes, t))
                    for t in everything
                    if t.id in archived
                ] + [
                    (
                        self.store.fact_record_id(self.namespace, self.session_id, f),
                        "fact",
                        f.key,
                        text_hash(f.text),
                    )
                    for f in facts
                ]
                near: list[tuple[str, str, float]] = yield from self._nearest_steps(
                    space, vector, wanted, pool + len(exclude)
                )
            except (EmbeddingError, StoreError) as exc:
                logger.warning(
                    "session %r: dense recall unavailable (%s); ranking with BM25 only",
                    self.session_id,
                    exc,
                )
            else:
                for kind, ref, similarity in near:
                    (dense_turns if kind == "turn" else dense_facts)[ref] = similarity
        scored: list[tuple[float, RecallHit]] = []
        if archived:
            ranker = self._turn_ranker(everything)
            dense = None
            if dense_turns:
                dense = np.array([dense_turns.get(t.id, np.nan) for t in ranker.turns], np.float32)
            scores = ranker.scores(query, None, dense=dense)
            lexical_order = ranker.lexical_order(query)
            lex_rank = {tid: r for r, tid in enumerate(lexical_order, start=1)}
            dense_rank = {
                tid: r
                for r, tid in enumerate(sorted(dense_turns, key=lambda t: -dense_turns[t]), 1)
            }
            by_id = {t.id: t for t in everything}
            for ranked, score in zip(ranker.turns, scores, strict=True):
                if ranked.id in archived and score > 0:
                    hit = self._hit(
                        by_id[ranked.id],
                        float(score),
                        lex_rank.get(ranked.id),
                        dense_rank.get(ranked.id),
                    )
                    scored.append((float(score), hit))
        if facts:
            index = self._lexical_index(
                [f"fact:{f.key}" for f in facts], [f"{f.subject} {f.text}" for f in facts]
            )
            lexical = np.asarray(index.scores(query), np.float32)
            fact_dense = np.array([dense_facts.get(f.key, np.nan) for f in facts], np.float32)
            score_f = _mix(lexical, fact_dense if dense_facts else None)
            lex_rank_f = {i: r for r, (i, _) in enumerate(index.search(query, len(facts)), 1)}
            order_f = sorted(dense_facts, key=lambda key: -dense_facts[key])
            dense_rank_f = {key: r for r, key in enumerate(order_f, start=1)}
            for i, fact in enumerate(facts):
                if score_f[i] > 0:
                    hit = self._hit(
                        fact, float(score_f[i]), lex_rank_f.get(i), dense_rank_f.get(fact.key)
                    )
                    scored.append((float(score_f[i]), hit))
        scored.sort(key=lambda p: (-p[0], p[1].kind, p[1].id))
        return [hit for _, hit in scored[:k]]

    def _session_turns_steps(self, state: SessionState) -> Steps[list[StoredTurn]]:
        """The session's whole turn log, oldest first, read again only after a fold.

        Folded turns change only when a fold commits a summary version, so the log read at
        the current version (named by its fold id) is reused; turns added since then are
        unfolded, and ``state`` (just loaded) holds them. No summary yet: nothing is folded
        and ``state`` holds every turn.
        """
        summary = state.summary
        if summary is None:
            return list(state.turns)
        key = (summary.version, summary.fold_id)
        cache = _lexical_cache_for(self.store, self.namespace, self.session_id)
        cached_key, cached = cache.turns_key, cache.turns
        if cached_key != key:
            everything: list[StoredTurn] = yield _Io(
                lambda: self.store.turns(self.namespace, self.session_id)
            )
            cache.turns_key, cache.turns = key, tuple(everything)
            cache.turn_hashes = {}
            cached = cache.turns
        known = {t.id for t in cached}
        extra = [t for t in state.turns if t.id not in known]
        if not extra:
            return list(cached)
        return sorted([*cached, *extra], key=lambda t: (t.seq, t.id))

    def _nearest_steps(
        self,
        space: str,
        vector: Sequence[float],
        wanted: Sequence[tuple[str, str, str, str]],
        n: int,
    ) -> Steps[list[tuple[str, str, float]]]:
        """Exact cosine search over the session's vectors of ``wanted`` records.

        ``wanted`` holds ``(record id, kind, ref, text hash)``. A vector whose stored hash
        differs (a corrected fact not re-embedded yet, a record written before hashes were
        stored) is used but not cached, so the next recall reads it again.
        Returns up to ``n`` ``(kind, ref, similarity)``, most similar first.
        """
        if not wanted:
            return []
        query = np.asarray(vector, np.float32)
        norm = float(np.linalg.norm(query))
        if norm == 0.0 or not np.isfinite(norm):
            return []
        query /= norm
        key = _vectors_key(self.store, self.namespace, self.session_id, space)
        entry = _session_vectors(key)
        found: dict[str, np.ndarray] = {}
        missing: list[str] = []
        for rid, _, _, digest in wanted:
            hit = entry.vectors.get(rid)
            if hit is not None and hit[0] == digest:
                found[rid] = hit[1]
            else:
                missing.append(rid)
        if missing:
            records: list[VectorRecord] = yield _Io(
                partial(self.store.vectors_by_ids, space, self.namespace, self.session_id, missing)
            )
            digests = {rid: digest for rid, _, _, digest in wanted}
            fresh: list[tuple[str, str, np.ndarray]] = []
            for rec in records:
                vec = np.asarray(rec.vector, np.float32)
                size = float(np.linalg.norm(vec))
                if vec.shape != query.shape or size == 0.0:
                    continue
                vec = vec / size
                found[rec.id] = vec
                if rec.text_hash == digests[rec.id]:
                    fresh.append((rec.id, rec.text_hash, vec))
            if fresh:
                _remember_vectors(key, entry, fresh)
        order = [(kind, ref, found[rid]) for rid, kind, ref, _ in wanted if rid in found]
        if not order:
            return []
        similarity = np.stack([v for _, _, v in order]) @ query
        best = np.argsort(-similarity, kind="stable")[:n]
        return [(order[i][0], order[i][1], float(similarity[i])) for i in best]

    def _turn_ranker(self, turns: Sequence[StoredTurn]) -> TurnRanker:
        """The multi-scale turn ranker of the session (cached while its turns are the same)."""
        labels = segment_labels(
            [
                str(t.turn.extra["session"]) if t.turn.extra.get("session") is not None else None
                for t in turns
            ],
            [t.turn.created_at for t in turns],
            session_gap=SESSION_GAP,
            max_event_turns=MAX_SEGMENT_TURNS,
        )
        signature = (tuple(t.id for t in turns), hash(tuple(t.turn.text for t in turns)))
        cache = _lexical_cache_for(self.store, self.namespace, self.session_id)
        if not isinstance(cache.ranker, TurnRanker) or cache.ranker_signature != signature:
            ranked = [
                RankedTurn(
                    t.id,
                    t.turn.name or t.turn.role,
                    t.turn.text,
                    label,
                    _date_of(t.turn.created_at),
                )
                for t, label in zip(turns, labels, strict=True)
            ]
            cache.ranker = TurnRanker(ranked)
            cache.ranker_signature = signature
        return cache.ranker

    def _lexical_index(self, keys: list[str], texts: list[str]) -> LexicalIndex:
        signature = (len(keys), hash(tuple(keys)), hash(tuple(texts)))
        cache = _lexical_cache_for(self.store, self.namespace, self.session_id)
        if cache.index is None or cache.signature != signature:
            cache.index = LexicalIndex(texts)
            cache.signature = signature
        return cache.index

    def _hit(
        self, item: Fact | StoredTurn, score: float, lex: int | None, dense: int | None
    ) -> RecallHit:
        if isinstance(item, Fact):
            return RecallHit(
                id=item.key,
                kind="fact",
                text=item.text,
                score=score,
                source_turn_ids=item.source_turn_ids,
                time=item.updated_at,
                lexical_rank=lex,
                dense_rank=dense,
                metadata={"subject": item.subject, "stated_time": item.time},
            )
        return RecallHit(
            id=item.id,
            kind="turn",
            text=item.turn.text,
            score=score,
            source_turn_ids=(item.id,),
            time=item.turn.created_at,
            role=item.turn.role,
            lexical_rank=lex,
            dense_rank=dense,
        )

    def _context_steps(self, query: str | None, k: int | None) -> Steps[Context]:
        state: SessionState = yield _Io(lambda: self.store.load(self.namespace, self.session_id))
        self._observe_window(state.turns)
        base = self.build_context(state)
        if query is None or not query.strip() or self.config.recall_tokens == 0:
            return base
        hits = yield from self._recall_steps(
            query,
            k or 12,
            ("fact", "turn"),
            {t.id for t in base.window if t.id is not None},
            state,
        )
        return self.build_context(state, hits)

    def _recall_block(self, hits: Sequence[RecallHit]) -> tuple[str, tuple[RecallHit, ...]]:
        """Render hits as quoted lines within ``recall_tokens`` (best first, then by time)."""
        cfg = self.config
        budget = cfg.recall_tokens - self.counter.count_text(cfg.recall_prefix) - 8
        chosen: list[tuple[RecallHit, str]] = []
        used = 0
        for hit in hits:
            text = " ".join(hit.text.split())
            cut = self.counter.truncate(text, cfg.recall_item_tokens)
            if cut != text:
                cut += " ..."
            when = _fmt_time(hit.time)
            if hit.kind == "fact":
                stated = hit.metadata.get("stated_time")
                line = f"- fact{f' ({stated})' if stated else ''}: {cut}"
            else:
                line = f"- [{when}] {hit.role}: {cut}"
            cost = self.counter.count_text(line) + 1
            if used + cost > budget:
                continue
            chosen.append((hit, line))
            used += cost
        if not chosen:
            return "", ()
        chosen.sort(key=lambda p: (p[0].kind != "fact", p[0].time or 0.0))
        body = "\n".join(line for _, line in chosen)
        return f"{cfg.recall_prefix}\n<memories>\n{body}\n</memories>", tuple(h for h, _ in chosen)

    def build_context(self, state: SessionState, hits: Sequence[RecallHit] = ()) -> Context:
        """Return the context for a loaded state and recalled hits (pure: no I/O).

        The first message holds the summary and the recalled memories (within
        ``recall_tokens``); then come the newest whole units of messages that fit the rest
        of ``max_tokens`` (``recall_tokens`` stays reserved even with no question, for a
        retriever's output); older unfolded messages are counted in ``hidden``.
        """
        cfg = self.config
        parts: list[str] = []
        summary = state.summary
        if summary is not None and summary.text:
            text = summary.text
            # Recounted: the stored count may come from another encoding or a larger cap.
            if self.counter.count_text(text) > cfg.max_summary_tokens:
                text = self.counter.truncate(text, cfg.max_summary_tokens)
            parts.append(f"{cfg.summary_prefix}\n{text}" if cfg.summary_prefix else text)
        recall_text, recalled = self._recall_block(hits) if hits else ("", ())
        if recall_text:
            parts.append(recall_text)
        first: Turn | None = None
        first_tokens = 0
        if parts:
            first = Turn(
                role=cfg.summary_role,
                text="\n\n".join(parts),
                id=f"summary-v{summary.version}" if summary else "recalled",
                created_at=summary.created_at if summary else None,
                extra={"lrm_kind": "summary", "lrm_version": summary.version if summary else 0},
            )
            first_tokens = self.counter.count_turn(first)
        reserve = 0 if recall_text else cfg.recall_tokens
        available = cfg.max_tokens - REPLY_PRIMING_TOKENS - first_tokens - reserve
        if recall_text:
            # The window may not grow into the recall share: same window with or without it.
            summary_only = first_tokens - self.counter.count_text(recall_text) - 2
            available = min(
                available,
                cfg.max_tokens - REPLY_PRIMING_TOKENS - max(summary_only, 0) - cfg.recall_tokens,
            )
        units, costs = window_units(state.turns, self.counter)
        window = drop_orphan_results(select_suffix(units, costs, available))
        cost_of = {
            id(s): c
            for unit, cs in zip(units, costs, strict=True)
            for s, c in zip(unit, cs, strict=True)
        }
        if not window and units and len(units[-1]) == 1 and units[-1][0].turn.role != "tool":
            # The newest message alone is larger than the budget: show it cut (the log keeps
            # it whole), so the model still sees the current question.
            cut = self._cut_to_fit(units[-1][0], available)
            if cut is not None:
                window = [cut]
                cost_of[id(cut)] = turn_tokens(cut, self.counter)
        tokens = REPLY_PRIMING_TOKENS + first_tokens + sum(cost_of[id(s)] for s in window)
        return Context(
            summary=summary,
            summary_turn=first,
            window=tuple(s.turn for s in window),
            tokens=tokens,
            max_tokens=cfg.max_tokens,
            hidden=len(state.turns) - len(window),
            recalled=recalled,
        )

    def _cut_to_fit(self, stored: StoredTurn, available: int) -> StoredTurn | None:
        """A copy of ``stored`` whose text is cut to fit ``available`` tokens, or None."""
        turn = stored.turn
        overhead = self.counter.count_turn(replace(turn, text="", blocks=None)) + 24
        room = available - overhead
        if room < 16:
            return None
        total = self.counter.count_text(turn.text)
        head = self.counter.truncate(turn.text, room)
        text = f"{head} [... {total - self.counter.count_text(head)} more tokens not shown]"
        cut = replace(turn, text=text, blocks=None)
        cost = self.counter.count_turn(cut)
        if cost > available:
            return None
        return StoredTurn(cut, stored.seq, cost, self.counter.encoding_name, stored.folded_in)

    # -- upkeep accounting ------------------------------------------------------------------

    def _emit_usage(self, usage: dict[str, Usage]) -> None:
        now = time.time()
        records = [
            UsageRecord(self.namespace, self.session_id, purpose, spent, now)
            for purpose, spent in usage.items()
        ]
        self.store.add_usage(records)
        for listener in list(self.usage_listeners):
            for record in records:
                listener(record)

    def usage(self) -> Usage:
        """Return what this session's upkeep has spent: LLM calls and tokens, in total.

        Every process's spend is in the store; see :meth:`usage_by_purpose` for the split.
        """
        total = Usage()
        for spent in self.usage_by_purpose().values():
            total.add(spent)
        return total

    def usage_by_purpose(self) -> dict[str, Usage]:
        """Return this session's upkeep spend per purpose (``"fold"``, ``"facts"``...)."""
        return self.store.usage(self.namespace, self.session_id)

    # -- public API: sync and async twins ---------------------------------------------------

    def add(self, turns: Turn | Sequence[Turn], *, fold: bool = True) -> list[StoredTurn]:
        """Store turns durably, then fold if the window is over budget.

        With ``background_folds=True`` the fold runs on a background thread and ``add``
        returns as soon as the turns are stored (see :meth:`wait_for_folds`).

        Args:
            turns: One turn or several, in conversation order.
            fold: Fold if due (default). A failed fold is logged and retried later; it
                never fails ``add``.

        Returns:
            The stored turns (with ids and order keys).

        Raises:
            StoreError: When the turns could not be stored (nothing was stored).
        """
        inline = fold and not self.background_folds
        stored = self._run(self._add_steps(_as_list(turns), inline))
        if fold and self.background_folds:
            self._background.submit(self._background_fold)
        return stored

    async def aadd(self, turns: Turn | Sequence[Turn], *, fold: bool = True) -> list[StoredTurn]:
        """Async twin of :meth:`add` (a background fold is an asyncio task)."""
        inline = fold and not self.background_folds
        stored = await self._arun(self._add_steps(_as_list(turns), inline))
        if fold and self.background_folds:
            self._background.submit_async(self._abackground_fold)
        return stored

    def _background_fold(self) -> None:
        self._run(self._fold_steps(force=False, from_add=True))

    async def _abackground_fold(self) -> None:
        await self._arun(self._fold_steps(force=False, from_add=True))

    def wait_for_folds(self, timeout: float | None = None) -> bool:
        """Wait until no background fold of this memory is pending (sync ones).

        Returns:
            True if none is pending, False if ``timeout`` expired first.
        """
        return self._background.wait(timeout)

    async def await_folds(self) -> None:
        """Wait until this memory's background fold tasks (async ones) have finished."""
        await self._background.await_tasks()

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

    def context(self, query: str | None = None, *, k: int | None = None) -> Context:
        """Return the context within ``max_tokens`` (reads the store).

        Args:
            query: The current question. With it (and ``recall_tokens`` > 0), the first
                message also holds the facts and archived turns recalled for it.
            k: Most memories to consider for the recall share (default 12).
        """
        return self._run(self._context_steps(query, k))

    async def acontext(self, query: str | None = None, *, k: int | None = None) -> Context:
        """Async twin of :meth:`context`."""
        return await self._arun(self._context_steps(query, k))

    def recall(
        self, query: str, k: int = 6, *, kinds: Sequence[str] = ("fact", "turn")
    ) -> list[RecallHit]:
        """Return the ``k`` facts and archived turns most relevant to ``query``.

        Archived turns are ranked like HiGMem's no-LLM path: BM25 over each turn and over
        windows of its neighbours (the answer is often the turn after the one that shares
        the question's words), embeddings when an embedder is configured, min-max
        normalised and mixed 0.4/0.6, plus speaker and date cues. Facts are ranked by BM25
        and embeddings, mixed the same way. Dense scores are exact cosine similarities
        over the session's vectors (read by id, cached per process). Turns in the current
        window are excluded (the model sees them anyway); items with no signal at all are
        left out. Each hit carries its score, its lexical and dense ranks and its
        provenance. An embedder failure falls back to BM25 with a warning.

        Raises:
            InvalidInputError: For a query that is not a string or ``k`` < 1.
        """
        return self._run(self._recall_steps(query, k, _kinds(kinds), None))

    async def arecall(
        self, query: str, k: int = 6, *, kinds: Sequence[str] = ("fact", "turn")
    ) -> list[RecallHit]:
        """Async twin of :meth:`recall`."""
        return await self._arun(self._recall_steps(query, k, _kinds(kinds), None))

    def facts(self) -> list[Fact]:
        """Return the session's facts, oldest first."""
        return self.store.get_facts(self.namespace, self.session_id)

    async def afacts(self) -> list[Fact]:
        """Async twin of :meth:`facts`."""
        return await asyncio.to_thread(self.facts)

    def reindex(self) -> int:
        """Embed every archived turn and fact that has no vector yet.

        Use it after adding an embedder to an existing session, or after an embedding
        failure. Returns how many records were embedded.
        """
        if self.embedder is None:
            return 0
        return self._run(self._reindex_steps())

    async def areindex(self) -> int:
        """Async twin of :meth:`reindex`."""
        if self.embedder is None:
            return 0
        return await self._arun(self._reindex_steps())

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
        """Delete the session's turns, summaries, facts and vectors from the store."""
        self.store.clear(self.namespace, self.session_id)
        health = self._health
        health.failures, health.retry_at, health.last_error = 0, 0.0, None
        health.window = None
        with _HEALTH_LOCK:
            _LEXICAL.pop(
                (self.store.identity, self.store.prefix, self.namespace, self.session_id), None
            )

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await asyncio.to_thread(self.clear)


class HybridMemory(RecursiveMemory):
    """Recursive summary plus facts and recall: ``summary + recalled + window``.

    The same engine as :class:`RecursiveMemory` with other defaults: facts are extracted at
    each fold (in the summary call), and a quarter of ``max_tokens`` is reserved for the
    facts and archived turns recalled for the current question
    (``context(query)``, ``recall(query, k)``). With no embedder, recall is BM25 only.

    Args:
        session_id: The conversation's id.
        embedder: LangChain ``Embeddings``, LlamaIndex ``BaseEmbedding``, Chroma
            ``EmbeddingFunction`` or None (lexical recall only).
        extract_facts: Default True.
        **kwargs: Everything :class:`RecursiveMemory` takes. ``recall_tokens`` defaults to
            ``max_tokens // 4``.

    Example:
        >>> from langchain_recursive_memory.core import HybridMemory, MemoryStore, Turn
        >>> memory = HybridMemory("s", store=MemoryStore.in_memory(), max_tokens=500)
        >>> _ = memory.add(Turn(role="user", text="My locker code is 4471."))
        >>> for i in range(30):
        ...     _ = memory.add(Turn(role="user", text=f"Small talk number {i} about weather."))
        >>> [h.text for h in memory.recall("What is my locker code?", k=1)]
        ['My locker code is 4471.']
    """

    def __init__(
        self,
        session_id: str,
        *,
        embedder: Any = None,
        extract_facts: bool = True,
        **kwargs: Any,
    ) -> None:
        if kwargs.get("config") is None:
            kwargs.setdefault("recall_tokens", kwargs.get("max_tokens", 2000) // 4)
        super().__init__(session_id, embedder=embedder, extract_facts=extract_facts, **kwargs)


def _kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    out = tuple(dict.fromkeys(kinds))
    bad = [k for k in out if k not in ("fact", "turn")]
    if bad or not out:
        raise InvalidInputError.for_value("kinds", kinds, "use 'fact' and/or 'turn'")
    return out


def _as_list(turns: Turn | Sequence[Turn]) -> list[Turn]:
    if isinstance(turns, Turn):
        return [turns]
    items = list(turns)
    for item in items:
        if not isinstance(item, Turn):
            raise InvalidInputError.for_value("turn", item, "must be a Turn")
    return items
