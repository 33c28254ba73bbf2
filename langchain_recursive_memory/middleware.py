"""``RecursiveMemoryMiddleware``: recursive summary memory for LangChain v1 agents.

An ``AgentMiddleware`` for ``langchain.agents.create_agent``. Every message of the agent's
state is stored durably in the memory's Chroma log, and before each model call the model
is sent, instead of the whole history: the agent's system prompt (first, once), the running
summary (with the facts and turns recalled for the latest human message when recall is
on), then the most recent messages, all within ``max_tokens``. Tool calls are never split
from their results, no system message ever lands in the middle, and a failed summary is
never shown (the last good one is, with the newest messages that fit).

It needs the ``langchain`` package: ``pip install "langchain-recursive-memory[agents]"``.

Example:
    >>> from langchain.agents import create_agent
    >>> from langchain_core.language_models import GenericFakeChatModel
    >>> from langchain_core.messages import AIMessage
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> from langchain_recursive_memory.middleware import RecursiveMemoryMiddleware
    >>> memory = RecursiveMemoryMiddleware(
    ...     "user-42", store=MemoryStore.in_memory(), max_tokens=500, max_summary_tokens=100
    ... )
    >>> chat = GenericFakeChatModel(messages=iter([AIMessage("Hi Ada!"), AIMessage("Ada.")]))
    >>> agent = create_agent(chat, system_prompt="Be brief.", middleware=[memory])
    >>> _ = agent.invoke({"messages": [("user", "Hi, I'm Ada.")]})
    >>> agent.invoke({"messages": [("user", "Who am I?")]})["messages"][-1].content
    'Ada.'
    >>> [t.turn.text for t in memory.get_memory("user-42").turns()]  # no checkpointer needed
    ["Hi, I'm Ada.", 'Hi Ada!', 'Who am I?', 'Ada.']
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from os import PathLike
from typing import TYPE_CHECKING, Any, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables.config import RunnableConfig, ensure_config
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime
from typing_extensions import Unpack

from .core.builder import MemoryKwargs, MemoryOptions, build_memory, open_store
from .core.errors import ConfigurationError, StoreError
from .core.models import TextModel
from .core.recursive import Context, RecursiveMemory
from .core.storage import DEFAULT_NAMESPACE, MemoryStore, StoredTurn, validate_scope
from .core.turn import Turn
from .language_models import LangChainTextModel, resolve_text_model
from .messages import is_summary_message, message_to_turn, turn_to_message

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["RecursiveMemoryMiddleware", "SessionResolver"]

logger = logging.getLogger("langchain_recursive_memory")

SessionResolver = Callable[[RunnableConfig, "Runtime[Any] | None"], str]
"""A function ``(config, runtime) -> session_id`` (for example a user id from the context)."""

# The summarizer runs inside the agent's model node: keep its tokens out of the agent's
# `stream_mode="messages"` stream, as langchain's own SummarizationMiddleware does.
_SUMMARIZER_CONFIG: dict[str, Any] = {
    "tags": [TAG_NOSTREAM],
    "metadata": {"lc_source": "recursive_memory"},
}


@dataclass
class _Session:
    """A session's core memory and the message ids known to be in its log."""

    memory: RecursiveMemory
    known: set[str] = field(default_factory=set)


class RecursiveMemoryMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Keeps an agent's model calls within a token budget with a recursive summary.

    **What the model sees.** Before each model call (``wrap_model_call`` and its async
    twin), the messages of the agent's state that are not in the log yet are stored, and
    the request's messages are replaced with the memory's context: the summary message
    (role ``summary_role``, user by default; it also holds the facts and turns recalled for
    the latest human message when ``recall_tokens`` > 0), then the newest messages verbatim.
    The summary, recalled memories and messages together stay within ``max_tokens``; the
    system message and the tool definitions are not counted (they are the same on every
    call: budget for them on top of ``max_tokens``). The agent's system prompt is sent
    first and unchanged; system messages found among the state's messages (say, a
    ``SystemMessage`` passed in the input) are appended to it, so exactly one system
    message is sent, always first.

    **Why a per-call view and not a state rewrite.** Langchain's ``SummarizationMiddleware``
    replaces the graph state's messages with a summary (``RemoveMessage(id=
    REMOVE_ALL_MESSAGES)``), dropping them from the thread for good. Here the complete
    conversation already lives in Chroma, so only what the model is sent changes: the
    thread's state (checkpoints, ``agent.get_state``, streaming, human-in-the-loop edits,
    other middleware) keeps every message; nothing is removed before it is safely stored;
    a summary never becomes a message of the thread (to be shown to users, re-stored and
    summarized again); and a failed fold has nothing to undo. The cost is that a
    checkpointer's copy of a very long thread keeps growing: with a checkpointer, the
    thread's checkpoints and the Chroma log both hold the history. Without a checkpointer,
    the middleware *is* the agent's memory: send only the new messages on each call and the
    model still sees the summary and the recent window of the session.

    **Sessions.** ``session_id`` is a fixed session (for example one per user, shared by
    all of their threads), or a function ``(config, runtime) -> str``; by default (None)
    each LangGraph thread is its own session, named by its ``thread_id``
    (``agent.invoke(..., {"configurable": {"thread_id": "t-1"}})``), with or without a
    checkpointer. Sessions never see each other's messages.

    **Storage.** Every message of the state is stored once: messages are keyed by their
    ``id`` (LangGraph gives every state message one; a message without one gets a new id),
    and the ids already in the log are skipped. A message passed in again without its
    ``id`` (re-sending the whole history with no checkpointer) is a new message. The final
    answer and the tool results of a run are stored when the run ends (``after_agent``).
    Messages removed from the state stay in the log until ``get_memory(...).clear()``.

    **Failures.** A failing summarizer (error, timeout, empty answer) never fails the agent:
    the fold is retried later and the model gets the last good summary and the newest
    messages that fit. If Chroma fails, the model call still goes ahead with the newest
    state messages that fit ``max_tokens`` (a warning is logged) and the messages are
    stored at a later call while they are still in the state.

    Put this middleware first in ``middleware=[...]``: it is then the outermost wrapper,
    and the other middleware see (and may edit) the bounded view.

    Args:
        session_id: A fixed session id, a function ``(config, runtime) -> str``, or None
            (default) for the LangGraph ``thread_id``.
        llm: The summarizer: a LangChain chat model or LLM (a cheaper one than the agent's
            model is the usual choice), a ``"provider:model"`` string, a core
            ``TextModel``, or None for the no-LLM extractive summarizer.
        model: Alias of ``llm`` (the name ``SummarizationMiddleware`` uses).
        path: Directory of the embedded Chroma store (default:
            ``$LANGCHAIN_RECURSIVE_MEMORY_PATH`` or
            ``~/.local/share/langchain-recursive-memory/chroma``).
        client: Any chromadb client (``PersistentClient``, ``HttpClient``...).
        store: A ready :class:`~.core.MemoryStore` (only one of ``path``, ``client``,
            ``store``).
        namespace: Isolates apps or tenants sharing a store (default ``"default"``).
        max_tokens: Budget of the summary, recalled memories and messages sent on each
            model call (default 2000), counted with ``tokenizer_model``'s encoding.
        max_summary_tokens: Enforced cap of the summary (default 300).
        max_messages: Also fold when more messages than this are unfolded (default: off).
        keep_tokens: Tokens of recent messages kept verbatim after a fold (default: half
            the window budget).
        keep_messages: Messages kept verbatim after a fold (default: half of
            ``max_messages`` when set).
        summary_role: ``"human"``/``"user"`` (default) or ``"ai"``/``"assistant"``.
            ``"system"`` is refused: the agent's system prompt comes first.
        tokenizer_model: The agent model's name; picks the tiktoken encoding (default
            ``"gpt-4o"``).
        retry: Retries, timeouts and cool-down of summarizer calls.
        embedder: For dense recall: a LangChain ``Embeddings`` (or LlamaIndex
            ``BaseEmbedding``, Chroma ``EmbeddingFunction``). None: BM25 recall only.
        extract_facts: Extract atomic facts at each fold, in the summary call (needs
            ``llm``; default False).
        recall_tokens: Share of ``max_tokens`` for the facts and archived turns recalled
            for the latest human message. None (default): a quarter of ``max_tokens``
            when ``extract_facts`` or ``embedder`` is set, else 0 (no recall).
        background_folds: Fold on a background thread/task, so a model call never waits
            for the summarizer (default False).
        config: A full :class:`~.core.MemoryConfig` instead of the budget arguments.
        memory: A ready :class:`~.core.RecursiveMemory` (its session is the fixed
            session), or a function ``session_id -> RecursiveMemory``. Overrides the
            store, model and budget arguments.
        max_sessions: How many sessions' memory objects are kept in this process (least
            recently used dropped; they are cheap to rebuild). Default 256.

    Raises:
        ConfigurationError: For invalid or conflicting arguments.
        InvalidInputError: For an invalid fixed session id or namespace.
    """

    def __init__(
        self,
        session_id: str | SessionResolver | None = None,
        *,
        llm: Any = None,
        model: Any = None,
        path: str | PathLike[str] | None = None,
        client: ClientAPI | None = None,
        store: MemoryStore | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        memory: RecursiveMemory | Callable[[str], RecursiveMemory] | None = None,
        max_sessions: int = 256,
        **options: Unpack[MemoryKwargs],
    ) -> None:
        super().__init__()
        if llm is not None and model is not None:
            raise ConfigurationError.for_value("model", model, "give llm or model, not both")
        if not isinstance(max_sessions, int) or max_sessions < 1:
            raise ConfigurationError.for_value("max_sessions", max_sessions, "must be >= 1")
        if session_id is not None and not isinstance(session_id, str) and not callable(session_id):
            raise ConfigurationError.for_value(
                "session_id", session_id, "must be a str, a function (config, runtime) or None"
            )
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._max_sessions = max_sessions
        self._factory: Callable[[str], RecursiveMemory]
        if memory is None:
            self._factory = _factory(
                MemoryOptions.from_kwargs(options),
                resolve_text_model(llm if llm is not None else model),
                open_store(path=path, client=client, store=store),
                namespace,
            )
        else:
            session_id, self._factory = _given(memory, session_id)
        if isinstance(session_id, str):
            validate_scope(namespace, session_id)
        self.session_id = session_id

    def __repr__(self) -> str:
        session = self.session_id if isinstance(self.session_id, str | None) else "<function>"
        return f"RecursiveMemoryMiddleware(session_id={session!r})"

    # -- sessions ---------------------------------------------------------------------------

    def _resolve_session(self, runtime: Runtime[Any] | None) -> str:
        """The session id of the current run (fixed, from the function, or the thread)."""
        if isinstance(self.session_id, str):
            return self.session_id
        value: Any
        if self.session_id is not None:
            value = self.session_id(ensure_config(), runtime)
            what = "the session_id function's result"
        else:
            info = getattr(runtime, "execution_info", None)
            value = getattr(info, "thread_id", None)
            if value is None:  # the config of the running graph (outside a task's runtime)
                value = (ensure_config().get("configurable") or {}).get("thread_id")
            what = "thread_id"
            if value is None:
                raise ConfigurationError(
                    "RecursiveMemoryMiddleware has no session: invoke the agent with "
                    "config={'configurable': {'thread_id': ...}} or pass session_id= "
                    "(a fixed id or a function (config, runtime) -> str)"
                )
        if isinstance(value, str):
            return value
        if isinstance(value, int | uuid.UUID):
            return str(value)
        raise ConfigurationError.for_value(what, value, "must be a str")

    def _session(self, session_id: str) -> _Session:
        with self._lock:
            session = self._sessions.pop(session_id, None)
            if session is None:
                memory = self._factory(session_id)
                if not isinstance(memory, RecursiveMemory):
                    raise ConfigurationError.for_value(
                        "memory", memory, "the memory function must return a RecursiveMemory"
                    )
                if memory.session_id != session_id:
                    raise ConfigurationError.for_value(
                        "memory",
                        memory,
                        f"the memory function returned session {memory.session_id!r} "
                        f"for {session_id!r}",
                    )
                _check_role(memory)
                session = _Session(memory)
            self._sessions[session_id] = session
            while len(self._sessions) > self._max_sessions:
                self._sessions.popitem(last=False)
            return session

    def get_memory(self, session_id: str) -> RecursiveMemory:
        """Return the core memory of a session (to read its log or summary, or clear it).

        Example:
            >>> from langchain_recursive_memory.core import MemoryStore
            >>> middleware = RecursiveMemoryMiddleware(store=MemoryStore.in_memory())
            >>> middleware.get_memory("thread-1").session_id
            'thread-1'
        """
        return self._session(session_id).memory

    # -- storing ----------------------------------------------------------------------------

    @staticmethod
    def _unknown(session: _Session, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The messages whose ids are not known to be logged (ids given where missing)."""
        out: list[BaseMessage] = []
        seen: set[str] = set()
        for message in messages:
            if is_summary_message(message):
                continue
            if not message.id:
                message.id = str(uuid.uuid4())
            if message.id in session.known or message.id in seen:
                continue
            seen.add(message.id)
            out.append(message)
        return out

    @staticmethod
    def _to_store(
        session: _Session, unknown: list[BaseMessage], present: list[StoredTurn]
    ) -> list[Turn]:
        logged = {s.id for s in present}
        session.known.update(logged)
        return [message_to_turn(m) for m in unknown if m.id not in logged]

    @staticmethod
    def _remember(session: _Session, messages: Sequence[BaseMessage]) -> None:
        # Only the ids of the current state are worth remembering: older ones never come
        # back, and a cold cache costs one read by ids.
        session.known = {m.id for m in messages if m.id}

    def _store(self, session: _Session, messages: Sequence[BaseMessage]) -> None:
        unknown = self._unknown(session, messages)
        if unknown:
            memory = session.memory
            present = memory.store.get_turns(
                memory.namespace, memory.session_id, [m.id for m in unknown if m.id]
            )
            turns = self._to_store(session, unknown, present)
            if turns:
                memory.add(turns)
        self._remember(session, messages)

    async def _astore(self, session: _Session, messages: Sequence[BaseMessage]) -> None:
        unknown = self._unknown(session, messages)
        if unknown:
            memory = session.memory
            present = await asyncio.to_thread(
                memory.store.get_turns,
                memory.namespace,
                memory.session_id,
                [m.id for m in unknown if m.id],
            )
            turns = self._to_store(session, unknown, present)
            if turns:
                await memory.aadd(turns)
        self._remember(session, messages)

    @staticmethod
    def _state_messages(state: Any) -> list[BaseMessage]:
        if isinstance(state, Mapping):
            messages = state.get("messages") or []
        else:  # a state schema that is not a TypedDict
            messages = getattr(state, "messages", None) or []
        return [m for m in messages if isinstance(m, BaseMessage)]

    @staticmethod
    def _to_log(request: ModelRequest[Any]) -> list[BaseMessage]:
        """The state's messages to log, with ``create_agent``'s answers to invalid tool calls.

        ``create_agent`` answers an invalid tool call with an error ``ToolMessage`` it also
        writes to the state; it is logged right after its call, like in the state.
        """
        state = RecursiveMemoryMiddleware._state_messages(request.state)
        patches = {
            m.tool_call_id: m
            for m in request.messages
            if isinstance(m, ToolMessage) and not m.id and m.tool_call_id
        }
        if not patches:
            return state
        out: list[BaseMessage] = []
        for message in state:
            out.append(message)
            if isinstance(message, AIMessage):
                for call in message.invalid_tool_calls:
                    patch = patches.pop(call.get("id") or "", None)
                    if patch is not None:
                        out.append(patch)
        return out

    # -- the view ---------------------------------------------------------------------------

    @staticmethod
    def _query(request: ModelRequest[Any], memory: RecursiveMemory) -> str | None:
        if memory.config.recall_tokens == 0:
            return None
        for message in reversed(request.messages):
            if isinstance(message, HumanMessage) and not is_summary_message(message):
                return message.text or None
        return None

    def _view(
        self, request: ModelRequest[Any], memory: RecursiveMemory, context: Context | None
    ) -> ModelRequest[Any]:
        """The request with the bounded messages and the single, first system message."""
        if context is None:  # Chroma failed: the newest messages of the request that fit
            candidates = [
                m
                for m in request.messages
                if not isinstance(m, SystemMessage) and not is_summary_message(m)
            ]
            context = memory.context_builder.fit([message_to_turn(m) for m in candidates])
        head = [turn_to_message(context.summary_turn)] if context.summary_turn else []
        window = [turn_to_message(t) for t in context.window if t.role != "system"]
        newest = next(
            (m for m in reversed(request.messages) if not isinstance(m, SystemMessage)), None
        )
        sent = next((m for m in window if newest is not None and m.id == newest.id), None)
        if newest is not None and newest.id and sent is None:
            logger.warning(
                "session %r: the newest message (id %r) does not fit max_tokens=%d and is "
                "not sent to the model; raise max_tokens",
                memory.session_id,
                newest.id,
                memory.config.max_tokens,
            )
        elif newest is not None and sent is not None and sent.content != newest.content:
            logger.warning(
                "session %r: the newest message (id %r) does not fit max_tokens=%d and is "
                "sent cut (the log keeps it whole); raise max_tokens",
                memory.session_id,
                newest.id,
                memory.config.max_tokens,
            )
        system = _merge_system(
            request.system_message,
            [m for m in request.messages if isinstance(m, SystemMessage)],
        )
        return request.override(
            messages=cast("list[AnyMessage]", head + window), system_message=system
        )

    # -- hooks ------------------------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Store the state's new messages, then call the model on the bounded view."""
        session = self._session(self._resolve_session(request.runtime))
        memory = session.memory
        context: Context | None
        try:
            self._store(session, self._to_log(request))
            context = memory.context(self._query(request, memory))
        except StoreError as exc:
            _warn_store(memory, exc)
            context = None
        return handler(self._view(request, memory, context))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call`."""
        session = self._session(self._resolve_session(request.runtime))
        memory = session.memory
        context: Context | None
        try:
            await self._astore(session, self._to_log(request))
            context = await memory.acontext(self._query(request, memory))
        except StoreError as exc:
            _warn_store(memory, exc)
            context = None
        return await handler(self._view(request, memory, context))

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Store what the run added after its last model call (the answer, tool results)."""
        session = self._session(self._resolve_session(runtime))
        try:
            self._store(session, self._state_messages(state))
        except StoreError as exc:
            _warn_store(session.memory, exc)
        return None

    async def aafter_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`after_agent`."""
        session = self._session(self._resolve_session(runtime))
        try:
            await self._astore(session, self._state_messages(state))
        except StoreError as exc:
            _warn_store(session.memory, exc)
        return None


# -- helpers (pure) ---------------------------------------------------------------------------


def _factory(
    options: MemoryOptions, model: TextModel | None, store: MemoryStore, namespace: str
) -> Callable[[str], RecursiveMemory]:
    """The memory of each session, built by the one builder from the middleware's options."""
    validate_scope(namespace, "probe")
    config = options.memory_config()  # validated once, shared by every session
    if config.summary_role == "system":
        raise ConfigurationError.for_value(
            "summary_role",
            "system",
            "the agent's system prompt comes first; use 'human' (default) or 'ai'",
        )
    if isinstance(model, LangChainTextModel) and model.config is None:
        model.config = dict(_SUMMARIZER_CONFIG)
    shared = replace(options, config=config)

    def factory(session_id: str) -> RecursiveMemory:
        return build_memory(session_id, shared, model=model, store=store, namespace=namespace)

    return factory


def _given(
    memory: RecursiveMemory | Callable[[str], RecursiveMemory],
    session_id: str | SessionResolver | None,
) -> tuple[str | SessionResolver | None, Callable[[str], RecursiveMemory]]:
    """The session and memory factory of a ready memory (or of a memory function)."""
    if not isinstance(memory, RecursiveMemory):
        if not callable(memory):
            raise ConfigurationError.for_value(
                "memory", memory, "must be a RecursiveMemory or a function session_id -> memory"
            )
        return session_id, memory
    if isinstance(session_id, str) and session_id != memory.session_id:
        raise ConfigurationError.for_value(
            "session_id",
            session_id,
            f"differs from the given memory's session {memory.session_id!r}",
        )
    if session_id is not None and not isinstance(session_id, str):
        raise ConfigurationError.for_value(
            "session_id", session_id, "a ready memory= has a fixed session"
        )
    _check_role(memory)
    return memory.session_id, lambda _sid: memory


def _check_role(memory: RecursiveMemory) -> None:
    if memory.config.summary_role == "system":
        raise ConfigurationError.for_value(
            "summary_role",
            "system",
            "the agent's system prompt comes first; give the memory summary_role='user'",
        )


def _warn_store(memory: RecursiveMemory, exc: Exception) -> None:
    logger.warning(
        "session %r: the memory store failed (%s); the model is sent the newest messages "
        "that fit max_tokens, and the messages are stored at a later call",
        memory.session_id,
        exc,
    )


def _blocks(content: str | list[str | dict[Any, Any]]) -> list[str | dict[Any, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _merge_system(
    base: SystemMessage | None, extra: Sequence[SystemMessage]
) -> SystemMessage | None:
    """One system message: the agent's (unchanged when alone), then the state's ones."""
    if not extra:
        return base
    parts = ([base] if base is not None else []) + list(extra)
    if all(isinstance(p.content, str) for p in parts):
        content: str | list[str | dict[Any, Any]] = "\n\n".join(
            cast("str", p.content) for p in parts
        )
    else:
        content = [block for p in parts for block in _blocks(p.content)]
    first = parts[0]
    return SystemMessage(
        content=content,
        id=first.id,
        additional_kwargs=dict(first.additional_kwargs),
        response_metadata=dict(first.response_metadata),
    )
