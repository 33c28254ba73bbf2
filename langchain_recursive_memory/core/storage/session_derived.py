"""A session's derived records: its facts, vectors and HiGMem nodes.

The parts of a :class:`~.session_store.SessionStore` that hold what the engines derive from
the turn log (:class:`SessionFacts`, :class:`SessionVectors`, :class:`SessionNodes`); the
log and the summaries are in :mod:`.session_store`. Facts and vectors are in Chroma, the
nodes in the database; a write to Chroma is followed by the database's part (the session's
head), so a reader that sees the head move finds what moved it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection

from ..deprecations import warn_deprecated
from ..errors import StoreError
from ..events import Event, TurnNode
from ..facts import Fact, merge_fact
from ..runtime.effects import on_loop
from . import nodes as node_rows
from . import sessions as rows
from .keys import EVENT_KIND, SessionOwner, UserOwner, kinds_filter, user_owned
from .records import VectorRecord

if TYPE_CHECKING:
    from .database import Database
    from .parts import StoreParts
    from .records import SessionHead
    from .schema import Tables
    from .user_facts import UserFacts

__all__ = ["SessionFacts", "SessionNodes", "SessionPart", "SessionVectors", "row_of"]

_PUT_ATTEMPTS = 5


class Session(Protocol):
    """What a part reads of its :class:`~.session_store.SessionStore`."""

    store: StoreParts
    shared_facts: UserFacts
    db: Database
    t: Tables
    namespace: str
    session_id: str
    key: str
    key_owner: SessionOwner

    def user(self) -> str | None:
        """The session's user, or None."""

    def head(self) -> SessionHead | None:
        """The session's head, or None."""

    def read_rows(self, what: str, fn: Any) -> Any:
        """Run ``fn(conn, row)`` in a read transaction."""


class SessionPart:
    """A part of a :class:`~.session_store.SessionStore`: one kind of record of the session."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.db = session.db
        self.t = session.t


def row_of(conn: Connection, t: Any, skey: str) -> int | None:
    """The database row of the session ``skey``, or None when it has none."""
    found = conn.execute(select(t.sessions.c.id).where(t.sessions.c.skey == skey)).scalar()
    return int(found) if found is not None else None


class SessionFacts(SessionPart):
    """The facts the session sees: its own and, when it belongs to a user, the user's."""

    def upsert(self, facts: Sequence[Fact]) -> list[Fact]:
        """Store facts, each *updating* the stored fact with the same key (if any).

        The facts of a session that belongs to a user are the user's: each updates the
        user's fact of its key (:func:`~..facts.merge_user_fact`), whichever session
        stated it before. Returns the facts as stored (merged with earlier versions).
        """
        if not facts:
            return []
        session = self.session
        user = session.user()
        if user is not None:
            owner = SessionOwner.of(session.namespace, session.session_id, user)
            return session.shared_facts.upsert(owner, facts)
        owner = session.key_owner
        table = session.store.fact_table
        existing = {f.key: f for f in table.get(owner, table.ids(owner, facts))}
        merged = [merge_fact(existing.get(f.key), f) for f in facts]
        table.put(owner, merged)
        self.db.write(lambda c: rows.bump_facts(c, self.t, owner), "record new facts")
        return merged

    def get(self, *, ids: Sequence[str] | None = None) -> list[Fact]:
        """The facts the session sees (or those with the given record ids), oldest first.

        A key both the session and its user have is the user's.
        """
        session = self.session
        table = session.store.fact_table
        owner, user = session.key_owner, session.user()
        if user is None:
            return table.get(owner, ids)
        user_owner = UserOwner.of(session.namespace, user)
        if ids is None:
            own, theirs = table.get(owner), table.get(user_owner)
        else:
            mine = [i for i in ids if user_owned(user_owner.key, i)]
            rest = [i for i in ids if not user_owned(user_owner.key, i)]
            own = table.get(owner, rest) if rest else []
            theirs = table.get(user_owner, mine) if mine else []
        keys = {f.key for f in theirs}
        out = [*(f for f in own if f.key not in keys), *theirs]
        out.sort(key=lambda f: (f.created_at, f.key))
        return out

    def drop(self, *, statements: bool = True) -> None:
        """Delete the session's own facts and (``statements``) its statements of its user's.

        A rebuild starts so: the facts are then extracted again from the log.
        """
        session = self.session
        user = session.user()
        if statements and user is not None:
            session.shared_facts.drop_session(session.namespace, session.session_id, user)
        session.store.fact_table.clear(session.key_owner)
        self.db.write(lambda c: rows.bump_facts(c, self.t, session.key_owner), "drop facts")


