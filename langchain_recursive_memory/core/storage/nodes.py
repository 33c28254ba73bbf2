"""HiGMem's two layers: turn nodes and event nodes (derived: rebuildable from the log)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Generic, TypeVar

from ..events import Event, TurnNode
from .keys import SessionOwner, event_record_id, head_record_id, turn_node_id
from .repository import Repository, decoded

__all__ = ["HEAD_KIND", "EventNodes", "TurnNodes"]

HEAD_KIND = "head"
"""The ``kind`` of a session's head record in the turn nodes' collection."""

N = TypeVar("N", TurnNode, Event)


class _Nodes(Repository, Generic[N]):
    """A collection of nodes: written whole (upserted), read per session."""

    def _record_id(self, skey: str, node: N) -> str:
        raise NotImplementedError

    def _document(self, node: N) -> str:
        raise NotImplementedError

    def _decode(self, document: str, meta: Mapping[str, Any]) -> N:
        raise NotImplementedError

    def put(self, owner: SessionOwner, nodes: Sequence[N]) -> None:
        """Write (or overwrite) nodes."""
        ids = [self._record_id(owner.key, n) for n in nodes]
        docs = [self._document(n) for n in nodes]
        self.upsert(f"write {self.label}", owner, ids, docs, [n.to_metadata() for n in nodes])

    def get(self, owner: SessionOwner) -> list[N]:
        """Return the session's nodes (in no particular order)."""
        rows = self.read(f"read {self.label}", owner, where=owner.where)
        nodes = [r for r in rows if r[1].get("kind") != HEAD_KIND]
        return decoded(self.label, nodes, lambda r: self._decode(*r))


class TurnNodes(_Nodes[TurnNode]):
    """The ``{prefix}_hg_turns`` collection: one annotation per logged turn.

    Beside the nodes, one *head* record per session carries a token that changes with
    every write of nodes: a process that finds the token it last wrote or read knows
    that no other process has indexed the session since (:meth:`head`).
    """

    name = "hg_turns"
    label = "turn nodes"

    def put_with_head(
        self, owner: SessionOwner, nodes: Sequence[TurnNode], token: str | None
    ) -> None:
        """Write nodes and (unless ``token`` is None) set the session's head token: one request."""
        if token is None:
            self.put(owner, nodes)
            return
        ids = [self._record_id(owner.key, n) for n in nodes] + [head_record_id(owner.key)]
        docs = [self._document(n) for n in nodes] + [""]
        metas = [n.to_metadata() for n in nodes] + [{"kind": HEAD_KIND, "token": token}]
        self.upsert(f"write {self.label}", owner, ids, docs, metas)

    def head(self, owner: SessionOwner) -> str | None:
        """The session's head token (None: no node written since the session began)."""
        meta = self.fields("read the index head", owner, head_record_id(owner.key))
        return str(meta["token"]) if meta is not None and "token" in meta else None

    def heads(self, owners: Sequence[SessionOwner]) -> dict[str, str | None]:
        """The head tokens of several sessions in one read (session key -> token)."""
        by_id = {head_record_id(s.key): s for s in owners}
        out: dict[str, str | None] = {s.key: None for s in owners}
        if not by_id:
            return out
        got = self.chroma.call(
            "read the index heads",
            partial(self.collection.get, ids=list(by_id), include=["metadatas"]),
        )
        for record_id, meta in zip(got["ids"], got["metadatas"] or [], strict=True):
            owner = by_id.get(record_id)
            if owner is not None and owner.owns(meta) and "token" in meta:
                out[owner.key] = str(meta["token"])
        return out

    def _record_id(self, skey: str, node: TurnNode) -> str:
        return turn_node_id(skey, node.turn_id)

    def _document(self, node: TurnNode) -> str:
        return node.context

    def _decode(self, document: str, meta: Mapping[str, Any]) -> TurnNode:
        return TurnNode.from_metadata(document, meta)


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

    def get(self, owner: SessionOwner) -> list[Event]:
        """Return the session's event nodes, oldest first."""
        return sorted(super().get(owner), key=lambda e: (e.created_at, e.id))
