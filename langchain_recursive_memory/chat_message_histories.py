"""``RecursiveSummaryChatMessageHistory``: a LangChain chat history within a token budget.

A drop-in for ``InMemoryChatMessageHistory`` (for example inside
``RunnableWithMessageHistory``): every message is stored durably in the store's database, and
``messages`` returns the running summary first (one message, user role by default, never a
system message in the middle of a prompt) followed by the recent messages verbatim, all
within ``max_tokens``.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> history = RecursiveSummaryChatMessageHistory(
    ...     "user-42", store=MemoryStore.in_memory(), max_tokens=1000
    ... )
    >>> history.add_messages([HumanMessage("Hi, I'm Ada."), AIMessage("Hello Ada!")])
    >>> [m.content for m in history.messages]
    ["Hi, I'm Ada.", 'Hello Ada!']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any, TypeVar

from .core.errors import MissingDependencyError

try:  # the framework first: without it, name the extra that installs it
    import langchain_core  # noqa: F401
except ImportError as exc:
    raise MissingDependencyError.for_import(exc, __name__) from exc

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from typing_extensions import Unpack

from .core.builder import MemoryKwargs, MemoryOptions, build_memory, open_store
from .core.errors import InvalidInputError
from .core.models import TextModel
from .core.options import OPTIONS, PYTHON
from .core.recursive import Context, RecursiveMemory
from .core.recursive.facade import SummaryFacade
from .core.storage import DEFAULT_NAMESPACE, MemoryStore
from .core.usage import UsageRecord
from .language_models import LangChainTextModel, resolve_text_model
from .messages import messages_to_turns, turn_to_message
from .retrievers import RecursiveMemoryRetriever

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["RecursiveSummaryChatMessageHistory"]


@OPTIONS.document(PYTHON)
class RecursiveSummaryChatMessageHistory(SummaryFacade, BaseChatMessageHistory):
    """Chat message history with a running summary, persisted in the store's database.

    Args:
        session_id: The conversation's id.
        user_id: The user the conversation belongs to (default None: the session alone).
            The facts extracted in any of the user's sessions are recalled in every other
            one (``extract_facts=True``), and ``recall_scope="user"`` (or the retriever's
            ``scope="user"``) recalls the archived turns of all of them. Fixed once
            recorded with the session.
        llm: The summarizer: a LangChain chat model or LLM (a cheaper one than the chat
            model is the usual choice), a ``"provider:model"`` string, a core
            ``TextModel``, or None for the no-LLM extractive summarizer.
        path: The store's folder, its SQLite log and embedded Chroma (default:
            ``$LANGCHAIN_RECURSIVE_MEMORY_PATH`` or
            ``~/.local/share/langchain-recursive-memory/chroma``).
        client: Any chromadb client (``PersistentClient``, ``HttpClient``...) instead of
            ``path``.
        store: A ready :class:`~.core.MemoryStore` instead of ``path`` or ``client``.
        namespace: Isolates apps or tenants sharing a store (default ``"default"``).
        recall_in_messages: ``messages`` has no question of its own: it fills the recall
            share with the facts and archived turns recalled for the newest user message
            of the history (default True, as the agent middleware recalls for the
            request's newest human message). Under ``RunnableWithMessageHistory``, which
            reads the history before it adds the new question, that is the previous
            question. False leaves the share free for a retriever on the current question
            (``as_retriever()``, ``RecursiveMemoryRetriever(sessions=...)``: the LCEL
            pattern), so the two together stay within ``max_tokens``.
        callbacks: LangChain callback handlers: they see the summarizer's calls (tagged
            ``langchain-recursive-memory``) and, after each fold, a custom event
            ``langchain_recursive_memory.usage`` with the calls and tokens it spent.
        memory: A ready :class:`~.core.RecursiveMemory` (overrides everything else).
        messages: Messages to add at once (as ``InMemoryChatMessageHistory(messages=...)``).
        **options: The memory options (:class:`~.core.builder.MemoryKwargs`), each
            documented once in :data:`~.core.options.OPTIONS`, as follows
            (``summary_role="system"`` only if nothing comes before the history).
        {OPTIONS}
    """

    def __init__(
        self,
        session_id: str,
        *,
        user_id: str | None = None,
        llm: Any = None,
        path: str | PathLike[str] | None = None,
        client: ClientAPI | None = None,
        store: MemoryStore | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        callbacks: Any = None,
        memory: RecursiveMemory | None = None,
        messages: Sequence[BaseMessage] | None = None,
        recall_in_messages: bool = True,
        **options: Unpack[MemoryKwargs],
    ) -> None:
        super().__init__()
        self.recall_in_messages = recall_in_messages
        if memory is None:
            memory = build_memory(
                session_id,
                MemoryOptions.from_kwargs(options),
                model=_traced(resolve_text_model(llm), callbacks, session_id, namespace),
                store=open_store(path=path, client=client, store=store),
                namespace=namespace,
                user_id=user_id,
            )
        self.memory = memory
        self.session_id = memory.session_id
        if callbacks:
            memory.usage_listeners.append(_usage_to_callbacks(callbacks))
        if messages:
            self.add_messages(messages)

    def __repr__(self) -> str:
        return f"RecursiveSummaryChatMessageHistory({self.memory!r})"

    def __eq__(self, other: object) -> bool:
        """Equal when both hand the model the same messages.

        As ``InMemoryChatMessageHistory``, which compares its messages.
        """
        if not isinstance(other, RecursiveSummaryChatMessageHistory):
            return NotImplemented
        return self.messages == other.messages

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by content

    @property
    def user_id(self) -> str | None:
        """The session's user (the one given, or once read the one recorded), or None."""
        return self.memory.user_id

    def _summary_engine(self) -> RecursiveMemory:
        return self.memory

    # -- BaseChatMessageHistory ---------------------------------------------------------------

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The summary message (if any) then the recent messages, within ``max_tokens``.

        With recall on, the first message also holds the memories recalled for the
        newest user message (see ``recall_in_messages``).
        """
        context = self.memory.context()
        query = self._latest_question(context)
        if query is not None:
            context = self.memory.context(query)
        return [turn_to_message(t) for t in context.turns]

    async def aget_messages(self) -> list[BaseMessage]:
        """Async twin of :attr:`messages`."""
        context = await self.memory.acontext()
        query = self._latest_question(context)
        if query is not None:
            context = await self.memory.acontext(query)
        return [turn_to_message(t) for t in context.turns]

    def _latest_question(self, context: Context) -> str | None:
        """The newest user message of the window, when ``messages`` recalls for it."""
        if not self.recall_in_messages or self.memory.config.recall_tokens == 0:
            return None
        return context.question

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store messages durably, then fold the oldest into the summary if over budget.

        Summary messages returned by :attr:`messages` are skipped if passed back in, and a
        message whose id is already stored is not stored twice.
        """
        turns = messages_to_turns(messages)
        if turns:
            self.memory.add(turns)

    def add_user_message(self, message: HumanMessage | str) -> None:
        """Store a user message given as a ``HumanMessage`` or its text.

        Raises:
            InvalidInputError: For anything else (``None``, a number, a dict...).
        """
        super().add_user_message(_message_or_text(message, HumanMessage))

    def add_ai_message(self, message: AIMessage | str) -> None:
        """Store an assistant message given as an ``AIMessage`` or its text.

        Raises:
            InvalidInputError: For anything else.
        """
        super().add_ai_message(_message_or_text(message, AIMessage))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async twin of :meth:`add_messages`."""
        turns = messages_to_turns(messages)
        if turns:
            await self.memory.aadd(turns)

    def clear(self) -> None:
        """Delete every stored message and summary of this session."""
        self.memory.clear()

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await self.memory.aclear()

    # -- beyond the base class --------------------------------------------------------------

    def context(self) -> Context:
        """The context with its token count and what is hidden pending a fold."""
        return self.memory.context()

    async def acontext(self) -> Context:
        """Async twin of :meth:`context`."""
        return await self.memory.acontext()

    def all_messages(self) -> list[BaseMessage]:
        """Every stored message of the session, oldest first (the full log)."""
        return [turn_to_message(s.turn) for s in self.memory.turns()]

    async def aall_messages(self) -> list[BaseMessage]:
        """Async twin of :meth:`all_messages`."""
        return [turn_to_message(s.turn) for s in await self.memory.aturns()]

    def as_retriever(self, **kwargs: Any) -> RecursiveMemoryRetriever:
        """Return a :class:`~.retrievers.RecursiveMemoryRetriever` over this session.

        Args:
            **kwargs: Its fields (``k``, ``kinds``, ``max_tokens``).
        """
        return RecursiveMemoryRetriever(memory=self.memory, **kwargs)


USAGE_EVENT = "langchain_recursive_memory.usage"


M = TypeVar("M", bound=BaseMessage)


def _message_or_text(message: object, cls: type[M]) -> M | str:
    if isinstance(message, cls | str):
        return message
    raise InvalidInputError.for_value(
        "message", message, f"must be a {cls.__name__} or its text (a str)"
    )


def _traced(
    model: TextModel | None, callbacks: Any, session_id: str, namespace: str
) -> TextModel | None:
    """The summarizer, its LangChain calls tagged and sent to ``callbacks``."""
    if isinstance(model, LangChainTextModel):
        model.config = {
            **(model.config or {}),
            "callbacks": callbacks,
            "tags": ["langchain-recursive-memory"],
            "metadata": {"lrm_session_id": session_id, "lrm_namespace": namespace},
        }
    return model


def _usage_to_callbacks(callbacks: Any) -> Callable[[UsageRecord], None]:
    """A usage listener that sends each record to LangChain callbacks as a custom event."""
    from langchain_core.callbacks import CallbackManager

    manager = CallbackManager.configure(inheritable_callbacks=callbacks)

    def emit(record: UsageRecord) -> None:
        manager.on_custom_event(USAGE_EVENT, record.to_dict())

    return emit
