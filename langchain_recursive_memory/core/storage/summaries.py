"""The versioned summaries: one row per version, each naming the turns it folded.

A fold commits a version in one transaction (:func:`commit`): a compare-and-set on the
session's ``version`` (the writer that finds the version before its own wins; the other
rolls back and reloads), the version's row, and the ``folded_in`` mark of its turns. So a
reader sees a turn either in the window or in a summary, never in both or neither.

Every function takes an open connection and the prefix's :class:`~.schema.Tables`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, insert, select, update
from sqlalchemy.engine import Connection

from .keys import SessionOwner
from .records import Summary
from .schema import Tables
from .turns import mark_folded

__all__ = ["commit", "summary_of", "summary_row", "version", "versions"]


def summary_row(row: int, s: Summary) -> dict[str, Any]:
    """The ``{prefix}_summaries`` row of a summary version of session row ``row``."""
    return {
        "session": row,
        "version": s.version,
        "text": s.text,
        "tokens": s.tokens,
        "turn_ids": json.dumps(list(s.turn_ids)),
        "first_tid": s.first_turn_id,
        "last_tid": s.last_turn_id,
        "covered": s.covered,
        "method": s.method,
        "created_at": s.created_at,
        "fold_id": s.fold_id,
        "last_seq": s.last_seq,
        "passed": json.dumps(list(s.passed_ids)) if s.passed_ids else None,
        "question": s.question_id,
    }


def summary_of(owner: SessionOwner, row: Row[Any]) -> Summary:
    """The summary version of a ``{prefix}_summaries`` row."""
    return Summary(
        namespace=owner.namespace,
        session_id=owner.session_id,
        version=int(row.version),
        text=row.text,
        tokens=int(row.tokens),
        turn_ids=tuple(json.loads(row.turn_ids)),
        first_turn_id=row.first_tid,
        last_turn_id=row.last_tid,
        covered=int(row.covered),
        method=row.method,
        created_at=float(row.created_at),
        fold_id=row.fold_id,
        last_seq=int(row.last_seq),
        passed_ids=tuple(json.loads(row.passed)) if row.passed else (),
        question_id=row.question,
    )


def version(
    conn: Connection, t: Tables, owner: SessionOwner, row: int, number: int
) -> Summary | None:
    """Summary version ``number`` of the session (None: none)."""
    c = t.summaries.c
    found = conn.execute(select(t.summaries).where(c.session == row, c.version == number)).first()
    return summary_of(owner, found) if found is not None else None


def versions(
    conn: Connection, t: Tables, owner: SessionOwner, row: int, after: int = 0
) -> list[Summary]:
    """The session's summary versions after ``after``, oldest first."""
    c = t.summaries.c
    query = select(t.summaries).where(c.session == row, c.version > after).order_by(c.version)
    return [summary_of(owner, r) for r in conn.execute(query)]


def commit(conn: Connection, t: Tables, row: int, new: Summary, also: Sequence[str] = ()) -> bool:
    """Write version ``new`` if the session's newest version is the one before it.

    The version's turns (and ``also``: turns an earlier release's fold left unmarked) are
    marked folded in the same transaction.

    Returns:
        True if this call wrote the version; False if another writer had (reload).
    """
    s = t.sessions
    won = conn.execute(
        update(s).where(s.c.id == row, s.c.version == new.version - 1).values(version=new.version)
    )
    if not won.rowcount:
        return False
    conn.execute(insert(t.summaries).values(**summary_row(row, new)))
    mark_folded(conn, t, row, [*also, *new.turn_ids], new.version)
    return True
