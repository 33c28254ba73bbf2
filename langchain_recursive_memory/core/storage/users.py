"""Users: the user list, which user each session belongs to, and the users' own facts.

A session may belong to a user (within its namespace). The session's record names the
user (:meth:`~.sessions.SessionList.join`), fixed once recorded, and so does its stamp
record (:mod:`.heads`); the user's record in ``{prefix}_users`` carries a *stamp* that
changes whenever the user's facts change, so a process that caches them knows when to
read them again. A user's list of sessions is read from the session list each time (one
request, like reading a stamp would be), so a new session of the user is listed at once.

A user's facts are the user's own records (:class:`~.keys.UserOwner`): one per fact key,
merged across sessions by :func:`~..facts.merge_user_fact` (the newest statement wins, by
when it was said). Which user a session belongs to is read once per process and session
and kept in the store's caches; every read of the session checks it against the user its
stamp record names (:meth:`UserDirectory.observe`), so a session cleared and reused by
another user is seen as such. A memory given a user records it again at every write, so
a session cleared or forgotten through another handle of this process stays the user's.

The read-merge-write of a user's facts is serialised: within a process by a lock per user
(:data:`~..cache.USER_LOCKS` stripes), across processes by a lease on the user's key (the fold
lease's mechanism, :data:`USER_LEASE_PERIOD`); a fold that cannot get it within
:data:`USER_LEASE_WAIT` fails and is retried later, its messages kept.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> store = MemoryStore.in_memory()
    >>> store.records.join_user("default", "monday-chat", "ada")
    >>> store.session_user("default", "monday-chat"), [u.user_id for u in store.users()]
    ('ada', ['ada'])
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..cache import StoreCaches, session_cache_key, user_cache_key
from ..errors import ConfigurationError, StoreError
from ..facts import Fact, merge_user_fact, without_session
from .keys import SessionOwner, UserOwner, rebuild_key, user_record_id
from .records import SessionInfo, SessionStamp, UserInfo
from .repository import ListRepository, decoded

if TYPE_CHECKING:
    from .repositories import Repositories

__all__ = ["UserDirectory", "UserList"]


def _user_info(meta: Mapping[str, Any]) -> UserInfo:
    return UserInfo(str(meta["ns"]), str(meta["uid"]), float(meta["created"]))


@dataclass(frozen=True, slots=True)
class _Known:
    """What this process knows of a session's user (``user`` None: it has none).

    ``recorded`` is False for a user taken for a session not recorded yet (its first
    write records it).
    """

    user: str | None
    recorded: bool = True


USER_LEASE_PERIOD = 10.0
"""Seconds of a user's merge lease period (a holder that dies blocks for at most two)."""
USER_LEASE_WAIT = 3 * USER_LEASE_PERIOD
"""Longest wait for another process's merge of the user's facts before the fold fails
(and is retried later, its messages kept)."""
_LEASE_POLL = 0.05


def _user_lock(caches: StoreCaches, user: UserOwner) -> threading.Lock:
    """The lock of ``user``'s facts in this process (users may share one: it only waits)."""
    locks = caches.user_locks
    return locks[hash(user_cache_key(user.namespace, user.user_id)) % len(locks)]


class UserList(ListRepository):
    """The ``{prefix}_users`` collection: one record per user, with its facts' stamp."""

    name = "users"
    label = "users"

    def record_id(self, key: str) -> str:
        """The id of a user's record."""
        return user_record_id(key)

    def register(self, user: UserOwner) -> None:
        """Record the user once (insert-if-absent: the first registration's time stays)."""
        self.add_once(user, user.user_id, {"created": time.time(), "stamp": uuid.uuid4().hex})

    def stamp(self, user: UserOwner) -> str:
        """The stamp of the user's facts ("" for an unknown user)."""
        meta = self.fields("read the user", user, user_record_id(user.key)) or {}
        return str(meta.get("stamp", ""))

    def touch(self, user: UserOwner) -> None:
        """Give the user's facts a new stamp (they changed)."""
        self.register(user)
        self.set_fields(
            "stamp the user's facts", user_record_id(user.key), {"stamp": uuid.uuid4().hex}
        )

    def set_marker(self, user: UserOwner, key: str, value: str | None) -> None:  # type: ignore[override]
        """Set (or, with None, remove) a rebuild marker of the user's record."""
        self.register(user)
        super().set_marker(user, key, value)

    def entries(self, namespace: str | None = None) -> list[UserInfo]:
        """List users (of one namespace, or all), oldest first."""
        out = decoded("user", self.listed(namespace), _user_info)
        out.sort(key=lambda u: (u.created_at, u.namespace, u.user_id))
        return out


