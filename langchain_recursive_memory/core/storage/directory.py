"""Which user each session belongs to: recorded once, known in the process, checked by reads.

A session's user is recorded at its first write as the user's (its session record and
its stamp record name it, :meth:`UserDirectory.join_user`) and fixed from then on. A
process keeps which user each session belongs to in the store's caches (read once, or
learned when it writes); every read of the session checks it against the user its stamp
record names (:meth:`UserDirectory.observe`), so a session cleared and reused by another
user is seen as such. A memory given a user records it again at every write, so a session
cleared or forgotten through another handle stays the user's.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> directory = MemoryStore.in_memory().parts.directory
    >>> directory.join_user("default", "s1", "ada")
    >>> directory.session_user("default", "s1"), directory.owner("default", "s1").user_id
    ('ada', 'ada')
"""

from __future__ import annotations

from dataclasses import dataclass

from ..cache import StoreCaches, session_cache_key, user_cache_key
from ..errors import ConfigurationError
from .keys import SessionOwner, UserOwner
from .records import SessionInfo, SessionStamp, UserInfo
from .repositories import Repositories

__all__ = ["ListedSessions", "UserDirectory"]


@dataclass(frozen=True, slots=True)
class _Known:
    """What this process knows of a session's user (``user`` None: it has none).

    ``recorded`` is False for a user taken for a session not recorded yet (its first
    write records it).
    """

    user: str | None
    recorded: bool = True


class UserDirectory:
    """Which user each session belongs to, and the lists of users and their sessions.

    Every method validates its namespace and ids (``InvalidInputError``).

    Args:
        repos: The store's repositories.
        caches: The store's caches (which user each session belongs to is kept there).
    """

    def __init__(self, repos: Repositories, caches: StoreCaches) -> None:
        self.repos = repos
        self.caches = caches

    def _known(self, namespace: str, session_id: str) -> _Known | None:
        known: _Known | None = self.caches.users.get(session_cache_key(namespace, session_id))
        return known

    def _remember(
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
            self._remember(owner.namespace, owner.session_id, stamp.user_id)

    def owner(self, namespace: str, session_id: str) -> SessionOwner:
        """The session's owner, with its user when this process knows it (no I/O)."""
        known = self._known(namespace, session_id)
        user = known.user if known is not None else None
        return SessionOwner.of(namespace, session_id, user)

    def session_user(self, namespace: str, session_id: str) -> str | None:
        """The user the session belongs to, or None (read once per process, then kept)."""
        known = self._known(namespace, session_id)
        if known is None:
            known = _Known(self.repos.session_list.user_of(SessionOwner.of(namespace, session_id)))
            self._remember(namespace, session_id, known.user)
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
            self._remember(namespace, session_id, user_id, recorded=False)

    def join_user(self, namespace: str, session_id: str, user_id: str, memory: str = "") -> None:
        """Record that the session belongs to ``user_id`` (fixed once recorded).

        A session stored before it had a user joins it: what it stores from now on is the
        user's (its earlier facts stay the session's until a rebuild). ``memory``: the kind
        of memory writing, kept on a new session's stamp record.

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
            self._remember(namespace, session_id, before)
            raise ConfigurationError.for_value(
                "user_id",
                user_id,
                f"session {session_id!r} belongs to user {before!r}; a session's user is "
                "fixed once recorded",
            )
        self._remember(namespace, session_id, user_id)

    def users(self, namespace: str | None = None) -> list[UserInfo]:
        """List users (of one namespace, or all), oldest first."""
        return self.repos.user_list.entries(namespace)

    def user_sessions(self, namespace: str, user_id: str) -> list[SessionInfo]:
        """The sessions of a user, oldest first (read from the session list every time)."""
        return self.repos.session_list.of_user(UserOwner.of(namespace, user_id))

    def listed_sessions(self, namespace: str, user_id: str) -> ListedSessions | None:
        """The user's sessions as this process last listed them (no I/O; None: never).

        Valid while the user's stamp record holds :attr:`ListedSessions.token` (see
        :mod:`.heads`): the caller reads it, by id, with the sessions' heads.
        """
        found: ListedSessions | None = self.caches.users.get(_listed_key(namespace, user_id))
        return found

    def list_sessions(self, namespace: str, user_id: str, token: str | None) -> ListedSessions:
        """List the user's sessions (one filtered read) and keep them under ``token``.

        Args:
            namespace: The namespace.
            user_id: The user.
            token: The user's stamp token, read *before* this call (None: the user has no
                stamp record; nothing is kept).
        """
        found = self.user_sessions(namespace, user_id)
        listed = ListedSessions(
            token, tuple((s.session_id, _memory_of(s.settings.get("memory"))) for s in found)
        )
        key = _listed_key(namespace, user_id)
        if token is not None:
            self.caches.users.put(key, listed)
        else:
            self.caches.users.pop(key)
        return listed


@dataclass(frozen=True, slots=True)
class ListedSessions:
    """A user's sessions as listed, and the user's stamp token read before the listing.

    Attributes:
        token: The token (None: the user had no stamp record).
        sessions: Each session's id and the memory that wrote it (``settings["memory"]``,
            None when not recorded), oldest first.
    """

    token: str | None
    sessions: tuple[tuple[str, str | None], ...]


def _listed_key(namespace: str, user_id: str) -> tuple[str, ...]:
    return (*user_cache_key(namespace, user_id), "sessions")


def _memory_of(value: object) -> str | None:
    return str(value) if value is not None else None
