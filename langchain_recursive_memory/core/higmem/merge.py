"""Turn nodes and event updates from the model's index answer. Pure logic.

Per turn of a batch: keywords, tags, a one-sentence context and the events it belongs to
(:meth:`~.affiliation.Aliases.resolve`; a turn the model affiliated with nothing gets a new
event of its own). Per affiliated event, as in the official code:

* a **new** event takes the model's summary, keywords, tags, entities and facts;
* an event with **fewer than** ``rewrite_limit`` turns is rewritten (summary, keywords,
  tags) and appends the new facts to its fact sheet;
* an event with ``rewrite_limit`` turns **or more** keeps its summary: it only links the
  turns and merges their keywords and tags.

Facts name the turn that states them (a number of the batch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..events import Event, EventFact, TurnNote
from ..prompts import Analysis
from ..storage import StoredTurn
from .affiliation import Aliases, new_event_id
from .config import CONTEXT_CHARS, EVENT_REFS, LIST_ITEMS, MERGED_KEYWORDS, NEW_EVENT_SUMMARY_CHARS

__all__ = ["Batch", "batch_notes", "merge_events", "strings"]


def strings(value: Any, limit: int = LIST_ITEMS) -> tuple[str, ...]:
    """A model's list of strings (or one string), cleaned, without repeats, at most ``limit``."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    out = [" ".join(str(v).split()) for v in value if isinstance(v, str | int | float)]
    return tuple(dict.fromkeys(v for v in out if v))[:limit]


@dataclass
class Batch:
    """One indexing batch: its turns, their segments, and what the model answered."""

    turns: Sequence[StoredTurn]
    segments: Sequence[str]
    analysis: Analysis
    aliases: Aliases
    new_ids: dict[str, str]

    def title_of(self, event_id: str) -> str | None:
        """The title the model gave a new event."""
        return next((t for t, eid in self.new_ids.items() if eid == event_id), None)


def batch_notes(
    batch: Batch, known: Mapping[str, Event]
) -> tuple[list[TurnNote], dict[str, list[int]]]:
    """The turn nodes of the batch and, per affiliated event, its turn numbers (1-based)."""
    notes: list[TurnNote] = []
    members: dict[str, list[int]] = {}
    for n, turn in enumerate(batch.turns, start=1):
        item = batch.analysis.turns[n]
        event_ids = batch.aliases.resolve(
            strings(item.get("events"), EVENT_REFS), known, batch.new_ids
        )
        if not event_ids:
            event_ids = [batch.new_ids.setdefault(f"turn {turn.id}", new_event_id())]
        notes.append(
            TurnNote(
                turn_id=turn.id,
                speaker=turn.turn.speaker,
                timestamp=turn.turn.created_at,
                segment=batch.segments[n - 1],
                keywords=strings(item.get("keywords")),
                tags=strings(item.get("tags")),
                context=" ".join(str(item.get("context") or "").split())[:CONTEXT_CHARS],
                event_ids=tuple(event_ids),
                method="llm",
            )
        )
        for eid in event_ids:
            members.setdefault(eid, []).append(n)
    return notes, members


def merge_events(
    batch: Batch,
    notes: Sequence[TurnNote],
    members: Mapping[str, Sequence[int]],
    known: Mapping[str, Event],
    *,
    rewrite_limit: int,
    now: float,
) -> list[Event]:
    """The affiliated events, created, rewritten or linked (see the module doc)."""
    updates: list[Event] = []
    for eid, numbers in members.items():
        spec = _spec(batch, eid)
        turn_ids = tuple(batch.turns[n - 1].id for n in numbers)
        note_kw = [kw for n in numbers for kw in notes[n - 1].keywords]
        note_tags = [tg for n in numbers for tg in notes[n - 1].tags]
        old = known.get(eid)
        if old is None:
            event = _new_event(batch, eid, spec, turn_ids, note_kw, note_tags, now)
        elif len(old.turn_ids) < rewrite_limit and spec:
            event = replace(
                old,
                summary=str(spec.get("summary") or old.summary).strip(),
                facts=(*old.facts, *_facts(batch, spec)),
                entities=tuple(dict.fromkeys((*old.entities, *strings(spec.get("entities"))))),
                keywords=strings(spec.get("keywords")) or old.keywords,
                tags=strings(spec.get("tags")) or old.tags,
                turn_ids=tuple(dict.fromkeys((*old.turn_ids, *turn_ids))),
                updated_at=now,
            )
        else:  # frozen summary: link the turns and merge their keywords and tags
            event = replace(
                old,
                keywords=tuple(dict.fromkeys((*old.keywords, *note_kw)))[:MERGED_KEYWORDS],
                tags=tuple(dict.fromkeys((*old.tags, *note_tags)))[:MERGED_KEYWORDS],
                turn_ids=tuple(dict.fromkeys((*old.turn_ids, *turn_ids))),
                updated_at=now,
            )
        updates.append(event)
    return updates


def _spec(batch: Batch, event_id: str) -> dict[str, Any]:
    """The model's update of an event: under its alias, or under ``NEW:<its title>``."""
    title = batch.title_of(event_id)
    key = batch.aliases.of_id.get(event_id) or next(
        (
            k
            for k in batch.analysis.events
            if k.upper().startswith("NEW") and k.split(":", 1)[-1].strip().lower() == title
        ),
        None,
    )
    return batch.analysis.events.get(key or "", {})


def _facts(batch: Batch, spec: Mapping[str, Any]) -> tuple[EventFact, ...]:
    size = len(batch.turns)
    out = []
    for f in spec.get("facts") or []:
        if not isinstance(f, dict) or not f.get("fact"):
            continue
        number = str(f.get("turn", ""))
        turn_id = (
            batch.turns[int(number) - 1].id
            if number.isdigit() and 1 <= int(number) <= size
            else None
        )
        out.append(
            EventFact(" ".join(str(f.get("fact")).split()), turn_id, str(f.get("time") or ""))
        )
    return tuple(out)


def _new_event(
    batch: Batch,
    event_id: str,
    spec: Mapping[str, Any],
    turn_ids: tuple[str, ...],
    note_kw: Sequence[str],
    note_tags: Sequence[str],
    now: float,
) -> Event:
    summary = str(spec.get("summary") or "").strip()
    if not summary:
        text = " ".join(t.turn.text for t in batch.turns)[:NEW_EVENT_SUMMARY_CHARS]
        summary = f"{batch.title_of(event_id) or 'Event'}: {text}"
    return Event(
        id=event_id,
        summary=summary,
        facts=_facts(batch, spec),
        entities=strings(spec.get("entities")),
        keywords=strings(spec.get("keywords") or note_kw),
        tags=strings(spec.get("tags") or note_tags),
        turn_ids=turn_ids,
        method="llm",
        created_at=now,
        updated_at=now,
    )
