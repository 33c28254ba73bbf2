"""``RecursiveSummaryMemory``: a LlamaIndex ``BaseMemory`` within a token budget.

A drop-in for ``ChatMemoryBuffer`` in chat engines (``SimpleChatEngine``,
``ContextChatEngine``, ``CondensePlusContextChatEngine``...) and agents (``FunctionAgent``,
``AgentWorkflow``): every message is stored durably in the store's database, and ``get()``
returns the running summary first (one message, user role by default, never a system message in the
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

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any, cast

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field, PrivateAttr, ValidationError, create_model
from llama_index.core.memory.types import BaseMemory
from typing_extensions import Unpack

from langchain_recursive_memory.core.builder import build_memory, open_store
from langchain_recursive_memory.core.deprecations import warn_deprecated
from langchain_recursive_memory.core.errors import ConfigurationError, InvalidInputError
from langchain_recursive_memory.core.options import (
    BUDGET,
    LLAMAINDEX,
    OPTIONS,
    LlamaIndexKwargs,
    MemoryOptions,
    Option,
)
from langchain_recursive_memory.core.recursive import Context, RecursiveMemory
from langchain_recursive_memory.core.recursive.facade import SummaryFacade
from langchain_recursive_memory.core.runtime.retry import RetryPolicy
from langchain_recursive_memory.core.storage import DEFAULT_NAMESPACE, MemoryStore
from langchain_recursive_memory.core.turn import Turn

from .buffer import buffer_options, newest_that_fit
from .instrumentation import dispatch_usage
from .llms import resolve_llm
from .messages import chat_message_to_turn, is_summary_message, turn_to_chat_message

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["RecursiveSummaryMemory"]


def _role_name(role: Any) -> str:
    return role.value if isinstance(role, MessageRole) else str(role)


DEFAULT_SESSION = "chat_history"
"""The session of a memory built without ``session_id`` (``ChatMemoryBuffer``'s default key)."""


def _options(settings: Mapping[str, Any], **more: Any) -> MemoryOptions:
    """Memory options from the settings (LlamaIndex names) and the non-field options."""
    values = OPTIONS.to_core(settings, LLAMAINDEX)
    if "summary_role" in values:
        values["summary_role"] = _role_name(values["summary_role"])
    try:
        return MemoryOptions(**values, **more)
    except ConfigurationError as exc:
        raise ConfigurationError(_llamaindex_names(str(exc))) from exc


def _setting(name: str, *, resolved: str = "", **overrides: Any) -> Any:
    """The pydantic field of setting ``name``: the option table's default and doc.

    ``resolved`` tells what the field holds when it is not the setting as given (the value
    the setting's rule gave); it is added to the doc.
    """
    option = OPTIONS.on(LLAMAINDEX)[name]
    description = " ".join(filter(None, (OPTIONS.doc_for(option.name, LLAMAINDEX), resolved)))
    return Field(**{"default": option.default, **overrides}, description=description, frozen=True)


def _settings_fields() -> dict[str, Any]:
    """The pydantic fields of the settings: the options' own, under LlamaIndex's names."""
    fields: dict[str, Any] = {n: (o.type, _setting(n)) for n, o in OPTIONS.on(LLAMAINDEX).items()}
    role = _setting(
        "summary_role", default=MessageRole.USER, resolved="The field holds the role itself."
    )
    recall = _setting(
        "recall_tokens", default=0, resolved="The field holds the tokens reserved (0: no recall)."
    )
    return {**fields, "summary_role": (MessageRole, role), "recall_tokens": (int, recall)}


_SettingsMemory = create_model("_SettingsMemory", __base__=BaseMemory, **_settings_fields())


class RecursiveSummaryMemory(SummaryFacade, _SettingsMemory):  # type: ignore[misc,valid-type]
    """Chat memory with a running summary, persisted in the store's database.

    Build it with :meth:`from_defaults`. The public fields are read-only settings (they
    are what ``to_dict()`` records); the engine behind them is :attr:`memory`. Built from
    the fields alone (``RecursiveSummaryMemory(session_id=...)``, ``from_dict``), the
    memory opens the store at ``path`` and folds with the no-LLM extractive summarizer,
    like ``ChatSummaryMemoryBuffer.from_dict``, which also leaves the LLM to be set again.

    ``get()`` returns the summary message (a :class:`~.messages.SummaryMessage`) then the
    newest messages, within ``token_limit`` tokens (exact tiktoken counts of the
    ``tokenizer_model``, message overhead included; images and other media at a fixed
    cost). With recall on (``recall_tokens`` > 0), the facts and archived messages
    recalled for the question come in the first message too: for ``get(input=...)``'s
    question, else (``SimpleChatEngine`` and agents call ``get()``) for the newest user
    message of the memory, the question just ``put``. ``put`` stores a message durably,
    then folds the oldest messages into the summary if the window is over budget: a
    failing summarizer never loses a message and is retried later.
    """

    session_id: str = Field(description="The conversation's id.", frozen=True)
    user_id: str | None = Field(
        default=None,
        description="The user the conversation belongs to (None: the session alone); "
        "the facts of all the user's sessions are recalled in each.",
        frozen=True,
    )
    namespace: str = Field(
        default=DEFAULT_NAMESPACE,
        description="Isolates apps or tenants sharing a store.",
        frozen=True,
    )
    recall_k: int = Field(
        default=12,
        ge=1,
        description="Most memories considered for the recall share of get().",
        frozen=True,
    )
    path: str | None = Field(
        default=None,
        description="The store's folder (SQLite log, embedded Chroma), when opened by path.",
        frozen=True,
    )

    _memory: RecursiveMemory = PrivateAttr()

    def __init__(
        self, memory: RecursiveMemory | None = None, *, buffer_limit: int | None = None, **data: Any
    ) -> None:
        if memory is not None:
            derived = _fields_of(memory)
            if buffer_limit is not None:  # a buffer (see .buffer): the engine's budget differs
                derived.update(token_limit=buffer_limit, max_summary_tokens=None)
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
        settings = {name: getattr(self, name) for name in OPTIONS.on(LLAMAINDEX)}
        options = _options(settings)
        return build_memory(
            self.session_id,
            buffer_options(options, self.token_limit) or options,
            store=open_store(path=self.path),
            namespace=self.namespace,
            user_id=self.user_id,
        )

    def __repr__(self) -> str:
        return f"RecursiveSummaryMemory({self._memory!r})"

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> RecursiveSummaryMemory:
        # The memory is a handle on a store, like a database connection: a copy (for
        # example a workflow's isolated state edit) shares the engine and its store.
        return cast(RecursiveSummaryMemory, self.model_copy())

    @classmethod
    def class_name(cls) -> str:
        """Get class name."""
        return "RecursiveSummaryMemory"

    def to_string(self) -> str:
        """The settings as a JSON string (as ``ChatMemoryBuffer.to_string``)."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_string(cls, data_str: str, **kwargs: Any) -> RecursiveSummaryMemory:
        """Reopen a memory from :meth:`to_string` (as ``ChatMemoryBuffer.from_string``)."""
        return cast(RecursiveSummaryMemory, cls.from_dict(json.loads(data_str), **kwargs))

    @classmethod
    @OPTIONS.document(LLAMAINDEX)
    def from_defaults(
        cls,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        chat_history: Sequence[ChatMessage] | None = None,
        llm: Any = None,
        namespace: str = DEFAULT_NAMESPACE,
        path: str | PathLike[str] | None = None,
        client: ClientAPI | None = None,
        store: MemoryStore | None = None,
        embedder: Any = None,
        recall_k: int = 12,
        retry: RetryPolicy | None = None,
        memory: RecursiveMemory | None = None,
        **settings: Unpack[LlamaIndexKwargs],
    ) -> RecursiveSummaryMemory:
        """Create the memory of one conversation.

        Args:
            session_id: The conversation's id (default ``"chat_history"``, the default key of
                ``ChatMemoryBuffer``: give one per conversation).
            user_id: The user the conversation belongs to (default None: the session
                alone). Facts extracted in any of the user's sessions are recalled in all
                of them; ``recall_scope="user"`` recalls their archived messages too.
            chat_history: Messages to load: the session's messages become exactly these
                (as :meth:`set` does; loading the same history again costs nothing).
            llm: The summarizer: any LlamaIndex LLM (a cheaper one than the chat model is
                the usual choice), a core ``TextModel``, or None for the no-LLM
                extractive summarizer.
            namespace: Isolates apps or tenants sharing a store (default ``"default"``).
            path: The store's folder, its SQLite log and embedded Chroma (default:
                ``$LANGCHAIN_RECURSIVE_MEMORY_PATH`` or
                ``~/.local/share/langchain-recursive-memory/chroma``).
            client: Any chromadb client (``PersistentClient``, ``HttpClient``...) instead
                of ``path``.
            store: A ready core ``MemoryStore`` instead of ``path`` or ``client``.
            embedder: For dense recall: a LlamaIndex ``BaseEmbedding`` (or LangChain
                ``Embeddings``, Chroma ``EmbeddingFunction``). None: recall is lexical
                (BM25) only.
            recall_k: Most memories considered for the recall share (default 12).
            retry: Retries, timeouts and cool-down of summarizer and embedder calls.
            memory: A ready core ``RecursiveMemory`` (overrides everything above but
                ``chat_history`` and ``recall_k``).
            **settings: The memory options offered here, under their LlamaIndex names
                (each documented once in the option table, ``core.options.OPTIONS``): a
                ``token_limit`` too small for a summary makes the memory a buffer
                (:attr:`buffered`). Nothing else is accepted (``chat_store``,
                ``tokenizer_fn``... of ``ChatMemoryBuffer`` have no meaning here).
            {OPTIONS}

        Raises:
            ConfigurationError: For unknown or conflicting arguments and impossible
                budgets.
            InvalidInputError: For an invalid session id or namespace.
            StoreError: When the Chroma store cannot be opened.
        """
        unknown = set(settings) - set(OPTIONS.on(LLAMAINDEX))
        if unknown:
            raise _unexpected({k: settings[k] for k in unknown})  # type: ignore[literal-required]
        buffer_limit = None
        if memory is None:
            options = _options(settings, embedder=embedder, retry=retry)
            stores = {"path": path, "client": client, "store": store}
            memory, buffer_limit = _engine((session_id, user_id), options, llm, stores, namespace)
        elif session_id is not None and session_id != memory.session_id:
            raise ConfigurationError.for_value(
                "session_id", session_id, f"differs from the memory's {memory.session_id!r}"
            )
        extra = {"path": str(path)} if path is not None else {}
        this = cls(memory=memory, recall_k=recall_k, buffer_limit=buffer_limit, **extra)
        if chat_history is not None:
            this.set(list(chat_history))
        return this

    # -- helpers ----------------------------------------------------------------------------

    def _summary_engine(self) -> RecursiveMemory:
        return self._memory

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

    def _reserve(self, initial_token_count: int) -> int:
        """Tokens to leave free for what precedes the history (and its message overhead).

        As ``ChatMemoryBuffer``: a count over ``token_limit`` is an error; one that leaves
        no room gives an empty history.
        """
        if (
            not isinstance(initial_token_count, int)
            or isinstance(initial_token_count, bool)
            or initial_token_count < 0
        ):
            raise InvalidInputError.for_value(
                "initial_token_count", initial_token_count, "must be an integer >= 0"
            )
        if initial_token_count > self.token_limit:
            raise InvalidInputError(
                f"Initial token count exceeds token limit (initial_token_count="
                f"{initial_token_count}, token_limit={self.token_limit})"
            )
        if not initial_token_count:
            return 0
        overhead = self._memory.counter.message_overhead("system")
        limit: int = self.token_limit
        return min(initial_token_count + overhead, limit)

    @staticmethod
    def _messages(context: Context) -> list[ChatMessage]:
        return [turn_to_chat_message(t) for t in context.turns]

    # -- BaseMemory -------------------------------------------------------------------------

    @property
    def buffered(self) -> bool:
        """Whether ``token_limit`` is too small for a summary (see :mod:`.buffer`).

        ``get()`` then returns, as ``ChatMemoryBuffer`` does, the newest messages whose
        contents fit.
        """
        return bool(self.token_limit != self._memory.config.max_tokens)

    def _buffer(self, context: Context, initial_token_count: int) -> list[ChatMessage]:
        self._reserve(initial_token_count)  # the same checks of initial_token_count
        window = [turn_to_chat_message(t) for t in context.window]
        return newest_that_fit(window, self.token_limit, initial_token_count, self.tokenizer_fn)

    def get(
        self, input: str | None = None, initial_token_count: int = 0, **kwargs: Any
    ) -> list[ChatMessage]:
        """Return the summary message (if any) then the recent messages, within budget.

        Args:
            input: The current question. With recall on (``recall_tokens`` > 0), the
                facts and archived messages recalled for it come in the first message.
                None (``SimpleChatEngine`` and agents give none): the newest user message
                of the memory, the question just ``put``, is the one recalled for.
            initial_token_count: Tokens of what precedes the history in the prompt (a
                system prompt; ``SimpleChatEngine`` passes it). That many tokens, plus one
                message's overhead, are left free in ``token_limit``: the oldest recent
                messages are left out (they are in the log and get folded).
            **kwargs: Ignored (accepted like LlamaIndex's own memories).

        Raises:
            InvalidInputError: For an ``input`` that is not a string, or an
                ``initial_token_count`` that is negative or exceeds ``token_limit``.
        """
        if self.buffered:
            return self._buffer(self._memory.context(), initial_token_count)
        return self._messages(self._context(input, self._reserve(initial_token_count)))

    async def aget(
        self, input: str | None = None, initial_token_count: int = 0, **kwargs: Any
    ) -> list[ChatMessage]:
        """Async twin of :meth:`get`."""
        if self.buffered:
            return self._buffer(await self._memory.acontext(), initial_token_count)
        return self._messages(await self._acontext(input, self._reserve(initial_token_count)))

    def _latest(self, input: Any, context: Context) -> str | None:
        """The question to recall for when none was given: the memory's newest user message."""
        if input is not None or self.recall_tokens == 0:
            return None
        return context.question

    def _context(self, input: Any, reserve: int = 0) -> Context:
        context = self._memory.context(self._query(input), k=self.recall_k, reserve=reserve)
        question = self._latest(input, context)
        if question is None:
            return context
        return self._memory.context(question, k=self.recall_k, reserve=reserve)

    async def _acontext(self, input: Any, reserve: int = 0) -> Context:
        query = self._query(input)
        context = await self._memory.acontext(query, k=self.recall_k, reserve=reserve)
        question = self._latest(input, context)
        if question is None:
            return context
        return await self._memory.acontext(question, k=self.recall_k, reserve=reserve)

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
        self._memory.set_turns(self._turns(messages))

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Async twin of :meth:`set`."""
        await self._memory.aset_turns(self._turns(messages))

    def reset(self) -> None:
        """Delete every stored message, summary and fact of this session."""
        self._memory.clear()

    async def areset(self) -> None:
        """Async twin of :meth:`reset`."""
        await self._memory.aclear()

    # -- beyond the base class --------------------------------------------------------------

    def context(self, input: str | None = None) -> Context:
        """The context :meth:`get` converts, with its token count and hidden messages."""
        return self._context(input)

    async def acontext(self, input: str | None = None) -> Context:
        """Async twin of :meth:`context`."""
        return await self._acontext(input)


def _unexpected(kwargs: dict[str, Any]) -> ConfigurationError:
    settings = sorted(OPTIONS.on(LLAMAINDEX))
    close = [m for k in sorted(kwargs) for m in difflib.get_close_matches(k, settings, n=1)]
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ConfigurationError.for_value(
        "kwargs",
        sorted(kwargs),
        "unexpected arguments (the store is given by path, client or store, the "
        f"conversation by session_id, the tokenizer by tokenizer_model; the settings are "
        f"{settings}){hint}",
    )


def _engine(
    ids: tuple[str | None, str | None],
    options: MemoryOptions,
    llm: Any,
    stores: dict[str, Any],
    namespace: str,
) -> tuple[RecursiveMemory, int | None]:
    """The engine of :meth:`RecursiveSummaryMemory.from_defaults` (the store of ``stores``).

    ``ids`` are the session id (None: the default one) and the user id. A budget error
    names the LlamaIndex parameters (``token_limit``, not ``max_tokens``). Also returns
    the ``token_limit`` of a buffer (too small for a summary: :mod:`.buffer`), else None.
    """
    session_id, user_id = ids
    buffer_limit = None
    buffer = buffer_options(options, options.max_tokens)
    if buffer is not None:  # too small for a summary: ChatMemoryBuffer's behaviour, no LLM
        options, llm, buffer_limit = buffer, None, options.max_tokens
    model = resolve_llm(llm)
    try:
        config = options.memory_config()
    except ConfigurationError as exc:
        raise ConfigurationError(_llamaindex_names(str(exc))) from exc
    store = open_store(**stores)
    engine = build_memory(
        session_id if session_id is not None else DEFAULT_SESSION,
        options.model_copy(update={"config": config}),
        model=model,
        store=store,
        namespace=namespace,
        user_id=user_id,
    )
    return engine, buffer_limit


def _llamaindex_names(message: str) -> str:
    """``message`` with ``max_tokens`` written as LlamaIndex names it (``token_limit``)."""
    return re.sub(r"\bmax_tokens\b", "token_limit", message)


def _fields_of(memory: RecursiveMemory) -> dict[str, Any]:
    """The public settings of a ready engine."""
    if not isinstance(memory, RecursiveMemory):
        raise ConfigurationError.for_value(
            "memory", memory, "must be a core RecursiveMemory or HybridMemory"
        )
    settings = {name: _value_of(memory, o) for name, o in OPTIONS.on(LLAMAINDEX).items()}
    settings["summary_role"] = MessageRole(memory.config.summary_role)
    return {
        "session_id": memory.session_id,
        "user_id": memory.user_id,
        "namespace": memory.namespace,
        **settings,
    }


def _value_of(memory: RecursiveMemory, option: Option) -> Any:
    """The value of ``option`` in a ready engine (a budget field, or the engine's own)."""
    if option.name == "tokenizer_model":
        return memory.counter.model
    return getattr(memory.config if option.layer == BUDGET else memory, option.name)


def __getattr__(name: str) -> Any:
    """0.2.0's ``MemorySettings`` is ``core.options.LlamaIndexKwargs`` (until 0.4.0)."""
    if name != "MemorySettings":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    new = "langchain_recursive_memory.core.options.LlamaIndexKwargs"
    warn_deprecated(f"{__name__}.MemorySettings", new)
    return LlamaIndexKwargs
