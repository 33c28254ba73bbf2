"""0.1.0's ``MemoryStore`` methods of the engines' protocol, working until 0.3.0.

0.2.0 moved them to one session bound once, ``store.session(namespace, session_id)``
(``store.append(ns, sid, ...)`` is ``store.session(ns, sid).turns.append(...)``;
``put_notes``/``get_notes`` are ``nodes.put_turn_nodes``/``nodes.turn_nodes``); four that
only tests used read the collections directly here.
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
    store.session(ns, sid).turns.by_ids()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from .deprecations import warn_deprecated
from .events import TurnNode
from .facts import Fact
from .storage import SessionState, VectorRecord
from .storage.keys import SessionOwner, event_record_id, kinds_filter, owned_fact_record_id

__all__ = ["DEPRECATED_METHODS", "FORWARDED", "add_store_aliases"]

#: old ``MemoryStore`` method -> how 0.2.0 does the same (``store.session(ns, sid)`` is the
#: session bound once: :class:`~.storage.SessionStore`)
FORWARDED = {
    "add_usage": "store.session(ns, sid).add_usage()",
    "add_vectors": "store.session(ns, sid).vectors.put()",
    "append": "store.session(ns, sid).turns.append()",
    "commit_summary": "store.session(ns, sid).summaries.commit()",
    "get_events": "store.session(ns, sid).nodes.events()",
    "get_notes": "store.session(ns, sid).nodes.turn_nodes()",
    "get_turns": "store.session(ns, sid).turns.by_ids()",
    "load": "store.session(ns, sid).summaries.load()",
    "put_events": "store.session(ns, sid).nodes.put_events()",
    "upsert_facts": "store.session(ns, sid).facts.upsert()",
    "vector_ids": "store.session(ns, sid).vectors.existing()",
}


def _call(store: Any, old: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Do what 0.1.0's ``MemoryStore.<old>(*args, **kwargs)`` did, through 0.2.0's API."""
    if old == "add_usage":
        (records,) = args
        return store.parts.repos.usage_log.add(records, store.parts.directory.owner)
    if old == "commit_summary":
        new = args[0]
        return store.session(new.namespace, new.session_id).summaries.commit(*args, **kwargs)
    if old == "vector_ids":
        space, ids = args
        return store.parts.repos.vector_spaces.existing(ids, space)
    if old == "add_vectors":
        space, namespace, session_id, records = args
        return store.session(namespace, session_id).vectors.put(space, records)
    namespace, session_id, *rest = args
    session = store.session(namespace, session_id)
    target = {
        "append": session.turns.append,
        "get_events": session.nodes.events,
        "get_notes": session.nodes.turn_nodes,
        "get_turns": session.turns.by_ids,
        "load": session.summaries.load,
        "put_events": session.nodes.put_events,
        "upsert_facts": session.facts.upsert,
    }[old]
    return target(*rest, **kwargs)


_COLLECTIONS = {
    "turns": "turn_log",
    "hg_turns": "turn_nodes",
    "hg_events": "event_nodes",
    "facts": "fact_table",
}


