"""Sessions and users: their rows, the heads every read checks, users, settings, leases.

A session's row (``{prefix}_sessions``, :mod:`.schema`) is its *head*: every write of the
session updates it in the writing transaction, and every read reads it first
(:func:`read_head`), so a reader knows in one statement whether anything it keeps of the
session is stale (:class:`~.records.SessionHead`; "How the memory stays fresh" in
:mod:`..storage`). A user's sessions are a query on the same table (:func:`user_heads`).

Every function here takes an open connection (a transaction of
:class:`~.database.Database`) and the prefix's :class:`~.schema.Tables`.

Example:
    >>> from langchain_recursive_memory.core.storage.database import Database
    >>> from langchain_recursive_memory.core.storage.keys import SessionOwner
    >>> db = Database.open("sqlite://", "lrm")
    >>> owner = SessionOwner.of("default", "s1")
    >>> db.write(lambda c: advance(c, db.tables, owner, 2, now=1.0, memory="hybrid"))
    (1, 2)
    >>> head = db.read(lambda c: read_head(c, db.tables, owner.key))
    >>> head.last_seq, head.memory, head.epoch
    (2, 'hybrid', '1.0')
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Column, Select, Table, bindparam, case, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from ..errors import ConfigurationError
from .keys import SessionOwner, UserOwner, user_key
from .records import SessionHead, SessionInfo, UserInfo
from .schema import Tables

__all__ = [
    "advance",
    "dialect_insert",
    "dialect_insert_of",
    "bump_facts",
    "claim_lease",
    "describe",
    "ensure_user",
    "head_query",
    "insert_ignore",
    "join_user",
    "list_sessions",
    "list_users",
    "read_head",
    "release_lease",
    "set_marker",
    "upsert",
    "user_heads",
]


_dialects: dict[str, Any] = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}


def dialect_insert(conn: Connection, table: Table) -> Any:
    """The dialect's INSERT, which knows ``ON CONFLICT`` (SQLite and PostgreSQL)."""
    return dialect_insert_of(conn.dialect.name, table)


def dialect_insert_of(dialect: str, table: Table) -> Any:
    """:func:`dialect_insert` of a dialect's name."""
    if dialect not in _dialects:
        raise ConfigurationError.for_value(
            "database", dialect, "supported databases: SQLite and PostgreSQL"
        )
    return _dialects[dialect](table)


def insert_ignore(
    conn: Connection,
    table: Table,
    rows: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    keys: Sequence[Column[Any]],
) -> None:
    """Insert rows, leaving any whose ``keys`` are taken as they are (insert-if-absent)."""
    if not rows:
        return
    stmt = dialect_insert(conn, table).on_conflict_do_nothing(index_elements=list(keys))
    conn.execute(stmt, list(rows) if not isinstance(rows, Mapping) else [rows])


def upsert(
    conn: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    keys: Sequence[Column[Any]],
) -> None:
    """Insert rows, overwriting those whose ``keys`` are taken (every other column)."""
    if not rows:
        return
    stmt = dialect_insert(conn, table)
    names = [c for c in rows[0] if c not in {k.name for k in keys}]
    stmt = stmt.on_conflict_do_update(
        index_elements=list(keys), set_={n: stmt.excluded[n] for n in names}
    )
    conn.execute(stmt, list(rows))


# -- heads ------------------------------------------------------------------------------


def head_query(t: Tables) -> Select[Any]:
    """The head of sessions (and their user's facts counter), as :func:`_head` reads it."""
    s, u = t.sessions, t.users
    return select(
        s.c.id,
        s.c.sid,
        s.c.generation,
        s.c.last_seq,
        s.c.version,
        s.c.indexed,
        s.c.facts,
        s.c.user_id,
        s.c.memory,
        u.c.facts.label("user_facts"),
    ).select_from(s.outerjoin(u, u.c.ukey == s.c.ukey))


def _head(row: Any) -> SessionHead:
    return SessionHead(
        row=row.id,
        generation=row.generation,
        last_seq=row.last_seq,
        version=row.version,
        indexed=row.indexed,
        facts=row.facts,
        user_id=row.user_id,
        memory=row.memory,
        user_facts=row.user_facts or 0,
    )


def read_head(conn: Connection, t: Tables, skey: str) -> SessionHead | None:
    """The session's head (None: the session has no row: never written, or cleared)."""
    row = conn.execute(_head_by_key(t), {"skey": skey}).first()
    return _head(row) if row is not None else None


