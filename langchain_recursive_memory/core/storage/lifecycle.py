"""The lifecycle of sessions and users: listing, describing, expiring, clearing, forgetting.

:class:`SessionLifecycle` is the part of a store (``store.parts.lifecycle``) that works on
whole sessions and users, through the store's repositories;
:class:`~.store.MemoryStore` offers its listing, expiring, clearing and forgetting to
applications.

**A user's facts when one of its sessions goes.** ``clear()`` and ``expire()`` work per
session, and what a session stated is taken out of its user's facts with it: a fact only
that session stated is deleted, a fact other sessions stated too falls back to their
newest statement (its wording, its turns); the vectors of deleted facts and of facts
whose wording changed are deleted (those facts rank lexically until ``reindex()``).
When a user's last session goes, the user goes too. ``forget_user()`` deletes every
session of the user and everything the user owns (the right to erasure).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from ..cache import StoreCaches
from ..errors import ConfigurationError
from .directory import UserDirectory
from .keys import EVENT_KIND, SessionOwner, UserOwner, kinds_filter
from .records import SessionInfo
from .repositories import Repositories
from .user_facts import UserFacts

__all__ = ["EXPIRE_BY", "SessionLifecycle"]

EXPIRE_BY = ("written", "created")
"""What a session's age is measured by: its last write, or its newest turn's own time."""


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class SessionLifecycle:
    """Whole-session and whole-user operations over the store's repositories.

    A part of a store (``store.parts.lifecycle``).

    Args:
        repos: The store's repositories.
        directory: Which user each session belongs to.
        shared_facts: The users' facts (what a session stated leaves them with it).
        caches: The store's caches (what a deletion deleted leaves them).

    Example:
        >>> from langchain_recursive_memory.core import MemoryStore, Turn
        >>> store = MemoryStore.in_memory()
        >>> _ = store.session("default", "s1").turns.append(
        ...     [Turn(role="user", text="hi")], [5], "o200k_base"
        ... )
        >>> lifecycle = store.parts.lifecycle
        >>> [s.session_id for s in lifecycle.sessions()]
        ['s1']
        >>> lifecycle.clear("default", "s1")
        >>> lifecycle.sessions()
        []
    """

    def __init__(
        self,
        repos: Repositories,
        directory: UserDirectory,
        shared_facts: UserFacts,
        caches: StoreCaches,
    ) -> None:
        self.repos = repos
        self.directory = directory
        self.shared_facts = shared_facts
        self.caches = caches

    def sessions(self, namespace: str | None = None) -> list[SessionInfo]:
        """List sessions (of one namespace, or all), oldest first."""
        return self.repos.session_list.entries(namespace)

    def describe_session(
        self, namespace: str, session_id: str, settings: Mapping[str, str | int | float]
    ) -> None:
        """Record how the session's memory was made (``memory``, ``max_tokens``...).

        The engines record it on their first write in a process; the command line reads it
        to show and recall a session the way it was made.
        """
        self.repos.session_list.describe(self.directory.owner(namespace, session_id), settings)

    def session_settings(self, namespace: str, session_id: str) -> dict[str, Any]:
        """How the session's memory was made (see :meth:`describe_session`), or empty."""
        return self.repos.session_list.settings(SessionOwner.of(namespace, session_id))

    def activity(
        self, namespace: str | None = None, *, by: str = "written"
    ) -> dict[tuple[str, str], float]:
        """Return when each session (of a namespace, or all) last stored a turn.

        ``by="written"`` (default): when the newest turn was written (its order key), not
        the time the message claims (an imported transcript can be years old).
        ``by="created"``: the newest turn's own ``created_at`` (the time the message
        claims; the write time when none was given). Reads the turn log itself, in pages,
        so no session is missed.

        Raises:
            ConfigurationError: For a ``by`` not in :data:`EXPIRE_BY`.
        """
        if by not in EXPIRE_BY:
            raise ConfigurationError.for_value("by", by, f"must be one of {EXPIRE_BY}")
        return self.repos.turn_log.activity(namespace, created=by == "created")

    def expire(
        self,
        older_than: float,
        *,
        namespace: str | None = None,
        now: float | None = None,
        by: str = "written",
    ) -> list[tuple[str, str]]:
        """Delete every session that stored no turn in the last ``older_than`` seconds.

        A time-to-live for conversations: run it periodically (for example daily, from a
        scheduled job). Everything of an expired session is deleted, as by :meth:`clear`
        (what it stated is taken out of its user's facts).

        A session's age goes by its last write (``by="written"``, default): a transcript
        ingested today is young, whatever times its messages claim. ``by="created"`` goes
        by the newest turn's own ``created_at`` instead (an import of 2024's messages is
        as old as they are).

        Safe while writers are active: only turns ordered before the cutoff are deleted
        (by id, as read), and a session found holding any other turn afterwards gets them
        back and is kept whole. A turn that lands in the last step, after that check, is
        kept too; the session then restarts from it.

        Args:
            older_than: Age in seconds (> 0).
            namespace: Only this namespace (default: all).
            now: The current time (default: ``time.time()``).
            by: ``"written"`` or ``"created"`` (see above).

        Returns:
            The ``(namespace, session_id)`` pairs deleted.

        Raises:
            ConfigurationError: For a bad ``older_than``, ``now`` or ``by``.
            InvalidInputError: For a bad namespace.
        """
        for name, value in (("older_than", older_than), ("now", now)):
            if (name == "older_than" or value is not None) and not _finite(value):
                raise ConfigurationError.for_value(name, value, "must be a finite number")
        if older_than <= 0:
            raise ConfigurationError.for_value("older_than", older_than, "must be > 0")
        started = time.time() if now is None else now
        cutoff = started - older_than
        ages = self.activity(namespace, by=by)
        candidates = [key for key, last in ages.items() if last < cutoff]
        # Turns written before the cutoff go (by="created": every turn written before this
        # call); a session that gets a turn meanwhile keeps everything.
        written_before = cutoff if by == "written" else started
        return [
            key for key in candidates if self._expire_one(SessionOwner.of(*key), written_before)
        ]

    def _expire_one(self, owner: SessionOwner, cutoff: float) -> bool:
        user = self.directory.session_user(owner.namespace, owner.session_id)
        taken = self.repos.turn_log.take_before(owner, int(cutoff * 1e9))
        if self.repos.turn_log.any_left(owner):
            self.repos.turn_log.restore(taken)  # a turn arrived: the session is active
            return False
        self._clear_derived(owner, user)
        if self.repos.turn_log.any_left(owner):
            # A turn arrived in the last step: keep it listed (and its user's).
            again = SessionOwner.of(owner.namespace, owner.session_id, user)
            self.repos.session_list.register(again)
            self.repos.heads.ensure_stamp(again)
        return True

    def clear(self, namespace: str, session_id: str) -> None:
        """Delete everything stored for the session: turns, summaries, facts, vectors.

        What the session stated is taken out of its user's facts (see the module doc).
        """
        owner = SessionOwner.of(namespace, session_id)
        user = self.directory.session_user(namespace, session_id)
        self.repos.turn_log.clear(owner)
        self._clear_derived(owner, user)

    def _clear_derived(self, owner: SessionOwner, user: str | None) -> None:
        if user is not None:
            self.shared_facts.drop_session(owner.namespace, owner.session_id, user)
        self.repos.summary_log.clear(owner)
        self.repos.fact_table.clear(owner)
        self.repos.turn_nodes.clear(owner)
        self.repos.event_nodes.clear(owner)
        self.repos.usage_log.clear(owner)
        self.repos.vector_spaces.clear(owner)
        recorded = self.repos.session_list.user_of(owner)  # maybe joined by another process
        self.repos.session_list.clear(owner)  # last: a session stays listed until all else is gone
        for left in dict.fromkeys(u for u in (user, recorded) if u is not None):
            self.repos.heads.advance_user(UserOwner.of(owner.namespace, left))  # one session less
        self.directory.forget_session(owner.namespace, owner.session_id)
        self.caches.drop(owner.namespace, [owner.session_id])  # nothing deleted stays cached
        user_owner = UserOwner.of(owner.namespace, user) if user is not None else None
        if user_owner is not None and not self.repos.session_list.of_user(user_owner):
            self._delete_user_own(user_owner)  # its last session is gone: so is the user

    # -- derived state dropped for a rebuild (see :mod:`..recursive.rebuild`) --------------

    def drop_facts(self, namespace: str, session_id: str, *, statements: bool = True) -> None:
        """Delete the session's own facts and (``statements``) its statements of its user's.

        A rebuild starts so: the facts are then extracted again from the log.
        """
        owner = SessionOwner.of(namespace, session_id)
        user = self.directory.session_user(namespace, session_id)
        if statements and user is not None:
            self.shared_facts.drop_session(namespace, session_id, user)
        self.repos.fact_table.clear(owner)
        self.repos.heads.touch(self.directory.owner(namespace, session_id), facts=True)

    def drop_vectors(self, space: str, namespace: str, session_id: str) -> None:
        """Delete the session's vectors of one embedder (not its user's facts')."""
        owner = SessionOwner.of(namespace, session_id)
        self.repos.vector_spaces.delete_where(owner.where, spaces=[space])
        self.repos.heads.touch(self.directory.owner(namespace, session_id), epoch=True)

    def drop_nodes(self, namespace: str, session_id: str) -> None:
        """Delete the session's HiGMem turn and event nodes and the events' vectors."""
        owner = SessionOwner.of(namespace, session_id)
        self.repos.turn_nodes.clear(owner)
        self.repos.event_nodes.clear(owner)
        self.repos.heads.drop_links(owner)
        self.repos.vector_spaces.delete_where(kinds_filter(owner.key, [EVENT_KIND]))
        self.repos.heads.touch(self.directory.owner(namespace, session_id), epoch=True)

    def _delete_user_own(self, user: UserOwner) -> None:
        """Delete the user's own records: its facts, their vectors, its record."""
        self.repos.fact_table.clear(user)
        self.repos.vector_spaces.clear(user)
        self.repos.user_list.clear(user)
        self.repos.heads.drop_user(user)

    def _delete_user(self, user: UserOwner) -> None:
        """Delete everything the user owns and every record tagged with it."""
        self._delete_user_own(user)
        everything = user.everything
        for repo in self.repos.scoped():
            repo.delete_where(f"delete the user's {repo.label}", everything)
        self.repos.vector_spaces.delete_where(everything)

    def forget_user(self, namespace: str, user_id: str) -> list[str]:
        """Delete every session of the user and everything the user owns.

        The right to erasure: the user's sessions (turns, summaries, facts, HiGMem nodes,
        vectors, usage), the user's facts and their vectors, and its record; then every
        record still tagged with the user, in every collection (a session a crashed
        writer left half-registered). Stop the user's writers first: a turn written while
        this runs can survive it, as with :meth:`clear` (run it again).

        Returns:
            The ids of the sessions deleted.

        Raises:
            InvalidInputError: For a bad namespace or user id.
        """
        user = UserOwner.of(namespace, user_id)
        sessions = [s.session_id for s in self.repos.session_list.of_user(user)]
        for session_id in sessions:
            owner = SessionOwner.of(namespace, session_id)
            self.repos.turn_log.clear(owner)
            self._clear_derived(owner, None)
        self._delete_user(user)
        self.caches.drop(namespace, sessions, user_id)
        return sessions
