"""HiGMem without an LLM: turn nodes from the tokenizer, events from the segments.

Turn nodes get keywords from the tokenizer and their first sentence as context; events
are the conversation's segments (sessions, see :func:`~..events.segment_labels`),
summarised extractively: date, speakers, and the segment's most distinctive keywords (term
frequency times inverse document frequency over the segments).

Example:
    >>> from langchain_recursive_memory.core.events import TurnNode
    >>> from langchain_recursive_memory.core.higmem.heuristic import segment_events
    >>> node = TurnNode("t1", "Ada", 0.0, "s1")
    >>> segment_events([node], {"t1": "Ada booked the Lisbon trip."})[0].summary
    'On 1970-01-01, Ada talked about ada, booked, lisbon, trip (1 turns).'
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..dates import format_time
from ..events import Event, TurnNode
from ..retrieval.lexical import word_stems
from ..storage import StoredTurn
from ..tokenizer import TokenCounter
from .config import HEURISTIC_CONTEXT_TOKENS, HEURISTIC_KEYWORDS
from .state import SessionIndex

__all__ = [
    "MIN_KEYWORD_CHARS",
    "heuristic_node",
    "index_heuristically",
    "segment_event_id",
    "segment_events",
]

MIN_KEYWORD_CHARS = 3
"""Shorter words are never keywords."""
DATE_CHARS = len("YYYY-MM-DD")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def segment_event_id(segment: str) -> str:
    """The id of the no-LLM event of a segment (every turn of the segment belongs to it)."""
    return f"seg:{segment}"


def heuristic_node(
    turn: StoredTurn, segment: str, event_id: str, counter: TokenCounter
) -> TurnNode:
    """The turn node of ``turn`` built without an LLM."""
    words = (w for _, w in word_stems(turn.turn.text) if len(w) >= MIN_KEYWORD_CHARS)
    terms = list(dict.fromkeys(words))
    first = _SENTENCE_END.split(turn.turn.text.strip(), maxsplit=1)[0]
    return TurnNode(
        turn_id=turn.id,
        speaker=turn.turn.speaker,
        timestamp=turn.turn.created_at,
        segment=segment,
        keywords=tuple(terms[:HEURISTIC_KEYWORDS]),
        context=counter.truncate(first, HEURISTIC_CONTEXT_TOKENS),
        event_ids=(event_id,),
        method="heuristic",
    )


def index_heuristically(
    state: SessionIndex, positions: Sequence[int], counter: TokenCounter
) -> tuple[list[TurnNode], list[Event]]:
    """Index the turns at ``positions`` without an LLM (the state is not changed).

    Reads only the segments the turns belong to. Returns the new turn nodes and the
    events of their segments (rebuilt); :meth:`~.state.SessionIndex.apply` takes them in.
    """
    with state.index.lock:
        turns, segments = state.index.turns, state.index.segments
        new_notes = [
            heuristic_node(turns[i], segments[i], segment_event_id(segments[i]), counter)
            for i in positions
        ]
        fresh = {n.turn_id: n for n in new_notes}
        touched = list(dict.fromkeys(segments[i] for i in positions))
        members: list[TurnNode] = []
        texts: dict[str, str] = {}
        for segment in touched:
            ids = [
                *state.members.get(segment, ()),
                *(n.turn_id for n in new_notes if n.segment == segment),
            ]
            for tid in dict.fromkeys(ids):
                node = fresh.get(tid) or state.nodes.get(tid)
                position = state.index.position(tid)
                if node is not None and position is not None:
                    members.append(node)
                    texts[tid] = turns[position].turn.text
        order = {n.turn_id: state.index.position(n.turn_id) or 0 for n in members}
        members.sort(key=lambda n: order[n.turn_id])
        built = segment_events(members, texts)
        for i, event in enumerate(built):
            old = state.events.get(event.id)
            if old is not None:
                built[i] = replace(event, created_at=old.created_at)
    return new_notes, built


def segment_events(
    nodes: Sequence[TurnNode], texts: Mapping[str, str], *, keywords: int = HEURISTIC_KEYWORDS
) -> list[Event]:
    """Build one event per segment without an LLM (ids ``"seg:<segment>"``).

    The summary says when, who, and the segment's most distinctive keywords (term
    frequency in the segment times inverse document frequency over the segments).
    """
    by_segment: dict[str, list[TurnNode]] = {}
    for node in nodes:
        by_segment.setdefault(node.segment, []).append(node)
    surface: dict[str, Counter[str]] = {}
    counts: dict[str, Counter[str]] = {}
    for seg, group in by_segment.items():
        c: Counter[str] = Counter()
        for node in group:
            for stem, word in word_stems(texts.get(node.turn_id, "")):
                if len(word) >= MIN_KEYWORD_CHARS and not word.isdigit():
                    c[stem] += 1
                    surface.setdefault(stem, Counter())[word] += 1
        counts[seg] = c
    df: Counter[str] = Counter()
    for c in counts.values():
        df.update(c.keys())
    total = max(len(counts), 1)
    events = []
    now = time.time()
    for seg, group in by_segment.items():
        c = counts[seg]
        best = sorted(c, key=lambda w: (-c[w] * math.log(1 + total / df[w]), w))[:keywords]
        ranked = [surface[stem].most_common(1)[0][0] for stem in best]
        speakers = list(dict.fromkeys(n.speaker for n in group if n.speaker))
        when = format_time(group[0].timestamp)[:DATE_CHARS]
        summary = (
            f"{'On ' + when + ', ' if when else ''}{' and '.join(speakers) or 'the speakers'} "
            f"talked about {', '.join(ranked) or 'various things'} ({len(group)} turns)."
        )
        events.append(
            Event(
                id=segment_event_id(seg),
                summary=summary,
                keywords=tuple(ranked),
                entities=tuple(speakers),
                turn_ids=tuple(n.turn_id for n in group),
                method="segment",
                created_at=now,
                updated_at=now,
            )
        )
    return events
