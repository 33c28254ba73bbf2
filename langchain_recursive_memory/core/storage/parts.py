"""What a store is made of, as its parts share it (not for applications).

:class:`StoreParts` is what :class:`~.store.MemoryStore` hands to its parts (the users'
facts, the lifecycle, each session's handle, the migration): its database, its Chroma
client and collections, and the process's caches. Applications go through the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..cache import StoreCaches
from .client import StoreClient
from .database import Database
from .facts import FactTable
from .vectors import VectorSpaces

__all__ = ["StoreParts"]


@dataclass(frozen=True)
class StoreParts:
    """A store's database, Chroma collections and caches.

    Attributes:
        db: The database (the log and everything that needs order).
        chroma: The retried Chroma client.
        prefix: The table and collection name prefix.
        identity: A string naming both databases (for the caches and the logs).
        caches: What the process keeps between calls.
        fact_table: The facts, in Chroma.
        vector_spaces: The vectors, in Chroma (one collection per embedder).
    """

    db: Database
    chroma: StoreClient
    prefix: str
    identity: str
    caches: StoreCaches
    fact_table: FactTable
    vector_spaces: VectorSpaces
