"""One bounded, per-process cache of session state, by entries and by bytes.

Everything the engines keep between calls (a session's fold health, its turn log and
rankers, its vectors, HiGMem's loaded nodes) lives in a :class:`SessionCache`: least
recently used sessions are dropped beyond ``max_entries`` entries or ``max_bytes`` bytes,
so a long-running server holds a bounded amount however many sessions it has seen. Every
cached value can be rebuilt from the store; dropping one costs a read, never data.

Keys start with the store's identity and prefix, the namespace and the session id
(:func:`session_cache_key`). :func:`clear_caches` empties every cache (tests use it).

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
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, Protocol, TypeVar

__all__ = [
    "SESSION_CACHE_ENTRIES",
    "VECTOR_CACHE_BYTES",
    "SessionCache",
    "caches",
    "clear_caches",
    "drop_cached",
    "session_cache_key",
    "user_cache_key",
]

V = TypeVar("V")

SESSION_CACHE_ENTRIES = 256
"""Sessions whose turn log, rankers and HiGMem state a process keeps (least recent out)."""

SESSION_KEY_PARTS = 4
"""Parts of a session's cache key (:func:`session_cache_key`); longer keys extend it."""

USER_KEY_PARTS = 5
"""Parts of a user's cache key (:func:`user_cache_key`)."""

HEALTH_CACHE_ENTRIES = 10_000
"""Sessions whose fold health (failures, cool-down, lock) a process remembers."""

VECTOR_CACHE_BYTES = 256 * 1024 * 1024
"""Bytes of unit vectors a process keeps for exact recall (least recent session out)."""

_REGISTRY: list[SessionCache[Any]] = []
_REGISTRY_LOCK = threading.Lock()


class _Store(Protocol):
    identity: str
    prefix: str


def session_cache_key(store: _Store, namespace: str, session_id: str) -> tuple[str, str, str, str]:
    """The cache key of a session: the database, the collections' prefix and the scope."""
    return (store.identity, store.prefix, namespace, session_id)


def user_cache_key(store: _Store, namespace: str, user_id: str) -> tuple[str, str, str, str, str]:
    """The cache key of a user's state (five parts: never a session's key)."""
    return (store.identity, store.prefix, namespace, "user", user_id)


def drop_cached(
    store: _Store, namespace: str, session_ids: Iterable[str], user_id: str | None = None
) -> int:
    """Drop what every cache of this process holds of these sessions (and user).

    After an erasure, nothing of the deleted data stays in memory either. Returns how
    many entries were dropped.
    """
    doomed = {session_cache_key(store, namespace, sid) for sid in session_ids}
    user = user_cache_key(store, namespace, user_id) if user_id is not None else None

    def matches(key: Hashable) -> bool:
        return isinstance(key, tuple) and (
            key[:SESSION_KEY_PARTS] in doomed or key[:USER_KEY_PARTS] == user
        )

    return sum(cache.pop_matching(matches) for cache in caches())


class SessionCache(Generic[V]):
    """A thread-safe LRU of per-session values, bounded by entries and by bytes.

    Args:
        name: Shown in ``repr`` (for debugging).
        max_entries: Most entries kept.
        max_bytes: Most bytes kept (None: no byte limit); sizes are given with
            :meth:`put` (put a value again when it grows). At least the most recent entry is kept.
    """

    def __init__(self, name: str, *, max_entries: int, max_bytes: int | None = None) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries={max_entries}: must be >= 1")
        self.name = name
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        with _REGISTRY_LOCK:
            _REGISTRY.append(self)

    def __repr__(self) -> str:
        return f"SessionCache({self.name!r}, entries={len(self)}, bytes={self.nbytes})"

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        """Bytes of the cached values, as reported to the cache."""
        return self._bytes

    def get(self, key: Hashable) -> V | None:
        """Return the value of ``key`` (marked recently used), or None."""
        with self._lock:
            item = self._entries.get(key)
            if item is None:
                return None
            self._entries.move_to_end(key)
            return item[0]

    def get_or_create(self, key: Hashable, factory: Callable[[], V]) -> V:
        """Return the value of ``key``, creating it with ``factory()`` when absent."""
        with self._lock:
            item = self._entries.get(key)
            if item is not None:
                self._entries.move_to_end(key)
                return item[0]
            value = factory()
            self._entries[key] = (value, 0)
            self._evict()
            return value

    def put(self, key: Hashable, value: V, nbytes: int = 0) -> None:
        """Set the value of ``key`` and its size in bytes."""
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (value, nbytes)
            self._bytes += nbytes
            self._evict()

    def items(self) -> list[tuple[Hashable, V]]:
        """A snapshot of the cached ``(key, value)`` pairs, least recently used first."""
        with self._lock:
            return [(key, value) for key, (value, _) in self._entries.items()]

    def pop(self, key: Hashable) -> V | None:
        """Drop ``key``; return its value, or None."""
        with self._lock:
            item = self._entries.pop(key, None)
            if item is None:
                return None
            self._bytes -= item[1]
            return item[0]

    def pop_matching(self, predicate: Callable[[Hashable], bool]) -> int:
        """Drop every key for which ``predicate(key)`` is true; return how many."""
        with self._lock:
            doomed = [key for key in self._entries if predicate(key)]
            for key in doomed:
                self._bytes -= self._entries.pop(key)[1]
            return len(doomed)

    def clear(self) -> None:
        """Drop everything."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def _evict(self) -> None:
        while len(self._entries) > 1 and (
            len(self._entries) > self.max_entries
            or (self.max_bytes is not None and self._bytes > self.max_bytes)
        ):
            _, (_, size) = self._entries.popitem(last=False)
            self._bytes -= size


def caches() -> list[SessionCache[Any]]:
    """Every session cache of this process."""
    with _REGISTRY_LOCK:
        return list(_REGISTRY)


def clear_caches() -> None:
    """Empty every session cache of this process (for tests; costs only re-reads)."""
    for cache in caches():
        cache.clear()
