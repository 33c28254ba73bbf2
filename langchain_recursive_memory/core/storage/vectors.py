"""Vectors, one collection per embedder space (derived: rebuildable from turns and facts).

``{prefix}_vec_{space}`` holds the vectors of every session made by one embedder (the
space name tells embedders and dimensions apart). Each record's metadata names its kind
and the turn id, fact key or event id it belongs to (``ref``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from .client import StoreClient
from .keys import (
    AnyScope,
    collection_name,
    kind_key,
    validate_space,
    vector_collection_name,
)
from .records import VectorRecord, decoded

__all__ = ["EF_SEARCH", "VectorSpaces"]

EF_SEARCH = 200
"""HNSW search breadth of the vector collections (Chroma's default of 10 gave poor recall on
unstructured vectors at 100k records, measured on this project's machines; see
``benchmarks/overhead.py``)."""


def _vector_records(got: Any, owner: AnyScope) -> list[VectorRecord]:
    """Vector records of a Chroma ``get`` result that belong to the session."""
    embeddings = got.get("embeddings")
    if embeddings is None:
        embeddings = []
    rows = [
        row
        for row in zip(got["ids"], got["metadatas"] or [], embeddings, strict=True)
        if owner.owns(row[1])
    ]
    return decoded(
        "vector",
        rows,
        lambda r: VectorRecord(
            r[0], str(r[1]["kind"]), str(r[1]["ref"]), r[2], str(r[1].get("h", ""))
        ),
    )


class VectorSpaces:
    """The vector collections of one prefix, opened on first use.

    Args:
        chroma: The client.
        prefix: The collection name prefix.

    Attributes:
        collections: The collections opened so far, by space name.
    """

    def __init__(self, chroma: StoreClient, prefix: str) -> None:
        self.chroma = chroma
        self.prefix = prefix
        self.collections: dict[str, Any] = {}

    def collection(self, space: str) -> Any:
        """Return (opening or creating it) the collection of ``space``.

        Raises:
            ConfigurationError: For a bad space name.
        """
        col = self.collections.get(space)
        if col is None:
            validate_space(space)
            name = collection_name(self.prefix, vector_collection_name(space))
            col = self.chroma.collection(
                name, configuration={"hnsw": {"space": "cosine", "ef_search": EF_SEARCH}}
            )
            self.collections[space] = col
        return col

    def existing(self, ids: Sequence[str], space: str) -> set[str]:
        """Return which of the record ids already have a vector in ``space``."""
        if not ids:
            return set()
        col = self.collection(space)
        got = self.chroma.call("read vector ids", lambda: col.get(ids=list(ids), include=[]))
        return set(got["ids"])

    def put(self, space: str, owner: AnyScope, records: Sequence[VectorRecord]) -> None:
        """Write (or overwrite) vector records of the session."""
        if not records:
            return
        col = self.collection(space)
        self.chroma.call(
            "write vectors",
            lambda: col.upsert(
                ids=[r.id for r in records],
                embeddings=[list(r.vector) for r in records],
                metadatas=[
                    {
                        **owner.metadata(),
                        "skk": kind_key(owner.key, r.kind),
                        "kind": r.kind,
                        "ref": r.ref,
                        "h": r.text_hash,
                    }
                    for r in records
                ],
            ),
        )

    def by_ids(self, space: str, owner: AnyScope, ids: Sequence[str]) -> list[VectorRecord]:
        """Return the session's vector records with the given ids (missing ids skipped)."""
        if not ids:
            return []
        col = self.collection(space)
        got = self.chroma.call(
            "read vectors by id",
            lambda: col.get(ids=list(dict.fromkeys(ids)), include=["embeddings", "metadatas"]),
        )
        return _vector_records(got, owner)

    def spaces(self) -> list[str]:
        """The space names of every vector collection of the prefix, each opened.

        Collections other store objects made are found too.
        """
        start = collection_name(self.prefix, vector_collection_name(""))
        for name in self.chroma.collection_names():
            if name.startswith(start):
                self.collection(name[len(start) :])
        return sorted(self.collections)

    def clear(self, owner: AnyScope) -> None:
        """Delete the session's (or the user's own) vectors in every space."""
        self.delete_where(owner.where)

    def delete_where(self, where: dict[str, Any], spaces: Sequence[str] | None = None) -> None:
        """Delete the vectors a metadata filter matches, in every space (or those given)."""
        for col in [self.collection(space) for space in (spaces or self.spaces())]:
            self.chroma.call("delete vectors", partial(col.delete, where=where))

    def delete_ids(self, ids: Sequence[str]) -> None:
        """Delete vectors by record id, in every space (ids not stored are ignored)."""
        if not ids:
            return
        for col in [self.collection(space) for space in self.spaces()]:
            self.chroma.call("delete vectors", partial(col.delete, ids=list(ids)))
