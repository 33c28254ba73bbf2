"""Upkeep usage: append-only, one row per operation that called a model.

Every function takes an open connection and the prefix's :class:`~.schema.Tables`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, insert, select
from sqlalchemy.engine import Connection

from ..usage import Usage, UsageRecord
from .keys import SessionOwner
from .schema import Tables

__all__ = ["add", "totals"]


def add(conn: Connection, t: Tables, records: Sequence[UsageRecord]) -> None:
    """Append usage records (of any sessions; those of a session with no row are skipped).

    Raises:
        InvalidInputError: When a record has a bad namespace or session id.
    """
    owners = {
        (r.namespace, r.session_id): SessionOwner.of(r.namespace, r.session_id) for r in records
    }
    s = t.sessions
    found = conn.execute(
        select(s.c.skey, s.c.id).where(s.c.skey.in_([o.key for o in owners.values()]))
    )
    rows: dict[str, int] = dict(found.all())
    values = [
        {
            "session": rows[key],
            "purpose": r.purpose,
            "calls": r.usage.calls,
            "failed": r.usage.failed_calls,
            "input": r.usage.input_tokens,
            "output": r.usage.output_tokens,
            "reported": r.usage.reported_calls,
            "created_at": r.created_at,
        }
        for r in records
        if (key := owners[(r.namespace, r.session_id)].key) in rows
    ]
    if values:
        conn.execute(insert(t.usage), values)


def totals(conn: Connection, t: Tables, row: int) -> dict[str, Usage]:
    """The session's upkeep spend, per purpose (``"fold"``, ``"higmem-index"``...)."""
    c = t.usage.c
    query = (
        select(
            c.purpose,
            func.sum(c.calls),
            func.sum(c.failed),
            func.sum(c.input),
            func.sum(c.output),
            func.sum(c.reported),
        )
        .where(c.session == row)
        .group_by(c.purpose)
    )
    return {
        purpose: Usage(
            calls=int(calls),
            failed_calls=int(failed),
            input_tokens=int(tokens_in),
            output_tokens=int(tokens_out),
            reported_calls=int(reported),
        )
        for purpose, calls, failed, tokens_in, tokens_out, reported in conn.execute(query)
    }
