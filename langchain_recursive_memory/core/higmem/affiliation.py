"""Event affiliation: the events a new batch of turns may belong to, and what answers name.

The candidates are the ``candidate_events`` events most similar to the batch (exact cosine
over the events' vectors with an embedder, BM25 over their index text without), plus the
last updated event; the prompt names them ``E1, E2...`` (:class:`Aliases`). The model
answers, per turn, alias ids or ``NEW:<title>`` (a new event; turns of one new event share
the title).

Example:
    >>> from langchain_recursive_memory.core.events import Event
    >>> from langchain_recursive_memory.core.higmem.affiliation import Aliases
    >>> aliases = Aliases([Event("e-1", "Ada's trip to Lisbon.")])
    >>> new: dict[str, str] = {}
    >>> aliases.resolve(["E1", "NEW:cat"], {}, new)[0], sorted(new)
    ('e-1', ['cat'])
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from ..engine import SessionScope
from ..events import Event
from ..retrieval.dense import Candidate, nearest_steps
from ..retrieval.lexical import LexicalIndex
from ..runtime.effects import Steps, embed_query
from ..storage import text_hash
from ..storage.keys import EVENT_KIND, event_vector_id

__all__ = ["Aliases", "candidate_events_steps", "nearest_events_steps", "new_event_id"]

NEW_EVENT_ID_HEX = 10
"""Hex digits of a new event's random id."""


def new_event_id() -> str:
    """A fresh event id."""
    return f"e-{uuid.uuid4().hex[:NEW_EVENT_ID_HEX]}"


class Aliases:
    """The ``E1, E2...`` names of the candidate events in a prompt, both ways."""

    def __init__(self, candidates: Sequence[Event]) -> None:
        self.events = list(candidates)
        self.to_id = {f"E{n}": e.id for n, e in enumerate(self.events, start=1)}
        self.of_id = {v: k for k, v in self.to_id.items()}

    def resolve(
        self, refs: Sequence[str], known: Mapping[str, Event], new_ids: dict[str, str]
    ) -> list[str]:
        """The event ids ``refs`` name: aliases, known ids, or new events by title.

        ``new_ids`` maps the titles of new events to their ids (filled as they appear).
        """
        out: list[str] = []
        for ref in refs:
            if ref in self.to_id:
                out.append(self.to_id[ref])
            elif ref.upper().startswith("NEW") or ref not in known:
                title = ref.split(":", 1)[-1].strip().lower() or "new"
                if title not in new_ids:
                    new_ids[title] = new_event_id()
                out.append(new_ids[title])
            else:
                out.append(ref)
        return list(dict.fromkeys(out))


def candidate_events_steps(
    scope: SessionScope,
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
        chosen = yield from nearest_events_steps(scope, events, vector, k, space)
        if chosen:
            return chosen
    index = LexicalIndex([e.index_text for e in events])
    return [events[i] for i, _ in index.search(text, k)] or list(events[-k:])


def nearest_events_steps(
    scope: SessionScope, events: Sequence[Event], vector: Sequence[float], k: int, space: str
) -> Steps[list[Event]]:
    """The ``k`` events whose vectors are nearest ``vector`` (exact cosine search).

    Event vectors are read by id: a session has few events, and Chroma's filtered kNN in a
    large shared collection costs far more than reading them (``benchmarks/overhead.py``).
    Events without a vector are left out.
    """
    by_id = {e.id: e for e in events}
    wanted = [
        Candidate(event_vector_id(scope.key, e.id), EVENT_KIND, e.id, text_hash(e.index_text))
        for e in events
    ]
    near = yield from nearest_steps(
        scope.store, space, (scope.namespace, scope.session_id), vector, wanted, k
    )
    return [by_id[c.ref] for c, _ in near]
