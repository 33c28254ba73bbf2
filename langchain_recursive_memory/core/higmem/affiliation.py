"""Event affiliation: the events a new batch of turns may belong to, and what answers name.

The candidates are the ``candidate_events`` events most similar to the batch (exact cosine
over the events' vectors with an embedder, BM25 over their index text without), plus the
last updated event; the prompt names them ``E1, E2...`` (:class:`Aliases`). The model
answers, per turn, alias ids or ``NEW:<title>`` (a new event; turns of one new event share
the title), and per event its update. :meth:`Aliases.affiliate` reads what models write:

* references as ``"E2"``, ``"e2"``, ``"Event E2"``, ``"E2: Ada's trip"`` or ``2`` name the
  alias; an alias the prompt did not list is dropped;
* a title without ``NEW:`` is the new event of that title when one is in the batch (titles
  match when most of their words do), else the candidate whose summary it describes, else
  a new event;
* a turn with no usable reference (``[]``), or with no line at all, joins the events of
  the turn before it, else the last updated event, else one new event of the batch (not
  one event per turn);
* an event's update is found under a paraphrased key as well (``"E2 (Ada's trip)"``, a
  reworded ``NEW:`` title, or the only update left for the only new event left).

Example:
    >>> from langchain_recursive_memory.core.events import Event
    >>> from langchain_recursive_memory.core.higmem.affiliation import Aliases
    >>> from langchain_recursive_memory.core.prompts import Analysis
    >>> aliases = Aliases([Event("e-1", "Ada's trip to Lisbon.")])
    >>> answer = Analysis({1: {"events": ["Event e1"]}, 2: {"events": []}}, {})
    >>> aliases.affiliate(answer, 2, {}).turn_events
    {1: ['e-1'], 2: ['e-1']}
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..events import Event
from ..prompts import Analysis, EventRef, event_ref, event_refs
from ..retrieval.dense import Candidate, nearest_steps
from ..retrieval.lexical import LexicalIndex, tokenize
from ..runtime.effects import Steps, embed_query
from ..session import SessionRef
from ..storage import text_hash
from ..storage.keys import EVENT_KIND, event_vector_id
from .config import EVENT_REFS

__all__ = [
    "SUMMARY_MATCH",
    "TITLE_MATCH",
    "Affiliation",
    "Aliases",
    "candidate_events_steps",
    "nearest_events_steps",
    "new_event_id",
]

logger = logging.getLogger("langchain_recursive_memory")

NEW_EVENT_ID_HEX = 10
"""Hex digits of a new event's random id."""
TITLE_MATCH = 0.6
"""Two titles name the same new event when this share of the shorter one's words is in
the other (``"ada's lisbon trip"`` and ``"ada's trip to lisbon"``); tuned on
``tests/data/model_answers/higmem_index.jsonl``."""
SUMMARY_MATCH = 0.75
"""A title without ``NEW:`` names a candidate event when this share of its words (two at
least) is in the event's summary; tuned on the same answers."""
MIN_SUMMARY_MATCH_WORDS = 2
UNTITLED = ""
"""The title of the new event of the batch's turns that name none."""


def new_event_id() -> str:
    """A fresh event id."""
    return f"e-{uuid.uuid4().hex[:NEW_EVENT_ID_HEX]}"


def _words(text: str) -> set[str]:
    return set(tokenize(text))


