"""One session of a store, bound once: what an engine reads and writes through.

``store.session(namespace, session_id)`` validates the session once and returns its
:class:`SessionStore`: the session's head (:meth:`SessionStore.head`), its turns,
summaries, facts, vectors and HiGMem nodes (:class:`SessionTurns`,
:class:`SessionSummaries`, :class:`SessionFacts`, :class:`SessionVectors`,
:class:`SessionNodes`), its user, usage, settings and rebuild markers. This is the one
protocol the engines use; what the database and Chroma hold is behind it.

Each method that reads or writes the database is one transaction; the few that also
touch Chroma (facts, vectors) write the database's part after Chroma's, so that a reader
that sees the head move finds what moved it.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore, Turn
    >>> session = MemoryStore.in_memory().session("default", "s1")
    >>> _ = session.turns.append([Turn(role="user", text="hi")], [5], "o200k_base")
    >>> [t.turn.text for t in session.summaries.load().turns], session.turns.count()
    (['hi'], 1)
    >>> session.head().last_seq
    1
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection

from ..cache import session_cache_key
from ..deprecations import warn_deprecated
from ..errors import (
    ConfigurationError,
    InvalidInputError,
    StoreError,
    WriteOutcomeUnknownError,
)
from ..events import Event, TurnNode
from ..facts import Fact, merge_fact
from ..runtime.effects import on_loop
from ..turn import Turn, turn_list
from ..usage import Usage, UsageRecord
from ..validation import check_text, check_tokens
from . import nodes as node_rows
from . import sessions as rows
from . import summaries as versions
from . import turns as log
from . import usage as usage_rows
from .keys import EVENT_KIND, SessionOwner, UserOwner, kinds_filter, user_owned
from .records import SessionHead, SessionState, StoredTurn, Summary, VectorRecord

if TYPE_CHECKING:
    from .lifecycle import SessionLifecycle
    from .parts import StoreParts
    from .user_facts import UserFacts

__all__ = [
    "SessionFacts",
    "SessionNodes",
    "SessionStore",
    "SessionSummaries",
    "SessionTurns",
    "SessionVectors",
]


class SessionStore:
    """One session of a store (see the module doc).

    Args:
        store: The store's parts.
        namespace: The namespace.
        session_id: The session id.
        shared_facts: The users' facts.
        lifecycle: Whole sessions (its clear).

    Raises:
        InvalidInputError: For a bad namespace or session id.
    """

    def __init__(
        self,
        store: StoreParts,
        namespace: str,
        session_id: str,
        *,
        shared_facts: UserFacts,
        lifecycle: SessionLifecycle,
    ) -> None:
        self.store = store
        self.shared_facts = shared_facts
        self.lifecycle = lifecycle
        self.db = store.db
        self.t = store.db.tables
        self.key_owner = SessionOwner.of(namespace, session_id)
        self.namespace, self.session_id, self.key = namespace, session_id, self.key_owner.key
        self.turns = SessionTurns(self)
        self.summaries = SessionSummaries(self)
        self.facts = SessionFacts(self)
        self.vectors = SessionVectors(self)
        self.nodes = SessionNodes(self)

    def _read(self, what: str, fn: Any) -> Any:
        """Run ``fn(conn, row)`` in a read transaction (``row``: None without a session)."""

        def run(conn: Connection) -> Any:
            row = conn.execute(
                select(self.t.sessions.c.id).where(self.t.sessions.c.skey == self.key)
            ).scalar()
            return fn(conn, row)

        return self.db.read(run, what)

    @on_loop
    def head(self) -> SessionHead | None:
        """The session's head (None: nothing stored), one statement."""
        return self.db.read(lambda c: rows.read_head(c, self.t, self.key), "read a session")

    # -- its user -------------------------------------------------------------------------

    def owner(self) -> SessionOwner:
        """The session's owner, with its user (recorded, or bound in this process)."""
        return SessionOwner.of(self.namespace, self.session_id, self.user())

    @on_loop
    def user(self) -> str | None:
        """The user the session belongs to: recorded, or bound in this process; or None."""
        return self.recorded_user() or self.store.caches.users.get(self._bound_key())

    @on_loop
    def recorded_user(self) -> str | None:
        """The user the session's row names (None: none, or no row)."""
        head = self.head()
        return head.user_id if head is not None else None

    def _bound_key(self) -> tuple[str, ...]:
        return (self.namespace, self.session_id, "bound")

    def bind_user(self, user_id: str) -> None:
        """Take the session as ``user_id``'s in this process (its first write records it)."""
        self.store.caches.users.put(self._bound_key(), user_id)

    @on_loop
    def join_user(self, user_id: str) -> None:
        """Record that the session belongs to ``user_id`` (fixed once recorded).

        Raises:
            ConfigurationError: When it belongs to another user (both named).
        """
        self.db.write(lambda c: self._join(c, user_id), "join a user")

    def _join(self, conn: Connection, user_id: str) -> None:
        before = rows.join_user(conn, self.t, self.key_owner, user_id, time.time())
        if before is not None and before != user_id:
            raise ConfigurationError.for_value(
                "user_id",
                user_id,
                f"session {self.session_id!r} belongs to user {before!r}; a session's user "
                "is fixed once recorded",
            )

    # -- usage, settings, markers, the whole session --------------------------------------

    @on_loop
    def add_usage(self, records: Sequence[UsageRecord]) -> None:
        """Append usage records (LLM calls and tokens of memory upkeep)."""
        if records:
            self.db.write(lambda c: usage_rows.add(c, self.t, records), "write usage")

    @on_loop
    def usage(self) -> dict[str, Usage]:
        """The session's upkeep spend, per purpose (``"fold"``, ``"higmem-index"``...)."""

        def read(conn: Connection, row: int | None) -> dict[str, Usage]:
            return usage_rows.totals(conn, self.t, row) if row is not None else {}

        result: dict[str, Usage] = self._read("read usage", read)
        return result

    @on_loop
    def describe(self, settings: Mapping[str, str | int | float]) -> None:
        """Record how the session's memory was made (``memory``, ``max_tokens``...)."""
        self.db.write(lambda c: rows.describe(c, self.t, self.key_owner, settings), "describe")

    @on_loop
    def settings(self) -> dict[str, Any]:
        """How the session's memory was made (empty: unknown)."""
        found: dict[str, Any] = self.db.read(
            lambda c: rows.settings_of(c, self.t, self.key_owner), "read settings"
        )
        return found

    @on_loop
    def marker(self, task: str) -> Any:
        """The progress a running rebuild of ``task`` recorded (None: none is running)."""
        return self.db.read(lambda c: rows.marker(c, self.t, self.key_owner, task), "read")

    @on_loop
    def set_marker(self, task: str, progress: Any) -> None:
        """Record a running rebuild's progress (JSON), or with None that it finished."""
        self.db.write(lambda c: rows.set_marker(c, self.t, self.key_owner, task, progress), "mark")

    def clear(self) -> None:
        """Delete everything stored for the session (see :meth:`.MemoryStore.clear`)."""
        self.lifecycle.clear(self.namespace, self.session_id)


