"""The database's tables: what needs order and atomicity, one set of tables per prefix.

Every table is named ``{prefix}_{name}`` so that one database can hold several stores (as
one Chroma database holds several prefixes):

``{prefix}_sessions``
    One row per session (unique by its key, a hash of namespace and id): its user, how
    its memory was made, and its *head*: the order key of its newest turn
    (``last_seq``), its newest summary version (``version``), HiGMem's newest indexing
    (``indexed``), a counter of its facts' changes (``facts``), a rebuild counter
    (``generation``), its fold lease and its rebuild
    markers. Every read of a session reads this row first (:mod:`.sessions`).
``{prefix}_users``
    One row per user: a counter of its facts' changes, the lease that serialises merging
    them, its rebuild markers.
``{prefix}_turns``
    The turn log, the source of truth: append-only, ordered by ``seq`` (per session, given
    out by the session row inside the writing transaction, so every reader sees the turns
    of a session in the order they committed).
``{prefix}_summaries``
    One row per summary version, naming the turns it folded.
``{prefix}_turn_nodes`` and ``{prefix}_events``
    HiGMem's turn nodes and events; ``link`` is the indexing (the session's ``indexed``
    number) that last wrote each.
``{prefix}_usage``
    Upkeep spend, one row per operation that called a model.
``{prefix}_pending``
    Sessions and users deleted from the database whose records in Chroma (facts,
    vectors) are still to be deleted: written in the deleting transaction, removed once
    Chroma's deletes succeeded, retried until they do (:mod:`.lifecycle`).
``{prefix}_meta``
    The schema version and the migrations done.

Deleting a session row deletes its turns, summaries, nodes, events and usage with it
(foreign keys with ``ON DELETE CASCADE``).

Example:
    >>> tables = Tables.of("lrm")
    >>> tables.turns.name, [c.name for c in tables.turns.primary_key]
    ('lrm_turns', ['session', 'seq'])
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = ["SCHEMA_VERSION", "Tables"]

SCHEMA_VERSION = 3
"""The database layout (3: the log in a database, 0.3.0; 1 and 2 were Chroma-only)."""

_ID = 1024  # the longest namespace, session id or user id (keys.MAX_ID_LENGTH)
_KEY = 24  # a session's or user's key: a hash of its namespace and id (keys.session_key)


def _session_fk(prefix: str) -> Column[int]:
    return Column(
        "session",
        Integer,
        ForeignKey(f"{prefix}_sessions.id", ondelete="CASCADE"),
        nullable=False,
    )


@dataclass(frozen=True)
class Tables:
    """The tables of one prefix (see the module doc)."""

    metadata: MetaData
    meta: Table
    users: Table
    sessions: Table
    turns: Table
    summaries: Table
    turn_nodes: Table
    events: Table
    usage: Table
    pending: Table

    @staticmethod
    @lru_cache(maxsize=64)
    def of(prefix: str) -> Tables:
        """The tables of ``prefix`` (built once per prefix in a process)."""
        md = MetaData()
        return Tables(
            md,
            meta=_meta(md, prefix),
            users=_users(md, prefix),
            sessions=_sessions(md, prefix),
            turns=_turns(md, prefix),
            summaries=_summaries(md, prefix),
            turn_nodes=_nodes_table(md, prefix, "turn_nodes", "tid"),
            events=_nodes_table(md, prefix, "events", "eid"),
            usage=_usage(md, prefix),
            pending=_pending(md, prefix),
        )


def _meta(md: MetaData, p: str) -> Table:
    """The schema version and the migrations done."""
    return Table(
        f"{p}_meta",
        md,
        Column("key", String(64), primary_key=True),
        Column("value", Text, nullable=False),
    )


def _users(md: MetaData, p: str) -> Table:
    """One row per user."""
    return Table(
        f"{p}_users",
        md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("ns", String(_ID), nullable=False),
        Column("uid", String(_ID), nullable=False),
        Column("ukey", String(_KEY), nullable=False),
        Column("created_at", Float, nullable=False),
        Column("facts", Integer, nullable=False, default=0),
        Column("lease_holder", String(64)),
        Column("lease_until", Float),
        Column("markers", Text),
        UniqueConstraint("ukey", name=f"{p}_users_key"),
        sqlite_autoincrement=True,
    )


def _sessions(md: MetaData, p: str) -> Table:
    """One row per session, with its head."""
    return Table(
        f"{p}_sessions",
        md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("ns", String(_ID), nullable=False),
        Column("sid", String(_ID), nullable=False),
        Column("skey", String(_KEY), nullable=False),
        Column("user_id", String(_ID)),
        Column("ukey", String(_KEY)),
        Column("memory", String(32), nullable=False, default=""),
        Column("settings", Text),
        Column("created_at", Float, nullable=False),
        Column("written_at", Float, nullable=False),
        Column("newest_created", Float, nullable=False, default=0.0),
        Column("last_seq", BigInteger, nullable=False, default=0),
        Column("version", Integer, nullable=False, default=0),
        Column("indexed", Integer, nullable=False, default=0),
        Column("facts", Integer, nullable=False, default=0),
        Column("generation", Integer, nullable=False, default=0),
        Column("lease_holder", String(64)),
        Column("lease_until", Float),
        Column("markers", Text),
        UniqueConstraint("skey", name=f"{p}_sessions_key"),
        Index(f"{p}_sessions_user", "ukey"),
        Index(f"{p}_sessions_written", "written_at"),
        sqlite_autoincrement=True,
    )


def _turns(md: MetaData, p: str) -> Table:
    """The turn log, with the index of its unfolded turns."""
    turns = Table(
        f"{p}_turns",
        md,
        _session_fk(p),
        Column("seq", BigInteger, nullable=False),
        Column("tid", String(_ID), nullable=False),
        Column("role", String(32), nullable=False),
        Column("text", Text, nullable=False),
        Column("payload", Text),
        Column("tokens", Integer, nullable=False),
        Column("encoding", String(64), nullable=False),
        Column("created_at", Float, nullable=False),
        Column("folded_in", Integer, nullable=False, default=0),
        UniqueConstraint("session", "tid", name=f"{p}_turns_tid"),
    )
    unfolded = turns.c.folded_in == 0  # the few turns a read shows verbatim
    Index(
        f"{p}_turns_unfolded",
        turns.c.session,
        turns.c.seq,
        sqlite_where=unfolded,
        postgresql_where=unfolded,
    )
    turns.append_constraint(_pk(turns, "session", "seq"))
    return turns


def _summaries(md: MetaData, p: str) -> Table:
    """One row per summary version."""
    summaries = Table(
        f"{p}_summaries",
        md,
        _session_fk(p),
        Column("version", Integer, nullable=False),
        Column("text", Text, nullable=False),
        Column("tokens", Integer, nullable=False),
        Column("turn_ids", Text, nullable=False),
        Column("first_tid", String(_ID)),
        Column("last_tid", String(_ID)),
        Column("covered", Integer, nullable=False),
        Column("method", String(32), nullable=False),
        Column("created_at", Float, nullable=False),
        Column("fold_id", String(64), nullable=False),
        Column("last_seq", BigInteger, nullable=False),
        Column("passed", Text),
        Column("question", String(_ID)),
    )
    summaries.append_constraint(_pk(summaries, "session", "version"))
    return summaries


def _usage(md: MetaData, p: str) -> Table:
    """Upkeep spend."""
    return Table(
        f"{p}_usage",
        md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        _session_fk(p),
        Column("purpose", String(64), nullable=False),
        Column("calls", Integer, nullable=False),
        Column("failed", Integer, nullable=False),
        Column("input", Integer, nullable=False),
        Column("output", Integer, nullable=False),
        Column("reported", Integer, nullable=False),
        Column("created_at", Float, nullable=False),
        Index(f"{p}_usage_session", "session"),
    )


def _pending(md: MetaData, p: str) -> Table:
    """Chroma deletes still to do."""
    return Table(
        f"{p}_pending",
        md,
        Column("key", String(_KEY + 2), primary_key=True),
        Column("ns", String(_ID), nullable=False),
        Column("name", String(_ID), nullable=False),
        Column("user_id", String(_ID)),
        Column("created_at", Float, nullable=False),
    )


def _pk(table: Table, *names: str) -> PrimaryKeyConstraint:
    return PrimaryKeyConstraint(*(table.c[n] for n in names), name=f"{table.name}_pk")


def _nodes_table(md: MetaData, prefix: str, name: str, ref: str) -> Table:
    """A HiGMem node table: one row per turn (or event), its document and metadata."""
    table = Table(
        f"{prefix}_{name}",
        md,
        _session_fk(prefix),
        Column(ref, String(_ID), nullable=False),
        Column("link", Integer, nullable=False),
        Column("created_at", Float, nullable=False, default=0.0),
        Column("document", Text, nullable=False),
        Column("meta", Text, nullable=False),
        Index(f"{prefix}_{name}_link", "session", "link"),
    )
    table.append_constraint(_pk(table, "session", ref))
    return table
