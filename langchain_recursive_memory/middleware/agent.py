"""The middleware class: stores the agent's messages and bounds each model request.

See :mod:`langchain_recursive_memory.middleware` for the overview and an example.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
)
from langchain_core.runnables.config import ensure_config
from langgraph.runtime import Runtime
from typing_extensions import Unpack

from ..core.builder import MemoryKwargs, MemoryOptions, open_store
from ..core.config import MIN_WINDOW_TOKENS
from ..core.errors import ConfigurationError, StoreError
from ..core.options import OPTIONS, PYTHON
from ..core.recursive import Context, RecursiveMemory
from ..core.storage import DEFAULT_NAMESPACE, MemoryStore, validate_session
from ..language_models import resolve_text_model
from ..messages import turn_to_message
from .budget import reported_input_tokens, usage_correction
from .sessions import (
    MemoryFactory,
    SessionResolver,
    UserResolver,
    check_role,
    given_memory,
    memory_factory,
    run_user,
    warn_store,
)
from .state import ThreadSession, may_trim, remember, to_store, trimmed, unknown
from .view import (
    bounded_request,
    latest_question,
    messages_to_log,
    newest_not_sent,
    request_overhead,
    state_messages,
)

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["RecursiveMemoryMiddleware"]

logger = logging.getLogger("langchain_recursive_memory")


@OPTIONS.document(PYTHON)
class RecursiveMemoryMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Keeps an agent's model calls within a token budget with a recursive summary.

    **What the model sees.** Before each model call (``wrap_model_call`` and its async
    twin), the messages of the agent's state that are not in the log yet are stored, and
    the request's messages are replaced with the memory's context: the summary message
    (role ``summary_role``, user by default; it also holds the facts and turns recalled for
    the latest human message when ``recall_tokens`` > 0), then the newest messages verbatim.
    The summary, recalled memories, messages, system message and tool definitions
    together stay within ``max_tokens``: the system prompt and the tool schemas are
    counted (tools as the JSON the provider is sent, see
    :meth:`~..core.TokenCounter.count_tools`) and the conversation gets the rest
    (``count_system_and_tools=False`` leaves them out, on top of ``max_tokens``, as
    langchain's ``SummarizationMiddleware`` does). A response that reports
    ``usage_metadata["input_tokens"]`` corrects the thread's next request by the
    provider's own count (see :func:`~.budget.usage_correction`; logged at DEBUG). The
    current question and the newest messages are always sent: a tool result too large for
    the budget is sent cut, marked as cut, with its call (the log keeps it whole; reported
    once per thread at WARNING, then at INFO). The agent's system prompt is sent
    first and unchanged; system messages found among the state's messages (say, a
    ``SystemMessage`` passed in the input) are appended to it, so exactly one system
    message is sent, always first.

    **The thread's state stays bounded.** Every message is in the memory's log, so the
    state need hold only what the model still needs verbatim: at the end of each run
    (``after_agent``), the messages the memory has folded into its summary leave the
    state (``RemoveMessage``, as langchain's ``SummarizationMiddleware`` does), tool calls
    with their results; the state's system messages stay. What a checkpointer saves and
    reads back at every step is then the memory's window however long the thread, and
    the whole conversation stays readable (:meth:`all_messages`). The summary never
    becomes a message of the thread. ``trim_state=False`` keeps every message in the
    state (for applications that read it); the model is sent the same either way.

    **Sessions.** ``session_id`` is a fixed session (for example one per user, shared by
    all of their threads), or a function ``(config, runtime) -> str``; by default (None)
    each LangGraph thread is its own session, named by its ``thread_id``
    (``agent.invoke(..., {"configurable": {"thread_id": "t-1"}})``), with or without a
    checkpointer. Sessions never see each other's messages.

    **Users.** A session can belong to a user, named by the run as it names the thread:
    ``runtime.context.user_id`` (``context_schema``) or ``config["configurable"]["user_id"]``
    (or pass ``user_id=``, fixed or a function). The facts of every thread of the user are
    then recalled in each of them (``extract_facts=True``), and ``recall_scope="user"``
    recalls the archived turns of all of them too. A run that names no user: the thread
    alone, as before.

    **Storage.** Every message of the state is stored once: messages are keyed by their
    ``id`` (LangGraph gives every state message one; a message without one gets a new id),
    and the ids already in the log are skipped. A message passed in again without its
    ``id`` (re-sending the whole history with no checkpointer) is a new message. The final
    answer and the tool results of a run are stored when the run ends (``after_agent``).
    Messages removed from the state stay in the log until ``get_memory(...).clear()``.
    A thread resumed from its checkpoint in another process goes on: the state's messages
    the log holds are not stored again.

    **Failures.** A failing summarizer (error, timeout, empty answer) never fails the agent:
    the fold is retried later and the model gets the last good summary and the newest
    messages that fit. If the store fails, the model call still goes ahead with the newest
    state messages that fit ``max_tokens`` (a warning is logged) and the messages are
    stored at a later call while they are still in the state (nothing is trimmed then).

    Put this middleware first in ``middleware=[...]``: it is then the outermost wrapper,
    and the other middleware see (and may edit) the bounded view.

    Args:
        session_id: A fixed session id, a function ``(config, runtime) -> str``, or None
            (default) for the LangGraph ``thread_id``.
        user_id: A fixed user id, a function ``(config, runtime) -> str | None``, or None
            (default) for the run's ``user_id`` (context, then configurable), if any.
        llm: The summarizer: a LangChain chat model or LLM (a cheaper one than the agent's
            model is the usual choice), a ``"provider:model"`` string, a core
            ``TextModel``, or None for the no-LLM extractive summarizer.
        model: Alias of ``llm`` (the name ``SummarizationMiddleware`` uses).
        path: The store's folder, its SQLite log and embedded Chroma (default:
            ``$LANGCHAIN_RECURSIVE_MEMORY_PATH`` or
            ``~/.local/share/langchain-recursive-memory/chroma``).
        client: Any chromadb client (``PersistentClient``, ``HttpClient``...).
        store: A ready :class:`~.core.MemoryStore` (only one of ``path``, ``client``,
            ``store``).
        namespace: Isolates apps or tenants sharing a store (default ``"default"``).
        memory: A ready :class:`~.core.RecursiveMemory` (its session is the fixed
            session), or a function ``session_id -> RecursiveMemory``. Overrides the
            store, model and budget arguments.
        max_sessions: How many sessions' memory objects are kept in this process (least
            recently used dropped; they are cheap to rebuild). Default 256.
        count_system_and_tools: Count the request's system prompt and tool schemas inside
            ``max_tokens`` (default True).
        trim_state: At the end of each run, remove from the thread's state the messages
            the memory has folded into its summary (default True): the state, and what a
            checkpointer saves and reads back at every step, stays the size of the
            memory's window however long the thread. They stay in the log
            (:meth:`all_messages`). False keeps every message in the state.
        **options: The memory options (:class:`~.core.builder.MemoryKwargs`), each
            documented once in :data:`~.core.options.OPTIONS`, as follows; ``max_tokens``
            bounds what each model call is sent (counted with ``tokenizer_model``'s
            encoding), the recall share is filled for the latest human message, and
            ``summary_role="system"`` is refused (the agent's system prompt comes first).
        {OPTIONS}

    Raises:
        ConfigurationError: For invalid or conflicting arguments.
        InvalidInputError: For an invalid fixed session id or namespace.
    """

    def __init__(
        self,
        session_id: str | SessionResolver | None = None,
        *,
        user_id: str | UserResolver | None = None,
        llm: Any = None,
        model: Any = None,
        path: str | PathLike[str] | None = None,
        client: ClientAPI | None = None,
        store: MemoryStore | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        memory: RecursiveMemory | Callable[[str], RecursiveMemory] | None = None,
        max_sessions: int = 256,
        count_system_and_tools: bool = True,
        trim_state: bool = True,
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
        self._sessions: OrderedDict[str, ThreadSession] = OrderedDict()
        self._max_sessions = max_sessions
        self.count_system_and_tools = count_system_and_tools
        self.trim_state = trim_state
        self._factory: MemoryFactory
        self.user_id = user_id
        if memory is None:
            self._factory = memory_factory(
                MemoryOptions.from_kwargs(options),
                resolve_text_model(llm if llm is not None else model),
                open_store(path=path, client=client, store=store),
                namespace,
            )
        else:
            session_id, self._factory = given_memory(memory, session_id)
        if isinstance(session_id, str):
            validate_session(namespace, session_id)
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

    def _run_session(self, runtime: Runtime[Any] | None) -> ThreadSession:
        """The session of the current run, with the run's user."""
        return self._session(self._resolve_session(runtime), run_user(self.user_id, runtime))

    def _session(self, session_id: str, user_id: str | None = None) -> ThreadSession:
        with self._lock:
            session = self._sessions.pop(session_id, None)
            if session is not None and user_id is not None and session.user_id != user_id:
                session = None  # built for no user (or another): the engine checks the log
            if session is None:
                memory = self._factory(session_id, user_id)
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
                check_role(memory)
                session = ThreadSession(memory, user_id)
            self._sessions[session_id] = session
            while len(self._sessions) > self._max_sessions:
                self._sessions.popitem(last=False)
            return session

    def get_memory(self, session_id: str, user_id: str | None = None) -> RecursiveMemory:
        """Return the core memory of a session (to read its log or summary, or clear it).

        ``user_id``: the session's user, when it has one not recorded yet (default: the
        middleware's fixed ``user_id``, if it has one).

        Example:
            >>> from langchain_recursive_memory.core import MemoryStore
            >>> middleware = RecursiveMemoryMiddleware(store=MemoryStore.in_memory())
            >>> middleware.get_memory("thread-1").session_id
            'thread-1'
        """
        if user_id is None and isinstance(self.user_id, str):
            user_id = self.user_id
        return self._session(session_id, user_id).memory

    def all_messages(self, session_id: str, user_id: str | None = None) -> list[BaseMessage]:
        """Every message of a session's log, oldest first (folded or not, trimmed or not).

        With ``trim_state`` the thread's state holds only the memory's window; the whole
        conversation is here.

        Example:
            >>> from langchain_recursive_memory.core import MemoryStore
            >>> RecursiveMemoryMiddleware(store=MemoryStore.in_memory()).all_messages("t-1")
            []
        """
        return [turn_to_message(s.turn) for s in self.get_memory(session_id, user_id).turns()]

    # -- storing ----------------------------------------------------------------------------

    def _store(
        self, session: ThreadSession, messages: Sequence[BaseMessage], reserve: int = 0
    ) -> None:
        new = unknown(session, messages)
        if new:
            memory = session.memory
            present = []
            if not session.known:  # a thread this process has not seen: what is logged?
                present = memory.session.records.turns.by_ids([m.id for m in new if m.id])
            turns = to_store(session, new, present)
            if turns:
                memory.add(turns, reserve=reserve)
        remember(session, messages)

    async def _astore(
        self, session: ThreadSession, messages: Sequence[BaseMessage], reserve: int = 0
    ) -> None:
        new = unknown(session, messages)
        if new:
            memory = session.memory
            present = []
            if not session.known:  # a thread this process has not seen: what is logged?
                present = await asyncio.to_thread(
                    memory.session.records.turns.by_ids, [m.id for m in new if m.id]
                )
            turns = to_store(session, new, present)
            if turns:
                await memory.aadd(turns, reserve=reserve)
        remember(session, messages)

    # -- hooks ------------------------------------------------------------------------------

    def _reserve(self, request: ModelRequest[Any], session: ThreadSession) -> tuple[int, int]:
        """Tokens of ``max_tokens`` the request's system prompt and tools take (0 when off).

        Returns:
            Their count, and the reserve of the conversation: the count plus the thread's
            correction from the provider's reported usage (leaving at least
            ``MIN_WINDOW_TOKENS`` for the conversation).
        """
        if not self.count_system_and_tools:
            return 0, 0
        memory = session.memory
        overhead = request_overhead(request, memory)
        room = memory.config.window_budget - overhead
        if room < MIN_WINDOW_TOKENS:
            raise ConfigurationError.for_value(
                "max_tokens",
                memory.config.max_tokens,
                f"the system prompt and tool schemas take {overhead} tokens, which leaves "
                f"{room} for the conversation; raise max_tokens or pass "
                "count_system_and_tools=False",
            )
        return overhead, overhead + min(session.correction, room - MIN_WINDOW_TOKENS)

    def _prepare(self, request: ModelRequest[Any]) -> tuple[ThreadSession, int, int]:
        """The run's session, and the tokens the request's prompt and tools take (reserve)."""
        session = self._run_session(request.runtime)
        return session, *self._reserve(request, session)

    def _view(
        self,
        session: ThreadSession,
        request: ModelRequest[Any],
        context: Context | None,
        reserve: int,
    ) -> tuple[ModelRequest[Any], int]:
        """The request to send and its token count; a message sent cut is logged."""
        memory = session.memory
        bounded, context = bounded_request(request, memory, context, reserve)
        problem = newest_not_sent(request, bounded)
        if problem is not None:
            # Cutting is documented: one warning per thread, the later ones at INFO.
            level = logging.INFO if session.warned else logging.WARNING
            session.warned = True
            logger.log(
                level,
                "session %r: the newest message does not fit max_tokens=%d and is %s; "
                "raise max_tokens (warned once per thread)",
                memory.session_id,
                memory.config.max_tokens,
                problem,
            )
        return bounded, context.tokens

    def _learn(self, session: ThreadSession, estimate: int, response: Any) -> None:
        """Correct the thread's next request by the provider's reported ``input_tokens``."""
        reported = reported_input_tokens(response)
        if reported is None or not self.count_system_and_tools:
            return
        max_tokens = session.memory.config.max_tokens
        session.correction = usage_correction(estimate, reported, max_tokens)
        logger.debug(
            "session %r: the provider counted %d input_tokens for a request counted %d; "
            "the next request leaves %d tokens free to correct for it",
            session.memory.session_id,
            reported,
            estimate,
            session.correction,
        )

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Store the state's new messages, then call the model on the bounded view."""
        session, overhead, reserve = self._prepare(request)
        memory = session.memory
        context: Context | None
        try:
            self._store(session, messages_to_log(request), reserve)
            context = memory.context(latest_question(request, memory), reserve=reserve)
        except StoreError as exc:
            warn_store(memory, exc)
            context = None
        bounded, tokens = self._view(session, request, context, reserve)
        response = handler(bounded)
        self._learn(session, overhead + tokens, response)
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call`."""
        session, overhead, reserve = self._prepare(request)
        memory = session.memory
        context: Context | None
        try:
            await self._astore(session, messages_to_log(request), reserve)
            query = latest_question(request, memory)
            context = await memory.acontext(query, reserve=reserve)
        except StoreError as exc:
            warn_store(memory, exc)
            context = None
        bounded, tokens = self._view(session, request, context, reserve)
        response = await handler(bounded)
        self._learn(session, overhead + tokens, response)
        return response

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Store what the run added after its last model call, then trim the state.

        The answer and the tool results are stored; with ``trim_state`` the messages the
        memory has folded into its summary leave the thread's state (they stay in the log).
        """
        session = self._run_session(runtime)
        messages = state_messages(state)
        try:
            self._store(session, messages)
            if not (self.trim_state and may_trim(session, messages)):
                return None
            unfolded = session.memory.session.records.turns.unfolded_ids()
            return trimmed(session, messages, unfolded)
        except StoreError as exc:
            warn_store(session.memory, exc)
        return None

    async def aafter_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`after_agent`."""
        session = self._run_session(runtime)
        messages = state_messages(state)
        try:
            await self._astore(session, messages)
            if not (self.trim_state and may_trim(session, messages)):
                return None
            turns = session.memory.session.records.turns
            unfolded = await asyncio.to_thread(turns.unfolded_ids)
            return trimmed(session, messages, unfolded)
        except StoreError as exc:
            warn_store(session.memory, exc)
        return None