def _forwarding(old: str, new: str) -> Callable[..., Any]:
    """Return the deprecated method ``old``, doing what ``new`` does."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        warn_deprecated(f"MemoryStore.{old}()", new)
        return _call(self, old, args, kwargs)

    method.__name__ = method.__qualname__ = old
    method.__doc__ = f"Deprecated since 0.2.0: use ``{new}``."
    return method


def get_facts(
    self: Any, namespace: str, session_id: str, *, ids: Sequence[str] | None = None
) -> list[Fact]:
    """Deprecated since 0.2.0: use ``store.session(ns, sid).facts.get()``."""
    warn_deprecated("MemoryStore.get_facts()", "store.session(ns, sid).facts.get()")
    result: list[Fact] = self.session(namespace, session_id).facts.get(ids=ids)
    return result


def put_notes(self: Any, namespace: str, session_id: str, notes: Sequence[TurnNode]) -> None:
    """Deprecated since 0.2.0: use ``store.session(ns, sid).nodes.put_turn_nodes()``."""
    warn_deprecated("MemoryStore.put_notes()", "store.session(ns, sid).nodes.put_turn_nodes()")
    self.session(namespace, session_id).nodes.put_turn_nodes(notes)


def fact_record_id(self: Any, namespace: str, session_id: str, fact: Fact) -> str:
    """Deprecated since 0.2.0: use ``core.storage.keys.owned_fact_record_id()``."""
    warn_deprecated(
        "MemoryStore.fact_record_id()",
        "langchain_recursive_memory.core.storage.keys.owned_fact_record_id()",
    )
    user_id = self.session(namespace, session_id).recorded_user()
    return owned_fact_record_id(namespace, session_id, user_id, fact.key_hash)


def state_from_turns(self: Any, namespace: str, session_id: str, turns: Sequence[Any]) -> Any:
    """Deprecated since 0.2.0: use ``store.session(ns, sid).summaries.load()``."""
    warn_deprecated("MemoryStore.state_from_turns()", "store.session(ns, sid).summaries.load()")
    state: SessionState = self.session(namespace, session_id).summaries.load()
    return state


def _vectors(self: Any, space: str, what: str, **query: Any) -> Any:
    """One read of a vector collection (0.1.0's test-only reads; no 0.2.0 equivalent)."""
    col = self.parts.repos.vector_spaces.collection(space)
    method = col.query if "query_embeddings" in query else col.get
    return self.parts.repos.client.call(what, partial(method, **query))


def get_vectors(
    self: Any, space: str, namespace: str, session_id: str, kinds: Sequence[str]
) -> list[VectorRecord]:
    """Deprecated since 0.2.0 (no replacement: it was for tests): a session's vectors."""
    warn_deprecated("MemoryStore.get_vectors()", "reading the vector collection with chromadb")
    owner = SessionOwner.of(namespace, session_id)
    where, include = kinds_filter(owner.key, kinds), ["embeddings", "metadatas"]
    got = _vectors(self, space, "read vectors", where=where, include=include)
    embeddings = got.get("embeddings")
    vectors = [] if embeddings is None else list(embeddings)
    rows = zip(got["ids"], got["metadatas"] or [], vectors, strict=True)
    return [
        VectorRecord(i, str(m["kind"]), str(m["ref"]), v, str(m.get("h", "")))
        for i, m, v in rows
        if owner.owns(m)
    ]


def query_vectors(  # noqa: PLR0917 (0.1.0's signature, as it shipped, until 0.3.0)
    self: Any,
    space: str,
    namespace: str,
    session_id: str,
    vector: Sequence[float],
    n: int,
    kinds: Sequence[str] = ("turn", "fact"),
) -> list[tuple[str, str, float]]:
    """Deprecated since 0.2.0 (no replacement: it was for tests): a kNN query of a session."""
    warn_deprecated("MemoryStore.query_vectors()", "querying the vector collection with chromadb")
    owner = SessionOwner.of(namespace, session_id)
    got = _vectors(
        self,
        space,
        "query vectors",
        query_embeddings=[list(vector)],
        n_results=n,
        where=kinds_filter(owner.key, kinds),
        include=["metadatas", "distances"],
    )
    metas = (got.get("metadatas") or [[]])[0]
    dists = (got.get("distances") or [[]])[0]
    return [
        (str(m["kind"]), str(m["ref"]), float(d))
        for m, d in zip(metas, dists, strict=True)
        if owner.owns(m)
    ]


def record_ids(self: Any, collection: str, namespace: str, session_id: str) -> list[str]:
    """Deprecated since 0.2.0 (no replacement: it was for tests): a session's record ids."""
    from .errors import InvalidInputError

    warn_deprecated("MemoryStore.record_ids()", "reading the collection with chromadb")
    name = _COLLECTIONS.get(collection)
    if name is None:
        raise InvalidInputError.for_value("collection", collection, "unknown collection")
    owner = SessionOwner.of(namespace, session_id)
    repo = getattr(self.parts.repos, name)
    got = self.parts.repos.client.call(
        "read record ids", partial(repo.collection.get, where=owner.where, include=[])
    )
    return list(got["ids"])


def delete_events(self: Any, namespace: str, session_id: str, event_ids: Sequence[str]) -> None:
    """Deprecated since 0.2.0: use ``store.session(ns, sid).nodes.drop()`` (every node)."""
    warn_deprecated("MemoryStore.delete_events()", "store.session(ns, sid).nodes.drop()")
    skey = SessionOwner.of(namespace, session_id).key
    ids = [event_record_id(skey, e) for e in event_ids]
    self.parts.repos.event_nodes.delete_ids("delete events", ids)


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
        'Deprecated since 0.2.0: use ``store.session(ns, sid).nodes.put_turn_nodes()``.'
    """
    methods = {old: _forwarding(old, new) for old, new in FORWARDED.items()}
    methods |= {fn.__name__: fn for fn in _OWN}
    for name, method in methods.items():
        if name not in vars(cls) or getattr(vars(cls)[name], "__module__", None) == __name__:
            setattr(cls, name, method)
