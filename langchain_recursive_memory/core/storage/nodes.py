"""HiGMem's two layers: turn nodes and event nodes (derived: rebuildable from the log)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from ..events import Event, TurnNote
from .keys import Scope, event_record_id, turn_node_id
from .repository import Repository, decoded

__all__ = ["EventNodes", "TurnNodes"]

N = TypeVar("N", TurnNote, Event)


class _Nodes(Repository, Generic[N]):
    """A collection of nodes: written whole (upserted), read per session."""

    def _record_id(self, skey: str, node: N) -> str:
        raise NotImplementedError

    def _document(self, node: N) -> str:
        raise NotImplementedError

    def _decode(self, document: str, meta: Mapping[str, Any]) -> N:
        raise NotImplementedError

    def put(self, scope: Scope, nodes: Sequence[N]) -> None:
        """Write (or overwrite) nodes."""
        ids = [self._record_id(scope.key, n) for n in nodes]
        docs = [self._document(n) for n in nodes]
        self.upsert(f"write {self.label}", scope, ids, docs, [n.to_metadata() for n in nodes])

    def get(self, scope: Scope) -> list[N]:
        """Return the session's nodes (in no particular order)."""
        rows = self.read(f"read {self.label}", scope, where=scope.where)
        return decoded(self.label, rows, lambda r: self._decode(*r))


class TurnNodes(_Nodes[TurnNote]):
    """The ``{prefix}_hg_turns`` collection: one annotation per logged turn."""

    name = "hg_turns"
    label = "turn nodes"

    def _record_id(self, skey: str, node: TurnNote) -> str:
        return turn_node_id(skey, node.turn_id)

    def _document(self, node: TurnNote) -> str:
        return node.context

    def _decode(self, document: str, meta: Mapping[str, Any]) -> TurnNote:
        return TurnNote.from_metadata(document, meta)


class EventNodes(_Nodes[Event]):
    """The ``{prefix}_hg_events`` collection: event summaries and their fact sheets."""

    name = "hg_events"
    label = "events"

    def _record_id(self, skey: str, node: Event) -> str:
        return event_record_id(skey, node.id)

    def _document(self, node: Event) -> str:
        return node.summary

    def _decode(self, document: str, meta: Mapping[str, Any]) -> Event:
        return Event.from_metadata(document, meta)

    def get(self, scope: Scope) -> list[Event]:
        """Return the session's event nodes, oldest first."""
        return sorted(super().get(scope), key=lambda e: (e.created_at, e.id))
