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

from sqlalchemy import select
from sqlalchemy.engine import Connection

from ..cache import session_cache_key
from ..errors import (
    ConfigurationError,
    InvalidInputError,
    WriteOutcomeUnknownError,
)
from ..runtime.effects import on_loop
from ..turn import Turn, turn_list
from ..usage import Usage, UsageRecord
from ..validation import check_text, check_tokens
from . import sessions as rows
from . import summaries as versions
from . import turns as log
from . import usage as usage_rows
from .keys import SessionOwner
from .records import SessionHead, SessionState, StoredTurn, Summary
from .session_derived import SessionFacts, SessionNodes, SessionPart, SessionVectors, row_of

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

    def read_rows(self, what: str, fn: Any) -> Any:
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

        result: dict[str, Usage] = self.read_rows("read usage", read)
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


class SessionTurns(SessionPart):
    """The session's turn log (the source of truth)."""

    session: SessionStore

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

        found: list[StoredTurn] = self.session.read_rows(what, read)
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

        found: set[str] = self.session.read_rows("read the window", read)
        return found

    @on_loop
    def count(self) -> int:
        """How many turns the session's log holds."""

        def read(conn: Connection, row: int | None) -> int:
            return log.count(conn, self.t, row) if row is not None else 0

        found: int = self.session.read_rows("count turns", read)
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


class SessionSummaries(SessionPart):
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

        found: list[Summary] = self.session.read_rows("read summaries", read)
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

        won: bool = self.db.write(lambda c: write(c, row_of(c, self.t, self.session.key)), "fold")
        return won


WINDOW_BYTES = 4096
"""About what a session's kept window costs in memory beside its turns' texts."""


def _same_window(kept: SessionHead, head: SessionHead) -> bool:
    """Whether a window kept at head ``kept`` is ``head``'s but for turns appended since."""
    return (
        kept.epoch == head.epoch and kept.version == head.version and kept.last_seq <= head.last_seq
    )
