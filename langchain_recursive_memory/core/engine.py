"""What both engines (the recursive memory and HiGMem) share: session, store, runner, usage.

An engine serves one session (``namespace`` + ``session_id``) of a
:class:`~.storage.MemoryStore`, which may belong to a user (``user_id``); it holds a
:class:`~.runtime.Runner` that performs its steps' effects (model, embedder, retries),
records what its upkeep spends in the store and tells its ``usage_listeners``, and names
the vector collection of its embedder.

Its parts (the fold runner, recall, the HiGMem indexer...) never hold the engine: they get what
they use (:mod:`.session`): the session's :class:`~.session.SessionRef`, the engine's
:class:`~.session.Models` (its model, embedder and vector space as they are now: setting
``memory.model`` or ``memory.embedder`` reaches every part) and its
:class:`~.session.UserBinding`.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore, RecursiveMemory
    >>> memory = RecursiveMemory("s1", store=MemoryStore.in_memory())
    >>> memory.session.session_id, memory.usage().calls
    ('s1', 0)
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from os import PathLike
from typing import Any, TypeVar

from .cache import session_cache_key
from .embeddings import resolve_embedder
from .errors import ConfigurationError, StoreError
from .models import Embedder, TextModel
from .rebuild import OnProgress, RebuildResult, Rebuilds
from .retrieval.pool import SESSION
from .runtime.effects import Steps, store_call
from .runtime.retry import RetryPolicy
from .runtime.runner import Runner
from .session import Models, SessionRef, UserBinding
from .storage import MemoryStore, StoredTurn, validate_session
from .storage.keys import validate_name
from .tokenizer import TokenCounter
from .turn import Turn, turn_list
from .usage import Usage, UsageRecord

__all__ = ["Engine", "resolve_config"]

logger = logging.getLogger("langchain_recursive_memory")

C = TypeVar("C")


def resolve_config(cls: Callable[..., C], config: C | None, fields: Mapping[str, Any]) -> C:
    """``config``, or a ``cls(**fields)``; both given is a :class:`ConfigurationError`."""
    if config is not None and fields:
        raise ConfigurationError.for_value(
            "config", config, f"give either config or {sorted(fields)}, not both"
        )
    return config if config is not None else cls(**fields)


class Engine(ABC):
    """The shared part of :class:`~.recursive.RecursiveMemory` and :class:`~.higmem.HiGMem`.

    Args:
        session_id: The conversation's id.
        model: A :class:`~.models.TextModel`, or None.
        store: A :class:`~.storage.MemoryStore` (default: embedded persistent at ``path``).
        path: Directory of the default embedded store.
        namespace: Isolates tenants or apps sharing a store.
        retry: Retries and timeouts of model and embedding calls.
        counter: The token counter.
        embedder: Any supported embedder (see :func:`~.embeddings.resolve_embedder`).
        on_usage: Called with a :class:`~.usage.UsageRecord` after each operation that
            called the model.
        user_id: The user the session belongs to (validated like a session id, within the
            namespace), or None. A session's user is recorded at its first write and fixed
            from then on; a memory opened without ``user_id`` on a session that has one
            uses the recorded user.

    Raises:
        ConfigurationError: For conflicting arguments or a model without the protocol.
        InvalidInputError: For an invalid session id, namespace or user id.
    """

    def __init__(
        self,
        session_id: str,
        *,
        model: TextModel | None,
        store: MemoryStore | None,
        path: str | PathLike[str] | None,
        namespace: str,
        retry: RetryPolicy | None,
        counter: TokenCounter,
        embedder: Any,
        on_usage: Callable[[UsageRecord], None] | None,
        user_id: str | None = None,
    ) -> None:
        validate_session(namespace, session_id)
        if user_id is not None:
            validate_name("user_id", user_id)
        if store is not None and path is not None:
            raise ConfigurationError.for_value("path", path, "give either store or path")
        if model is not None and not isinstance(model, TextModel):
            raise ConfigurationError.for_value(
                "model", model, "must have complete(prompt) and acomplete(prompt)"
            )
        self.session_id = session_id
        self.namespace = namespace
        self.counter = counter
        self.store = store if store is not None else MemoryStore.persistent(path)
        self.session = SessionRef(self.store, namespace, session_id)
        self.usage_listeners: list[Callable[[UsageRecord], None]] = [on_usage] if on_usage else []
        self.runner = Runner(model=model, retry=retry, counter=counter, on_usage=self._record_usage)
        # What the collaborators read of the models (kept current by the setters below).
        self.models = Models(self.runner, counter)
        self.embedder = resolve_embedder(embedder)
        self.user = UserBinding(self.session, user_id)
        self._rebuilder: Rebuilds

    # -- the user ---------------------------------------------------------------------------

    @property
    def user_id(self) -> str | None:
        """The session's user: the one given, or (once read) the one recorded; or None."""
        return self.user.user_id

    def user_steps(self) -> Steps[str | None]:
        """The session's user, checked against the one recorded (see :class:`UserBinding`).

        Raises:
            ConfigurationError: When the session belongs to another user (both named).
        """
        return (yield from self.user.resolve_steps())

    def forget_user(self) -> list[str]:
        """Delete everything of this session's user: every session of it, its facts, all.

        See :meth:`~.storage.MemoryStore.forget_user`.

        Returns:
            The ids of the sessions deleted.

        Raises:
            ConfigurationError: When the session has no user.
        """
        return self.runner.run(self._forget_user_steps())

    async def aforget_user(self) -> list[str]:
        """Async twin of :meth:`forget_user`."""
        return await self.runner.arun(self._forget_user_steps())

    def _forget_user_steps(self) -> Steps[list[str]]:
        user = yield from self.user_steps()
        if user is None:
            raise ConfigurationError.for_value(
                "user_id", None, f"session {self.session_id!r} belongs to no user"
            )
        deleted = yield from store_call(self.store.forget_user, self.namespace, user)
        self._forget()
        self.user.reset()
        return deleted

    def _sessions_steps(self, scope: str) -> Steps[list[str]]:
        """The sessions an operation of ``scope`` covers: this one, or every one of its user.

        Raises:
            InvalidInputError: For a scope that is not ``"session"`` or ``"user"``.
            ConfigurationError: For ``"user"`` when the session has no user.
        """
        user = yield from self.user.scope_steps(scope)
        if user is None or scope == "session":
            return [self.session_id]
        listed = yield from store_call(self.store.user_sessions, self.namespace, user)
        return [s.session_id for s in listed]

    # -- rebuild ----------------------------------------------------------------------------

    def rebuild(
        self,
        scope: str = SESSION,
        *,
        on_progress: OnProgress = None,
    ) -> RebuildResult:
        """Derive the session's derived state again from its turn log.

        The recursive memory's facts and vectors (after changing the summarizer or the
        embedder; its summaries are kept), HiGMem's turn and event nodes. Resumable:
        called again after it stopped (a crash, a failed call), it continues where it
        stopped, from the progress markers it leaves in the store.

        Args:
            scope: ``"session"`` (this one) or ``"user"`` (every session of its user).
            on_progress: Called after each step with a :class:`RebuildProgress`.

        Raises:
            ConfigurationError: For ``scope="user"`` on a session without a user.
            ModelError: When a model call failed after its retries (call again).
            StoreError: When Chroma failed (call again).
        """
        return self.runner.run(self._rebuild_steps(scope, on_progress))

    async def arebuild(
        self,
        scope: str = SESSION,
        *,
        on_progress: OnProgress = None,
    ) -> RebuildResult:
        """Async twin of :meth:`rebuild`."""
        return await self.runner.arun(self._rebuild_steps(scope, on_progress))

    def _rebuild_steps(self, scope: str, on_progress: OnProgress) -> Steps[RebuildResult]:
        sessions = yield from self._sessions_steps(scope)
        return (yield from self._rebuilder.rebuild_steps(sessions, scope == "user", on_progress))

    # -- what the runner uses ---------------------------------------------------------------

    @property
    def model(self) -> TextModel | None:
        """The model (None: the engine's no-LLM methods); set, it reaches every part."""
        return self.models.model

    @model.setter
    def model(self, model: TextModel | None) -> None:
        self.models.model = model

    @property
    def embedder(self) -> Embedder | None:
        """The embedder (None: lexical recall only); set, it reaches every part."""
        return self.models.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder | None) -> None:
        self.models.embedder = embedder

    @property
    def space(self) -> str | None:
        """The embedder's vector collection, named from the embedder (None without one)."""
        return self.models.space

    @property
    def embed_batch_size(self) -> int:
        """Texts per embedding call (each call gets the retry policy's timeout)."""
        return self.runner.embed_batch_size

    @embed_batch_size.setter
    def embed_batch_size(self, size: int) -> None:
        self.runner.embed_batch_size = size

    @property
    def retry(self) -> RetryPolicy:
        """Retries and timeouts of model and embedding calls."""
        return self.runner.retry

    def _append_steps(self, turns: Sequence[Turn]) -> Steps[tuple[list[StoredTurn], int]]:
        """Store ``turns`` durably; return them as stored and their tokens in all."""
        items = list(turns)
        counts = [self.counter.count_turn(t) for t in items]
        encoding = self.counter.encoding_name
        user = yield from self.user_steps()
        memory = str(self.settings().get("memory", ""))
        # Every write records the user (if any) in its transaction: again after another
        # handle cleared or forgot the session.
        stored = yield from store_call(
            self.session.records.turns.append, items, counts, encoding, memory, user
        )
        yield from self._describe_steps()
        return stored, sum(counts)

    def settings(self) -> dict[str, str | int | float]:
        """How this memory is made, recorded with the session (see ``lrm show``)."""
        return {}

    def _describe_steps(self) -> Steps[None]:
        """Record :meth:`settings` with the session, once per process (best effort)."""
        settings = self.settings()
        key = session_cache_key(self.namespace, self.session_id)
        described = self.store.caches.described
        frozen = tuple(sorted(settings.items()))
        if not settings or described.get(key) == frozen:
            return
        try:
            yield from store_call(self.session.records.describe, settings)
        except StoreError as exc:
            logger.info("session %r: settings not recorded (%s)", self.session_id, exc)
            return
        described.put(key, frozen)

    # -- upkeep accounting ------------------------------------------------------------------

    def _record_usage(self, spent: dict[str, Usage]) -> None:
        now = time.time()
        records = [
            UsageRecord(self.namespace, self.session_id, purpose, usage, now)
            for purpose, usage in spent.items()
        ]
        self.session.records.add_usage(records)
        for listener in list(self.usage_listeners):
            for record in records:
                listener(record)

    def usage(self) -> Usage:
        """Return what this session's upkeep has spent: LLM calls and tokens, in total.

        Every process's spend is in the store; see :meth:`usage_by_purpose` for the split.
        """
        return self.runner.run(self._usage_steps())

    async def ausage(self) -> Usage:
        """Async twin of :meth:`usage`."""
        return await self.runner.arun(self._usage_steps())

    def _usage_steps(self) -> Steps[Usage]:
        total = Usage()
        by_purpose = yield from self._usage_by_purpose_steps()
        for spent in by_purpose.values():
            total.add(spent)
        return total

    def usage_by_purpose(self) -> dict[str, Usage]:
        """Return this session's upkeep spend per purpose (``"fold"``, ``"facts"``...)."""
        return self.runner.call(self.session.records.usage)

    def _usage_by_purpose_steps(self) -> Steps[dict[str, Usage]]:
        return (yield from store_call(self.session.records.usage))

    # -- the log ----------------------------------------------------------------------------

    def turns(self) -> list[StoredTurn]:
        """Return the whole turn log of the session, oldest first."""
        return self.runner.call(self.session.records.turns.all)

    async def aturns(self) -> list[StoredTurn]:
        """Async twin of :meth:`turns`."""
        return await self.runner.acall(self.session.records.turns.all)

    def set_turns(self, turns: Sequence[Turn]) -> None:
        """Make the session's turns exactly ``turns``.

        When the stored log is a prefix of ``turns`` (an application handing back the
        history it read, or the same history loaded at every start), only the new turns
        are added and the summary is kept; otherwise the session is cleared first.
        """
        items = turn_list(turns)
        stored = [s.turn for s in self.turns()]
        if not _is_prefix(stored, items):
            self.clear()
            stored = []
        if items[len(stored) :]:
            self.add(items[len(stored) :])

    async def aset_turns(self, turns: Sequence[Turn]) -> None:
        """Async twin of :meth:`set_turns`."""
        items = turn_list(turns)
        stored = [s.turn for s in await self.aturns()]
        if not _is_prefix(stored, items):
            await self.aclear()
            stored = []
        if items[len(stored) :]:
            await self.aadd(items[len(stored) :])

    @abstractmethod
    def add(self, turns: Turn | Sequence[Turn]) -> list[StoredTurn]:
        """Store turns durably (each engine adds what it derives from them)."""

    @abstractmethod
    async def aadd(self, turns: Turn | Sequence[Turn]) -> list[StoredTurn]:
        """Async twin of :meth:`add`."""

    def clear(self) -> None:
        """Delete everything stored for the session (turns and all derived state)."""
        self.runner.run(self._clear_steps())

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await self.runner.arun(self._clear_steps())

    def _clear_steps(self) -> Steps[None]:
        yield from store_call(self.session.records.clear)
        self._forget()
        self.user.reset()

    def _forget(self) -> None:  # noqa: B027 - a hook: an engine with caches drops them
        """Drop what this process cached about the session (after :meth:`clear`)."""


def _is_prefix(stored: Sequence[Turn], turns: Sequence[Turn]) -> bool:
    """Whether ``stored`` begins ``turns`` (ignoring the ids and times the store gave)."""

    def bare(turn: Turn) -> Turn:
        return replace(turn, id=None, created_at=None)

    return len(stored) <= len(turns) and all(
        bare(a) == bare(b) for a, b in zip(stored, turns, strict=False)
    )