class SessionVectors(SessionPart):
    """The session's vectors (and its user's facts'), one collection per embedder space."""

    def _owners(self, ids: Sequence[str]) -> list[tuple[SessionOwner | UserOwner, list[int]]]:
        """Which of ``ids`` (by position) are the session's and which its user's own."""
        user = self.session.user()
        owner = SessionOwner.of(self.session.namespace, self.session.session_id, user)
        if user is None:
            return [(owner, list(range(len(ids))))]
        user_owner = UserOwner.of(self.session.namespace, user)
        theirs = [i for i, rid in enumerate(ids) if user_owned(user_owner.key, rid)]
        taken = set(theirs)
        return [(owner, [i for i in range(len(ids)) if i not in taken]), (user_owner, theirs)]

    def existing(self, space: str, ids: Sequence[str]) -> set[str]:
        """Which of the record ids already have a vector in ``space``."""
        return self.session.store.vector_spaces.existing(ids, space)

    def put(self, space: str, records: Sequence[VectorRecord]) -> None:
        """Write (or overwrite) vector records; those of the user's facts as the user's own."""
        for owner, positions in self._owners([r.id for r in records]):
            self.session.store.vector_spaces.put(space, owner, [records[i] for i in positions])

    @on_loop
    def by_ids(self, space: str, ids: Sequence[str]) -> list[VectorRecord]:
        """The vector records with the given ids (the user's facts' too; missing ones skipped).

        Reads by id cost the same however large the collection is, unlike filtered reads.
        """
        out: list[VectorRecord] = []
        spaces = self.session.store.vector_spaces
        for owner, positions in self._owners(ids):
            if positions:
                out.extend(spaces.by_ids(space, owner, [ids[i] for i in positions]))
        return out

    def drop(self, space: str) -> None:
        """Delete the session's vectors of one embedder (not its user's facts')."""
        session = self.session
        session.store.vector_spaces.delete_where(session.key_owner.where, spaces=[space])
        self.db.write(lambda c: _rebuilt(c, self.t, session.key), "drop vectors")


def _rebuilt(conn: Connection, t: Any, skey: str) -> None:
    """Give the session a new generation (readers drop what they keep of it)."""
    s = t.sessions
    conn.execute(update(s).where(s.c.skey == skey).values(generation=s.c.generation + 1))


class SessionNodes(SessionPart):
    """HiGMem's turn nodes and events of the session."""

    def _nodes(self, what: str, fn: Any) -> Any:
        def read(conn: Connection, row: int | None) -> Any:
            return fn(conn, row) if row is not None else []

        return self.session.read_rows(what, read)

    @on_loop
    def turn_nodes(
        self, turn_ids: Sequence[str] | None = None, *, after: int | None = None
    ) -> list[TurnNode]:
        """The session's turn nodes (of ``turn_ids``; written after indexing ``after``)."""
        found: list[TurnNode] = self._nodes(
            "read turn nodes",
            lambda c, r: node_rows.turn_nodes(c, self.t, r, refs=turn_ids, after=after),
        )
        return found

    @on_loop
    def events(
        self, event_ids: Sequence[str] | None = None, *, after: int | None = None
    ) -> list[Event]:
        """The session's events (of ``event_ids``; written after indexing ``after``)."""
        found: list[Event] = self._nodes(
            "read events",
            lambda c, r: node_rows.events(c, self.t, r, refs=event_ids, after=after),
        )
        return found

    @on_loop
    def commit(self, number: int, nodes: Sequence[TurnNode], events: Sequence[Event]) -> bool:
        """Write indexing ``number``'s nodes and events unless another indexing took it.

        One transaction (see :func:`.nodes.commit`).

        Returns:
            True if written; False if another indexing took ``number`` (nothing written).
        """

        def write(conn: Connection) -> bool:
            row = row_of(conn, self.t, self.session.key)
            return row is not None and node_rows.commit(
                conn, self.t, row, number, nodes=nodes, events=events
            )

        won: bool = self.db.write(write, "write HiGMem nodes")
        return won

    def put_turn_nodes(self, nodes: Sequence[TurnNode]) -> None:
        """Deprecated since 0.3.0: write turn nodes as an indexing of their own.

        Use :meth:`commit`, which writes an indexing's nodes and events together.
        """
        warn_deprecated("SessionNodes.put_turn_nodes()", "store.session(ns, sid).nodes.commit()")
        self._put(nodes, ())

    def put_events(self, events: Sequence[Event]) -> None:
        """Deprecated since 0.3.0: write events as an indexing of their own (:meth:`commit`)."""
        warn_deprecated("SessionNodes.put_events()", "store.session(ns, sid).nodes.commit()")
        self._put((), events)

    def _put(self, nodes: Sequence[TurnNode], events: Sequence[Event]) -> None:
        for _ in range(_PUT_ATTEMPTS):  # the next number, unless another indexing takes it
            head = self.session.head()
            if self.commit((head.indexed if head is not None else 0) + 1, nodes, events):
                return
        raise StoreError(f"session {self.session.session_id!r}: other indexings kept writing")

    def drop(self) -> None:
        """Delete the turn nodes and events, and the events' vectors (a rebuild starts so)."""
        session = self.session
        t = self.t

        def write(conn: Connection) -> None:
            row = row_of(conn, t, session.key)
            if row is None:
                return
            conn.execute(delete(t.turn_nodes).where(t.turn_nodes.c.session == row))
            conn.execute(delete(t.events).where(t.events.c.session == row))
            s = t.sessions
            conn.execute(
                update(s).where(s.c.id == row).values(indexed=0, generation=s.c.generation + 1)
            )

        self.db.write(write, "drop HiGMem nodes")
        session.store.vector_spaces.delete_where(kinds_filter(session.key, [EVENT_KIND]))
