"""What every repository shares: one collection, session-scoped reads and deletes.

Chroma never downloads its default embedding model here: every record is written with an
explicit embedding (:func:`placeholders`, a one-dimensional placeholder, in the collections
that hold no vectors).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, TypeVar

from ..cache import HEALTH_CACHE_ENTRIES, StoreCaches, session_cache_key, user_cache_key
from .client import StoreClient
from .keys import AnyScope, SessionOwner, collection_name, namespace_filter

__all__ = ["DAMAGED", "ListRepository", "Repository", "decoded", "placeholders"]

logger = logging.getLogger("langchain_recursive_memory")

_PLACEHOLDER = [0.0]
_NAMING_KEYS = ("ns", "sid", "tid", "kind", "version", "ref", "purpose")
_warned: set[str] = set()

R = TypeVar("R")
T = TypeVar("T")

DAMAGED = (KeyError, TypeError, ValueError, AttributeError)
"""What decoding a damaged record raises (a missing field, a wrong type, bad JSON, a value
the library refuses): such a record is skipped with a warning, never fatal to a session."""


def decoded(what: str, items: Iterable[R], decode: Callable[[R], T]) -> list[T]:
    """Decode each stored record with ``decode``, skipping (and warning once about) damaged ones.

    A record can lack a field that Chroma dropped (0.1.0 stored NaN timestamps, which Chroma
    silently omits) or that an older or foreign writer never wrote; one such record must not
    make its whole session unreadable.

    Args:
        what: What the records are (``"turn"``...), for the warning.
        items: The records as read (tuples holding their metadata mapping).
        decode: Builds one value from one record.
    """
    out: list[T] = []
    for item in items:
        try:
            out.append(decode(item))
        except DAMAGED as exc:
            _warn_damaged(what, item, exc)
    return out


def _warn_damaged(what: str, item: object, exc: BaseException) -> None:
    parts = item if isinstance(item, tuple) else (item,)
    meta = next((p for p in parts if isinstance(p, Mapping)), {})
    name = ", ".join(f"{k}={meta[k]!r}" for k in _NAMING_KEYS if k in meta) or "unnamed"
    problem = (
        f"missing field {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
    )
    key = f"{what}|{name}|{problem}"
    if key in _warned:
        return
    if len(_warned) >= HEALTH_CACHE_ENTRIES:
        _warned.clear()
    _warned.add(key)
    logger.warning("skipped a damaged %s record (%s): %s", what, name, problem)


def placeholders(count: int) -> list[list[float]]:
    """Return the placeholder embeddings of ``count`` records of a non-vector collection."""
    return [_PLACEHOLDER] * count


class Repository:
    """The base of the repositories: one collection of session-scoped records.

    Subclasses name their collection (``name``) and how errors call its records
    (``label``).

    Args:
        chroma: The client.
        prefix: The collection name prefix.

    Attributes:
        chroma: The client.
        collection: The chromadb collection (``Any``: chromadb's type is too precise).
    """

    name: ClassVar[str]
    """The collection's name after the prefix (``"turns"``...)."""
    label: ClassVar[str]
    """What its records are called in error messages (``"turn nodes"``...)."""

    def __init__(self, chroma: StoreClient, prefix: str) -> None:
        self.chroma = chroma
        self.collection: Any = chroma.collection(collection_name(prefix, self.name))

    def read(self, what: str, owner: AnyScope, **query: Any) -> list[tuple[str, Mapping[str, Any]]]:
        """Return ``(document, metadata)`` of the records a ``get`` finds, of ``owner`` only.

        Args:
            what: What the read does, for the error message.
            owner: The session (or user); records of any other are dropped.
            **query: Passed to ``get`` (``where=`` or ``ids=``).
        """
        got = self.chroma.call(
            what, partial(self.collection.get, include=["documents", "metadatas"], **query)
        )
        return [
            (d or "", m)
            for d, m in zip(got["documents"] or [], got["metadatas"] or [], strict=True)
            if owner.owns(m)
        ]

    def upsert(
        self,
        what: str,
        owner: AnyScope,
        ids: Sequence[str],
        documents: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]],
    ) -> None:
        """Write (or overwrite) records of ``owner`` (their metadata gets the owner's keys).

        Args:
            what: What the write does, for the error message.
            owner: The session.
            ids: The record ids.
            documents: Their documents.
            metadatas: Their metadata (beside the owner's).
        """
        if not ids:
            return
        self.chroma.call(
            what,
            lambda: self.collection.upsert(
                ids=list(ids),
                documents=list(documents),
                metadatas=[{**owner.metadata(), **m} for m in metadatas],
                embeddings=placeholders(len(ids)),
            ),
        )

    def fields(self, what: str, owner: AnyScope, record_id: str) -> Mapping[str, Any] | None:
        """The metadata of one record of ``owner`` (None: no such record)."""
        got = self.chroma.call(
            what, partial(self.collection.get, ids=[record_id], include=["metadatas"])
        )
        metas = [m for m in got["metadatas"] or [] if owner.owns(m)]
        return metas[0] if metas else None

    def set_fields(self, what: str, record_id: str, fields: Mapping[str, Any]) -> None:
        """Merge ``fields`` into a record's metadata (a None value removes its key)."""
        self.chroma.call(
            what,
            partial(self.collection.update, ids=[record_id], metadatas=[dict(fields)]),
        )

    def delete_ids(self, what: str, ids: Sequence[str]) -> None:
        """Delete records by id (ids not stored are ignored)."""
        if ids:
            self.chroma.call(what, partial(self.collection.delete, ids=list(ids)))

    def delete_where(self, what: str, where: Mapping[str, Any]) -> None:
        """Delete every record a metadata filter matches."""
        self.chroma.call(what, partial(self.collection.delete, where=dict(where)))

    def clear(self, owner: AnyScope) -> None:
        """Delete every record of the session (or of the user's own)."""
        self.chroma.call(
            f"delete the session's {self.label}",
            partial(self.collection.delete, where=owner.where),
        )