class _Part:
    """A part of a :class:`SessionStore`: one kind of record of the session."""

    def __init__(self, session: SessionStore) -> None:
        self.session = session
        self.db = session.db
        self.t = session.t


class SessionTurns(_Part):
    """The session's turn log (the source of truth)."""

    @on_loop
    def append(
        self,
        turns: Sequence[Turn],
        tokens: Sequence[int],
        encoding: str,
        memory: str = "",
        user_id: str | None = None,
    ) -> list[StoredTurn]:
        """Write turns to the log, in one transaction; durable when this returns.

        Turns without an id get a new, time-ordered one. A turn whose id is already stored
        in this session is not written again (the earlier record wins); repeated ids within
        ``turns`` keep the first. The session's row is created with its first turn.

        Args:
            turns: The turns, in conversation order.
            tokens: Each turn's token count.
            encoding: The encoding the counts were made with.
            memory: The kind of memory writing (``"hybrid"``, ``"higmem"``...), kept on
                the session's row from its first write.
            user_id: The user the session belongs to, recorded with the turns unless it
                is recorded already.

        Returns:
            The turns as written, with ids, creation times and order keys.

        Raises:
            InvalidInputError: For mismatched lengths or bad counts.
            ConfigurationError: When the session belongs to another user than ``user_id``
                (nothing is written).
            StoreError: When the database failed (nothing was written).
            WriteOutcomeUnknownError: When the commit failed (they may be stored):
                ``error.turns`` carry their ids; adding them again stores each once.
        """
        turns = turn_list(turns)
        if isinstance(tokens, str) or not isinstance(tokens, Sequence):
            raise InvalidInputError.for_value("tokens", tokens, "must be a sequence of ints")
        for n in tokens:
            check_tokens("tokens", n)
        check_text("encoding", encoding)
        prepared = log.prepare(turns, tokens, encoding)
        if not prepared:
            return []
        session = self.session

        def write(conn: Connection) -> list[StoredTurn]:
            _, written = log.append(conn, self.t, session.key_owner, prepared, memory=memory)
            if user_id is not None:
                session._join(conn, user_id)
            return written

        try:
            stored: list[StoredTurn] = self.db.write(write, "append turns")
        except WriteOutcomeUnknownError as exc:  # the commit's answer was lost
            raise WriteOutcomeUnknownError(
                f"{exc}. Add error.turns again when the database answers: their ids make "
                "it store each turn at most once.",
                [s.turn for s in prepared],
            ) from exc
        return stored

    def _rows(self, what: str, fn: Any) -> list[StoredTurn]:
        def read(conn: Connection, row: int | None) -> list[StoredTurn]:
            return fn(conn, row) if row is not None else []

        found: list[StoredTurn] = self.session._read(what, read)
        return found

    @on_loop
    def all(self) -> list[StoredTurn]:
        """Every logged turn of the session, oldest first (folded or not)."""
        return self._rows("read the log", lambda c, r: log.log(c, self.t, r))

    @on_loop
    def by_ids(self, turn_ids: Iterable[str]) -> list[StoredTurn]:
        """The session's turns with the given ids, oldest first (missing ids skipped)."""
        ids = list(turn_ids)
        return self._rows("read turns", lambda c, r: log.by_ids(c, self.t, r, ids))

    @on_loop
    def unfolded_ids(self) -> set[str]:
        """The ids of the turns no summary version has folded (the memory's window)."""

        def read(conn: Connection, row: int | None) -> set[str]:
            return log.unfolded_ids(conn, self.t, row) if row is not None else set()

        found: set[str] = self.session._read("read the window", read)
        return found

    @on_loop
    def count(self) -> int:
        """How many turns the session's log holds."""

        def read(conn: Connection, row: int | None) -> int:
            return log.count(conn, self.t, row) if row is not None else 0

        found: int = self.session._read("count turns", read)
        return found

    @on_loop
    def catch_up(self, epoch: str, after: int) -> tuple[SessionHead | None, list[StoredTurn], bool]:
        """What a reader that holds the log up to ``after`` at ``epoch`` must take in.

        One read transaction: the head, then the turns after ``after`` (or, when the
        session started again or was rebuilt since ``epoch``, the whole log).

        Returns:
            The head (None: nothing stored), the turns, and whether they are the whole log.
        """

        def read(conn: Connection) -> tuple[SessionHead | None, list[StoredTurn], bool]:
            head = rows.read_head(conn, self.t, self.session.key)
            if head is None:
                return None, [], True
            if head.epoch != epoch:
                return head, log.since(conn, self.t, head.row, 0, head.last_seq), True
            if head.last_seq <= after:
                return head, [], False
            return head, log.since(conn, self.t, head.row, after, head.last_seq), False

        found: tuple[SessionHead | None, list[StoredTurn], bool] = self.db.read(read, "read turns")
        return found


