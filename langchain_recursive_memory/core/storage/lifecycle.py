"""The lifecycle of sessions and users: listing, expiring, clearing, forgetting.

A session is deleted in one database transaction: its row, and with it (``ON DELETE
CASCADE``) its turns, summaries, HiGMem nodes and usage. The same transaction records it
in ``{prefix}_pending``; its records in Chroma (its facts, its vectors, what it stated of
its user's facts) are deleted after the commit, and the pending row with them. Chroma's
deletes are idempotent: when they fail the pending row stays, and every later lifecycle
call of the store (and the first store object of a process) tries them again, so nothing
of a deleted session outlives it for long, and nothing is half-deleted in the database.

**Expiry never races a write.** ``expire()`` deletes the rows whose last write is older
than the cutoff in one statement; a writer updates the row it appends to in its own
transaction, so a session written meanwhile is no longer older than the cutoff (the
database re-checks the condition on the row it waited for) and is kept.

**A user's facts when one of its sessions goes.** What a session stated is taken out of
its user's facts with it: a fact only that session stated is deleted, a fact other
sessions stated too falls back to their newest statement (:mod:`.user_facts`). When a
user's last session goes, the user goes too. ``forget_user()`` deletes every session of
the user and everything the user owns (the right to erasure) in one transaction, then
every record in Chroma tagged with the user.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore, Turn
    >>> store = MemoryStore.in_memory()
    >>> _ = store.session("default", "s1").turns.append([Turn(role="user", text="hi")], [2], "e")
    >>> store.expire(3600, now=10**10)
    [('default', 's1')]
    >>> store.sessions()
    []
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, insert, select
from sqlalchemy.engine import Connection

from ..errors import ConfigurationError, StoreError
from .keys import SessionOwner, UserOwner, validate_name
from .records import SessionInfo, UserInfo
from .sessions import list_sessions, list_users

if TYPE_CHECKING:
    from .parts import StoreParts
    from .user_facts import UserFacts

__all__ = ["EXPIRE_BY", "SessionLifecycle"]

logger = logging.getLogger("langchain_recursive_memory")

EXPIRE_BY = ("written", "created")
"""What ``expire(by=...)`` measures a session's age by: its last write, or the newest
turn's own ``created_at``."""

