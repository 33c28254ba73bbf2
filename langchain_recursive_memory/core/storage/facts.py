"""The facts: one record per fact key and session (or user), each naming its source turns.

A session's facts are keyed by the session (:func:`~.keys.fact_record_id`); the facts of
a user, shared by its sessions, by the user (:func:`~.keys.user_fact_record_id`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from ..facts import Fact
from .client import StoreClient
from .keys import AnyScope, UserOwner, collection_name, fact_record_id, user_fact_record_id
from .records import decoded

__all__ = ["FactTable", "placeholders"]

_PLACEHOLDER = [0.0]


def placeholders(count: int) -> list[list[float]]:
    """Return the placeholder embeddings of ``count`` records of a non-vector collection."""
    return [_PLACEHOLDER] * count


class FactTable:
    """The ``{prefix}_facts`` collection (derived: rebuildable from the turn log).

    Chroma never downloads its default embedding model here: every record is written
    with an explicit embedding (:func:`placeholders`).

    Args:
        chroma: The client.
        prefix: The collection name prefix.
    """

    label = "facts"

    def __init__(self, chroma: StoreClient, prefix: str) -> None:
        self.chroma = chroma
        self.collection_name = collection_name(prefix, "facts")

    @property
    def collection(self) -> Any:
        """The chromadb collection, opened (or created) on first use."""
        return self.chroma.collection(self.collection_name)

    def ids(self, owner: AnyScope, facts: Sequence[Fact]) -> list[str]:
        """Return the record ids of facts (one per key and session, or key and user)."""
        build = user_fact_record_id if isinstance(owner, UserOwner) else fact_record_id
        return [build(owner.key, f.key_hash) for f in facts]

    def get(self, owner: AnyScope, ids: Sequence[str] | None = None) -> list[Fact]:
        """Return the facts of ``owner`` (or those with the given record ids), oldest first."""
        if ids is not None:
            rows = self.read("read facts", owner, ids=list(ids))
        else:
            rows = self.read("read facts", owner, where=owner.where)
        out = decoded("fact", rows, lambda r: Fact.from_metadata(*r))
        out.sort(key=lambda f: (f.created_at, f.key))
        return out

    def put(self, owner: AnyScope, facts: Sequence[Fact]) -> None:
        """Write (or overwrite) facts, each under its key's record id."""
        docs = [f.text for f in facts]
        metas = [f.to_metadata() for f in facts]
        self.upsert("write facts", owner, self.ids(owner, facts), docs, metas)

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
