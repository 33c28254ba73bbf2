"""HiGMem's two layers: turn nodes and event nodes (derived: rebuildable from the log)."""

from __future__ import annotations

from collections.abc import Sequence

from ..events import Event, TurnNote
from .keys import Scope, event_record_id, turn_node_id
from .repository import Repository, placeholders

__all__ = ["EventNodes", "TurnNodes"]


class TurnNodes(Repository):
    """The ``{prefix}_hg_turns`` collection: one annotation per logged turn."""

    name = "hg_turns"
    label = "turn nodes"

    def put(self, scope: Scope, notes: Sequence[TurnNote]) -> None:
        """Write (or overwrite) turn nodes."""
        if not notes:
            return
        self.chroma.call(
            "write turn nodes",
            lambda: self.collection.upsert(
                ids=[turn_node_id(scope.key, n.turn_id) for n in notes],
                documents=[n.context for n in notes],
                metadatas=[{**scope.metadata(), **n.to_metadata()} for n in notes],
                embeddings=placeholders(len(notes)),
            ),
        )

    def get(self, scope: Scope) -> list[TurnNote]:
        """Return the session's turn nodes (in no particular order)."""
        rows = self.read("read turn nodes", scope, where=scope.where)
        return [TurnNote.from_metadata(d, m) for d, m in rows]


class EventNodes(Repository):
    """The ``{prefix}_hg_events`` collection: event summaries and their fact sheets."""

    name = "hg_events"
    label = "events"

    def put(self, scope: Scope, events: Sequence[Event]) -> None:
        """Write (or overwrite) event nodes."""
        if not events:
            return
        self.chroma.call(
            "write events",
            lambda: self.collection.upsert(
                ids=[event_record_id(scope.key, e.id) for e in events],
                documents=[e.summary for e in events],
                metadatas=[{**scope.metadata(), **e.to_metadata()} for e in events],
                embeddings=placeholders(len(events)),
            ),
        )

    def get(self, scope: Scope) -> list[Event]:
        """Return the session's event nodes, oldest first."""
        rows = self.read("read events", scope, where=scope.where)
        out = [Event.from_metadata(d, m) for d, m in rows]
        out.sort(key=lambda e: (e.created_at, e.id))
        return out
