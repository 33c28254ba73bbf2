"""Turn nodes and event updates from the model's index answer. Pure logic.

Per turn of a batch: keywords, tags, a one-sentence context and the events it belongs to
(:meth:`~.affiliation.Aliases.affiliate`; a turn the model affiliated with nothing joins
the events of the turn before it). A turn the answer has no line for (cut off by the
output limit) gets a no-LLM turn node in the same events. Per affiliated event, as in the
official code:

* a **new** event takes the model's summary, keywords, tags, entities and facts;
* an event with **fewer than** ``rewrite_limit`` turns is rewritten (summary, keywords,
  tags) and appends the new facts to its fact sheet;
* an event with ``rewrite_limit`` turns **or more** keeps its summary: it only links the
  turns and merges their keywords and tags.

Facts name the turn that states them (a number of the batch).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..events import Event, EventFact, TurnNode
from ..prompts import Analysis
from ..storage import StoredTurn
from ..tokenizer import TokenCounter
from .affiliation import Affiliation
from .config import CONTEXT_CHARS, LIST_ITEMS, MERGED_KEYWORDS, NEW_EVENT_SUMMARY_CHARS
from .heuristic import heuristic_node

__all__ = ["Batch", "batch_nodes", "merge_events", "strings"]

logger = logging.getLogger("langchain_recursive_memory")

_NUMBER_RE = re.compile(r"\d+")


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
    """One indexing batch: its turns, their segments, what the model answered and meant."""

    turns: Sequence[StoredTurn]
    segments: Sequence[str]
    analysis: Analysis
    affiliation: Affiliation
    counter: TokenCounter

    def title_of(self, event_id: str) -> str | None:
        """The title the model gave a new event."""
        return self.affiliation.titles.get(event_id)


def batch_nodes(batch: Batch) -> tuple[list[TurnNode], dict[str, list[int]]]:
    """The turn nodes of the batch and, per affiliated event, its turn numbers (1-based)."""
    nodes: list[TurnNode] = []
    members: dict[str, list[int]] = {}
    for n, turn in enumerate(batch.turns, start=1):
        event_ids = tuple(batch.affiliation.turn_events[n])
        item = batch.analysis.turns.get(n)
        segment = batch.segments[n - 1]
        if item is None:  # no line for it in the answer: a no-LLM node, the same events
            node = replace(heuristic_node(turn, segment, "", batch.counter), event_ids=event_ids)
        else:
            node = TurnNode(
                turn_id=turn.id,
                speaker=turn.turn.speaker,
                timestamp=turn.turn.created_at,
                segment=segment,
                keywords=strings(item.get("keywords")),
                tags=strings(item.get("tags")),
                context=" ".join(str(item.get("context") or "").split())[:CONTEXT_CHARS],
                event_ids=event_ids,
                method="llm",
            )
        nodes.append(node)
        for eid in event_ids:
            members.setdefault(eid, []).append(n)
    return nodes, members


def merge_events(
    batch: Batch,
    nodes: Sequence[TurnNode],
    members: Mapping[str, Sequence[int]],
    known: Mapping[str, Event],
    *,
    rewrite_limit: int,
    now: float,
) -> list[Event]:
    """The affiliated events, created, rewritten or linked (see the module doc)."""
    updates: list[Event] = []
    for eid, numbers in members.items():
        spec = batch.affiliation.specs.get(eid, {})
        turn_ids = tuple(batch.turns[n - 1].id for n in numbers)
        note_kw = [kw for n in numbers for kw in nodes[n - 1].keywords]
        note_tags = [tg for n in numbers for tg in nodes[n - 1].tags]
        old = known.get(eid)
        if old is None:
            event = _new_event(
                batch, eid, spec, numbers, note_kw=note_kw, note_tags=note_tags, now=now
            )
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
            if len(old.turn_ids) < rewrite_limit:
                logger.info("event %s was not rewritten: the answer has no update of it", eid)
            event = replace(
                old,
                keywords=tuple(dict.fromkeys((*old.keywords, *note_kw)))[:MERGED_KEYWORDS],
                tags=tuple(dict.fromkeys((*old.tags, *note_tags)))[:MERGED_KEYWORDS],
                turn_ids=tuple(dict.fromkeys((*old.turn_ids, *turn_ids))),
                updated_at=now,
            )
        updates.append(event)
    return updates


def _facts(batch: Batch, spec: Mapping[str, Any]) -> tuple[EventFact, ...]:
    size = len(batch.turns)
    out = []
    facts = spec.get("facts")
    for f in facts if isinstance(facts, list) else []:
        if not isinstance(f, dict) or not f.get("fact"):
            continue
        number = _NUMBER_RE.search(str(f.get("turn", "")))  # 1, "1", "[1]", "Turn 1"
        turn_id = (
            batch.turns[int(number.group()) - 1].id
            if number is not None and 1 <= int(number.group()) <= size
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
    numbers: Sequence[int],
    *,
    note_kw: Sequence[str],
    note_tags: Sequence[str],
    now: float,
) -> Event:
    summary = str(spec.get("summary") or "").strip()
    if not summary:  # the answer has no update of it: its title and its turns
        text = " ".join(batch.turns[n - 1].turn.text for n in numbers)[:NEW_EVENT_SUMMARY_CHARS]
        summary = f"{batch.title_of(event_id) or 'Event'}: {text}"
    return Event(
        id=event_id,
        summary=summary,
        facts=_facts(batch, spec),
        entities=strings(spec.get("entities")),
        keywords=strings(spec.get("keywords") or note_kw),
        tags=strings(spec.get("tags") or note_tags),
        turn_ids=tuple(batch.turns[n - 1].id for n in numbers),
        method="llm",
        created_at=now,
        updated_at=now,
    )
