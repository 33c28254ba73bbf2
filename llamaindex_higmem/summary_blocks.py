"""The recursive summary and the hybrid memory as blocks of LlamaIndex's ``Memory``.

``Memory`` (llama-index-core 0.14's successor of ``ChatMemoryBuffer``) keeps the recent
messages in a FIFO of its own and flushes the oldest ones to its blocks (``aput``); on each
read it asks every block for text to put in the prompt (``aget``). These blocks store
what is flushed in the core memory's turn log (durable, scoped to the session ``Memory``
passes) and fold it into a running summary, ``S_k = LLM(S_{k-1} + overflow)``
(arXiv 2308.15022), with the block's summarizer LLM or, without one, the extractive
summarizer (no LLM calls):

* :class:`RecursiveSummaryMemoryBlock` returns the running summary, then the flushed
  messages not folded yet (those just before the FIFO's), within ``token_limit``.
* :class:`HybridMemoryBlock` also extracts facts at each fold (with an LLM) and returns
  the facts and archived messages recalled for the latest user message (BM25, fused with
  embeddings when ``embed_model`` is given), within the same ``token_limit``.

A block never returns more than ``token_limit`` tokens (counted with the encoding of
``tokenizer_model``): give it at most what ``Memory`` leaves beside its FIFO,
``token_limit * (1 - chat_history_token_ratio)`` of the ``Memory``, which never cuts a
block of priority 0. Nothing is lost: a failing summarizer leaves the messages in the log
(the newest shown, all recallable) and the fold is retried on a later flush. One block
may serve many sessions and keeps them apart: every read and write uses the session
``Memory`` passes (``VectorMemoryBlock`` mixes them, llama_index#22701).

Example:
    >>> from llama_index.core.llms import ChatMessage
    >>> from llama_index.core.memory import Memory
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> from llamaindex_higmem import HybridMemoryBlock
    >>> block = HybridMemoryBlock.from_defaults(store=MemoryStore.in_memory(), token_limit=400)
    >>> memory = Memory.from_defaults(  # a FIFO of 180 tokens, 420 left for the blocks
    ...     session_id="demo", token_limit=600, chat_history_token_ratio=0.3,
    ...     token_flush_size=60, memory_blocks=[block])
    >>> memory.put(ChatMessage(role="user", content="My locker code is 4471."))
    >>> for i in range(30):
    ...     memory.put_messages([ChatMessage(role="assistant", content=f"Reply {i}."),
    ...                          ChatMessage(role="user", content=f"Small talk {i}.")])
    >>> memory.put(ChatMessage(role="user", content="What is my locker code?"))
    >>> "4471" in memory.get()[0].content  # the block's text, in the system message
    True
"""

from __future__ import annotations

import re
from dataclasses import replace
from os import PathLike
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from llama_index.core.llms import ChatMessage
from llama_index.core.memory.memory import BaseMemoryBlock
from pydantic import Field, PrivateAttr, ValidationError

from langchain_recursive_memory.core.builder import open_store
from langchain_recursive_memory.core.cache import SessionCache
from langchain_recursive_memory.core.config import (
    DEFAULT_MAX_TOKENS,
    MemoryConfig,
    recall_share,
    summary_cap,
)
from langchain_recursive_memory.core.errors import (
    ConfigurationError,
    InvalidInputError,
    RecursiveMemoryError,
)
from langchain_recursive_memory.core.models import TextModel
from langchain_recursive_memory.core.prompts import render_transcript
from langchain_recursive_memory.core.recursive import Context, HybridMemory, RecursiveMemory
from langchain_recursive_memory.core.retrieval.pool import SESSION, check_scope
from langchain_recursive_memory.core.runtime.retry import RetryPolicy
from langchain_recursive_memory.core.storage import DEFAULT_NAMESPACE, MemoryStore
from langchain_recursive_memory.core.tokenizer import TokenCounter

from .instrumentation import dispatch_usage
from .llms import resolve_llm
from .memory_blocks import MAX_ENGINES, flushed_turns, latest_question

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["WINDOW_PREFIX", "HybridMemoryBlock", "RecursiveSummaryMemoryBlock", "block_text"]

_B = TypeVar("_B", bound="_SummaryBlock")

