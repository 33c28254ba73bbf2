"""HiGMem's two layers: turn nodes and event nodes, and the no-LLM way to build them.

* A **turn node** (:class:`TurnNode`) annotates one logged turn: speaker, time, keywords,
  tags, a one-sentence context, the events it belongs to, and its *segment* (the
  conversation session it is part of; windows of neighbouring turns never cross one).
* An **event node** (:class:`Event`) groups turns: a short summary, a fact sheet whose
  facts link to turn ids, key entities, keywords and tags. Links go both ways: an event
  lists its turn ids, a turn node lists its event ids.

Segments (:func:`segment_labels`) are the conversation's sessions: a new one starts with an
explicit session label (``Turn.extra["session"]``, as LoCoMo transcripts have) or after
``session_gap`` seconds of silence, and a session longer than ``max_event_turns`` is split.
Without an LLM, HiGMem's events are the segments (:mod:`.higmem.heuristic`).

Example:
    >>> from langchain_recursive_memory.core.events import Event
    >>> e = Event("e1", "Ada booked a trip to Lisbon.", keywords=("lisbon", "trip"))
    >>> e.index_text
    'lisbon trip Ada booked a trip to Lisbon.'
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

__all__ = [
    "DEFAULT_MAX_EVENT_TURNS",
    "DEFAULT_SESSION_GAP",
    "Event",
    "EventFact",
    "Segmenter",
    "TurnNode",
    "segment_labels",
]

DEFAULT_SESSION_GAP = 1800.0
"""Seconds of silence that start a new segment (a conversation session)."""
DEFAULT_MAX_EVENT_TURNS = 40
"""Longest segment; a longer session is split (LoCoMo sessions have 16-30 turns)."""


def _strings(value: object) -> tuple[str, ...]:
    """A list of strings stored as JSON text (absent or ``"[]"``: empty)."""
    if value is None or value == "[]":
        return ()
    return tuple(json.loads(str(value)))


@lru_cache(maxsize=4096)
def _shared_strings(text: str) -> tuple[str, ...]:
    """:func:`_strings` of a list that many records repeat (tags, a turn's events).

    A fresh process reads every node of a session: decoding each repeated list once makes
    the nodes of a 10,000-turn session about twice as fast to read.
    """
    return _strings(text)


@dataclass(frozen=True, slots=True)
class EventFact:
    """One line of an event's fact sheet, linked to the turn that states it."""

    fact: str
    turn_id: str | None = None
    time: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable form."""
        return {"fact": self.fact, "turn_id": self.turn_id, "time": self.time}


@dataclass(frozen=True, slots=True)
class Event:
    """An event node.

    Attributes:
        id: Unique within the session.
        summary: Two or three sentences.
        facts: The fact sheet (a timeline of facts, each linked to a turn).
        entities: Key entities (people, places, things).
        keywords: Keywords.
        tags: Topic tags.
        turn_ids: The turns affiliated with the event, oldest first.
        method: ``"llm"`` or ``"segment"`` (built without an LLM).
        created_at: Seconds since the epoch.
        updated_at: Seconds since the epoch.
    """

    id: str
    summary: str
    facts: tuple[EventFact, ...] = ()
    entities: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    turn_ids: tuple[str, ...] = ()
    method: str = "llm"
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)

    @property
    def index_text(self) -> str:
        """What the event is searched by: ``"{keywords} {tags} {summary}"`` (as in HiGMem)."""
        return " ".join([*self.keywords, *self.tags, self.summary]).strip()

    def to_metadata(self) -> dict[str, Any]:
        """Chroma metadata (scalars; lists as JSON)."""
        return {
            "eid": self.id,
            "facts": json.dumps([f.to_dict() for f in self.facts], ensure_ascii=False),
            "entities": json.dumps(list(self.entities), ensure_ascii=False),
            "keywords": json.dumps(list(self.keywords), ensure_ascii=False),
            "tags": json.dumps(list(self.tags), ensure_ascii=False),
            "turn_ids": json.dumps(list(self.turn_ids)),
            "n_turns": len(self.turn_ids),
            "method": self.method,
            "created": self.created_at,
            "updated": self.updated_at,
        }

    @classmethod
    def from_metadata(cls, summary: str, meta: Mapping[str, Any]) -> Event:
        """Rebuild an event from :meth:`to_metadata` and its summary."""
        return cls(
            id=str(meta["eid"]),
            summary=summary,
            facts=tuple(
                EventFact(str(f["fact"]), f.get("turn_id"), str(f.get("time", "")))
                for f in json.loads(str(meta.get("facts", "[]")))
            ),
            entities=_strings(meta.get("entities")),
            keywords=_strings(meta.get("keywords")),
            tags=_shared_strings(str(meta.get("tags", "[]"))),
            turn_ids=_strings(meta.get("turn_ids")),
            method=str(meta.get("method", "llm")),
            created_at=float(meta.get("created", 0.0)),
            updated_at=float(meta.get("updated", 0.0)),
        )


@dataclass(frozen=True, slots=True)
class TurnNode:
    """A turn node: what HiGMem knows about one logged turn.

    Attributes:
        turn_id: The turn.
        speaker: Who spoke (the message's name, else its role).
        timestamp: When (seconds since the epoch), or None.
        segment: The session the turn is part of.
        keywords: Keywords.
        tags: Topic tags.
        context: One sentence placing the turn in the conversation.
        event_ids: The events it belongs to.
        method: ``"llm"`` or ``"heuristic"``.
    """

    turn_id: str
    speaker: str
    timestamp: float | None
    segment: str
    keywords: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    context: str = ""
    event_ids: tuple[str, ...] = ()
    method: str = "heuristic"

    def to_metadata(self) -> dict[str, Any]:
        """Chroma metadata (scalars; lists as JSON)."""
        meta: dict[str, Any] = {
            "tid": self.turn_id,
            "speaker": self.speaker,
            "segment": self.segment,
            "keywords": json.dumps(list(self.keywords), ensure_ascii=False),
            "tags": json.dumps(list(self.tags), ensure_ascii=False),
            "events": json.dumps(list(self.event_ids)),
            "method": self.method,
        }
        if self.timestamp is not None:
            meta["ts"] = self.timestamp
        return meta

    @classmethod
    def from_metadata(cls, context: str, meta: Mapping[str, Any]) -> TurnNode:
        """Rebuild a turn node from :meth:`to_metadata` and its context sentence."""
        ts = meta.get("ts")
        return cls(
            turn_id=str(meta["tid"]),
            speaker=str(meta.get("speaker", "")),
            timestamp=float(ts) if ts is not None else None,
            segment=str(meta.get("segment", "")),
            keywords=_strings(meta.get("keywords")),
            tags=_shared_strings(str(meta.get("tags", "[]"))),
            context=context,
            event_ids=_shared_strings(str(meta.get("events", "[]"))),
            method=str(meta.get("method", "heuristic")),
        )


@dataclass(frozen=True, slots=True)
class Segmenter:
    """Assigns turns (oldest first) to segments one at a time (see :func:`segment_labels`).

    Immutable: :meth:`push` returns the label and the segmenter after the turn, so a
    caller that drops turns from its end resumes from the segmenter it kept before them.
    """

    session_gap: float
    max_event_turns: int
    current: str = ""
    count: int = 0
    part: int = 1
    number: int = 0
    previous_label: str | None = None
    previous_time: float | None = None
    started: bool = False

    def push(self, label: str | None, ts: float | None) -> tuple[str, Segmenter]:
        """The segment of the next turn, and the segmenter after it."""
        new = not self.started
        if label is not None:
            new = new or label != self.previous_label
        elif (
            ts is not None
            and self.previous_time is not None
            and ts - self.previous_time > self.session_gap
        ):
            new = True
        current, count, part, number = self.current, self.count, self.part, self.number
        if new:
            number += 1
            part = 1
            count = 0
            current = str(label) if label is not None else f"s{number}"
        elif count >= self.max_event_turns:
            part += 1
            count = 0
            base = str(label) if label is not None else current.split(".")[0]
            current = f"{base}.{part}"
        after = Segmenter(  # not dataclasses.replace: a fresh process pushes every turn
            self.session_gap,
            self.max_event_turns,
            current,
            count + 1,
            part,
            number,
            label,
            ts if ts is not None else self.previous_time,
            True,
        )
        return current, after


def segment_labels(
    labels: Sequence[str | None],
    times: Sequence[float | None],
    *,
    session_gap: float,
    max_event_turns: int,
) -> list[str]:
    """Assign each turn (oldest first) to a segment.

    A segment ends where the explicit label changes, after ``session_gap`` seconds between
    two turns, or after ``max_event_turns`` turns. Returns one label per turn (``"s1"``,
    ``"s2"``... or ``"<label>"``, ``"<label>.2"`` for a split labelled session).

    Example:
        >>> segment_labels([None] * 4, [0, 10, 5000, 5010], session_gap=1800, max_event_turns=40)
        ['s1', 's1', 's2', 's2']
    """
    out: list[str] = []
    segmenter = Segmenter(session_gap, max_event_turns)
    for label, ts in zip(labels, times, strict=True):
        current, segmenter = segmenter.push(label, ts)
        out.append(current)
    return out
