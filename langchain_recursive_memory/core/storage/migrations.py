"""What a store written by an earlier release needs before this one reads it whole.

The record layout is :data:`~.keys.SCHEMA` 2 since 0.1.0; what changed since was added
beside it (a stamp record per session, HiGMem's index links, the ``hopen`` flag of new
turns), so a 0.1.0 store reads unchanged. One thing was renamed: 0.1.0 named each
embedder's vector collection ``{prefix}_vec_{embedder}-d{dimension}``, and since 0.2.0 it
is ``{prefix}_vec_{embedder}`` (so that a restart finds its vectors before it knows their
dimension). Without the migration those vectors would be left aside (recall would rank
the old facts without them until ``reindex()``).

:func:`migrate_collections` renames such a collection when its new name is free. It runs by itself
the first time a process opens the store (:class:`~.store.MemoryStore`, once per database
and prefix), logging what it did; ``lrm migrate`` runs it by hand (``--dry-run`` says what
it would do). A legacy collection it cannot rename (two of them map to one name, or the new
name exists already) is left as it is and reported, never deleted: vectors are derived
state, so ``reindex()`` (or ``lrm rebuild``) makes the new collection's vectors again.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> MemoryStore.in_memory().migrate(dry_run=True).renamed
    []
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from functools import partial

from typing import TYPE_CHECKING

from .client import StoreClient
from .keys import VECTOR_COLLECTION_PREFIX, collection_name

if TYPE_CHECKING:
    from .store import MemoryStore

__all__ = [
    "LEGACY_SPACE_RE",
    "Migration",
    "legacy_vector_collections",
    "migrate",
    "migrate_collections",
]

logger = logging.getLogger("langchain_recursive_memory")

LEGACY_SPACE_RE = re.compile(r"^(?P<space>[a-z0-9][a-z0-9-]*?)-d(?P<dimension>[0-9]+)$")
"""A 0.1.0 vector space name: ``{embedder}-d{dimension}``."""


@dataclass
class Migration:
    """What :func:`migrate` did (or, dry, would do).

    Attributes:
        renamed: ``(old collection, new collection)`` pairs.
        left: ``(collection, why)`` of the legacy collections left as they are.
        dry_run: Nothing was changed.
    """

    renamed: list[tuple[str, str]] = field(default_factory=list)
    left: list[tuple[str, str]] = field(default_factory=list)
    dry_run: bool = False

    @property
    def needed(self) -> bool:
        """Whether there was anything to migrate."""
        return bool(self.renamed or self.left)


def legacy_vector_collections(names: list[str], prefix: str) -> dict[str, list[str]]:
    """The 0.1.0 vector collections among ``names``: new name -> the old names mapping to it."""
    start = collection_name(prefix, VECTOR_COLLECTION_PREFIX)
    out: dict[str, list[str]] = {}
    for name in sorted(names):
        if not name.startswith(start):
            continue
        match = LEGACY_SPACE_RE.match(name[len(start) :])
        if match is not None:
            out.setdefault(start + match["space"], []).append(name)
    return out


def _rename(chroma: StoreClient, old: str, new: str) -> None:
    chroma.client.get_collection(old).modify(name=new)


def migrate_collections(chroma: StoreClient, prefix: str, *, dry_run: bool = False) -> Migration:
    """Bring a store written by an earlier release up to this one (see the module doc).

    Args:
        chroma: The store's client.
        prefix: Its collection prefix.
        dry_run: Only report what would be done.

    Returns:
        What was done.

    Raises:
        StoreError: When Chroma failed (run it again: what was renamed stays renamed).
    """
    names = chroma.collection_names()
    done = Migration(dry_run=dry_run)
    for new, olds in legacy_vector_collections(names, prefix).items():
        if len(olds) > 1:
            done.left += [(old, f"{len(olds)} legacy collections map to {new}") for old in olds]
        elif new in names:
            done.left.append((olds[0], f"{new} exists already"))
        else:
            done.renamed.append((olds[0], new))
    if not dry_run:
        for old, new in done.renamed:
            chroma.call("rename a vector collection", partial(_rename, chroma, old, new))
            chroma.forget_collection(old)
            logger.info("migrated the vector collection %s to %s (0.1.0 naming)", old, new)
    for old, why in done.left:
        logger.warning(
            "vector collection %s (0.1.0 naming) was left as it is: %s; reindex() embeds "
            "its vectors again under the new name (lrm migrate --help)",
            old,
            why,
        )
    return done


def migrate(store: MemoryStore, *, dry_run: bool = False) -> Migration:
    """Bring ``store`` up to this release (see the module doc)."""
    return migrate_collections(store.chroma, store.prefix, dry_run=dry_run)
