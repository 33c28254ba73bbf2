"""HiGMem's two layers: turn nodes and event nodes (derived: rebuildable from the log).

An indexing of a session writes its events and turn nodes in one transaction
(:func:`commit`): a compare-and-set on the session's ``indexed`` number, then every node
and event it wrote, each marked with that number (``link``). A reader that holds the
nodes up to indexing *n* catches up with ``link > n`` (:func:`since`); a writer that lost
the compare-and-set wrote nothing and reads what the winner wrote.

Every function takes an open connection and the prefix's :class:`~.schema.Tables`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table, select, update
from sqlalchemy.engine import Connection

from ..events import Event, TurnNode
from .records import decoded
from .schema import Tables
from .sessions import upsert
from .turns import IN_CHUNK

__all__ = ["commit", "events", "turn_nodes"]


def _node_rows(row: int, link: int, nodes: Sequence[TurnNode]) -> list[dict[str, Any]]:
    return [
        {
            "session": row,
            "tid": n.turn_id,
            "link": link,
            "created_at": 0.0,
            "document": n.context,
            "meta": json.dumps(n.to_metadata(), ensure_ascii=False),
        }
        for n in nodes
    ]


def _event_rows(row: int, link: int, events: Sequence[Event]) -> list[dict[str, Any]]:
    return [
        {
            "session": row,
            "eid": e.id,
            "link": link,
            "created_at": e.created_at,
            "document": e.summary,
            "meta": json.dumps(e.to_metadata(), ensure_ascii=False),
        }
        for e in events
    ]


def commit(
    conn: Connection,
    t: Tables,
    row: int,
    number: int,
    *,
    nodes: Sequence[TurnNode],
    events: Sequence[Event],
) -> bool:
    """Write indexing ``number``'s nodes and events if the session's last one is before it.

    Returns:
        True if written; False if another indexing took ``number`` first (nothing written).
    """
    s = t.sessions
    won = conn.execute(
        update(s).where(s.c.id == row, s.c.indexed == number - 1).values(indexed=number)
    )
    if not won.rowcount:
        return False
    put(conn, t, row, number, nodes=nodes, events=events)
    return True


def put(
    conn: Connection,
    t: Tables,
    row: int,
    link: int,
    *,
    nodes: Sequence[TurnNode],
    events: Sequence[Event],
) -> None:
    """Write (or overwrite) turn nodes and events as indexing ``link``'s."""
    upsert(
        conn,
        t.turn_nodes,
        _node_rows(row, link, nodes),
        [t.turn_nodes.c.session, t.turn_nodes.c.tid],
    )
    upsert(conn, t.events, _event_rows(row, link, events), [t.events.c.session, t.events.c.eid])


def _read(
    conn: Connection,
    table: Table,
    ref: str,
    row: int,
    *,
    refs: Sequence[str] | None,
    after: int | None,
) -> list[tuple[str, str, dict[str, str]]]:
    """``(document, meta JSON, {ref: id})`` of the rows (the last names a damaged row)."""
    c = table.c
    base = select(c.document, c.meta, c[ref]).where(c.session == row)
    if after is not None:
        base = base.where(c.link > after)
    if refs is None:
        queries = [base.order_by(c.created_at, c[ref])]
    else:
        ids = list(dict.fromkeys(refs))
        queries = [
            base.where(c[ref].in_(ids[i : i + IN_CHUNK])).order_by(c.created_at, c[ref])
            for i in range(0, len(ids), IN_CHUNK)
        ]
    return [(r[0], r[1], {ref: r[2]}) for q in queries for r in conn.execute(q)]


def turn_nodes(
    conn: Connection,
    t: Tables,
    row: int,
    *,
    refs: Sequence[str] | None = None,
    after: int | None = None,
) -> list[TurnNode]:
    """The session's turn nodes (of ``refs``; written after indexing ``after``)."""
    found = _read(conn, t.turn_nodes, "tid", row, refs=refs, after=after)
    return decoded("turn node", found, lambda r: TurnNode.from_metadata(r[0], json.loads(r[1])))


def events(
    conn: Connection,
    t: Tables,
    row: int,
    *,
    refs: Sequence[str] | None = None,
    after: int | None = None,
) -> list[Event]:
    """The session's events (of ``refs``; written after indexing ``after``), oldest first."""
    found = _read(conn, t.events, "eid", row, refs=refs, after=after)
    out = decoded("event", found, lambda r: Event.from_metadata(r[0], json.loads(r[1])))
    out.sort(key=lambda e: (e.created_at, e.id))
    return out