@lru_cache(maxsize=64)
def _head_by_key(t: Tables) -> Select[Any]:
    """:func:`read_head`'s query, built once per prefix (every read runs it)."""
    return head_query(t).where(t.sessions.c.skey == bindparam("skey"))


def user_heads(conn: Connection, t: Tables, user: UserOwner) -> dict[str, SessionHead]:
    """The heads of every session of a user, by session id, oldest session first."""
    s = t.sessions
    rows = conn.execute(
        head_query(t).where(s.c.ukey == user.key, s.c.ns == user.namespace).order_by(s.c.id)
    )
    return {row.sid: _head(row) for row in rows if row.user_id == user.user_id}


def advance(
    conn: Connection,
    t: Tables,
    owner: SessionOwner,
    count: int,
    *,
    now: float,
    newest: float = 0.0,
    memory: str = "",
) -> tuple[int, int]:
    """Create the session's row unless it exists, and advance its log by ``count`` turns.

    One statement (an upsert), which locks the row until the transaction ends: writers of
    one session take their order keys in turn, so a reader that sees a session's
    ``last_seq`` sees every turn up to it.

    Returns:
        The session's row id, and its ``last_seq`` after the advance (the turns take the
        ``count`` keys up to it).
    """
    row = conn.execute(
        _advance_statement(t, conn.dialect.name),
        {
            "ns": owner.namespace,
            "sid": owner.session_id,
            "skey": owner.key,
            "memory": memory,
            "now": now,
            "newest": newest,
            "count": count,
        },
    ).one()
    return int(row.id), int(row.last_seq)


@lru_cache(maxsize=64)
def _advance_statement(t: Tables, dialect: str) -> Any:
    """:func:`advance`'s upsert, built once per prefix and database (every append runs it)."""
    s = t.sessions
    count: Any = bindparam("count")
    now: Any = bindparam("now")
    newest: Any = bindparam("newest")
    stmt: Any = dialect_insert_of(dialect, s).values(
        ns=bindparam("ns"),
        sid=bindparam("sid"),
        skey=bindparam("skey"),
        memory=bindparam("memory"),
        created_at=now,
        written_at=now,
        newest_created=newest,
        last_seq=count,
        version=0,
        indexed=0,
        facts=0,
        generation=0,
    )
    return stmt.on_conflict_do_update(
        index_elements=[s.c.skey],
        set_={
            "last_seq": s.c.last_seq + count,
            "written_at": now,
            "newest_created": case((s.c.newest_created < newest, newest), else_=s.c.newest_created),
        },
    ).returning(s.c.id, s.c.last_seq)


def bump_facts(conn: Connection, t: Tables, owner: SessionOwner | UserOwner) -> None:
    """Record that the facts of a session (or of a user) changed."""
    table = t.sessions if isinstance(owner, SessionOwner) else t.users
    key = table.c.skey if isinstance(owner, SessionOwner) else table.c.ukey
    conn.execute(update(table).where(key == owner.key).values(facts=table.c.facts + 1))


# -- users --------------------------------------------------------------------------------


def join_user(
    conn: Connection, t: Tables, owner: SessionOwner, user_id: str, now: float
) -> str | None:
    """Record that the session belongs to ``user_id``, unless it belongs to a user already.

    The user's row is created unless it exists. The session's row must exist.

    Returns:
        The user the session belonged to before (None: none; it is ``user_id``'s now).
    """
    s = t.sessions
    ukey = user_key(owner.namespace, user_id)
    before = conn.execute(select(s.c.user_id).where(s.c.skey == owner.key)).scalar()
    if before is not None:
        return str(before)
    ensure_user(conn, t, UserOwner(owner.namespace, user_id, ukey), now)
    conn.execute(
        update(s)
        .where(s.c.skey == owner.key, s.c.user_id.is_(None))
        .values(user_id=user_id, ukey=ukey)
    )
    return None


def ensure_user(
    conn: Connection, t: Tables, user: UserOwner, now: float, *, facts: int = 0
) -> None:
    """Create the user's row unless it exists (``facts``: its facts counter to start at)."""
    row = {"ns": user.namespace, "uid": user.user_id, "ukey": user.key, "created_at": now}
    insert_ignore(conn, t.users, {**row, "facts": facts}, [t.users.c.ukey])