def _overlap(a: set[str], b: set[str]) -> float:
    """The share of the smaller set's words that are in the other."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


@dataclass
class Affiliation:
    """What one index answer affiliates.

    Attributes:
        turn_events: Per turn number (1-based), its event ids (never empty).
        specs: Per event id, the model's update of it.
        titles: Per new event id, its title.
        unanalysed: The turns the answer has no line for.
    """

    turn_events: dict[int, list[str]] = field(default_factory=dict)
    specs: dict[str, dict[str, Any]] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    unanalysed: list[int] = field(default_factory=list)


class Aliases:
    """The ``E1, E2...`` names of the candidate events in a prompt, both ways.

    Args:
        candidates: The candidate events, in prompt order.
        last: The last updated event (a candidate), which turns with no event join.
    """

    def __init__(self, candidates: Sequence[Event], last: Event | None = None) -> None:
        self.events = list(candidates)
        self.to_id = {f"E{n}": e.id for n, e in enumerate(self.events, start=1)}
        self.of_id = {v: k for k, v in self.to_id.items()}
        self.last_id = last.id if last is not None and last.id in self.of_id else None
        self._summaries = {e.id: _words(e.summary) for e in self.events}

    def affiliate(
        self, analysis: Analysis, n_turns: int, known: Mapping[str, Event]
    ) -> Affiliation:
        """Resolve the answer's references for a batch of ``n_turns`` turns (module doc)."""
        out = Affiliation()
        refs = {n: event_refs(item.get("events"), EVENT_REFS) for n, item in analysis.turns.items()}
        for ref in (r for rs in refs.values() for r in rs if r.kind == "new" and r.value):
            self._new(ref.value, out)
        previous: list[str] = []
        for n in range(1, n_turns + 1):
            ids = [i for r in refs.get(n, []) if (i := self._resolve(r, known, out))]
            if n not in analysis.turns:
                out.unanalysed.append(n)
            if not ids:
                ids = previous or [self.last_id or self._new(UNTITLED, out) or UNTITLED]
            out.turn_events[n] = previous = list(dict.fromkeys(ids))
        self._specs(analysis, known, out)
        return out

    def _new(self, title: str, out: Affiliation, *, create: bool = True) -> str | None:
        """The id of the batch's new event of ``title`` (a matching title counts)."""
        words = _words(title)
        for eid, other in out.titles.items():
            if other == title or (words and _overlap(words, _words(other)) >= TITLE_MATCH):
                return eid
        if not create:
            return None
        eid = new_event_id()
        out.titles[eid] = title
        return eid

    def _described(self, title: str) -> str | None:
        """The candidate whose summary ``title`` describes, if one clearly does."""
        words = _words(title)
        if len(words) < MIN_SUMMARY_MATCH_WORDS:
            return None
        best = max(self.events, key=lambda e: len(words & self._summaries[e.id]), default=None)
        if best is None or len(words & self._summaries[best.id]) / len(words) < SUMMARY_MATCH:
            return None
        return best.id

    def _resolve(
        self, ref: EventRef, known: Mapping[str, Event], out: Affiliation, *, create: bool = True
    ) -> str | None:
        """The event id ``ref`` names (None: it names nothing usable)."""
        if ref.raw in known:
            return ref.raw
        if ref.kind == "alias":
            return self.to_id.get(ref.value)
        if ref.kind == "new":
            return self._new(ref.value, out, create=create)
        found = self._new(ref.value, out, create=False) or self._described(ref.value)
        if found is None and create:
            logger.info("event reference %r read as the title of a new event", ref.raw)
            found = self._new(ref.value, out)
        return found

    def _specs(self, analysis: Analysis, known: Mapping[str, Event], out: Affiliation) -> None:
        """Attach each event update of the answer to the event it names."""
        left: list[dict[str, Any]] = []
        for key, spec in analysis.events.items():
            ref = event_ref(key)
            eid = None if ref is None else self._resolve(ref, known, out, create=False)
            if eid is None:
                left.append(spec)
            else:
                out.specs.setdefault(eid, spec)
        affiliated = {e for ids in out.turn_events.values() for e in ids}
        bare = [e for e in out.titles if e in affiliated and e not in out.specs]
        if len(left) == 1 and len(bare) == 1:  # the only update left, of the only new event
            out.specs[bare[0]] = left[0]


def candidate_events_steps(
    session: SessionRef,
    events: Sequence[Event],
    text: str,
    k: int,
    space: str | None,
) -> Steps[list[Event]]:
    """The ``k`` events most similar to ``text`` (all of them when there are few)."""
    if len(events) <= k:
        return list(events)
    if space is not None:
        vector = yield from embed_query(text)
        chosen = yield from nearest_events_steps(session, events, vector, k, space)
        if chosen:
            return chosen
    index = LexicalIndex([e.index_text for e in events])
    return [events[i] for i, _ in index.search(text, k)] or list(events[-k:])


def nearest_events_steps(
    session: SessionRef, events: Sequence[Event], vector: Sequence[float], k: int, space: str
) -> Steps[list[Event]]:
    """The ``k`` events whose vectors are nearest ``vector`` (exact cosine search).

    Event vectors are read by id: a session has few events, and Chroma's filtered kNN in a
    large shared collection costs far more than reading them (``benchmarks/overhead.py``).
    Events without a vector are left out.
    """
    by_id = {e.id: e for e in events}
    wanted = [
        Candidate(event_vector_id(session.key, e.id), EVENT_KIND, e.id, text_hash(e.index_text))
        for e in events
    ]
    near = yield from nearest_steps(
        session.store, space, (session.namespace, session.session_id), vector, wanted, n=k
    )
    return [by_id[c.ref] for c, _ in near]
