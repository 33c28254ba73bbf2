"""``HiGMemMemoryBlock``: HiGMem as a long-term block of LlamaIndex's ``Memory``.

``Memory`` keeps recent messages itself and flushes the oldest ones to its blocks. This
block indexes what it is given in HiGMem (turn and event nodes, in the store's database)
and, when the memory is read, returns the turns HiGMem retrieves for the latest user message.

Every read and write is scoped to the session: the block uses the ``session_id`` that
``Memory`` passes with each call (on ``aget``) and stamps on each flushed message (on
``aput``), falling back to the block's own ``session_id``. Unlike ``VectorMemoryBlock``
(llama_index#22701), one block shared by several ``Memory`` sessions never returns one
session's turns to another. With ``user_id``, the sessions belong to that user, and
``scope="user"`` retrieves from all of them (a user's earlier conversations).

Example:
    >>> import asyncio
    >>> from llama_index.core.llms import ChatMessage
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> from llamaindex_higmem import HiGMemMemoryBlock
    >>> block = HiGMemMemoryBlock.from_defaults(store=MemoryStore.in_memory(), k=2)
    >>> asyncio.run(block.aput([ChatMessage(role="user", content="My cat is Miso.")],
    ...                        session_id="u1"))
    >>> print(asyncio.run(block.aget([ChatMessage(role="user", content="cat name?")],
    ...                              session_id="u1")))  # doctest: +ELLIPSIS
    - [...] user: My cat is Miso.
"""

from __future__ import annotations

from datetime import datetime, timezone
from os import PathLike
from typing import TYPE_CHECKING, Any

from llama_index.core.llms import ChatMessage
from llama_index.core.memory.memory import BaseMemoryBlock
from pydantic import Field, PrivateAttr

from langchain_recursive_memory.core.builder import open_store
from langchain_recursive_memory.core.cache import SessionCache
from langchain_recursive_memory.core.errors import InvalidInputError
from langchain_recursive_memory.core.higmem import HiGMem, HiGMemConfig
from langchain_recursive_memory.core.models import TextModel
from langchain_recursive_memory.core.retrieval.pool import SESSION, check_scope
from langchain_recursive_memory.core.runtime.retry import RetryPolicy
from langchain_recursive_memory.core.storage import DEFAULT_NAMESPACE, MemoryStore
from langchain_recursive_memory.core.turn import Turn

from .instrumentation import dispatch_usage
from .llms import resolve_llm
from .messages import chat_message_to_turn, is_summary_message

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["HiGMemMemoryBlock", "MAX_ENGINES", "flushed_turns", "latest_question"]

MAX_ENGINES = 256
"""How many sessions' HiGMem engines one block keeps (least recently used dropped).

As the LangChain middleware's ``max_sessions``: an engine is a handle on the session's
state in the store, cheap to build again when its session comes back."""