WINDOW_PREFIX = "Earlier messages, not yet summarized (oldest first):"
"""The line before the flushed messages a block shows verbatim (those not folded yet)."""


def block_text(
    context: Context,
    counter: TokenCounter,
    limit: int,
    *,
    max_message_tokens: int = 1500,
    window_prefix: str = WINDOW_PREFIX,
) -> str:
    """The text of a block: the context's first message, then its window as lines.

    The first message holds the summary (and the recalled memories); the window's
    messages follow as ``role: text`` lines (times left out: the recalled lines carry
    theirs), each cut at ``max_message_tokens``. The text has at most ``limit`` tokens:
    the oldest lines give way first, then the end is cut.

    Example:
        >>> from langchain_recursive_memory.core import MemoryConfig, Turn
        >>> from langchain_recursive_memory.core.recursive.context import ContextBuilder
        >>> counter = TokenCounter()
        >>> ctx = ContextBuilder(MemoryConfig(max_tokens=300), counter).fit(
        ...     [Turn(role="user", text="hi"), Turn(role="assistant", text="hello")])
        >>> print(block_text(ctx, counter, 300))
        Earlier messages, not yet summarized (oldest first):
        user: hi
        assistant: hello
    """
    head = context.summary_turn.text if context.summary_turn is not None else ""
    lines = [
        render_transcript([replace(t, created_at=None)], counter, max_message_tokens)
        for t in context.window
    ]
    while True:
        parts = [head] if head else []
        if lines:
            parts.append("\n".join([window_prefix, *lines]))
        text = "\n\n".join(parts)
        if counter.count_text(text) <= limit:
            return text
        if not lines:
            return counter.truncate(text, limit)
        lines.pop(0)


def _llamaindex_names(exc: ConfigurationError) -> ConfigurationError:
    """The budget error with ``max_tokens`` named as the block names it (``token_limit``)."""
    return ConfigurationError(re.sub(r"\bmax_tokens\b", "token_limit", str(exc)))


def _created(cls: type[_B], **fields: Any) -> _B:
    """``cls(**fields)``, raising the library's own error when a check of ours failed.

    Pydantic wraps an error raised while the block is checked in a ``ValidationError``;
    ``from_defaults`` raises the ``ConfigurationError`` or ``InvalidInputError`` inside.
    """
    try:
        return cls(**fields)
    except ValidationError as exc:
        for error in exc.errors():
            inner = error.get("ctx", {}).get("error")
            if isinstance(inner, RecursiveMemoryError):
                raise inner from None
        raise ConfigurationError(f"invalid {cls.__name__} settings: {exc}") from exc


