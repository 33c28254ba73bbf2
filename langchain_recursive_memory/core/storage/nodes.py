"""HiGMem's two layers: turn nodes and event nodes (derived: rebuildable from the log)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from ..events import Event, TurnNode
from .keys import SessionOwner, event_record_id, turn_node_id
from .repository import Repository, decoded

__all__ = ["HEAD_KIND", "EventNodes", "TurnNodes"]

HEAD_KIND = "head"
"""The ``kind`` of the per-session head record development versions between 0.1.0 and
0.2.0 kept in the turn nodes' collection (reads skip it; what a reader checks now is the
session's index chain, :mod:`.heads`)."""

N = TypeVar("N", TurnNode, Event)


class _Nodes(Repository, Generic[N]):
    """A collection of nodes: written whole (upserted), read per session or by id."""

    def _ref_id(self, skey: str, ref: str) -> str:
        """The record id of the node of ``ref`` (a turn id, an event id)."""
        raise NotImplementedError

    def _ref(self, node: N) -> str:
        raise NotImplementedError

    def _document(self, node: N) -> str:
        raise NotImplementedError

    def _decode(self, document: str, meta: Mapping[str, Any]) -> N:
        raise NotImplementedError

    def put(self, owner: SessionOwner, nodes: Sequence[N]) -> None:
        """Write (or overwrite) nodes."""
        ids = [self._ref_id(owner.key, self._ref(n)) for n in nodes]
        docs = [self._document(n) for n in nodes]
        self.upsert(f"write {self.label}", owner, ids, docs, [n.to_metadata() for n in nodes])

    def get(self, owner: SessionOwner) -> list[N]:
        """Return the session's nodes (in no particular order)."""
        rows = self.read(f"read {self.label}", owner, where=owner.where)
        nodes = [r for r in rows if r[1].get("kind") != HEAD_KIND]
        return decoded(self.label, nodes, lambda r: self._decode(*r))

    def by_ids(self, owner: SessionOwner, refs: Sequence[str]) -> list[N]:
        """The session's nodes of the given turn or event ids (those without one skipped)."""
        if not refs:
            return []
        ids = [self._ref_id(owner.key, r) for r in dict.fromkeys(refs)]
        rows = self.read(f"read {self.label} by id", owner, ids=ids)
        return decoded(self.label, rows, lambda r: self._decode(*r))


class TurnNodes(_Nodes[TurnNode]):
    """The ``{prefix}_hg_turns`` collection: one annotation per logged turn."""

    name = "hg_turns"
    label = "turn nodes"

    def _ref_id(self, skey: str, ref: str) -> str:
        return turn_node_id(skey, ref)

    def _ref(self, node: TurnNode) -> str:
        return node.turn_id

    def _document(self, node: TurnNode) -> str:
        return node.context

    def _decode(self, document: str, meta: Mapping[str, Any]) -> TurnNode:
        return TurnNode.from_metadata(document, meta)


class EventNodes(_Nodes[Event]):
    """The ``{prefix}_hg_events`` collection: event summaries and their fact sheets."""

    name = "hg_events"
    label = "events"

    def _ref_id(self, skey: str, ref: str) -> str:
        return event_record_id(skey, ref)

    def _ref(self, node: Event) -> str:
        return node.id

    def _document(self, node: Event) -> str:
        return node.summary

    def _decode(self, document: str, meta: Mapping[str, Any]) -> Event:
        return Event.from_metadata(document, meta)

    def get(self, owner: SessionOwner) -> list[Event]:
        """Return the session's event nodes, oldest first."""
        return sorted(super().get(owner), key=lambda e: (e.created_at, e.id))
