"""0.1.0's ``MemoryStore`` methods of the engines' protocol, working until 0.3.0.

0.2.0 moved them to :attr:`MemoryStore.records <.storage.store.MemoryStore.records>`
(``store.append(...)`` is ``store.records.append(...)``; ``put_notes``/``get_notes`` are
``put_turn_nodes``/``get_turn_nodes``); six that only tests used read the repositories.
:func:`add_store_aliases` puts them back on the class, each warning with a
``DeprecationWarning`` that names its replacement; ``langchain_recursive_memory.core``
calls it once. They are not applications' API: use the methods ``MemoryStore`` documents.

Example:
    >>> import warnings
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> store = MemoryStore.in_memory()
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     store.get_turns("default", "s1", [])
    []
    >>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
    MemoryStore.get_turns() is deprecated since 0.2.0 and will be removed in 0.3.0; use
    MemoryStore.records.get_turns()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .deprecations import warn_deprecated
from .events import TurnNode
from .facts import Fact
from .storage import SessionState, VectorRecord
from .storage.keys import SessionOwner, event_record_id, owned_fact_record_id, validate_session

__all__ = ["DEPRECATED_METHODS", "FORWARDED", "add_store_aliases"]

#: old ``MemoryStore`` method -> the ``MemoryStore.records`` method that does the same
FORWARDED = {
    "add_usage": "add_usage",
    "add_vectors": "add_vectors",
    "append": "append",
    "commit_summary": "commit_summary",
    "get_events": "get_events",
    "get_notes": "get_turn_nodes",
    "get_turns": "get_turns",
    "load": "load",
    "put_events": "put_events",
    "upsert_facts": "upsert_facts",
    "vector_ids": "vector_ids",
}

_COLLECTIONS = {
    "turns": "turn_log",
    "hg_turns": "turn_nodes",
    "hg_events": "event_nodes",
    "facts": "fact_table",
}


def _forwarding(old: str, new: str) -> Callable[..., Any]:
    """Return the deprecated method ``old``, calling ``store.records.<new>``."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        warn_deprecated(f"MemoryStore.{old}()", f"MemoryStore.records.{new}()")
        return getattr(self.records, new)(*args, **kwargs)

    method.__name__ = method.__qualname__ = old
    method.__doc__ = f"Deprecated since 0.2.0: use ``MemoryStore.records.{new}()``."
    return method


def get_facts(
    self: Any, namespace: str, session_id: str, *, ids: Sequence[str] | None = None
) -> list[Fact]:
    """Deprecated since 0.2.0: use ``MemoryStore.records.get_facts()``."""
    warn_deprecated("MemoryStore.get_facts()", "MemoryStore.records.get_facts()")
    result: list[Fact] = self.records.get_facts(namespace, session_id, ids=ids)
    return result


def put_notes(self: Any, namespace: str, session_id: str, notes: Sequence[TurnNode]) -> None:
    """Deprecated since 0.2.0: use ``MemoryStore.records.put_turn_nodes()``."""
    warn_deprecated("MemoryStore.put_notes()", "MemoryStore.records.put_turn_nodes()")
    self.records.put_turn_nodes(namespace, session_id, notes)


def fact_record_id(self: Any, namespace: str, session_id: str, fact: Fact) -> str:
    """Deprecated since 0.2.0: use ``core.storage.keys.owned_fact_record_id()``."""
    warn_deprecated(
        "MemoryStore.fact_record_id()",
        "langchain_recursive_memory.core.storage.keys.owned_fact_record_id()",
    )
    user_id = self.records.recorded_user(namespace, session_id)
    return owned_fact_record_id(namespace, session_id, user_id, fact.key_hash)


def state_from_turns(self: Any, namespace: str, session_id: str, turns: Sequence[Any]) -> Any:
    """Deprecated since 0.2.0: use ``MemoryStore.records.load()`` (``turns`` is not used)."""
    warn_deprecated("MemoryStore.state_from_turns()", "MemoryStore.records.load()")
    state: SessionState = self.records.load(namespace, session_id)
    return state