class _SummaryBlock(BaseMemoryBlock[str]):
    """What both blocks share: the sessions' engines, the budget, ``aput`` and ``aget``."""

    session_id: str | None = Field(
        default=None,
        description="Session used when Memory passes none (Memory normally passes its own).",
    )
    namespace: str = Field(default=DEFAULT_NAMESPACE, description="Namespace of the sessions.")
    user_id: str | None = Field(
        default=None,
        description="The user the sessions belong to (None: each session's recorded user, "
        "if any; a read may name one with Memory.get(user_id=...)).",
    )
    token_limit: int = Field(
        default=DEFAULT_MAX_TOKENS,
        description="Most tokens the block returns (summary, recalled memories and the "
        "flushed messages not folded yet), in tokens of tokenizer_model.",
    )
    max_summary_tokens: int | None = Field(
        default=None,
        description="Cap of the running summary (None: 300, or a quarter of a smaller "
        "token_limit).",
    )
    tokenizer_model: str = Field(
        default="gpt-4o", description="Model whose encoding counts the tokens."
    )
    _store: MemoryStore | None = PrivateAttr(default=None)
    _model: TextModel | None = PrivateAttr(default=None)
    _retry: RetryPolicy | None = PrivateAttr(default=None)
    _config: MemoryConfig = PrivateAttr()
    _counter: TokenCounter = PrivateAttr()
    _engines: SessionCache[RecursiveMemory] = PrivateAttr(
        default_factory=lambda: SessionCache("summary block engines", max_entries=MAX_ENGINES)
    )
    _engine_class: ClassVar[type[RecursiveMemory]] = RecursiveMemory

    def model_post_init(self, context: Any, /) -> None:
        """Check the budget (a ``ConfigurationError`` naming ``token_limit``)."""
        try:
            self._config = MemoryConfig(
                max_tokens=self.token_limit,
                max_summary_tokens=summary_cap(self.token_limit, self.max_summary_tokens),
                recall_tokens=self._recall_share(),
            )
        except ConfigurationError as exc:
            raise _llamaindex_names(exc) from exc
        self._counter = TokenCounter(self.tokenizer_model)

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> _SummaryBlock:
        # The engines are handles on a store, like a database connection: a copy (a
        # workflow's isolated state edit copies its Memory) shares them and the store.
        return self.model_copy()

    def _recall_share(self) -> int:
        return 0

    def _engine_options(self) -> dict[str, Any]:
        return {}

    def _configure(
        self,
        *,
        llm: Any,
        stores: dict[str, Any],
        retry: RetryPolicy | None,
        config: MemoryConfig | None,
    ) -> None:
        """Set what ``from_defaults`` gives beyond the fields."""
        self._store = open_store(**stores)
        self._model = resolve_llm(llm)
        self._retry = retry
        if config is not None:
            self._config = config
            self.token_limit = config.max_tokens
            self.max_summary_tokens = config.max_summary_tokens

    def engine(self, session_id: str | None = None, user_id: str | None = None) -> RecursiveMemory:
        """The core engine of a session (created on first use; at most ``MAX_ENGINES`` kept).

        Args:
            session_id: The session (default: the block's ``session_id``).
            user_id: The session's user (default: the block's ``user_id``, else the one
                recorded for the session). A session's user is fixed once recorded: another
                one is a ``ConfigurationError``.

        Raises:
            InvalidInputError: When there is no session id.
        """
        sid = session_id or self.session_id
        if not sid:
            raise InvalidInputError.for_value(
                "session_id", sid, "no session: pass one to from_defaults or through Memory"
            )
        user = user_id or self.user_id
        cached = self._engines.get(sid)
        if cached is not None and (user is None or cached.user.given == user):
            return cached
        if self._store is None:  # built from the fields alone: the default store
            self._store = open_store()
        engine = self._engine_class(
            sid,
            model=self._model,
            store=self._store,
            namespace=self.namespace,
            config=self._config,
            counter=self._counter,
            retry=self._retry,
            on_usage=dispatch_usage,
            user_id=user,
            **self._engine_options(),
        )
        self._engines.put(sid, engine)
        return engine

    async def _context(
        self, engine: RecursiveMemory, messages: list[ChatMessage] | None
    ) -> Context:
        return await engine.acontext()

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        engine = self.engine(block_kwargs.get("session_id"), block_kwargs.get("user_id"))
        context = await self._context(engine, messages)
        cfg = self._config
        return block_text(
            context, self._counter, cfg.max_tokens, max_message_tokens=cfg.max_prompt_message_tokens
        )

    async def _aput(self, messages: list[ChatMessage]) -> None:
        for session, turns in flushed_turns(messages, self.session_id).items():
            await self.engine(session).aadd(turns)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Cut ``tokens_to_truncate`` tokens off the end (the summary, first, stays longest).

        ``Memory`` asks when the prompt is over its own ``token_limit`` and the block's
        ``priority`` is not 0.
        """
        keep = self._counter.count_text(content) - tokens_to_truncate
        return (self._counter.truncate(content, keep) or None) if keep > 0 else None


class RecursiveSummaryMemoryBlock(_SummaryBlock):
    """A ``Memory`` block with the running summary of what overflowed the FIFO.

    The flushed messages are stored durably (``engine(session).turns()`` has them all)
    and folded into the summary when they overflow the block's window; the block's text
    is the summary, then the flushed messages not folded yet (the ones just before the
    FIFO's), within ``token_limit``. Build it with :meth:`from_defaults`; built from its
    fields alone, it opens the default store and folds with the extractive summarizer.

    Example:
        >>> import asyncio
        >>> from llama_index.core.llms import ChatMessage
        >>> from langchain_recursive_memory.core import MemoryStore
        >>> block = RecursiveSummaryMemoryBlock.from_defaults(
        ...     store=MemoryStore.in_memory(), token_limit=200)
        >>> flushed = [ChatMessage(role="user", content=f"Note {i}: the boat is blue.")
        ...            for i in range(40)]
        >>> asyncio.run(block.aput(flushed, session_id="s1"))
        >>> text = asyncio.run(block.aget([], session_id="s1"))
        >>> text.splitlines()[0], block.engine("s1").get_summary() is not None
        ('Summary of the earlier conversation:', True)
    """

    name: str = Field(default="recursive_summary", description="The name of the memory block.")

    @classmethod
    def class_name(cls) -> str:
        """Get the class name."""
        return "RecursiveSummaryMemoryBlock"

    @classmethod
    def from_defaults(
        cls,
        *,
        llm: Any = None,
        store: MemoryStore | None = None,
        client: ClientAPI | None = None,
        path: str | PathLike[str] | None = None,
        session_id: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        user_id: str | None = None,
        name: str = "recursive_summary",
        token_limit: int = DEFAULT_MAX_TOKENS,
        max_summary_tokens: int | None = None,
        tokenizer_model: str = "gpt-4o",
        priority: int = 0,
        retry: RetryPolicy | None = None,
        config: MemoryConfig | None = None,
    ) -> RecursiveSummaryMemoryBlock:
        """Create the block.

        Args:
            llm: The summarizer: a LlamaIndex LLM (a cheap one is the usual choice) or a
                core ``TextModel``; None: the extractive summarizer (no LLM calls).
            store: A core ``MemoryStore``; or ``client`` (any chromadb client), or
                ``path`` (embedded persistent store; default location when all are None).
            client: A chromadb client.
            path: Directory of an embedded persistent store.
            session_id: Fallback session id (``Memory`` passes its own).
            namespace: Namespace of the sessions.
            user_id: The user the sessions belong to (validated like a session id).
            name: The block's name in ``Memory``'s template.
            token_limit: Most tokens the block returns.
            max_summary_tokens: Cap of the summary (default: 300, or a quarter of a
                smaller ``token_limit``).
            tokenizer_model: Model whose encoding counts the tokens.
            priority: ``Memory`` truncation priority (0: never truncated).
            retry: Retries and timeouts of the summarizer's calls.
            config: A core ``MemoryConfig`` (overrides ``token_limit`` and
                ``max_summary_tokens``).

        Raises:
            ConfigurationError: For an impossible budget or more than one store.
        """
        block = _created(
            cls,
            name=name,
            session_id=session_id,
            namespace=namespace,
            user_id=user_id,
            token_limit=token_limit,
            max_summary_tokens=max_summary_tokens,
            tokenizer_model=tokenizer_model,
            priority=priority,
        )
        stores = {"store": store, "client": client, "path": path}
        block._configure(llm=llm, stores=stores, retry=retry, config=config)
        return block


class HybridMemoryBlock(_SummaryBlock):
    """A ``Memory`` block with the running summary, the facts and the recalled messages.

    As :class:`RecursiveSummaryMemoryBlock`, plus: facts are extracted at each fold (with
    an LLM), and a share of ``token_limit`` (``recall_tokens``, a quarter by default) holds
    the facts and archived messages recalled for the latest user message: BM25 over the
    session's (``scope="user"``: the user's sessions') archived messages, fused with
    embeddings when ``embed_model`` is given. The user's facts are recalled in each of
    the user's sessions.

    Example:
        >>> import asyncio
        >>> from llama_index.core.llms import ChatMessage
        >>> from langchain_recursive_memory.core import MemoryStore
        >>> block = HybridMemoryBlock.from_defaults(store=MemoryStore.in_memory(), token_limit=300)
        >>> said = ["My locker code is 4471."] + [f"Small talk {i}." for i in range(60)]
        >>> asyncio.run(block.aput([ChatMessage(role="user", content=t) for t in said],
        ...                        session_id="s1"))
        >>> question = [ChatMessage(role="user", content="What is my locker code?")]
        >>> "user: My locker code is 4471." in asyncio.run(block.aget(question, session_id="s1"))
        True
    """

    name: str = Field(default="hybrid_memory", description="The name of the memory block.")
    recall_tokens: int | None = Field(
        default=None,
        description="Tokens of token_limit for the recalled facts and messages (None: a quarter).",
    )
    recall_k: int = Field(
        default=12, ge=1, description="Most memories considered for the recall share."
    )
    extract_facts: bool = Field(
        default=True, description="Extract facts at each fold (needs an LLM)."
    )
    scope: str = Field(
        default=SESSION,
        description="Recall messages from 'session' (this one) or 'user' (every session of "
        "the user).",
    )
    _embedder: Any = PrivateAttr(default=None)
    _engine_class: ClassVar[type[RecursiveMemory]] = HybridMemory

    def model_post_init(self, context: Any, /) -> None:
        """Check the scope and the budget."""
        check_scope(self.scope)
        super().model_post_init(context)

    @classmethod
    def class_name(cls) -> str:
        """Get the class name."""
        return "HybridMemoryBlock"

    def _recall_share(self) -> int:
        return recall_share(self.token_limit, self.recall_tokens, hybrid=True)

    def _engine_options(self) -> dict[str, Any]:
        return {
            "embedder": self._embedder,
            "extract_facts": self.extract_facts,
            "recall_scope": self.scope,
        }

    async def _context(
        self, engine: RecursiveMemory, messages: list[ChatMessage] | None
    ) -> Context:
        return await engine.acontext(latest_question(messages), k=self.recall_k)

    @classmethod
    def from_defaults(
        cls,
        *,
        llm: Any = None,
        embed_model: Any = None,
        store: MemoryStore | None = None,
        client: ClientAPI | None = None,
        path: str | PathLike[str] | None = None,
        session_id: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        user_id: str | None = None,
        scope: str = SESSION,
        name: str = "hybrid_memory",
        token_limit: int = DEFAULT_MAX_TOKENS,
        max_summary_tokens: int | None = None,
        recall_tokens: int | None = None,
        recall_k: int = 12,
        extract_facts: bool = True,
        tokenizer_model: str = "gpt-4o",
        priority: int = 0,
        retry: RetryPolicy | None = None,
        config: MemoryConfig | None = None,
    ) -> HybridMemoryBlock:
        """Create the block.

        Args:
            llm: The summarizer and fact extractor: a LlamaIndex LLM or a core
                ``TextModel``; None: the extractive summarizer, no facts (recall of the
                archived messages still works).
            embed_model: A LlamaIndex ``BaseEmbedding`` (or any supported embedder) for
                dense recall; None: BM25 only.
            store: A core ``MemoryStore``; or ``client`` or ``path`` (see
                :meth:`RecursiveSummaryMemoryBlock.from_defaults`).
            client: A chromadb client.
            path: Directory of an embedded persistent store.
            session_id: Fallback session id (``Memory`` passes its own).
            namespace: Namespace of the sessions.
            user_id: The user the sessions belong to (validated like a session id).
            scope: ``"session"`` (default) or ``"user"``: recall the messages of every
                session of the user (needs ``user_id``).
            name: The block's name in ``Memory``'s template.
            token_limit: Most tokens the block returns.
            max_summary_tokens: Cap of the summary (default: 300, or a quarter of a
                smaller ``token_limit``).
            recall_tokens: Share of ``token_limit`` for recall (default: a quarter).
            recall_k: Most memories considered for the recall share.
            extract_facts: Extract facts at each fold (needs ``llm``).
            tokenizer_model: Model whose encoding counts the tokens.
            priority: ``Memory`` truncation priority (0: never truncated).
            retry: Retries and timeouts of model and embedding calls.
            config: A core ``MemoryConfig`` (overrides ``token_limit``,
                ``max_summary_tokens`` and ``recall_tokens``).

        Raises:
            ConfigurationError: For an impossible budget or more than one store.
            InvalidInputError: For a scope that is not ``"session"`` or ``"user"``.
        """
        block = _created(
            cls,
            name=name,
            session_id=session_id,
            namespace=namespace,
            user_id=user_id,
            scope=scope,
            token_limit=token_limit,
            max_summary_tokens=max_summary_tokens,
            recall_tokens=recall_tokens,
            recall_k=recall_k,
            extract_facts=extract_facts,
            tokenizer_model=tokenizer_model,
            priority=priority,
        )
        stores = {"store": store, "client": client, "path": path}
        block._configure(llm=llm, stores=stores, retry=retry, config=config)
        block._embedder = embed_model
        if config is not None:
            block.recall_tokens = config.recall_tokens
        return block