class UserDirectory:
    """Which user each session belongs to, the users' own facts, and rebuild markers.

    A part of :class:`~.session_records.SessionRecords` (its :attr:`directory`), over the
    store's repositories and caches. Every method validates its namespace and ids
    (``InvalidInputError``).

    Args:
        repos: The store's repositories.
        caches: The store's caches (which user each session belongs to is kept there).

    Example:
        >>> from langchain_recursive_memory.core import MemoryStore
        >>> directory = MemoryStore.in_memory().records.directory
        >>> directory.join_user("default", "s1", "ada")
        >>> directory.session_user("default", "s1"), directory.owner("default", "s1").user_id
        ('ada', 'ada')
    """

    def __init__(self, repos: Repositories, caches: StoreCaches) -> None:
        self.repos = repos
        self.caches = caches

    # -- which user a session belongs to ---------------------------------------------------

    def _known(self, namespace: str, session_id: str) -> _Known | None:
        known: _Known | None = self.caches.users.get(session_cache_key(namespace, session_id))
        return known

    def _remember_user(
        self, namespace: str, session_id: str, user: str | None, recorded: bool = True
    ) -> None:
        self.caches.users.put(session_cache_key(namespace, session_id), _Known(user, recorded))

    def forget_session(self, namespace: str, session_id: str) -> None:
        """Drop what this process knows of the session's user (it was deleted)."""
        self.caches.users.pop(session_cache_key(namespace, session_id))

    def observe(self, owner: SessionOwner, stamp: SessionStamp | None) -> None:
        """Take the user a session's stamp record names (read by a read of the session).

        A session cleared and joined to another user elsewhere is seen as the new user's;
        one whose stamp names no user keeps what this process knows (a user bound here
        before the first write, or a session written before stamps named users).
        """
        if stamp is None or stamp.user_id is None:
            return
        known = self._known(owner.namespace, owner.session_id)
        if known is None or known.user != stamp.user_id:
            self._remember_user(owner.namespace, owner.session_id, stamp.user_id)

    def owner(self, namespace: str, session_id: str) -> SessionOwner:
        """The session's owner, with its user when this process knows it (no I/O)."""
        owner = SessionOwner.of(namespace, session_id)
        known = self._known(namespace, session_id)
        return SessionOwner.of(namespace, session_id, known.user) if known and known.user else owner

    def session_user(self, namespace: str, session_id: str) -> str | None:
        """The user the session belongs to, or None (read once per process, then kept)."""
        known = self._known(namespace, session_id)
        if known is None:
            known = _Known(self.repos.session_list.user_of(SessionOwner.of(namespace, session_id)))
            self._remember_user(namespace, session_id, known.user)
        return known.user

    def recorded_user(self, namespace: str, session_id: str) -> str | None:
        """The user the session's record names (a user only bound in this process: None)."""
        known = self._known(namespace, session_id)
        if known is not None and not known.recorded:
            return None
        return self.session_user(namespace, session_id)

    def bind_user(self, namespace: str, session_id: str, user_id: str) -> None:
        """Take a session that has no user recorded as ``user_id``'s, in this process only.

        A memory given a user reads and writes the session as the user's before its first
        write records it (a new conversation recalls the user's facts at once). Nothing is
        written; :meth:`join_user` records it.
        """
        known = self._known(namespace, session_id)
        if known is None or not known.recorded or known.user is None:
            self._remember_user(namespace, session_id, user_id, recorded=False)

    def join_user(self, namespace: str, session_id: str, user_id: str, memory: str = "") -> None:
        """Record that the session belongs to ``user_id`` (fixed once recorded).

        A session stored before it had a user joins it: what it stores from now on is the
        user's (its earlier facts stay the session's until :meth:`~..recursive.
        RecursiveMemory.rebuild`).

        ``memory``: the kind of memory writing, kept on a new session's stamp record.

        Raises:
            ConfigurationError: When the session already belongs to another user (both
                named).
            InvalidInputError: For a bad namespace, session id or user id.
        """
        owner = SessionOwner.of(namespace, session_id, user_id)
        user = UserOwner.of(namespace, user_id)
        known = self._known(namespace, session_id)
        if known is not None and known.recorded and known.user == user_id:
            return
        self.repos.user_list.register(user)
        before = self.repos.session_list.join(owner)
        if before is None or before == user_id:
            self.repos.heads.join_user(owner, memory)
        if before is not None and before != user_id:
            self._remember_user(namespace, session_id, before)
            raise ConfigurationError.for_value(
                "user_id",
                user_id,
                f"session {session_id!r} belongs to user {before!r}; a session's user is "
                "fixed once recorded",
            )
        self._remember_user(namespace, session_id, user_id)

    def users(self, namespace: str | None = None) -> list[UserInfo]:
        """List users (of one namespace, or all), oldest first."""
        return self.repos.user_list.entries(namespace)

    def user_sessions(self, namespace: str, user_id: str) -> list[SessionInfo]:
        """The sessions of a user, oldest first (read from the session list every time)."""
        return self.repos.session_list.of_user(UserOwner.of(namespace, user_id))

    # -- the user's facts --------------------------------------------------------------------

    def user_facts(self, namespace: str, user_id: str) -> list[Fact]:
        """Return the user's facts (learned in any of its sessions), oldest first."""
        return self.repos.fact_table.get(UserOwner.of(namespace, user_id))

    def user_stamp(self, namespace: str, user_id: str) -> str:
        """A token that changes whenever the user's facts change ("" for no user)."""
        return self.repos.user_list.stamp(UserOwner.of(namespace, user_id))

    @contextmanager
    def _merging(self, user: UserOwner) -> Iterator[None]:
        """Hold the user's facts for a read-merge-write: a lock here, a lease across processes.

        The lease is the fold lease's mechanism (one insert-if-absent record per period)
        on the user's own key.

        Raises:
            StoreError: When another process held it for :data:`USER_LEASE_WAIT` seconds.
        """
        with _user_lock(self.caches, user):
            holder = uuid.uuid4().hex
            deadline = time.monotonic() + USER_LEASE_WAIT
            log = self.repos.summary_log
            while not log.claim_lease(user, holder, USER_LEASE_PERIOD, time.time()):
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"user {user.user_id!r}: another process kept its facts for "
                        f"{USER_LEASE_WAIT:.0f} s; the fold is retried later"
                    )
                time.sleep(_LEASE_POLL)
            try:
                yield
            finally:
                log.release_lease(user, holder, USER_LEASE_PERIOD, time.time())

    def upsert_user_facts(self, owner: SessionOwner, facts: Sequence[Fact]) -> list[Fact]:
        """Merge a session's facts into its user's (one record per user and key)."""
        assert owner.user_id is not None
        user = UserOwner.of(owner.namespace, owner.user_id)
        with self._merging(user):
            stored = {
                f.key: f
                for f in self.repos.fact_table.get(user, self.repos.fact_table.ids(user, facts))
            }
            merged: dict[str, Fact] = {}
            for fact in facts:
                old = merged.get(fact.key, stored.get(fact.key))
                merged[fact.key] = merge_user_fact(old, fact, owner.session_id)
            out = list(merged.values())
            self.repos.fact_table.put(user, out)
            self.repos.user_list.touch(user)
        return out

    def drop_from_user(self, namespace: str, session_id: str, user_id: str) -> None:
        """Take what session ``session_id`` stated out of its user's facts.

        A fact only that session stated is deleted; the others fall back to their newest
        statement from another session. The vectors (in every vector collection) of the
        deleted facts, and of those whose wording changed, are deleted; those facts are
        ranked lexically until ``reindex()`` embeds them again. A kept fact whose wording
        did not change keeps its vector.
        """
        user = UserOwner.of(namespace, user_id)
        with self._merging(user):
            facts = [f for f in self.repos.fact_table.get(user) if session_id in f.session_ids]
            if not facts:
                return
            kept = [left for f in facts if (left := without_session(f, session_id)) is not None]
            ids = self.repos.fact_table.ids(user, facts)
            kept_text = {f.key: f.text for f in kept}
            gone = [i for i, f in zip(ids, facts, strict=True) if f.key not in kept_text]
            stale = [i for i, f in zip(ids, facts, strict=True) if kept_text.get(f.key) != f.text]
            self.repos.fact_table.delete_ids("delete the user's facts", gone)
            self.repos.fact_table.put(user, kept)
            self.repos.vector_spaces.delete_ids(stale)
            self.repos.user_list.touch(user)

    # -- rebuild markers ---------------------------------------------------------------------

    def rebuild_marker(
        self, namespace: str, owner_id: str, task: str, *, user: bool = False
    ) -> Any:
        """The progress a running rebuild recorded (None: none is running).

        Args:
            namespace: The namespace.
            owner_id: The session id (or, with ``user``, the user id).
            task: ``"facts"``, ``"vectors"`` or ``"nodes"``.
            user: ``owner_id`` is a user id.
        """
        key = rebuild_key(task)
        if user:
            value = self.repos.user_list.marker(UserOwner.of(namespace, owner_id), key)
        else:
            value = self.repos.session_list.marker(SessionOwner.of(namespace, owner_id), key)
        return json.loads(value) if value is not None else None

    def set_rebuild_marker(
        self, namespace: str, owner_id: str, task: str, progress: Any, *, user: bool = False
    ) -> None:
        """Record a running rebuild's progress (JSON), or with None that it finished."""
        key = rebuild_key(task)
        value = json.dumps(progress) if progress is not None else None
        if user:
            self.repos.user_list.set_marker(UserOwner.of(namespace, owner_id), key, value)
        else:
            self.repos.session_list.set_marker(self.owner(namespace, owner_id), key, value)