class ListRepository(Repository):
    """A list of owners (sessions, users): one record each, registered once, with markers.

    The record's id is :meth:`record_id` of its owner's key; the store's caches remember
    the records this process added (``registered``; insert-if-absent: the first
    registration's metadata stays).
    """

    def record_id(self, key: str) -> str:
        """The id of an owner's record (from :mod:`.keys`)."""
        raise NotImplementedError

    def __init__(self, chroma: StoreClient, prefix: str, caches: StoreCaches) -> None:
        super().__init__(chroma, prefix)
        self._registered = caches.registered

    def _key(self, owner: AnyScope) -> tuple[str, ...]:
        if isinstance(owner, SessionOwner):
            return (*session_cache_key(owner.namespace, owner.session_id), self.name)
        return (*user_cache_key(owner.namespace, owner.user_id), self.name)

    def add_once(self, owner: AnyScope, document: str, meta: Mapping[str, Any]) -> bool:
        """Insert the owner's record unless this process (or anyone before) added it.

        Returns:
            Whether it was written now (False: this process had; Chroma keeps a record
            already stored by anyone else unchanged).
        """
        if self._registered.get(self._key(owner)):
            return False
        self.chroma.call(
            f"register the {self.label[:-1]}",
            partial(
                self.collection.add,
                ids=[self.record_id(owner.key)],
                documents=[document],
                metadatas=[{**owner.metadata(), **meta}],
                embeddings=placeholders(1),
            ),
        )
        self._registered.put(self._key(owner), True)
        return True

    def forget(self, owner: AnyScope) -> None:
        """Forget that the owner's record was registered (it was deleted)."""
        self._registered.pop(self._key(owner))

    def marker(self, owner: AnyScope, key: str) -> str | None:
        """A rebuild marker of the owner's record (see :func:`~.keys.rebuild_key`)."""
        record = self.fields(f"read the {self.label[:-1]}", owner, self.record_id(owner.key))
        value = (record or {}).get(key)
        return str(value) if value is not None else None

    def set_marker(self, owner: AnyScope, key: str, value: str | None) -> None:
        """Set (or, with None, remove) a rebuild marker of the owner's record."""
        what = f"mark the {self.label[:-1]}'s rebuild"
        self.set_fields(what, self.record_id(owner.key), {key: value})

    def listed(self, namespace: str | None) -> list[Mapping[str, Any]]:
        """The metadata of every record (of one namespace, or all)."""
        where = namespace_filter(namespace)
        got = self.chroma.call(
            f"list {self.label}", partial(self.collection.get, where=where, include=["metadatas"])
        )
        return list(got["metadatas"] or [])

    def clear(self, owner: AnyScope) -> None:
        """Delete the owner's record and forget that it was registered."""
        super().clear(owner)
        self.forget(owner)
