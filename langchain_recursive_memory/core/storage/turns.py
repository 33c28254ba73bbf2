"""The turn log: the source of truth, append-only, ordered by the database.

A session's turns are numbered 1, 2, 3... (``seq``) by the session's row, inside the
transaction that writes them (:func:`~.sessions.advance` locks the row), so the order is
the order the writes committed and a reader that has read up to ``seq`` *n* catches up
with ``seq > n`` and misses nothing. A turn is written once: a turn whose id the session
holds already is left out (the earlier record wins), which makes every append safe to
retry. Afterwards only ``folded_in`` changes (the summary version that folded it).

Every function takes an open connection and the prefix's :class:`~.schema.Tables`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Row, bindparam, func, select, update
from sqlalchemy.engine import Connection

from ..errors import InvalidInputError
from ..turn import Turn
from .keys import SessionOwner, new_turn_id
from .records import StoredTurn, decoded
from .schema import Tables
from .sessions import advance, dialect_insert_of

__all__ = [
    "IN_CHUNK",
    "append",
    "by_ids",
    "count",
    "log",
    "mark_folded",
    "prepare",
    "since",
    "stored_turn",
    "turn_row",
    "unfolded",
    "unfolded_ids",
]

IN_CHUNK = 500
"""Ids per ``IN (...)`` list (SQLite allows 32,766 parameters; stay far below)."""


def prepare(turns: Sequence[Turn], tokens: Sequence[int], encoding: str) -> list[StoredTurn]:
    """Give new turns their ids and creation times where missing (before the write).

    The ids are fixed before the transaction, so a retried write stores each turn once.
    Repeated ids within ``turns`` keep the first. Order keys are given in :func:`append`.

    Raises:
        InvalidInputError: When ``tokens`` does not match ``turns``.
    """
    if len(turns) != len(tokens):
        raise InvalidInputError.for_value("tokens", len(tokens), f"expected {len(turns)}")
    now_ns = time.time_ns()
    out: list[StoredTurn] = []
    seen: set[str] = set()
    for offset, (turn, n) in enumerate(zip(turns, tokens, strict=True)):
        turn_id = turn.id or new_turn_id(now_ns + offset)
        if turn_id in seen:
            continue
        seen.add(turn_id)
        created = turn.created_at if turn.created_at is not None else (now_ns + offset) / 1e9
        out.append(StoredTurn(turn.with_id(turn_id, created), 0, int(n), encoding))
    return out


def turn_row(row: int, s: StoredTurn) -> dict[str, Any]:
    """The ``{prefix}_turns`` row of a stored turn of session row ``row``."""
    payload = s.turn.payload()
    return {
        "session": row,
        "seq": s.seq,
        "tid": s.id,
        "role": s.turn.role,
        "text": s.turn.text,
        "payload": json.dumps(payload, ensure_ascii=False, sort_keys=True) if payload else None,
        "tokens": s.tokens,
        "encoding": s.encoding,
        "created_at": float(s.turn.created_at or 0.0),
        "folded_in": s.folded_in,
    }


_COLUMNS = (
    "session", "seq", "tid", "role", "text", "payload", "tokens", "encoding", "created_at",
    "folded_in",
)  # fmt: skip
"""The columns every query of turns selects, in this order (what :func:`stored_turn` reads)."""


def stored_turn(row: Sequence[Any]) -> StoredTurn:
    """The stored turn of a row of :data:`_COLUMNS` (unpacked: a tenth of the time by name)."""
    _, seq, tid, role, text, payload, tokens, encoding, created_at, folded_in = row
    data = json.loads(payload) if payload else {}
    turn = Turn.from_payload(role, text, data, turn_id=tid, created_at=float(created_at))
    return StoredTurn(turn, int(seq), int(tokens), encoding, int(folded_in))


def _columns(t: Tables) -> list[Any]:
    return [t.turns.c[name] for name in _COLUMNS]


def append(
    conn: Connection,
    t: Tables,
    owner: SessionOwner,
    prepared: Sequence[StoredTurn],
    *,
    memory: str = "",
) -> tuple[int, list[StoredTurn]]:
    """Append prepared turns (:func:`prepare`) to the session's log, creating its row.

    Returns:
        The session's row id, and the turns as stored, in the order given: those written
        now with their order keys, and those whose id the session held already as the
        earlier record (so a retried append returns what its lost commit stored).
    """
    held = _held(conn, t, owner, [s.id for s in prepared])
    fresh = [s for s in prepared if s.id not in held]
    if not fresh:  # a retry whose commit had landed, or turns added again
        row = next(iter(held.values()))[0]
        return row, [held[s.id][1] for s in prepared]
    newest = max(float(s.turn.created_at or 0.0) for s in fresh)
    row, last = advance(conn, t, owner, len(fresh), now=time.time(), newest=newest, memory=memory)
    first = last - len(fresh) + 1
    written = {
        s.id: StoredTurn(s.turn, first + i, s.tokens, s.encoding) for i, s in enumerate(fresh)
    }
    conn.execute(_insert_turns(t, conn.dialect.name), [turn_row(row, s) for s in written.values()])
    return row, [written.get(s.id) or held[s.id][1] for s in prepared]


@lru_cache(maxsize=64)
def _insert_turns(t: Tables, dialect: str) -> Any:
    """The insert of new turns, built once per prefix and database (every append runs it).

    A writer racing with the same id (a retry and its own lost commit) keeps the first.
    """
    return dialect_insert_of(dialect, t.turns).on_conflict_do_nothing(
        index_elements=["session", "tid"]
    )


@lru_cache(maxsize=64)
def _held_query(t: Tables) -> Any:
    """:func:`_held`'s query, built once per prefix (every append runs it)."""
    c, s = t.turns.c, t.sessions.c
    return (
        select(*_columns(t))
        .join(t.sessions, s.id == c.session)
        .where(s.skey == bindparam("skey"), c.tid.in_(bindparam("ids", expanding=True)))
    )