class SessionSummaries(_Part):
    """The session's summary versions, the fold lease, and the state a reader loads."""

    @on_loop
    def latest(self) -> Summary | None:
        """The latest summary version, or None."""
        return self.load().summary

    @on_loop
    def versions(self) -> list[Summary]:
        """Every summary version, oldest first."""

        def read(conn: Connection, row: int | None) -> list[Summary]:
            if row is None:
                return []
            return versions.versions(conn, self.t, self.session.key_owner, row)

        found: list[Summary] = self.session._read("read summaries", read)
        return found

    @on_loop
    def load(self) -> SessionState:
        """The latest summary and the turns it does not cover, oldest first (one snapshot).

        When the current question (the newest user message) is folded already, it is read
        too as the state's ``question``: the context shows it while it is current.

        The state last loaded in this process is kept (the store's caches) with the head it
        was read at: while the session's epoch and summary version are the same, a load
        reads the head and only the turns after it (the rule of "How the memory stays
        fresh" in :mod:`..storage`); otherwise the whole window again.
        """
        owner = self.session.key_owner
        caches = self.session.store.caches.sessions
        key = (*session_cache_key(owner.namespace, owner.session_id), "window")

        def read(conn: Connection) -> SessionState:
            head = rows.read_head(conn, self.t, owner.key)
            if head is None:
                return SessionState(None, ())
            kept: SessionState | None = caches.get(key)
            if kept is not None and kept.head is not None and _same_window(kept.head, head):
                if kept.head.last_seq == head.last_seq:
                    return replace(kept, head=head)
                new = log.since(conn, self.t, head.row, kept.head.last_seq, head.last_seq)
                latest, turns = kept.summary, (*kept.turns, *new)
            else:
                latest = versions.version(conn, self.t, owner, head.row, head.version)
                turns = tuple(log.unfolded(conn, self.t, head.row))
            question = None
            asked = latest.question_id if latest is not None else None
            if asked is not None and not any(t.turn.role == "user" for t in turns):
                if kept is not None and kept.question is not None and kept.question.id == asked:
                    question = kept.question
                else:
                    found = log.by_ids(conn, self.t, head.row, [asked])
                    question = found[0] if found else None
            return SessionState(latest, turns, (), question, head)

        state: SessionState = self.db.read(read, "load the session")
        if state.head is not None:
            caches.put(key, state, sum(len(t.turn.text) for t in state.turns) + WINDOW_BYTES)
        return state

    @on_loop
    def claim_lease(self, holder: str, period: float) -> bool:
        """Claim (or renew) the session's fold lease for ``holder``; whether it holds it.

        One writer folds a session at a time: the others skip their fold while the lease
        is held. A lease lasts ``period`` seconds unless renewed, so a holder that dies
        blocks folds for at most ``period``.
        """
        owner = self.session.key_owner
        claimed: bool = self.db.write(
            lambda c: rows.claim_lease(c, self.t, owner, holder, period=period, now=time.time()),
            "claim the fold lease",
        )
        return claimed

    @on_loop
    def release_lease(self, holder: str, period: float = 0.0) -> None:
        """Give up ``holder``'s fold lease (see :meth:`claim_lease`)."""
        owner = self.session.key_owner
        self.db.write(lambda c: rows.release_lease(c, self.t, owner, holder), "release a lease")

    @on_loop
    def commit(self, new: Summary, repair_ids: Sequence[str] = ()) -> bool:
        """Write summary version ``new`` if no other writer has written that version.

        One transaction: the version, and its turns (and ``repair_ids``: turns an earlier
        release's fold left unmarked) marked folded.

        Returns:
            True if this call wrote the version; False if another writer had (reload).
        """

        def write(conn: Connection, row: int | None) -> bool:
            return row is not None and versions.commit(conn, self.t, row, new, repair_ids)

        won: bool = self.db.write(lambda c: write(c, _row_of(c, self.t, self.session.key)), "fold")
        return won


_PUT_ATTEMPTS = 5

WINDOW_BYTES = 4096
"""About what a session's kept window costs in memory beside its turns' texts."""


def _same_window(kept: SessionHead, head: SessionHead) -> bool:
    """Whether a window kept at head ``kept`` is ``head``'s but for turns appended since."""
    return (
        kept.epoch == head.epoch and kept.version == head.version and kept.last_seq <= head.last_seq
    )


def _row_of(conn: Connection, t: Any, skey: str) -> int | None:
    found = conn.execute(select(t.sessions.c.id).where(t.sessions.c.skey == skey)).scalar()
    return int(found) if found is not None else None


class SessionFacts(_Part):
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


class SessionVectors(_Part):
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


class SessionNodes(_Part):
    """HiGMem's turn nodes and events of the session."""

    def _nodes(self, what: str, fn: Any) -> Any:
        def read(conn: Connection, row: int | None) -> Any:
            return fn(conn, row) if row is not None else []

        return self.session._read(what, read)

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
            row = _row_of(conn, self.t, self.session.key)
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
            row = _row_of(conn, t, session.key)
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
