"""The one builder: adapter options in, a recursive or hybrid memory out.

Every adapter (the LangChain chat history and agent middleware, the LlamaIndex memories,
the command line) accepts the same options and builds its engine here, so one rule holds
everywhere:

* the store is given by *one* of ``path`` (an embedded persistent store, default
  location when all are None), ``client`` (any chromadb client) or ``store``
  (:func:`open_store`);
* the recall share is :func:`~.config.recall_share`: an explicit ``recall_tokens`` wins;
  otherwise a memory that extracts facts, has an embedder or recalls from the user's
  sessions (``recall_scope="user"``: a *hybrid* memory) reserves a quarter of
  ``max_tokens`` for recall, any other none;
* the summary cap is :func:`~.config.summary_cap`: 300, or a quarter of a small budget;
* ``summary_role`` accepts the role aliases of :data:`~.turn.ROLE_ALIASES` too
  (LangChain's ``"human"``, ``"ai"``...).

Which options there are, their types, defaults and docs, and which go to the budget
(:class:`~.config.MemoryConfig`) or to the engine, is the table :data:`~.options.OPTIONS`;
:class:`MemoryOptions` and :class:`MemoryKwargs` are its typed declarations (the tests
check they equal it).

Example:
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> from langchain_recursive_memory.core.builder import MemoryOptions, build_memory
    >>> memory = build_memory("s", MemoryOptions(max_tokens=800, extract_facts=True),
    ...                       store=MemoryStore.in_memory())
    >>> type(memory).__name__, memory.config.recall_tokens
    ('HybridMemory', 200)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from os import PathLike
from typing import TYPE_CHECKING, Any

from typing_extensions import TypedDict

from .config import DEFAULT_MAX_TOKENS, MemoryConfig, recall_share, summary_cap
from .errors import ConfigurationError
from .models import TextModel
from .options import BUDGET, ENGINE, OPTIONS, PYTHON
from .recursive.memory import HybridMemory, RecursiveMemory
from .retrieval.pool import USER
from .runtime.retry import RetryPolicy
from .storage import DEFAULT_NAMESPACE, MemoryStore
from .turn import ROLE_ALIASES
from .usage import UsageRecord

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["ROLE_ALIASES", "MemoryKwargs", "MemoryOptions", "build_memory", "open_store"]


def open_store(
    *,
    path: str | PathLike[str] | None = None,
    client: ClientAPI | None = None,
    store: MemoryStore | None = None,
) -> MemoryStore:
    """The store of one of ``path``, ``client`` or ``store`` (default: the default path).

    Raises:
        ConfigurationError: When more than one is given.
        StoreError: When the store cannot be opened.
    """
    given = {n: v for n, v in (("path", path), ("client", client), ("store", store)) if v}
    if len(given) > 1:
        name = list(given)[1]
        raise ConfigurationError.for_value(
            name, given[name], f"give only one of path, client, store (got {list(given)})"
        )
    if store is not None:
        return store
    if client is not None:
        return MemoryStore(client)
    return MemoryStore.persistent(path)


class MemoryKwargs(TypedDict, total=False):
    """The keyword arguments of :class:`MemoryOptions`, as the adapters accept them.

    The typed declaration of :data:`~.options.OPTIONS` (its ``python`` surface) that
    ``Unpack`` needs; each option's doc is the table's.
    """

    max_tokens: int
    max_summary_tokens: int | None
    max_messages: int | None
    keep_tokens: int | None
    keep_messages: int | None
    summary_role: str
    recall_tokens: int | None
    reserve_tokens: int
    extract_facts: bool
    embedder: Any
    tokenizer_model: str
    retry: RetryPolicy | None
    background_folds: bool
    recall_scope: str
    config: MemoryConfig | None


@dataclass(frozen=True)
class MemoryOptions:
    """What an adapter's user chooses: the options of :data:`~.options.OPTIONS`.

    The fields are the table's (names, types and defaults, checked by the tests); each
    one's doc is the table's. ``config`` overrides the budget fields when given. A name
    that is not an option of the table is a ``ConfigurationError`` (named, with the
    table's options).

    Example:
        >>> MemoryOptions.from_kwargs({"keep_messages": 4}).keep_messages
        4
    """

    max_tokens: int = DEFAULT_MAX_TOKENS
    max_summary_tokens: int | None = None
    max_messages: int | None = None
    keep_tokens: int | None = None
    keep_messages: int | None = None
    summary_role: str = "user"
    recall_tokens: int | None = None
    reserve_tokens: int = 0
    extract_facts: bool = False
    embedder: Any = None
    tokenizer_model: str = "gpt-4o"
    retry: RetryPolicy | None = None
    background_folds: bool = False
    recall_scope: str = "session"
    config: MemoryConfig | None = None

    def __new__(cls, *args: Any, **kwargs: Any) -> MemoryOptions:
        """Check the keyword arguments' names against the table, then create the object."""
        OPTIONS.check_known(kwargs, PYTHON)
        return super().__new__(cls)

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> MemoryOptions:
        """The options of an adapter's keyword arguments.

        Raises:
            ConfigurationError: For an argument that is not an option of the table (named,
                with the table's options).
        """
        return cls(**kwargs)

    @property
    def hybrid(self) -> bool:
        """Whether the memory is hybrid (recalls by default).

        It extracts facts, has an embedder, or recalls from the user's sessions
        (``recall_scope="user"``: BM25 recall of the user's turns needs neither a model
        nor an embedder, and a user scope with no recall share would do nothing).
        """
        return self.extract_facts or self.embedder is not None or self.recall_scope == USER

    def memory_config(self) -> MemoryConfig:
        """The validated :class:`~.config.MemoryConfig` of these options."""
        if self.config is not None:
            return self.config
        budget = {o.name: getattr(self, o.name) for o in OPTIONS.layer(BUDGET)}
        role = self.summary_role
        budget.update(  # the rules of the options whose default is a rule
            max_summary_tokens=summary_cap(self.max_tokens, self.max_summary_tokens),
            summary_role=ROLE_ALIASES.get(role, role) if isinstance(role, str) else role,
            recall_tokens=recall_share(self.max_tokens, self.recall_tokens, hybrid=self.hybrid),
        )
        return MemoryConfig(**budget)

    def engine_options(self) -> dict[str, Any]:
        """The engine's keyword arguments among these options (the table's engine layer)."""
        return {o.name: getattr(self, o.name) for o in OPTIONS.layer(ENGINE)}


def build_memory(
    session_id: str,
    options: MemoryOptions,
    *,
    model: TextModel | None = None,
    store: MemoryStore,
    namespace: str = DEFAULT_NAMESPACE,
    on_usage: Callable[[UsageRecord], None] | None = None,
    user_id: str | None = None,
) -> RecursiveMemory:
    """A :class:`~.recursive.HybridMemory` (hybrid options) or a ``RecursiveMemory``.

    ``user_id`` names the user the session belongs to (None: the session alone); see
    :class:`~.recursive.RecursiveMemory`.

    Raises:
        ConfigurationError: For impossible budgets or a session of another user.
        InvalidInputError: For an invalid session id, namespace or user id.
    """
    config = options.memory_config()
    engine = HybridMemory if options.hybrid or config.recall_tokens else RecursiveMemory
    return engine(
        session_id,
        model=model,
        store=store,
        namespace=namespace,
        config=config,
        on_usage=on_usage,
        user_id=user_id,
        **options.engine_options(),
    )
