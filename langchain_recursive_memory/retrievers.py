"""``RecursiveMemoryRetriever``: recall a session's facts and archived turns in LangChain.

A ``BaseRetriever`` over the memory's hybrid recall (BM25 and embeddings fused; turns in
the current window excluded). Each ``Document`` carries the session id, the kind
(``"fact"`` or ``"turn"``), the source turn ids, the time, the score and the rank in its
metadata. The session id is the one the memory came from: another session's for its turns
and, for a user's fact, the session that said its current wording (``session_ids``: every
session that stated it). Both retrievers return their documents best first
(``metadata["rank"]`` 1 is the best; sort by ``metadata["timestamp"]`` to read them in
time order).

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> history = RecursiveSummaryChatMessageHistory(
    ...     "u1", store=MemoryStore.in_memory(), max_tokens=300, max_summary_tokens=60
    ... )
    >>> history.add_messages([HumanMessage("My locker code is 4471.")])
    >>> history.add_messages([HumanMessage(f"Weather chat, part {i}.") for i in range(30)])
    >>> docs = history.as_retriever(k=1).invoke("locker code")
    >>> docs[0].page_content, docs[0].metadata["kind"]
    ('My locker code is 4471.', 'turn')
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Any

from .core.errors import MissingDependencyError

try:  # the framework first: without it, name the extra that installs it
    import langchain_core  # noqa: F401
except ImportError as exc:
    raise MissingDependencyError.for_import(exc, __name__) from exc

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import RunnableConfig, ensure_config
from pydantic import ConfigDict, Field

from .core.errors import ConfigurationError
from .core.higmem import HiGMem, RetrievedTurn
from .core.recursive import RecursiveMemory
from .core.retrieval.hits import RecallHit
from .core.retrieval.pool import SESSION, check_scope

__all__ = [
    "HiGMemRetriever",
    "RecursiveMemoryRetriever",
    "hits_to_documents",
    "retrieved_to_documents",
]


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat()


def hits_to_documents(
    hits: list[RecallHit],
    memory: RecursiveMemory,
    *,
    max_tokens: int | None = None,
) -> list[Document]:
    """Convert recall hits to LangChain documents, best first, within ``max_tokens``.

    Which hits fit is decided by the memory's context builder (the core counts tokens).
    ``metadata["rank"]`` is the hit's place in ``hits`` (1 = best), so a hit skipped for
    its size leaves a gap.
    """
    docs: list[Document] = []
    rank = {id(hit): n for n, hit in enumerate(hits, start=1)}
    for hit in memory.context_builder.pack(hits, max_tokens):
        metadata: dict[str, Any] = {
            "session_id": memory.session_id,
            "namespace": memory.namespace,
            "kind": hit.kind,
            "id": hit.id,
            "source_turn_ids": list(hit.source_turn_ids),
            "time": _iso(hit.time),
            "timestamp": hit.time,
            "score": hit.score,
            "rank": rank[id(hit)],
            "lexical_rank": hit.lexical_rank,
            "dense_rank": hit.dense_rank,
        }
        if hit.role is not None:
            metadata["role"] = hit.role
        metadata.update({k: v for k, v in hit.metadata.items() if v not in (None, "")})
        docs.append(Document(page_content=hit.text, metadata=metadata, id=f"{hit.kind}:{hit.id}"))
    return docs


def _configured(configurable: dict[str, Any], key: str) -> str:
    """The run's ``configurable[key]`` (a session or user id).

    Raises:
        ConfigurationError: When the run does not name it.
    """
    value = configurable.get(key)
    if not isinstance(value, str) or not value:
        raise ConfigurationError.for_value(
            key,
            value,
            f"a retriever with sessions= needs config={{'configurable': {{{key!r}: ...}}}} "
            "(RunnableWithMessageHistory passes it)",
        )
    return value


_RUN_CONFIG: ContextVar[RunnableConfig | None] = ContextVar("lrm_retriever_config", default=None)


class _MemoryRetriever(BaseRetriever):
    """What both retrievers share: ``k``, the session, and the LangChain entry points.

    The memory is fixed (``memory``) or, with ``sessions``, the memory of the session the
    run names: ``config["configurable"][session_key]`` (``RunnableWithMessageHistory``
    passes its ``session_id`` there), so one retriever serves every user of a chain. With
    ``user_key`` the run names the user too, and ``sessions`` is called with both as
    keywords (``sessions(session_id=..., user_id=...)``), as ``RunnableWithMessageHistory``
    calls a history factory given ``history_factory_config``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    k: int = Field(default=4, description="How many documents to return.")
    sessions: Callable[..., Any] | None = Field(
        default=None,
        description="session_id -> the session's memory (or chat history), for a "
        "retriever that follows the run's session.",
    )
    session_key: str = Field(
        default="session_id", description="The configurable key that names the session."
    )
    user_key: str | None = Field(
        default=None,
        description="The configurable key that names the user (None: the run names no user).",
    )
    scope: str | None = Field(
        default=None,
        description="Recall archived turns of 'session' (this one) or 'user' (every "
        "session of the memory's user); None: the memory's default.",
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Checked here rather than in a validator, so the package's own error surfaces
        # instead of pydantic's ValidationError wrapper.
        if self.k < 1:
            raise ConfigurationError.for_value("k", self.k, "must be >= 1")
        if (getattr(self, "memory", None) is None) == (self.sessions is None):
            raise ConfigurationError.for_value(
                "sessions", self.sessions, "give exactly one of memory= and sessions="
            )
        if self.scope is not None:
            check_scope(self.scope)

    def invoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Retrieve for ``input`` (the run's ``config`` names the session with ``sessions``)."""
        token = _RUN_CONFIG.set(ensure_config(config))
        try:
            return super().invoke(input, config, **kwargs)
        finally:
            _RUN_CONFIG.reset(token)

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Async twin of :meth:`invoke`."""
        token = _RUN_CONFIG.set(ensure_config(config))
        try:
            return await super().ainvoke(input, config, **kwargs)
        finally:
            _RUN_CONFIG.reset(token)

    def _engine(self) -> Any:
        """The memory to retrieve from: the fixed one, or the run's session's."""
        fixed = getattr(self, "memory", None)
        if fixed is not None:
            return fixed
        configurable = (_RUN_CONFIG.get() or ensure_config()).get("configurable") or {}
        session_id = _configured(configurable, self.session_key)
        assert self.sessions is not None  # checked in __init__
        if self.user_key is None:
            found = self.sessions(session_id)
        else:
            user_id = _configured(configurable, self.user_key)
            found = self.sessions(**{self.session_key: session_id, self.user_key: user_id})
        return getattr(found, "memory", found)  # a chat history, or a memory

    def _documents(self, query: str, k: int) -> list[Document]:
        raise NotImplementedError

    async def _adocuments(self, query: str, k: int) -> list[Document]:
        raise NotImplementedError

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return self._documents(query, k or self.k)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        return await self._adocuments(query, k or self.k)


class RecursiveMemoryRetriever(_MemoryRetriever):
    """Retrieve a session's facts and archived turns relevant to the query.

    Build it from a history (``history.as_retriever(k=4)``) or from a core memory
    (``RecursiveMemoryRetriever(memory=memory, k=4)``) for one session; or with
    ``sessions=get_history`` for the session each run names (one retriever in a chain
    that serves several users: ``RecursiveMemoryRetriever(sessions=get_history, k=4)``).

    Attributes:
        memory: The session's :class:`~.core.RecursiveMemory` (or ``HybridMemory``).
        sessions: Instead of ``memory``: ``session_id -> memory or chat history``; the
            session is ``config["configurable"][session_key]`` (``"session_id"``).
        k: How many documents to return (default 4); also accepted by ``invoke(..., k=)``.
        kinds: ``("fact", "turn")`` by default; ``("fact",)`` or ``("turn",)`` to narrow.
        max_tokens: Stop adding documents past this many tokens of content (default: the
            memory's ``recall_tokens`` when set, so the recall fits its share of the
            budget; else no limit).
        scope: ``"session"`` or ``"user"``: archived turns of this session, or of every
            session of the memory's user (the user's facts are recalled in both); default:
            the memory's ``recall_scope``.
        user_key: With ``sessions``: the configurable key naming the user, passed to
            ``sessions`` with the session (``sessions(session_id=..., user_id=...)``).
    """

    memory: RecursiveMemory | None = Field(
        default=None, description="The session memory to recall from."
    )
    kinds: tuple[str, ...] = Field(
        default=("fact", "turn"), description="Which memories: 'fact' and/or 'turn'."
    )
    max_tokens: int | None = Field(
        default=None, description="Most tokens of document content returned (None: no limit)."
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        bad = [kind for kind in self.kinds if kind not in ("fact", "turn")]
        if bad or not self.kinds:
            raise ConfigurationError.for_value("kinds", self.kinds, "use 'fact' and/or 'turn'")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigurationError.for_value("max_tokens", self.max_tokens, "must be >= 1")

    def _limit(self, memory: RecursiveMemory) -> int | None:
        if self.max_tokens is not None:
            return self.max_tokens
        return memory.config.recall_tokens or None

    def _documents(self, query: str, k: int) -> list[Document]:
        memory = self._engine()
        hits = memory.recall(query, k, kinds=self.kinds, scope=self.scope)
        return hits_to_documents(hits, memory, max_tokens=self._limit(memory))

    async def _adocuments(self, query: str, k: int) -> list[Document]:
        memory = self._engine()
        hits = await memory.arecall(query, k, kinds=self.kinds, scope=self.scope)
        return hits_to_documents(hits, memory, max_tokens=self._limit(memory))


def retrieved_to_documents(found: list[RetrievedTurn], memory: HiGMem) -> list[Document]:
    """Convert HiGMem's retrieved turns to LangChain documents, in the order given (best first)."""
    return [
        Document(
            page_content=item.turn.text,
            id=f"turn:{item.turn.id}",
            metadata={
                "session_id": item.session_id or memory.session_id,
                "namespace": memory.namespace,
                "kind": "turn",
                "id": item.turn.id,
                "source_turn_ids": [item.turn.id],
                "speaker": item.speaker,
                "time": _iso(item.turn.created_at),
                "timestamp": item.turn.created_at,
                "score": item.score,
                "rank": item.rank,
                "event_ids": list(item.event_ids),
                "found_by": list(item.found_by),
            },
        )
        for item in found
    ]


class HiGMemRetriever(_MemoryRetriever):
    """Retrieve a session's turns with HiGMem, for LangChain.

    Guided by the LLM when the memory has a model (events as anchors, an LLM picks and
    filters turns), else the no-LLM multi-scale hybrid ranking. Documents come best first,
    one per turn, with speaker, time, event ids, score and rank (1 = best) in their
    metadata.

    Attributes:
        memory: The session's :class:`~.core.HiGMem`.
        k: Most documents (default 8; with guided retrieval, at most this many of the
            turns the filter keeps); also accepted by ``invoke(..., k=)``.
        use_llm: Guided retrieval (default: when the memory has a model) or not.
        scope: ``"session"`` (default) or ``"user"``: every session of the memory's user,
            ranked without the LLM; a turn of another session names it in its metadata.
        user_key: With ``sessions``: the configurable key naming the user (see
            :class:`RecursiveMemoryRetriever`).

    Example:
        >>> from langchain_recursive_memory import HiGMemRetriever
        >>> from langchain_recursive_memory.core import HiGMem, MemoryStore, Turn
        >>> memory = HiGMem("s", store=MemoryStore.in_memory())
        >>> _ = memory.add([Turn(role="user", name="Ada", text="My cat is called Miso.")])
        >>> HiGMemRetriever(memory=memory, k=1).invoke("cat name")[0].page_content
        'My cat is called Miso.'
    """

    memory: HiGMem | None = Field(default=None, description="The HiGMem memory of the session.")
    k: int = Field(default=8, description="Most documents returned.")
    use_llm: bool | None = Field(default=None, description="Guided retrieval or not.")

    def _documents(self, query: str, k: int) -> list[Document]:
        memory = self._engine()
        found = memory.retrieve(query, k, use_llm=self.use_llm, scope=self.scope or SESSION)
        return retrieved_to_documents(found, memory)

    async def _adocuments(self, query: str, k: int) -> list[Document]:
        memory = self._engine()
        found = await memory.aretrieve(query, k, use_llm=self.use_llm, scope=self.scope or SESSION)
        return retrieved_to_documents(found, memory)
