"""``RecursiveSummaryMemory``: a LlamaIndex ``BaseMemory`` within a token budget.

A drop-in for ``ChatMemoryBuffer`` in chat engines (``SimpleChatEngine``,
``ContextChatEngine``, ``CondensePlusContextChatEngine``...) and agents (``FunctionAgent``,
``AgentWorkflow``): every message is stored durably in Chroma, and ``get()`` returns the
running summary first (one message, user role by default, never a system message in the
middle of a prompt) followed by the recent messages verbatim, all within ``token_limit``.

Unlike ``ChatSummaryMemoryBuffer``, nothing is deleted: the summary is derived state, the
raw messages stay in the log (``get_all()``), the summary is written when the window
overflows (on ``put``, not on ``get``) and persisted, so a restart re-summarizes nothing.
An assistant message with tool calls and its tool results are never split.

Example:
    >>> from llama_index.core.llms import ChatMessage
    >>> from llamaindex_higmem import RecursiveSummaryMemory
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> memory = RecursiveSummaryMemory.from_defaults(
    ...     session_id="user-42", store=MemoryStore.in_memory(), token_limit=1000
    ... )
    >>> memory.put_messages(
    ...     [ChatMessage(role="user", content="Hi, I'm Ada."),
    ...      ChatMessage(role="assistant", content="Hello Ada!")]
    ... )
    >>> [m.content for m in memory.get()]
    ["Hi, I'm Ada.", 'Hello Ada!']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field, PrivateAttr, ValidationError
from llama_index.core.memory.types import BaseMemory

from langchain_recursive_memory.core.config import MemoryConfig
from langchain_recursive_memory.core.errors import (
    ConfigurationError,
    InvalidInputError,
)
from langchain_recursive_memory.core.memory import (
    Context,
    FoldResult,
    HybridMemory,
    RecursiveMemory,
)
from langchain_recursive_memory.core.runtime.retry import RetryPolicy
from langchain_recursive_memory.core.store import DEFAULT_NAMESPACE, MemoryStore, Summary
from langchain_recursive_memory.core.turn import Turn, group_tool_calls

from .instrumentation import dispatch_usage
from .llms import resolve_llm
from .messages import chat_message_to_turn, is_summary_message, turn_to_chat_message

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["RecursiveSummaryMemory"]


def _role_name(role: Any) -> str:
    return role.value if isinstance(role, MessageRole) else str(role)


def _same(a: Turn, b: Turn) -> bool:
    """Whether two turns are the same message (ignoring the id and time the store gave)."""
    return dataclasses.replace(a, id=None, created_at=None) == dataclasses.replace(
        b, id=None, created_at=None
    )


class RecursiveSummaryMemory(BaseMemory):
    """Chat memory with a running summary, persisted in Chroma.

    Build it with :meth:`from_defaults`. The public fields are read-only settings (they
    are what ``to_dict()`` records); the engine behind them is :attr:`memory`. Built from
    the fields alone (``RecursiveSummaryMemory(session_id=...)``, ``from_dict``), the
    memory opens the store at ``path`` and folds with the no-LLM extractive summarizer,
    like ``ChatSummaryMemoryBuffer.from_dict``, which also leaves the LLM to be set again.

    ``get()`` returns the summary message (a :class:`~.messages.SummaryMessage`) then the
    newest messages, within ``token_limit`` tokens (exact tiktoken counts of the
    ``tokenizer_model``, message overhead included; images and other media at a fixed
    cost). When ``get(input=...)`` is given a question and recall is on
    (``recall_tokens`` > 0), the facts and archived messages recalled for it come in the
    first message too. ``put`` stores a message durably, then folds the oldest messages
    into the summary if the window is over budget: a failing summarizer never loses a
    message and is retried later.
    """

    session_id: str = Field(description="The conversation's id.", frozen=True)
    namespace: str = Field(
        default=DEFAULT_NAMESPACE,
        description="Isolates apps or tenants sharing a store.",
        frozen=True,
    )
    token_limit: int = Field(
        default=2000,
        description=(
            "Budget of everything get() returns (summary + recalled memories + recent "
            "messages), in tokens; the core's max_tokens."
        ),
        frozen=True,
    )
    max_summary_tokens: int = Field(
        default=300, description="Enforced cap of the summary text, in tokens.", frozen=True
    )
    max_messages: int | None = Field(
        default=None,
        description="Also fold when more messages than this are unfolded (None: off).",
        frozen=True,
    )
    keep_tokens: int | None = Field(
        default=None,
        description="Tokens of recent messages kept verbatim after a fold "
        "(None: half the window budget).",
        frozen=True,
    )
    keep_messages: int | None = Field(
        default=None,
        description="Messages kept verbatim after a fold (None: half of max_messages).",
        frozen=True,
    )
    summary_role: MessageRole = Field(
        default=MessageRole.USER,
        description="Role of the summary message: user (default), assistant or system.",
        frozen=True,
    )
    tokenizer_model: str = Field(
        default="gpt-4o",
        description="The chat model's name; picks the tiktoken encoding that counts tokens.",
        frozen=True,
    )
    extract_facts: bool = Field(
        default=False,
        description="Extract atomic facts at each fold (needs an llm).",
        frozen=True,
    )
    recall_tokens: int = Field(
        default=0,
        description="Tokens of token_limit reserved for memories recalled for "
        "get(input=...) (0: no recall).",
        frozen=True,
    )
    recall_k: int = Field(
        default=12,
        ge=1,
        description="Most memories considered for the recall share of get(input=...).",
        frozen=True,
    )
    path: str | None = Field(
        default=None,
        description="Directory of the embedded Chroma store, when one was opened by path.",
        frozen=True,
    )

    _memory: RecursiveMemory = PrivateAttr()

    def __init__(self, memory: RecursiveMemory | None = None, **data: Any) -> None:
        if memory is not None:
            derived = _fields_of(memory)
            conflicts = sorted(k for k in data if k in derived and data[k] != derived[k])
            if conflicts:
                raise ConfigurationError.for_value(
                    conflicts[0],
                    data[conflicts[0]],
                    f"differs from the given memory's {derived[conflicts[0]]!r}; "
                    "give either memory or the settings",
                )
            data = {**data, **derived}
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigurationError(f"invalid RecursiveSummaryMemory settings: {exc}") from exc
        self._memory = memory if memory is not None else self._build()
        if dispatch_usage not in self._memory.usage_listeners:
            self._memory.usage_listeners.append(dispatch_usage)

    def _build(self) -> RecursiveMemory:
        """Build the engine from the fields (extractive summarizer, store at ``path``)."""
        config = MemoryConfig(
            max_tokens=self.token_limit,
            max_summary_tokens=self.max_summary_tokens,
            max_messages=self.max_messages,
            keep_tokens=self.keep_tokens,
            keep_messages=self.keep_messages,
            summary_role=_role_name(self.summary_role),
            recall_tokens=self.recall_tokens,
        )
        engine = HybridMemory if (self.extract_facts or self.recall_tokens) else RecursiveMemory
        return engine(
            self.session_id,
            store=MemoryStore.persistent(self.path),
            namespace=self.namespace,
            config=config,
            tokenizer_model=self.tokenizer_model,
            extract_facts=self.extract_facts,
        )

    def __repr__(self) -> str:
        return f"RecursiveSummaryMemory({self._memory!r})"

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> RecursiveSummaryMemory:
        # The memory is a handle on a store, like a database connection: a copy (for
        # example a workflow's isolated state edit) shares the engine and its store.
        return self.model_copy()

    @classmethod
    def class_name(cls) -> str:
        """Get class name."""
        return "RecursiveSummaryMemory"

    @classmethod
    def from_defaults(
        cls,
        *,
        session_id: str | None = None,
        chat_history: Sequence[ChatMessage] | None = None,
        llm: Any = None,
        token_limit: int = 2000,
        max_summary_tokens: int = 300,
        max_messages: int | None = None,
        keep_tokens: int | None = None,
        keep_messages: int | None = None,
        summary_role: str | MessageRole = MessageRole.USER,
        namespace: str = DEFAULT_NAMESPACE,
        path: str | PathLike[str] | None = None,
        client: ClientAPI | None = None,
        store: MemoryStore | None = None,
        embedder: Any = None,
        extract_facts: bool = False,
        recall_tokens: int | None = None,
        recall_k: int = 12,
        tokenizer_model: str = "gpt-4o",
        retry: RetryPolicy | None = None,
        memory: RecursiveMemory | None = None,
        **kwargs: Any,
    ) -> RecursiveSummaryMemory:
        """Create the memory of one conversation.

        Args:
            session_id: The conversation's id (required unless ``memory`` is given).
            chat_history: Messages to load: the session's messages become exactly these
                (as :meth:`set` does; loading the same history again costs nothing).
            llm: The summarizer: any LlamaIndex LLM (a cheaper one than the chat model is
                the usual choice), a core ``TextModel``, or None for the no-LLM
                extractive summarizer.
            token_limit: Budget of everything :meth:`get` returns (default 2000).
            max_summary_tokens: Enforced cap of the summary (default 300).
            max_messages: Also fold when more messages than this are unfolded.
            keep_tokens: Tokens of recent messages kept verbatim after a fold (default:
                half the window budget).
            keep_messages: Messages kept verbatim after a fold (default: half of
                ``max_messages`` when set).
            summary_role: ``"user"`` (default), ``"assistant"`` or ``"system"`` (only if
                nothing comes before the history in your prompt).
            namespace: Isolates apps or tenants sharing a store (default ``"default"``).
            path: Directory of the embedded Chroma store (default:
                ``$LANGCHAIN_RECURSIVE_MEMORY_PATH`` or
                ``~/.local/share/langchain-recursive-memory/chroma``).
            client: Any chromadb client (``PersistentClient``, ``HttpClient``...) instead
                of ``path``.
            store: A ready core ``MemoryStore`` instead of ``path`` or ``client``.
            embedder: For dense recall: a LlamaIndex ``BaseEmbedding`` (or LangChain
                ``Embeddings``, Chroma ``EmbeddingFunction``). None: recall is lexical
                (BM25) only.
            extract_facts: Extract atomic facts at each fold, in the summary call (needs
                ``llm``; default False).
            recall_tokens: Tokens of ``token_limit`` reserved for the memories recalled
                for ``get(input=...)``. Default: 0, or a quarter of ``token_limit`` when
                ``embedder`` or ``extract_facts`` is given (the hybrid memory).
            recall_k: Most memories considered for that share (default 12).
            tokenizer_model: The chat model's name; picks the tiktoken encoding (default
                ``"gpt-4o"``).
            retry: Retries, timeouts and cool-down of summarizer and embedder calls.
            memory: A ready core ``RecursiveMemory`` (overrides everything above but
                ``chat_history`` and ``recall_k``).
            **kwargs: Nothing else is accepted (``chat_store``, ``tokenizer_fn``... of
                ``ChatMemoryBuffer`` have no meaning here).

        Returns:
            The memory.

        Raises:
            ConfigurationError: For unknown or conflicting arguments and impossible
                budgets.
            InvalidInputError: For an invalid session id or namespace.
            StoreError: When the Chroma store cannot be opened.
        """
        if kwargs:
            raise ConfigurationError.for_value(
                "kwargs",
                sorted(kwargs),
                "unexpected arguments (the store is given by path, client or store, the "
                "conversation by session_id, the tokenizer by tokenizer_model)",
            )
        if memory is None:
            if session_id is None:
                raise ConfigurationError.for_value(
                    "session_id", None, "is required: the conversation's id"
                )
            given = [n for n, v in (("path", path), ("client", client), ("store", store)) if v]
            if len(given) > 1:
                raise ConfigurationError.for_value(
                    given[1],
                    {"path": path, "client": client, "store": store}[given[1]],
                    f"give only one of path, client, store (got {given})",
                )
            hybrid = extract_facts or embedder is not None or bool(recall_tokens)
            if recall_tokens is None:
                recall_tokens = token_limit // 4 if hybrid else 0
            config = MemoryConfig(
                max_tokens=token_limit,
                max_summary_tokens=max_summary_tokens,
                max_messages=max_messages,
                keep_tokens=keep_tokens,
                keep_messages=keep_messages,
                summary_role=_role_name(summary_role),
                recall_tokens=recall_tokens,
            )
            model = resolve_llm(llm)
            if client is not None:
                store = MemoryStore(client)
            elif store is None:
                store = MemoryStore.persistent(path)
            engine = HybridMemory if hybrid else RecursiveMemory
            memory = engine(
                session_id,
                model=model,
                store=store,
                namespace=namespace,
                config=config,
                tokenizer_model=tokenizer_model,
                retry=retry,
                embedder=embedder,
                extract_facts=extract_facts,
            )
        elif session_id is not None and session_id != memory.session_id:
            raise ConfigurationError.for_value(
                "session_id", session_id, f"differs from the memory's {memory.session_id!r}"
            )
        extra = {"path": str(path)} if path is not None else {}
        this = cls(memory=memory, recall_k=recall_k, **extra)
        if chat_history is not None:
            this.set(list(chat_history))
        return this

    # -- helpers ----------------------------------------------------------------------------

    @property
    def memory(self) -> RecursiveMemory:
        """The core engine (``RecursiveMemory`` or ``HybridMemory``) behind this memory."""
        return self._memory

    @property
    def tokenizer_fn(self) -> Callable[[str], list[int]]:
        """The tokenizer that counts tokens (chat engines use it for ``initial_token_count``)."""
        encoding = self._memory.counter.encoding

        def encode(text: str) -> list[int]:
            return encoding.encode(text, disallowed_special=())

        return encode

    def _query(self, input: Any) -> str | None:
        if input is None:
            return None
        if not isinstance(input, str):
            raise InvalidInputError.for_value("input", input, "must be a str or None")
        return input if self.recall_tokens > 0 else None

    def _turns(self, messages: Any) -> list[Turn]:
        if isinstance(messages, ChatMessage | str | bytes) or not isinstance(messages, Sequence):
            raise InvalidInputError.for_value("messages", messages, "must be a list of ChatMessage")
        return [chat_message_to_turn(m) for m in messages if not is_summary_message(m)]

    def _messages(self, context: Context, initial_token_count: int) -> list[ChatMessage]:
        """Convert a context, leaving ``initial_token_count`` (+ one message) of room."""
        if (
            not isinstance(initial_token_count, int)
            or isinstance(initial_token_count, bool)
            or initial_token_count < 0
        ):
            raise InvalidInputError.for_value(
                "initial_token_count", initial_token_count, "must be an integer >= 0"
            )
        head = [context.summary_turn] if context.summary_turn is not None else []
        window = list(context.window)
        if initial_token_count:
            counter = self._memory.counter
            budget = context.max_tokens - initial_token_count - counter.message_overhead("system")
            if budget < 0:
                raise InvalidInputError.for_value(
                    "initial_token_count",
                    initial_token_count,
                    f"exceeds token_limit={context.max_tokens}",
                )
            tokens = context.tokens
            units = group_tool_calls(window)
            while units and tokens > budget:  # drop the oldest whole units first
                tokens -= sum(counter.count_turn(t) for t in units.pop(0))
            window = [t for unit in units for t in unit]
            if tokens > budget and head:
                head = []
        return [turn_to_chat_message(t) for t in head + window]

    def _is_prefix(self, stored: Sequence[Turn], turns: Sequence[Turn]) -> bool:
        return len(stored) <= len(turns) and all(
            _same(a, b) for a, b in zip(stored, turns, strict=False)
        )

    # -- BaseMemory -------------------------------------------------------------------------

    def get(
        self, input: str | None = None, initial_token_count: int = 0, **kwargs: Any
    ) -> list[ChatMessage]:
        """Return the summary message (if any) then the recent messages, within budget.

        Args:
            input: The current question. With recall on (``recall_tokens`` > 0), the
                facts and archived messages recalled for it come in the first message.
            initial_token_count: Tokens of what precedes the history in the prompt (a
                system prompt; ``SimpleChatEngine`` passes it). That many tokens, plus one
                message's overhead, are left free in ``token_limit``: the oldest recent
                messages are left out (they are in the log and get folded).
            **kwargs: Ignored (accepted like LlamaIndex's own memories).

        Raises:
            InvalidInputError: For an ``input`` that is not a string, or an
                ``initial_token_count`` that is negative or exceeds ``token_limit``.
        """
        context = self._memory.context(self._query(input), k=self.recall_k)
        return self._messages(context, initial_token_count)

    async def aget(
        self, input: str | None = None, initial_token_count: int = 0, **kwargs: Any
    ) -> list[ChatMessage]:
        """Async twin of :meth:`get`."""
        context = await self._memory.acontext(self._query(input), k=self.recall_k)
        return self._messages(context, initial_token_count)

    def get_all(self) -> list[ChatMessage]:
        """Return every stored message of the session, oldest first (the full log)."""
        return [turn_to_chat_message(s.turn) for s in self._memory.turns()]

    async def aget_all(self) -> list[ChatMessage]:
        """Async twin of :meth:`get_all`."""
        return [turn_to_chat_message(s.turn) for s in await self._memory.aturns()]

    def put(self, message: ChatMessage) -> None:
        """Store a message durably, then fold the oldest into the summary if over budget.

        A :class:`~.messages.SummaryMessage` (from :meth:`get`) is not stored.

        Raises:
            InvalidInputError: For something that is not a ``ChatMessage``.
            StoreError: When the message could not be stored.
        """
        self.put_messages([message])

    async def aput(self, message: ChatMessage) -> None:
        """Async twin of :meth:`put`."""
        await self.aput_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Store several messages in one write (and at most one fold).

        Raises:
            InvalidInputError: For anything but a list of ``ChatMessage``.
            StoreError: When the messages could not be stored (none was).
        """
        turns = self._turns(messages)
        if turns:
            self._memory.add(turns)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Async twin of :meth:`put_messages`."""
        turns = self._turns(messages)
        if turns:
            await self._memory.aadd(turns)

    def set(self, messages: list[ChatMessage]) -> None:
        """Make the session's messages exactly ``messages`` (summary messages skipped).

        When the stored log is a prefix of ``messages`` (a chat engine or agent handing
        back the history it read from :meth:`get_all`, or the same ``chat_history``
        loaded at every start), only the new messages are added and the summary is kept;
        otherwise the session is cleared and ``messages`` added.

        Raises:
            InvalidInputError: For anything but a list of ``ChatMessage``.
        """
        turns = self._turns(messages)
        stored = [s.turn for s in self._memory.turns()]
        if self._is_prefix(stored, turns):
            turns = turns[len(stored) :]
        else:
            self._memory.clear()
        if turns:
            self._memory.add(turns)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Async twin of :meth:`set`."""
        turns = self._turns(messages)
        stored = [s.turn for s in await self._memory.aturns()]
        if self._is_prefix(stored, turns):
            turns = turns[len(stored) :]
        else:
            await self._memory.aclear()
        if turns:
            await self._memory.aadd(turns)

    def reset(self) -> None:
        """Delete every stored message, summary and fact of this session."""
        self._memory.clear()

    async def areset(self) -> None:
        """Async twin of :meth:`reset`."""
        await self._memory.aclear()

    # -- beyond the base class --------------------------------------------------------------

    @property
    def summary(self) -> str | None:
        """The current summary text, or None before the first fold."""
        latest = self._memory.summary()
        return latest.text if latest is not None else None

    def get_summary(self) -> Summary | None:
        """The latest summary version with its provenance (turn ids, version, method)."""
        return self._memory.summary()

    def context(self, input: str | None = None) -> Context:
        """The context :meth:`get` converts, with its token count and hidden messages."""
        return self._memory.context(self._query(input), k=self.recall_k)

    def fold(self, *, force: bool = False) -> FoldResult:
        """Fold now if due (or always with ``force``); raises if the summarizer fails."""
        return self._memory.fold(force=force)

    async def afold(self, *, force: bool = False) -> FoldResult:
        """Async twin of :meth:`fold`."""
        return await self._memory.afold(force=force)


def _fields_of(memory: RecursiveMemory) -> dict[str, Any]:
    """The public settings of a ready engine."""
    if not isinstance(memory, RecursiveMemory):
        raise ConfigurationError.for_value(
            "memory", memory, "must be a core RecursiveMemory or HybridMemory"
        )
    cfg = memory.config
    return {
        "session_id": memory.session_id,
        "namespace": memory.namespace,
        "token_limit": cfg.max_tokens,
        "max_summary_tokens": cfg.max_summary_tokens,
        "max_messages": cfg.max_messages,
        "keep_tokens": cfg.keep_tokens,
        "keep_messages": cfg.keep_messages,
        "summary_role": MessageRole(cfg.summary_role),
        "tokenizer_model": memory.counter.model,
        "extract_facts": memory.extract_facts,
        "recall_tokens": cfg.recall_tokens,
    }