def _held(
    conn: Connection, t: Tables, owner: SessionOwner, ids: Sequence[str]
) -> dict[str, tuple[int, StoredTurn]]:
    """The turns of ``ids`` the session holds already (with its row id), by id."""
    out: dict[str, tuple[int, StoredTurn]] = {}
    for start in range(0, len(ids), IN_CHUNK):
        chunk = {"skey": owner.key, "ids": list(ids[start : start + IN_CHUNK])}
        for row in conn.execute(_held_query(t), chunk):
            out.update((turn.id, (int(row.session), turn)) for turn in _decoded([row]))
    return out


def _decoded(rows: Iterable[Row[Any]]) -> list[StoredTurn]:
    """The stored turns of rows (a damaged row is skipped with a warning)."""
    return decoded("turn", rows, lambda row: stored_turn(row))


def _select(t: Tables) -> Any:
    return select(*_columns(t)).order_by(t.turns.c.seq)


def log(conn: Connection, t: Tables, row: int) -> list[StoredTurn]:
    """Every turn of the session, oldest first."""
    return _decoded(conn.execute(_select(t).where(t.turns.c.session == row)))


def since(
    conn: Connection, t: Tables, row: int, after: int, upto: int | None = None
) -> list[StoredTurn]:
    """The session's turns after order key ``after`` (up to ``upto``), oldest first."""
    c = t.turns.c
    query = _select(t).where(c.session == row, c.seq > after)
    if upto is not None:
        query = query.where(c.seq <= upto)
    return _decoded(conn.execute(query))


def unfolded(conn: Connection, t: Tables, row: int) -> list[StoredTurn]:
    """The turns no summary version has folded, oldest first."""
    c = t.turns.c
    query = _select(t).where(c.session == row, c.folded_in == 0)
    return _decoded(conn.execute(query))


def unfolded_ids(conn: Connection, t: Tables, row: int) -> set[str]:
    """The ids of the turns no summary version has folded."""
    c = t.turns.c
    query = select(c.tid).where(c.session == row, c.folded_in == 0)
    return set(conn.execute(query).scalars())


def by_ids(conn: Connection, t: Tables, row: int, turn_ids: Iterable[str]) -> list[StoredTurn]:
    """The session's turns with the given ids, oldest first (missing ids skipped)."""
    ids = list(dict.fromkeys(turn_ids))
    c = t.turns.c
    out: list[StoredTurn] = []
    for start in range(0, len(ids), IN_CHUNK):
        query = _select(t).where(c.session == row, c.tid.in_(ids[start : start + IN_CHUNK]))
        out.extend(_decoded(conn.execute(query)))
    out.sort(key=lambda s: s.seq)
    return out


def count(conn: Connection, t: Tables, row: int) -> int:
    """How many turns the session's log holds."""
    c = t.turns.c
    return int(conn.execute(select(func.count()).where(c.session == row)).scalar() or 0)


def mark_folded(
    conn: Connection, t: Tables, row: int, turn_ids: Sequence[str], version: int
) -> None:
    """Record that summary ``version`` folded the given turns."""
    c = t.turns.c
    for start in range(0, len(turn_ids), IN_CHUNK):
        chunk = list(turn_ids[start : start + IN_CHUNK])
        conn.execute(
            update(t.turns).where(c.session == row, c.tid.in_(chunk)).values(folded_in=version)
        )
