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

A *user's* fact (sessions that belong to a user share their facts) keeps one
:class:`FactOrigin` per statement: which session said it, when, in which words, from
which turns. Its text is the newest statement's, *by the time it was said* (a session
that folds late never overrides a newer correction), and a session's statements can be
taken out again (:func:`without_session`, when the session is cleared):

    >>> said = Fact("ada/home_city", "Ada lives in Oslo.", source_turn_ids=("a1",), stated_at=1.0)
    >>> fact = merge_user_fact(None, said, "s1")
    >>> later = Fact("ada/home_city", "Ada moved to Porto.", source_turn_ids=("b7",), stated_at=9.0)
    >>> fact = merge_user_fact(fact, later, "s2")
    >>> fact.text, fact.previous, fact.session_ids
    ('Ada moved to Porto.', ('Ada lives in Oslo.',), ('s1', 's2'))
    >>> without_session(fact, "s2").text
    'Ada lives in Oslo.'
"""

from __future__ import annotations

import hashlib
import json
import re
import time as _time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "MAX_ORIGINS",
    "MAX_PREVIOUS",
    "Fact",
    "FactOrigin",
    "merge_fact",
    "merge_user_fact",
    "normalize_key",
    "normalized_text",
    "without_session",
]

MAX_PREVIOUS = 5
"""Earlier wordings a fact keeps."""
MAX_ORIGINS = MAX_PREVIOUS + 1
"""Statements a user's fact keeps (the newest): its wording and the earlier ones; and the
newest statement of every other session that stated it."""
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
class FactOrigin:
    """One statement of a user's fact: which session said it, when, and in which words.

    Attributes:
        session_id: The session whose fold extracted it.
        stated_at: When its newest source turn was said (seconds since the epoch).
        text: The wording of that statement.
        source_turn_ids: The turns of that session it came from.
        subject: Who or what it is about.
        time: When it happened, as the messages said it ("" if unknown).
    """

    session_id: str
    stated_at: float
    text: str
    source_turn_ids: tuple[str, ...] = ()
    subject: str = ""
    time: str = ""

    def to_json(self) -> list[Any]:
        """The origin as a JSON-ready list (how the fact record stores it)."""
        return [
            self.session_id,
            self.stated_at,
            self.text,
            list(self.source_turn_ids),
            self.subject,
            self.time,
        ]

    @classmethod
    def from_json(cls, item: Sequence[Any]) -> FactOrigin:
        """Rebuild an origin from :meth:`to_json`."""
        sid, stated, text, sources, subject, time = item
        return cls(str(sid), float(stated), str(text), tuple(map(str, sources)), subject, time)


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
        stated_at: When its newest source turn was said (0: unknown, a fact of 0.1.0).
        origins: A user's fact: its statements, oldest first (at most
            :data:`MAX_ORIGINS`); empty for a session's fact.
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
    stated_at: float = 0.0
    origins: tuple[FactOrigin, ...] = ()

    @property
    def key_hash(self) -> str:
        """A short stable hash of the key, used in record ids."""
        return hashlib.blake2b(self.key.encode(), digest_size=10).hexdigest()

    @property
    def session_ids(self) -> tuple[str, ...]:
        """The sessions a user's fact was stated in, in the order of its statements."""
        return tuple(dict.fromkeys(o.session_id for o in self.origins))

    def to_metadata(self) -> dict[str, Any]:
        """Chroma metadata (scalar values only)."""
        meta: dict[str, Any] = {
            "key": self.key,
            "subject": self.subject,
            "time": self.time,
            "sources": json.dumps(list(self.source_turn_ids)),
            "created": self.created_at,
            "updated": self.updated_at,
            "revisions": self.revisions,
            "previous": json.dumps(list(self.previous), ensure_ascii=False),
            "stated": self.stated_at,
        }
        if self.origins:
            origins = [o.to_json() for o in self.origins]
            meta["origins"] = json.dumps(origins, ensure_ascii=False)
        return meta

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
            stated_at=float(meta.get("stated", 0.0)),
            origins=tuple(
                FactOrigin.from_json(o) for o in json.loads(str(meta.get("origins", "[]")))
            ),
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


def merge_user_fact(old: Fact | None, new: Fact, session_id: str) -> Fact:
    """Return ``new``, stated in session ``session_id``, merged into the user's fact ``old``.

    The statement becomes an origin; a restatement in the same words by the same session
    joins that session's origin. The text is the newest statement's by ``stated_at``
    (``updated_at`` when unknown), whatever order the sessions fold in.
    """
    stated = new.stated_at or new.updated_at
    origin = FactOrigin(session_id, stated, new.text, new.source_turn_ids, new.subject, new.time)
    origins = list(old.origins) if old is not None else []
    same = next(
        (
            i
            for i, o in enumerate(origins)
            if o.session_id == session_id and normalized_text(o.text) == normalized_text(new.text)
        ),
        None,
    )
    if same is not None:
        o = origins.pop(same)
        sources = tuple(dict.fromkeys((*o.source_turn_ids, *new.source_turn_ids)))
        origin = replace(origin, stated_at=max(o.stated_at, stated), source_turn_ids=sources)
    origins.append(origin)
    base = old if old is not None else new
    return _from_origins(
        replace(base, updated_at=new.updated_at, revisions=base.revisions + (old is not None)),
        origins,
    )


def without_session(fact: Fact, session_id: str) -> Fact | None:
    """The user's ``fact`` without what session ``session_id`` stated (None: nothing left).

    Its text becomes the newest remaining statement's; wordings only that session said
    are gone from ``previous`` and its turns from ``source_turn_ids``.
    """
    left = [o for o in fact.origins if o.session_id != session_id]
    if len(left) == len(fact.origins):
        return fact
    if not left:
        return None
    dropped = len(fact.origins) - len(left)
    return _from_origins(replace(fact, revisions=max(1, fact.revisions - dropped)), left)


def _kept_origins(ordered: list[FactOrigin]) -> list[FactOrigin]:
    """The newest :data:`MAX_ORIGINS` statements, plus the newest of every other session.

    A session that restates a fact often never pushes another session's statement out:
    clearing it falls back to what the other session said.
    """
    kept = ordered[-MAX_ORIGINS:]
    present = {o.session_id for o in kept}
    older = {o.session_id: o for o in ordered[:-MAX_ORIGINS] if o.session_id not in present}
    return sorted([*older.values(), *kept], key=lambda o: o.stated_at)


def _from_origins(base: Fact, origins: list[FactOrigin]) -> Fact:
    """``base`` with its text, history and provenance computed from its statements."""
    ordered = _kept_origins(sorted(origins, key=lambda o: o.stated_at))
    latest = ordered[-1]
    current = normalized_text(latest.text)
    earlier: dict[str, str] = {}
    for o in ordered[:-1]:
        if normalized_text(o.text) != current:
            earlier.pop(normalized_text(o.text), None)  # keep each wording once, at its latest
            earlier[normalized_text(o.text)] = o.text
    sources = dict.fromkeys(t for o in ordered for t in o.source_turn_ids)
    return replace(
        base,
        text=latest.text,
        subject=next((o.subject for o in reversed(ordered) if o.subject), ""),
        time=next((o.time for o in reversed(ordered) if o.time), ""),
        source_turn_ids=tuple(sources),
        previous=tuple(earlier.values())[-MAX_PREVIOUS:],
        stated_at=latest.stated_at,
        origins=tuple(ordered),
    )


def normalized_text(text: str) -> str:
    """``text`` lowercased with its whitespace folded (to tell a restatement from a change)."""
    return " ".join(text.lower().split())
