"""Atomic facts extracted when a fold happens: the details a summary loses.

A fact is one short statement (a name, number, date, place, preference or decision) with
its subject, the time it refers to, and the turns it came from. Facts are keyed by
``subject/attribute`` (``"ada/home_city"``): a fact that restates or corrects an earlier one
reuses its key and *updates* it (the earlier wording is kept in ``previous``) instead of
piling up beside it.

By default the facts come from the same LLM call as the summary update (one call per fold;
the transcript is sent once; see :mod:`.prompts.facts`). ``fact_mode="separate"`` asks for
them in a second call instead.

Example:
    >>> from langchain_recursive_memory.core.facts import Fact, merge_fact
    >>> old = Fact("ada/home_city", "Ada lives in Oslo.", source_turn_ids=("t1",))
    >>> new = merge_fact(old, Fact("ada/home_city", "Ada moved to Porto.", source_turn_ids=("t9",)))
    >>> new.text, new.previous, new.source_turn_ids
    ('Ada moved to Porto.', ('Ada lives in Oslo.',), ('t1', 't9'))
"""

from __future__ import annotations

import hashlib
import json
import re
import time as _time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["MAX_PREVIOUS", "Fact", "merge_fact", "normalize_key", "normalized_text"]

MAX_PREVIOUS = 5
"""Earlier wordings a fact keeps."""
_SLUG_RE = re.compile(r"[^a-z0-9]+")
KEY_LENGTH = 100
"""Longest fact key."""


def normalize_key(key: str) -> str:
    """Return ``key`` in canonical form: lowercase ``a_b/c_d``, at most 100 characters.

    Example:
        >>> normalize_key("  Ada Lovelace / Home City ")
        'ada_lovelace/home_city'
    """
    parts = [_SLUG_RE.sub("_", p.lower()).strip("_") for p in key.split("/")]
    return "/".join(p for p in parts if p)[:KEY_LENGTH]


@dataclass(frozen=True, slots=True)
class Fact:
    """One remembered fact of a session.

    Attributes:
        key: ``subject/attribute``, canonical (see :func:`normalize_key`); one fact per key.
        text: The fact, one self-contained sentence.
        subject: Who or what it is about.
        time: When it happened or was stated, as the messages said it ("" if unknown).
        source_turn_ids: The turns it came from (all revisions).
        created_at: When the key was first stored (seconds since the epoch).
        updated_at: When it was last restated or corrected.
        revisions: How many times it was stated.
        previous: Earlier wordings, oldest first (at most 5).
    """

    key: str
    text: str
    subject: str = ""
    time: str = ""
    source_turn_ids: tuple[str, ...] = ()
    created_at: float = field(default_factory=_time.time)
    updated_at: float = field(default_factory=_time.time)
    revisions: int = 1
    previous: tuple[str, ...] = ()

    @property
    def key_hash(self) -> str:
        """A short stable hash of the key, used in record ids."""
        return hashlib.blake2b(self.key.encode(), digest_size=10).hexdigest()

    def to_metadata(self) -> dict[str, Any]:
        """Chroma metadata (scalar values only)."""
        return {
            "key": self.key,
            "subject": self.subject,
            "time": self.time,
            "sources": json.dumps(list(self.source_turn_ids)),
            "created": self.created_at,
            "updated": self.updated_at,
            "revisions": self.revisions,
            "previous": json.dumps(list(self.previous), ensure_ascii=False),
        }

    @classmethod
    def from_metadata(cls, text: str, meta: Mapping[str, Any]) -> Fact:
        """Rebuild a fact from :meth:`to_metadata` and its text."""
        return cls(
            key=str(meta["key"]),
            text=text,
            subject=str(meta.get("subject", "")),
            time=str(meta.get("time", "")),
            source_turn_ids=tuple(json.loads(str(meta.get("sources", "[]")))),
            created_at=float(meta.get("created", 0.0)),
            updated_at=float(meta.get("updated", 0.0)),
            revisions=int(meta.get("revisions", 1)),
            previous=tuple(json.loads(str(meta.get("previous", "[]")))),
        )


def merge_fact(old: Fact | None, new: Fact) -> Fact:
    """Return ``new`` as an update of ``old`` (same key): sources merged, history kept."""
    if old is None:
        return new
    previous = old.previous
    if normalized_text(old.text) != normalized_text(new.text):
        previous = (*old.previous, old.text)[-MAX_PREVIOUS:]
    sources = tuple(dict.fromkeys((*old.source_turn_ids, *new.source_turn_ids)))
    return replace(
        new,
        subject=new.subject or old.subject,
        time=new.time or old.time,
        source_turn_ids=sources,
        created_at=old.created_at,
        revisions=old.revisions + 1,
        previous=previous,
    )


def normalized_text(text: str) -> str:
    """``text`` lowercased with its whitespace folded (to tell a restatement from a change)."""
    return " ".join(text.lower().split())