def _when(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("[%Y-%m-%d %H:%M] ")


class HiGMemMemoryBlock(BaseMemoryBlock[str]):
    """A ``Memory`` block that indexes flushed turns in HiGMem and retrieves for the input.

    The block's text is the ``k`` best turns for the input (``HiGMem.retrieve``, which
    returns them best first), one dated line each, in time order: the model reads them as
    a story. Build it with :meth:`from_defaults`. One block serves any number of sessions:
    it keeps the engines of the :data:`MAX_ENGINES` most recently used ones and builds the
    others again when they come back (their state is in the store).
    """

    name: str = Field(default="higmem", description="The name of the memory block.")
    session_id: str | None = Field(
        default=None,
        description="Session used when Memory passes none (Memory normally passes its own).",
    )
    namespace: str = Field(default=DEFAULT_NAMESPACE, description="Namespace of the sessions.")
    user_id: str | None = Field(
        default=None,
        description="The user the sessions belong to (None: each session alone).",
    )
    scope: str = Field(
        default=SESSION,
        description="Retrieve from 'session' (this one) or 'user' (every session of user_id).",
    )
    k: int | None = Field(default=8, description="Most turns returned per read.")
    use_llm: bool | None = Field(
        default=None, description="Guided retrieval (default: when an LLM is configured)."
    )
    _store: MemoryStore = PrivateAttr()
    _model: TextModel | None = PrivateAttr(default=None)
    _embedder: Any = PrivateAttr(default=None)
    _config: HiGMemConfig = PrivateAttr(default_factory=HiGMemConfig)
    _retry: RetryPolicy | None = PrivateAttr(default=None)
    _engines: SessionCache[HiGMem] = PrivateAttr(
        default_factory=lambda: SessionCache("higmem block engines", max_entries=MAX_ENGINES)
    )

    @classmethod
    def class_name(cls) -> str:
        """Get the class name."""
        return "HiGMemMemoryBlock"

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> HiGMemMemoryBlock:
        # The engines are handles on a store, like a database connection: a copy (a
        # workflow's isolated state edit copies its Memory) shares them and the store.
        return self.model_copy()

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
        name: str = "higmem",
        k: int | None = 8,
        use_llm: bool | None = None,
        priority: int = 0,
        config: HiGMemConfig | None = None,
        retry: RetryPolicy | None = None,
    ) -> HiGMemMemoryBlock:
        """Create the block.

        Args:
            llm: A LlamaIndex LLM (or core ``TextModel``) for construction and guided
                retrieval; None: the no-LLM methods.
            embed_model: A LlamaIndex ``BaseEmbedding`` (or any supported embedder); None:
                BM25 only.
            store: A core ``MemoryStore``; or ``client`` (any chromadb client), or
                ``path`` (embedded persistent store; default location when all are None).
            client: A chromadb client.
            path: Directory of an embedded persistent store.
            session_id: Fallback session id.
            namespace: Namespace of the sessions.
            user_id: The user the sessions belong to (validated like a session id).
            scope: ``"session"`` (default) or ``"user"``: retrieve from every session of
                ``user_id`` (ranked without the LLM).
            name: The block's name in ``Memory``'s template.
            k: Most turns per read.
            use_llm: Guided retrieval or not (default: when ``llm`` is given).
            priority: ``Memory`` truncation priority (0: never truncated).
            config: HiGMem parameters.
            retry: Retries and timeouts of model and embedding calls.
        """
        block = cls(
            name=name,
            session_id=session_id,
            namespace=namespace,
            user_id=user_id,
            scope=check_scope(scope),
            k=k,
            use_llm=use_llm,
            priority=priority,
        )
        block._store = open_store(path=path, client=client, store=store)
        block._model = resolve_llm(llm)
        block._embedder = embed_model
        block._config = config or HiGMemConfig()
        block._retry = retry
        return block

    def engine(self, session_id: str | None = None) -> HiGMem:
        """The HiGMem engine of a session (created on first use; see :data:`MAX_ENGINES`)."""
        sid = session_id or self.session_id
        if not sid:
            raise InvalidInputError.for_value(
                "session_id", sid, "no session: pass one to from_defaults or through Memory"
            )
        return self._engines.get_or_create(
            sid,
            lambda: HiGMem(
                sid,
                model=self._model,
                embedder=self._embedder,
                store=self._store,
                namespace=self.namespace,
                config=self._config,
                retry=self._retry,
                on_usage=dispatch_usage,
                user_id=self.user_id,
            ),
        )

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        session = block_kwargs.get("session_id") or self.session_id
        query = latest_question(messages)
        if query is None:
            return ""
        found = await self.engine(session).aretrieve(
            query, self.k, use_llm=self.use_llm, scope=self.scope
        )
        story = sorted(found, key=lambda r: (r.turn.created_at or 0.0, r.rank))  # time order
        return "\n".join(f"- {_when(r.turn.created_at)}{r.speaker}: {r.turn.text}" for r in story)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        for session, turns in flushed_turns(messages, self.session_id).items():
            await self.engine(session).aadd(turns, flush=True)


def latest_question(messages: list[ChatMessage] | None) -> str | None:
    """The text of the newest user message (not a summary message), or None if blank.

    What a block recalls for: ``Memory`` hands its blocks the short-term messages (and
    the ``input`` of ``get``, as the last user message), so this is the question asked.

    Example:
        >>> latest_question([ChatMessage(role="user", content="Hi"),
        ...                  ChatMessage(role="assistant", content="Hello")])
        'Hi'
    """
    for message in reversed(messages or []):
        if message.role.value == "user" and not is_summary_message(message):
            text = message.content or ""
            return text if text.strip() else None
    return None


def flushed_turns(
    messages: list[ChatMessage], default_session: str | None
) -> dict[str | None, list[Turn]]:
    """Flushed messages as turns, by session (the ``session_id`` ``Memory`` stamped on each).

    ``Memory.aput`` stamps its session on every message it flushes to its blocks
    (``additional_kwargs["session_id"]``); the stamp is taken off the stored turn.
    Messages without one belong to ``default_session``; summary messages are skipped.

    Example:
        >>> stamped = ChatMessage(role="user", content="Hi", additional_kwargs={"session_id": "a"})
        >>> {s: [t.text for t in turns] for s, turns in flushed_turns([stamped], "b").items()}
        {'a': ['Hi']}
    """
    by_session: dict[str | None, list[Turn]] = {}
    for message in messages:
        if is_summary_message(message):
            continue
        kwargs = dict(message.additional_kwargs)
        session = kwargs.pop("session_id", None) or default_session
        clean = message.model_copy(update={"additional_kwargs": kwargs})
        by_session.setdefault(session, []).append(chat_message_to_turn(clean))
    return by_session
