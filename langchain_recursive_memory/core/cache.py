"""The caches of a store: what a process keeps between calls, bounded by entries and bytes.

Everything the engines keep between calls (a session's view of its turns and their window
vectors, its facts, its fold health, HiGMem's nodes, which user it belongs to) lives in a
:class:`StoreCaches`. Every :class:`~.storage.MemoryStore` object of a process over the same
database (a path, or a server address) and collection prefix shares one
(:meth:`StoreCaches.shared`): an application that opens a new store, history or memory for
every request (``RecursiveSummaryChatMessageHistory(session_id, path=...)``) keeps what the
previous request read, and pays per turn what one long-lived object does. A store given
its own ``StoreCaches`` (``MemoryStore(client, cache=StoreCaches())``) shares nothing.

Each cache is a :class:`SessionCache`, an LRU that drops the least recently used sessions
beyond its ``max_entries`` entries or ``max_bytes`` bytes, so a long-running server holds a
bounded amount however many sessions it has seen (the bounds are :class:`CacheLimits`,
given to the store: ``MemoryStore(..., cache=CacheLimits(...))``); at most
:data:`SHARED_DATABASES` databases' caches are kept for the process. Every cached value can
be rebuilt from the store; dropping one costs a read, never data.

**Freshness.** A cached value never changes an answer: each is checked against the
session's head in the reads an operation makes anyway, by the one rule of
:mod:`.storage` ("How the memory stays fresh" in the README).

Keys start with the namespace and the session id (:func:`session_cache_key`).
:func:`clear_caches` empties the caches of every store of the process (tests use it).

Example:
    >>> from langchain_recursive_memory.core.cache import SessionCache
    >>> cache = SessionCache("demo", max_entries=2)
    >>> for sid in ("a", "b", "c"):
    ...     _ = cache.get_or_create(("store", sid), dict)
    >>> len(cache), cache.get(("store", "a")) is None
    (2, True)
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .errors import ConfigurationError

__all__ = [
    "CACHE_BYTES",
    "HEALTH_CACHE_ENTRIES",
    "SESSION_CACHE_ENTRIES",
    "SHARED_DATABASES",
    "CacheLimits",
    "SessionCache",
    "StoreCaches",
    "caches",
    "clear_caches",
    "session_cache_key",
    "user_cache_key",
]

V = TypeVar("V")

SESSION_CACHE_ENTRIES = 256
"""Sessions whose turn index, facts and HiGMem nodes a store keeps (least recent out)."""

HEALTH_CACHE_ENTRIES = 10_000
"""Sessions whose small state (fold health, user, settings recorded) a store keeps."""

CACHE_BYTES = 512 * 1024 * 1024
"""Bytes of turn indexes, window and fact vectors and HiGMem nodes a store keeps (about
80,000 turns' indexes without vectors, or 55,000 with 384-dimension window vectors)."""

KINDS_PER_SESSION = 4
"""Entries a session may have in :attr:`StoreCaches.sessions` (index, HiGMem, vectors...)."""

SESSION_KEY_PARTS = 3
"""Parts of a session's cache key (:func:`session_cache_key`); longer keys extend it."""

SHARED_DATABASES = 64
"""Databases (path or server, and prefix) whose caches a process keeps for new store objects."""

PRIVATE_IDENTITY = "client:"
"""How :func:`~.storage.client.client_identity` names a client it cannot tell the database
of (a client object of its own): such a store shares its caches with no other."""


def session_cache_key(namespace: str, session_id: str) -> tuple[str, str, str]:
    """The cache key of a session (in its store's caches)."""
    return ("s", namespace, session_id)


def user_cache_key(namespace: str, user_id: str) -> tuple[str, str, str]:
    """The cache key of a user (never a session's key)."""
    return ("u", namespace, user_id)


@dataclass(frozen=True, slots=True)
class CacheLimits:
    """How much a store's caches keep (see the module doc).

    Attributes:
        sessions: Sessions whose turn index, facts and HiGMem nodes are kept.
        nbytes: Bytes those may take in all (the turn indexes with their window vectors,
            fact and event vectors, HiGMem nodes; measured with tracemalloc, about 2.3 KB
            a turn for the hybrid memory and 4 KB for HiGMem, plus 1.5 KB per 384-float
            window vector): the least recently used sessions go first; the session in
            use is always kept.
        small: Sessions whose small state (fold health, user, settings) is kept.

    Raises:
        ConfigurationError: For a limit below 1 (a ``ValueError``).
    """

    sessions: int = SESSION_CACHE_ENTRIES
    nbytes: int = CACHE_BYTES
    small: int = HEALTH_CACHE_ENTRIES

    def __post_init__(self) -> None:
        for name in ("sessions", "nbytes", "small"):
            if getattr(self, name) < 1:
                raise ConfigurationError.for_value(name, getattr(self, name), "must be >= 1")


class SessionCache(Generic[V]):
    """A thread-safe LRU of per-session values, bounded by entries, sessions and bytes.

    Args:
        name: Shown in ``repr`` (for debugging).
        max_entries: Most entries kept.
        max_bytes: Most bytes kept (None: no byte limit); sizes are given with
            :meth:`put` (put a value again when it grows). At least the most recent entry is kept.
        max_sessions: Most sessions kept (None: no such limit), when a session may have
            several entries (its keys extend :func:`session_cache_key`): the least
            recently used session goes whole.

    Example:
        >>> cache = SessionCache("demo", max_entries=10, max_sessions=1)
        >>> _ = cache.get_or_create(("s", "ns", "a", "index"), dict)
        >>> _ = cache.get_or_create(("s", "ns", "a", "vectors"), dict)
        >>> _ = cache.get_or_create(("s", "ns", "b", "index"), dict)
        >>> [key[2] for key, _ in cache.items()]
        ['b']
    """

    def __init__(
        self,
        name: str,
        *,
        max_entries: int,
        max_bytes: int | None = None,
        max_sessions: int | None = None,
    ) -> None:
        if max_entries < 1:
            raise ConfigurationError.for_value("max_entries", max_entries, "must be >= 1")
        self.name = name
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_sessions = max_sessions
        self._entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._sessions: OrderedDict[Hashable, int] = OrderedDict()  # session -> its entries
        self._bytes = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SessionCache({self.name!r}, entries={len(self)}, bytes={self.nbytes})"

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        """Bytes of the cached values, as reported to the cache."""
        return self._bytes

    @property
    def sessions(self) -> int:
        """Sessions with at least one entry (counted when ``max_sessions`` is set)."""
        return len(self._sessions)

    def get(self, key: Hashable) -> V | None:
        """Return the value of ``key`` (marked recently used), or None."""
        with self._lock:
            item = self._entries.get(key)
            if item is None:
                return None
            self._used(key)
            return item[0]

    def get_or_create(self, key: Hashable, factory: Callable[[], V]) -> V:
        """Return the value of ``key``, creating it with ``factory()`` when absent."""
        with self._lock:
            item = self._entries.get(key)
            if item is not None:
                self._used(key)
                return item[0]
            value = factory()
            self._add(key, value, 0)
            self._evict()
            return value

    def put(self, key: Hashable, value: V, nbytes: int = 0) -> None:
        """Set the value of ``key`` and its size in bytes."""
        with self._lock:
            self._remove(key)
            self._add(key, value, nbytes)
            self._evict()

    def resize(self, key: Hashable, nbytes: int) -> None:
        """Set the size of the value of ``key`` (it grew or shrank); evict beyond the bounds.

        The entry stays the most recently used (it is in use), so it is never evicted
        by its own growth.
        """
        with self._lock:
            item = self._entries.get(key)
            if item is None:
                return
            self._bytes += nbytes - item[1]
            self._entries[key] = (item[0], nbytes)
            self._used(key)
            self._evict()

    def items(self) -> list[tuple[Hashable, V]]:
        """A snapshot of the cached ``(key, value)`` pairs, least recently used first."""
        with self._lock:
            return [(key, value) for key, (value, _) in self._entries.items()]

    def pop(self, key: Hashable) -> V | None:
        """Drop ``key``; return its value, or None."""
        with self._lock:
            item = self._remove(key)
            return item[0] if item is not None else None

    def pop_matching(self, predicate: Callable[[Hashable], bool]) -> int:
        """Drop every key for which ``predicate(key)`` is true; return how many."""
        with self._lock:
            doomed = [key for key in self._entries if predicate(key)]
            for key in doomed:
                self._remove(key)
            return len(doomed)

    def clear(self) -> None:
        """Drop everything."""
        with self._lock:
            self._entries.clear()
            self._sessions.clear()
            self._bytes = 0

    def _session(self, key: Hashable) -> Hashable | None:
        if self.max_sessions is None:
            return None
        if isinstance(key, tuple) and len(key) >= SESSION_KEY_PARTS:
            return key[:SESSION_KEY_PARTS]
        return key

    def _used(self, key: Hashable) -> None:
        self._entries.move_to_end(key)
        session = self._session(key)
        if session is not None:
            self._sessions.move_to_end(session)

    def _add(self, key: Hashable, value: V, nbytes: int) -> None:
        self._entries[key] = (value, nbytes)
        self._bytes += nbytes
        session = self._session(key)
        if session is not None:
            self._sessions[session] = self._sessions.get(session, 0) + 1
            self._sessions.move_to_end(session)

    def _remove(self, key: Hashable) -> tuple[V, int] | None:
        item = self._entries.pop(key, None)
        if item is None:
            return None
        self._bytes -= item[1]
        session = self._session(key)
        if session is not None:
            left = self._sessions.get(session, 1) - 1
            if left > 0:
                self._sessions[session] = left
            else:
                self._sessions.pop(session, None)
        return item

    def _evict(self) -> None:
        while len(self._entries) > 1 and (
            len(self._entries) > self.max_entries
            or (self.max_bytes is not None and self._bytes > self.max_bytes)
        ):
            self._remove(next(iter(self._entries)))
        while self.max_sessions is not None and len(self._sessions) > max(1, self.max_sessions):
            oldest = next(iter(self._sessions))
            for key in [k for k in self._entries if self._session(k) == oldest]:
                self._remove(key)


class StoreCaches:
    """Every cache of one store (see the module doc), in one place.

    What grows with a session (its turn index and window vectors, HiGMem's nodes and
    events, the vectors of facts and events) is in one LRU, :attr:`sessions`, bounded by
    ``limits.nbytes`` bytes: the least recently used go first, whatever their kind.

    Args:
        limits: The bounds.

    Attributes:
        sessions: Per session (keys extend :func:`session_cache_key`): its view
            (:class:`~.retrieval.view.SessionView`, ``"view"``), HiGMem's nodes and events
            (``"higmem"``), the unit vectors of facts and events (``"vectors"``, space).
        facts: Each session's facts as last read, and their BM25 index.
        health: Each session's fold health (failures, cool-down, the fold lock).
        users: The user a memory took each session for before its first write recorded it.
        described: The settings recorded with each session.
        collections: The chromadb collections opened, by name.
        migrated: Whether this process has brought the store up to this release
            (:mod:`.storage.migrations`, once).
    """

    def __init__(self, limits: CacheLimits | None = None) -> None:
        self.limits = limits = limits or CacheLimits()
        self.sessions: SessionCache[Any] = SessionCache(
            "sessions",
            max_entries=KINDS_PER_SESSION * limits.sessions,
            max_bytes=limits.nbytes,
            max_sessions=limits.sessions,
        )
        self.facts: SessionCache[Any] = SessionCache("facts", max_entries=limits.sessions)
        self.health: SessionCache[Any] = SessionCache("fold health", max_entries=limits.small)
        self.users: SessionCache[Any] = SessionCache("session users", max_entries=limits.small)
        self.described: SessionCache[Any] = SessionCache("described", max_entries=limits.small)
        self.collections: dict[str, Any] = {}
        self.migrated = False
        with _REGISTRY_LOCK:
            _REGISTRY.add(self)

    @classmethod
    def shared(cls, identity: str, prefix: str, limits: CacheLimits | None = None) -> StoreCaches:
        """The caches every store object of this process over one database and prefix shares.

        Args:
            identity: The database (:func:`~.storage.client.client_identity`); one that
                starts with :data:`PRIVATE_IDENTITY` gets caches of its own.
            prefix: The collection prefix.
            limits: The bounds (stores given other bounds get caches of their own).
        """
        limits = limits or CacheLimits()
        if identity.startswith(PRIVATE_IDENTITY):
            return cls(limits)
        key = (identity, prefix, limits)
        with _REGISTRY_LOCK:
            found = _SHARED.get(key)
            if found is not None:
                _SHARED.move_to_end(key)
                return found
        made = cls(limits)
        with _REGISTRY_LOCK:
            found = _SHARED.setdefault(key, made)
            _SHARED.move_to_end(key)
            while len(_SHARED) > SHARED_DATABASES:
                _SHARED.popitem(last=False)
        return found

    def all(self) -> list[SessionCache[Any]]:
        """Every cache of the store."""
        return [
            self.sessions,
            self.facts,
            self.health,
            self.users,
            self.described,
        ]

    @property
    def nbytes(self) -> int:
        """Bytes held, as reported to the caches."""
        return sum(c.nbytes for c in self.all())

    def clear(self) -> None:
        """Drop everything (costs only re-reads)."""
        for cache in self.all():
            cache.clear()
        self.collections.clear()

    def drop(self, namespace: str, session_ids: Iterable[str], user_id: str | None = None) -> int:
        """Drop what the caches hold of these sessions (and user); return how many entries.

        After an erasure, nothing of the deleted data stays in memory either.
        """
        doomed = {session_cache_key(namespace, sid) for sid in session_ids}
        user = user_cache_key(namespace, user_id) if user_id is not None else None

        def matches(key: Hashable) -> bool:
            return isinstance(key, tuple) and (
                key[:SESSION_KEY_PARTS] in doomed or key[:SESSION_KEY_PARTS] == user
            )

        return sum(cache.pop_matching(matches) for cache in self.all())


_REGISTRY: weakref.WeakSet[StoreCaches] = weakref.WeakSet()
_SHARED: OrderedDict[tuple[str, str, CacheLimits], StoreCaches] = OrderedDict()
_REGISTRY_LOCK = threading.RLock()


def caches() -> list[SessionCache[Any]]:
    """Every cache of every live store of this process."""
    with _REGISTRY_LOCK:
        stores = list(_REGISTRY)
    return [cache for store in stores for cache in store.all()]


def clear_caches() -> None:
    """Empty the caches of every store of this process (for tests; costs only re-reads)."""
    with _REGISTRY_LOCK:
        stores = list(_REGISTRY)
    for store in stores:
        store.clear()
