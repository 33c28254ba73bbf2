"""The one builder: adapter options in, a recursive or hybrid memory out.

Every adapter (the LangChain chat history and agent middleware, the LlamaIndex memories,
the command line) accepts the same options and builds its engine here, so one rule holds
everywhere:

* the store is given by *one* of ``path`` (an embedded persistent store, default
  location when all are None), ``client`` (any chromadb client) or ``store``
  (:func:`open_store`);
* the budget is :meth:`~.options.MemoryOptions.memory_config` (the summary cap and the
  recall share by their rules), and a memory that recalls by default is a
  :class:`~.recursive.HybridMemory`.

Which options there are, their types, defaults and docs, is the model
:class:`~.options.MemoryOptions` (re-exported here, with :class:`~.options.MemoryKwargs`).

Example:
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> from langchain_recursive_memory.core.builder import MemoryOptions, build_memory
    >>> memory = build_memory("s", MemoryOptions(max_tokens=800, extract_facts=True),
    ...                       store=MemoryStore.in_memory())
    >>> type(memory).__name__, memory.config.recall_tokens
    ('HybridMemory', 200)
"""

from __future__ import annotations

from collections.abc import Callable
from os import PathLike
from typing import TYPE_CHECKING

from .errors import ConfigurationError
from .models import TextModel
from .options import MemoryKwargs, MemoryOptions
from .recursive.memory import HybridMemory, RecursiveMemory
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
    recalls = options.hybrid or options.memory_config().recall_tokens > 0
    engine = HybridMemory if recalls else RecursiveMemory
    return engine(
        session_id,
        options=options,
        model=model,
        store=store,
        namespace=namespace,
        on_usage=on_usage,
        user_id=user_id,
    )