def get_vectors(
    self: Any, space: str, namespace: str, session_id: str, kinds: Sequence[str]
) -> list[VectorRecord]:
    """Deprecated since 0.2.0: use ``MemoryStore.records.repos.vector_spaces.of_kinds()``."""
    warn_deprecated(
        "MemoryStore.get_vectors()", "MemoryStore.records.repos.vector_spaces.of_kinds()"
    )
    validate_session(namespace, session_id)
    owner = SessionOwner.of(namespace, session_id)
    records: list[VectorRecord] = self.records.repos.vector_spaces.of_kinds(space, owner, kinds)
    return records


def query_vectors(
    self: Any,
    space: str,
    namespace: str,
    session_id: str,
    vector: Sequence[float],
    n: int,
    kinds: Sequence[str] = ("turn", "fact"),
) -> list[tuple[str, str, float]]:
    """Deprecated since 0.2.0: use ``MemoryStore.records.repos.vector_spaces.nearest()``."""
    warn_deprecated(
        "MemoryStore.query_vectors()", "MemoryStore.records.repos.vector_spaces.nearest()"
    )
    validate_session(namespace, session_id)
    owner = SessionOwner.of(namespace, session_id)
    found: list[tuple[str, str, float]] = self.records.repos.vector_spaces.nearest(
        space, owner, vector, n, kinds
    )
    return found


def record_ids(self: Any, collection: str, namespace: str, session_id: str) -> list[str]:
    """Deprecated since 0.2.0: use ``MemoryStore.records.repos.<repository>.record_ids()``."""
    from .errors import InvalidInputError

    warn_deprecated("MemoryStore.record_ids()", "MemoryStore.records.repos.turn_log.record_ids()")
    validate_session(namespace, session_id)
    name = _COLLECTIONS.get(collection)
    if name is None:
        raise InvalidInputError.for_value("collection", collection, "unknown collection")
    ids: list[str] = getattr(self.records.repos, name).record_ids(
        SessionOwner.of(namespace, session_id)
    )
    return ids


def delete_events(self: Any, namespace: str, session_id: str, event_ids: Sequence[str]) -> None:
    """Deprecated since 0.2.0: use ``MemoryStore.records.drop_nodes()`` (every node)."""
    warn_deprecated(
        "MemoryStore.delete_events()", "MemoryStore.records.repos.event_nodes.delete_ids()"
    )
    validate_session(namespace, session_id)
    skey = SessionOwner.of(namespace, session_id).key
    ids = [event_record_id(skey, e) for e in event_ids]
    self.records.repos.event_nodes.delete_ids("delete events", ids)


_OWN = (
    get_facts,
    put_notes,
    fact_record_id,
    state_from_turns,
    get_vectors,
    query_vectors,
    record_ids,
    delete_events,
)


DEPRECATED_METHODS = tuple(sorted({*FORWARDED, *(fn.__name__ for fn in _OWN)}))
"""The 0.1.0 ``MemoryStore`` methods :func:`add_store_aliases` puts back (deprecated)."""


def add_store_aliases(cls: type) -> None:
    """Give ``cls`` (``MemoryStore``) its 0.1.0 methods back, each deprecated.

    A method the class defines itself is left alone.

    Args:
        cls: The store class.

    Example:
        >>> from langchain_recursive_memory.core import MemoryStore
        >>> add_store_aliases(MemoryStore)  # done on import; doing it again changes nothing
        >>> MemoryStore.put_notes.__doc__
        'Deprecated since 0.2.0: use ``MemoryStore.records.put_turn_nodes()``.'
    """
    methods = {old: _forwarding(old, new) for old, new in FORWARDED.items()}
    methods |= {fn.__name__: fn for fn in _OWN}
    for name, method in methods.items():
        if name not in vars(cls) or getattr(vars(cls)[name], "__module__", None) == __name__:
            setattr(cls, name, method)