def list_sessions(
    conn: Connection, t: Tables, namespace: str | None = None, user: UserOwner | None = None
) -> list[SessionInfo]:
    """The sessions (of a namespace, or of a user), oldest first."""
    s = t.sessions
    query = select(s.c.ns, s.c.sid, s.c.created_at, s.c.settings, s.c.user_id).order_by(s.c.id)
    if namespace is not None:
        query = query.where(s.c.ns == namespace)
    if user is not None:
        query = query.where(s.c.ukey == user.key, s.c.ns == user.namespace)
    return [
        SessionInfo(r.ns, r.sid, float(r.created_at), _json(r.settings), r.user_id)
        for r in conn.execute(query)
        if user is None or r.user_id == user.user_id
    ]


def list_users(conn: Connection, t: Tables, namespace: str | None = None) -> list[UserInfo]:
    """The users (of a namespace, or all), oldest first."""
    u = t.users
    query = select(u.c.ns, u.c.uid, u.c.created_at).order_by(u.c.id)
    if namespace is not None:
        query = query.where(u.c.ns == namespace)
    return [UserInfo(r.ns, r.uid, float(r.created_at)) for r in conn.execute(query)]


# -- settings and markers -------------------------------------------------------------------


def _json(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def describe(conn: Connection, t: Tables, owner: SessionOwner, settings: Mapping[str, Any]) -> None:
    """Merge ``settings`` (how the memory was made) into the session's row."""
    s = t.sessions
    found = conn.execute(select(s.c.settings).where(s.c.skey == owner.key)).first()
    if found is None:
        return
    merged = {**_json(found.settings), **settings}
    conn.execute(update(s).where(s.c.skey == owner.key).values(settings=json.dumps(merged)))


def settings_of(conn: Connection, t: Tables, owner: SessionOwner) -> dict[str, Any]:
    """How the session's memory was made (empty: unknown)."""
    s = t.sessions
    return _json(conn.execute(select(s.c.settings).where(s.c.skey == owner.key)).scalar())


def _owner_row(t: Tables, owner: SessionOwner | UserOwner) -> tuple[Table, Column[Any]]:
    if isinstance(owner, SessionOwner):
        return t.sessions, t.sessions.c.skey
    return t.users, t.users.c.ukey


def marker(conn: Connection, t: Tables, owner: SessionOwner | UserOwner, task: str) -> Any:
    """The progress a running rebuild of ``task`` recorded (None: none running)."""
    table, key = _owner_row(t, owner)
    return _json(conn.execute(select(table.c.markers).where(key == owner.key)).scalar()).get(task)


def set_marker(
    conn: Connection, t: Tables, owner: SessionOwner | UserOwner, task: str, progress: Any
) -> None:
    """Record a rebuild's progress (JSON), or with None that it finished."""
    table, key = _owner_row(t, owner)
    markers = _json(conn.execute(select(table.c.markers).where(key == owner.key)).scalar())
    if progress is None:
        markers.pop(task, None)
    else:
        markers[task] = progress
    conn.execute(update(table).where(key == owner.key).values(markers=json.dumps(markers)))


# -- leases -----------------------------------------------------------------------------------


def claim_lease(
    conn: Connection,
    t: Tables,
    owner: SessionOwner | UserOwner,
    holder: str,
    *,
    period: float,
    now: float,
) -> bool:
    """Claim (or renew) the lease of a session (its folds) or a user (merging its facts).

    Returns:
        Whether ``holder`` holds it now, for ``period`` seconds (False: another holder's
        lease has not expired; or the row does not exist).
    """
    table, key = _owner_row(t, owner)
    free = (
        table.c.lease_holder.is_(None)
        | (table.c.lease_holder == holder)
        | (table.c.lease_until < now)
    )
    result = conn.execute(
        update(table)
        .where(key == owner.key, free)
        .values(lease_holder=holder, lease_until=now + period)
    )
    return bool(result.rowcount)


def release_lease(
    conn: Connection, t: Tables, owner: SessionOwner | UserOwner, holder: str
) -> None:
    """Give up ``holder``'s lease (nothing when another holds it)."""
    table, key = _owner_row(t, owner)
    conn.execute(
        update(table)
        .where(key == owner.key, table.c.lease_holder == holder)
        .values(lease_holder=None, lease_until=None)
    )
