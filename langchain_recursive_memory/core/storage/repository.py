"""What every repository shares: one collection, session-scoped reads and deletes.

Chroma never downloads its default embedding model here: every record is written with an
explicit embedding (:func:`placeholders`, a one-dimensional placeholder, in the collections
that hold no vectors).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, ClassVar

from .client import StoreClient
from .keys import Scope, collection_name

__all__ = ["Repository", "placeholders"]

_PLACEHOLDER = [0.0]


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

    def read(self, what: str, scope: Scope, **query: Any) -> list[tuple[str, Mapping[str, Any]]]:
        """Return ``(document, metadata)`` of the records a ``get`` finds, of ``scope`` only.

        Args:
            what: What the read does, for the error message.
            scope: The session; records of any other session are dropped.
            **query: Passed to ``get`` (``where=`` or ``ids=``).
        """
        got = self.chroma.call(
            what, partial(self.collection.get, include=["documents", "metadatas"], **query)
        )
        return [
            (d or "", m)
            for d, m in zip(got["documents"] or [], got["metadatas"] or [], strict=True)
            if scope.owns(m)
        ]

    def upsert(
        self,
        what: str,
        scope: Scope,
        ids: Sequence[str],
        documents: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]],
    ) -> None:
        """Write (or overwrite) records of ``scope`` (their metadata gets the scope's keys).

        Args:
            what: What the write does, for the error message.
            scope: The session.
            ids: The record ids.
            documents: Their documents.
            metadatas: Their metadata (beside the scope's).
        """
        if not ids:
            return
        self.chroma.call(
            what,
            lambda: self.collection.upsert(
                ids=list(ids),
                documents=list(documents),
                metadatas=[{**scope.metadata(), **m} for m in metadatas],
                embeddings=placeholders(len(ids)),
            ),
        )

    def record_ids(self, scope: Scope) -> list[str]:
        """Return the ids of the session's records (cheap: no documents)."""
        got = self.chroma.call(
            f"read {self.name} ids", lambda: self.collection.get(where=scope.where, include=[])
        )
        return list(got["ids"])

    def clear(self, scope: Scope) -> None:
        """Delete every record of the session."""
        self.chroma.call(
            f"delete the session's {self.label}",
            partial(self.collection.delete, where=scope.where),
        )
