"""The session lifecycle of the store: listing, describing, expiring and clearing sessions.

:class:`SessionLifecycle` is the part of :class:`~.store.MemoryStore` that works on
whole sessions, through the store's repositories.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigurationError
from .facts import FactTable
from .keys import Scope
from .nodes import EventNodes, TurnNodes
from .records import SessionInfo
from .sessions import SessionList
from .summaries import SummaryLog
from .turns import TurnLog
from .usage import UsageLog
from .vectors import VectorSpaces

__all__ = ["SessionLifecycle"]


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class SessionLifecycle:
    """Whole-session operations of :class:`~.store.MemoryStore` (its base class)."""

    _turn_log: TurnLog
    _sessions: SessionList
    _summary_log: SummaryLog
    _facts: FactTable
    _notes: TurnNodes
    _events: EventNodes
    _usage: UsageLog
    _vector_spaces: VectorSpaces

    def sessions(self, namespace: str | None = None) -> list[SessionInfo]:
        """List sessions (of one namespace, or all), oldest first."""
        return self._sessions.entries(namespace)

    def describe_session(
        self, namespace: str, session_id: str, settings: Mapping[str, str | int | float]
    ) -> None:
        """Record how the session's memory was made (``memory``, ``max_tokens``...).

        The engines record it on their first write in a process; the command line reads it
        to show and recall a session the way it was made.
        """
        self._sessions.describe(Scope.of(namespace, session_id), settings)

    def session_settings(self, namespace: str, session_id: str) -> dict[str, Any]:
        """How the session's memory was made (see :meth:`describe_session`), or empty."""
        return self._sessions.settings(Scope.of(namespace, session_id))

    def activity(self, namespace: str | None = None) -> dict[tuple[str, str], float]:
        """Return when each session (of a namespace, or all) last stored a turn.

        The time is when the newest turn was written (its order key), not the time the
        message claims (an imported transcript can be years old). Reads the turn log itself,
        in pages, so no session is missed.
        """
        return self._turn_log.activity(namespace)

    def expire(
        self, older_than: float, *, namespace: str | None = None, now: float | None = None
    ) -> list[tuple[str, str]]:
        """Delete every session that stored no turn in the last ``older_than`` seconds.

        A time-to-live for conversations: run it periodically (for example daily, from a
        scheduled job). Everything of an expired session is deleted, as by :meth:`clear`.

        Safe while writers are active: only turns ordered before the cutoff are deleted
        (by id, as read), and a session found holding any other turn afterwards gets them
        back and is kept whole. A turn that lands in the last step, after that check, is
        kept too; the session then restarts from it.

        Args:
            older_than: Age in seconds (> 0).
            namespace: Only this namespace (default: all).
            now: The current time (default: ``time.time()``).

        Returns:
            The ``(namespace, session_id)`` pairs deleted.

        Raises:
            ConfigurationError: For a bad ``older_than`` or ``now``.
            InvalidInputError: For a bad namespace.
        """
        for name, value in (("older_than", older_than), ("now", now)):
            if (name == "older_than" or value is not None) and not _finite(value):
                raise ConfigurationError.for_value(name, value, "must be a finite number")
        if older_than <= 0:
            raise ConfigurationError.for_value("older_than", older_than, "must be > 0")
        cutoff = (time.time() if now is None else now) - older_than
        candidates = [key for key, last in self.activity(namespace).items() if last < cutoff]
        return [key for key in candidates if self._expire_one(Scope.of(*key), cutoff)]

    def _expire_one(self, scope: Scope, cutoff: float) -> bool:
        taken = self._turn_log.take_before(scope, int(cutoff * 1e9))
        if self._turn_log.any_left(scope):
            self._turn_log.restore(taken)  # a turn arrived: the session is active
            return False
        self._clear_derived(scope)
        if self._turn_log.any_left(scope):
            self._sessions.register(scope)  # a turn arrived in the last step: keep it listed
        return True

    def clear(self, namespace: str, session_id: str) -> None:
        """Delete everything stored for the session: turns, summaries, facts, vectors."""
        scope = Scope.of(namespace, session_id)
        self._turn_log.clear(scope)
        self._clear_derived(scope)

    def _clear_derived(self, scope: Scope) -> None:
        self._summary_log.clear(scope)
        self._facts.clear(scope)
        self._notes.clear(scope)
        self._events.clear(scope)
        self._usage.clear(scope)
        self._vector_spaces.clear(scope)
        self._sessions.clear(scope)  # last: a session stays listed until all else is gone
