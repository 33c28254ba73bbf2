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

from ..cache import HEALTH_CACHE_ENTRIES
from .client import StoreClient
from .keys import AnyScope, collection_name

__all__ = ["DAMAGED", "Repository", "decoded", "placeholders"]

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
        self.collection_name = collection_name(prefix, self.name)

    @property
    def collection(self) -> Any:
        """The chromadb collection, opened (or created) on first use."""
        return self.chroma.collection(self.collection_name)

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