_USER = "u:"


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class SessionLifecycle:
    """Whole sessions and users of a store (see the module doc).

    Args:
        store: The store's parts.
        shared_facts: The users' facts.
    """

    def __init__(self, store: StoreParts, shared_facts: UserFacts) -> None:
        self.store = store
        self.shared_facts = shared_facts
        self.db = store.db
        self.t = store.db.tables

    # -- listing ----------------------------------------------------------------------------

    def sessions(
        self, namespace: str | None = None, user: UserOwner | None = None
    ) -> list[SessionInfo]:
        """The sessions (of a namespace, or of a user), oldest first."""
        if namespace is not None:
            validate_name("namespace", namespace)
        found: list[SessionInfo] = self.db.read(
            lambda c: list_sessions(c, self.t, namespace, user), "list sessions"
        )
        return found

    def users(self, namespace: str | None = None) -> list[UserInfo]:
        """The users (of a namespace, or all), oldest first."""
        if namespace is not None:
            validate_name("namespace", namespace)
        found: list[UserInfo] = self.db.read(
            lambda c: list_users(c, self.t, namespace), "list users"
        )
        return found

    def activity(
        self, namespace: str | None = None, *, by: str = "written"
    ) -> dict[tuple[str, str], float]:
        """When each session (of a namespace, or all) last stored a turn (see ``expire``)."""
        column = self._age_column(by)
        s = self.t.sessions
        query = select(s.c.ns, s.c.sid, column)
        if namespace is not None:
            query = query.where(s.c.ns == validate_name("namespace", namespace))
        found = self.db.read(lambda c: c.execute(query).all(), "read activity")
        return {(ns, sid): float(when) for ns, sid, when in found}

    def _age_column(self, by: str) -> Any:
        if by not in EXPIRE_BY:
            raise ConfigurationError.for_value("by", by, f"must be one of {EXPIRE_BY}")
        s = self.t.sessions
        return s.c.written_at if by == "written" else s.c.newest_created

    # -- deleting ---------------------------------------------------------------------------

    def expire(
        self,
        older_than: float,
        *,
        namespace: str | None = None,
        now: float | None = None,
        by: str = "written",
    ) -> list[tuple[str, str]]:
        """Delete every session that stored no turn in the last ``older_than`` seconds.

        Returns:
            The ``(namespace, session_id)`` pairs deleted.

        Raises:
            ConfigurationError: For a bad ``older_than``, ``now`` or ``by``.
            InvalidInputError: For a bad namespace.
        """
        if not _finite(older_than) or older_than <= 0:
            raise ConfigurationError.for_value("older_than", older_than, "must be a number > 0")
        if now is not None and not _finite(now):
            raise ConfigurationError.for_value("now", now, "must be a finite number")
        column = self._age_column(by)
        cutoff = (time.time() if now is None else now) - older_than
        s = self.t.sessions
        where = [column < cutoff]
        if namespace is not None:
            where.append(s.c.ns == validate_name("namespace", namespace))
        gone = self._delete_sessions(where, "expire sessions")
        return [(ns, sid) for ns, sid, _ in gone]

    def clear(self, namespace: str, session_id: str) -> None:
        """Delete everything stored for the session: turns, summaries, facts, vectors."""
        owner = SessionOwner.of(namespace, session_id)
        self._delete_sessions([self.t.sessions.c.skey == owner.key], "clear a session")
        self.store.caches.drop(namespace, [session_id])

    def _delete_sessions(
        self, where: Sequence[Any], what: str
    ) -> list[tuple[str, str, str | None]]:
        """Delete the session rows ``where`` selects (one transaction), then their records."""
        s, p = self.t.sessions, self.t.pending

        def write(conn: Connection) -> list[tuple[str, str, str | None]]:
            # One statement: the database checks ``where`` again on a row a writer held
            # (a session written meanwhile is kept), and says what it deleted.
            found = conn.execute(
                delete(s).where(*where).returning(s.c.ns, s.c.sid, s.c.skey, s.c.user_id)
            ).all()
            if not found:
                return []
            keys = [r.skey for r in found]
            now = time.time()
            conn.execute(delete(p).where(p.c.key.in_(keys)))
            conn.execute(
                insert(p),
                [
                    {
                        "key": r.skey,
                        "ns": r.ns,
                        "name": r.sid,
                        "user_id": r.user_id,
                        "created_at": now,
                    }
                    for r in found
                ],
            )
            return [(r.ns, r.sid, r.user_id) for r in found]

        gone: list[tuple[str, str, str | None]] = self.db.write(write, what)
        for ns, _, _ in gone:
            self.store.caches.drop(ns, [sid for n, sid, _ in gone if n == ns])
        self.purge()
        return gone

    def forget_user(self, namespace: str, user_id: str) -> list[str]:
        """Delete every session of the user and everything the user owns.

        Returns:
            The ids of the sessions deleted.

        Raises:
            InvalidInputError: For a bad namespace or user id.
        """
        user = UserOwner.of(namespace, user_id)
        s, u, p = self.t.sessions, self.t.users, self.t.pending

        def write(conn: Connection) -> list[str]:
            sids = list(
                conn.execute(
                    select(s.c.sid).where(s.c.ukey == user.key, s.c.ns == namespace)
                ).scalars()
            )
            conn.execute(delete(s).where(s.c.ukey == user.key, s.c.ns == namespace))
            conn.execute(delete(u).where(u.c.ukey == user.key))
            key = _USER + user.key
            conn.execute(
                delete(p).where(
                    p.c.key.in_([key, *(SessionOwner.of(namespace, x).key for x in sids)])
                )
            )
            rows = [
                {
                    "key": key,
                    "ns": namespace,
                    "name": user_id,
                    "user_id": user_id,
                    "created_at": time.time(),
                }
            ]
            rows += [
                {
                    "key": SessionOwner.of(namespace, x).key,
                    "ns": namespace,
                    "name": x,
                    "user_id": None,
                    "created_at": time.time(),
                }
                for x in sids
            ]
            conn.execute(insert(p), rows)
            return sids

        sessions: list[str] = self.db.write(write, "forget a user")
        self.store.caches.drop(namespace, sessions, user_id)
        self.purge()
        return sessions

    # -- Chroma's part ------------------------------------------------------------------------

    def purge(self) -> int:
        """Delete in Chroma what deleted sessions and users left there (module doc).

        Returns:
            How many deletions are still pending (0: none; a failure is logged).
        """
        p = self.t.pending
        pending = self.db.read(lambda c: c.execute(select(p)).all(), "read pending deletes")
        left = 0
        for row in pending:
            try:
                self._purge_one(row)
            except StoreError as exc:
                left += 1
                logger.warning(
                    "records of deleted %r not yet deleted in Chroma (%s)", row.name, exc
                )
                continue
            self._done(row.key)
        return left

    def _done(self, key: str) -> None:
        p = self.t.pending

        def write(conn: Connection) -> None:
            conn.execute(delete(p).where(p.c.key == key))

        self.db.write(write, "purge")

    def _purge_one(self, row: Any) -> None:
        store = self.store
        if row.key.startswith(_USER):
            user = UserOwner.of(row.ns, row.name)
            store.fact_table.delete_where("delete the user's facts", user.everything)
            store.vector_spaces.delete_where(user.everything)
            return
        owner = SessionOwner.of(row.ns, row.name)
        if row.user_id is not None:
            self._drop_statements(owner, row.user_id)
        store.fact_table.clear(owner)
        store.vector_spaces.clear(owner)

    def _drop_statements(self, owner: SessionOwner, user_id: str) -> None:
        """Take the session's statements out of its user's facts; the user goes with its last."""
        user = UserOwner.of(owner.namespace, user_id)
        s, u = self.t.sessions, self.t.users

        def left(conn: Connection) -> int:
            count = conn.execute(select(func.count()).where(s.c.ukey == user.key)).scalar() or 0
            if not count:
                conn.execute(delete(u).where(u.c.ukey == user.key))
            return int(count)

        if self.db.write(left, "count the user's sessions"):
            self.shared_facts.drop_session(owner.namespace, owner.session_id, user_id)
            return
        self.store.fact_table.clear(user)
        self.store.vector_spaces.clear(user)
