"""The session list: one record per session, for listing and expiring sessions.

A session that belongs to a user says so in its record (``uid``, ``uk``): that is what
lists a user's sessions, and what fixes a session's user once recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from .keys import SessionOwner, UserOwner, session_record_id, user_filter
from .records import SessionInfo
from .repository import ListRepository, decoded

__all__ = ["SETTING", "SessionList"]

SETTING = "set_"
"""Prefix of a session record's metadata keys that say how its memory was made."""


def _settings(meta: Mapping[str, Any]) -> dict[str, Any]:
    return {k[len(SETTING) :]: v for k, v in meta.items() if k.startswith(SETTING)}


def _session_info(meta: Mapping[str, Any]) -> SessionInfo:
    user = meta.get("uid")
    return SessionInfo(
        str(meta["ns"]),
        str(meta["sid"]),
        float(meta["created"]),
        _settings(meta),
        str(user) if user is not None else None,
    )


class SessionList(ListRepository):
    """The ``{prefix}_sessions`` collection, with a cache of the sessions registered.

    Attributes:
        joined: Called with the user after this list adds a session of the user, or
            names the user on a session's record (the store advances the user's stamp,
            :meth:`~.heads.SessionHeads.advance_user`).
    """

    name = "sessions"
    label = "sessions"
    joined: Callable[[UserOwner], None] | None = None

    def _joined(self, owner: SessionOwner) -> None:
        if self.joined is not None and owner.user_id is not None:
            self.joined(UserOwner.of(owner.namespace, owner.user_id))

    def record_id(self, key: str) -> str:
        """The id of a session's record."""
        return session_record_id(key)

    def register(self, owner: SessionOwner) -> None:
        """Record the session once (insert-if-absent: the first registration's time stays)."""
        if self.add_once(owner, owner.session_id, {"created": time.time()}):
            self._joined(owner)

    def join(self, owner: SessionOwner) -> str | None:
        """Record that the session belongs to ``owner.user_id``; return its user before.

        A new session is registered with the user. A session stored without a user (before
        users existed) joins this one: its record is updated. Returns the user recorded
        before (None when there was none), so the caller can refuse a different one.
        """
        self.forget(owner)  # registered without its user, maybe: add (or find) it again
        self.register(owner)
        record = session_record_id(owner.key)
        before = (self.fields("read the session", owner, record) or {}).get("uid")
        if before is None:
            tags = {k: v for k, v in owner.metadata().items() if k in ("uid", "uk")}
            self.set_fields("attach the session to its user", record, tags)
            self._joined(owner)
            return None
        return str(before)

    def user_of(self, owner: SessionOwner) -> str | None:
        """The user the session's record names (None: none, or no record)."""
        meta = self.fields("read the session", owner, session_record_id(owner.key)) or {}
        user = meta.get("uid")
        return str(user) if user is not None else None

    def of_user(self, user: UserOwner) -> list[SessionInfo]:
        """The sessions of a user, oldest first."""
        got = self.chroma.call(
            "list the user's sessions",
            lambda: self.collection.get(where=user_filter(user.key), include=["metadatas"]),
        )
        metas = [
            m
            for m in got["metadatas"] or []
            if m.get("uid") == user.user_id and m.get("ns") == user.namespace
        ]
        return _oldest_first(decoded("session", metas, _session_info))

    def describe(self, owner: SessionOwner, settings: Mapping[str, str | int | float]) -> None:
        """Record how the session's memory was made (merged into its record)."""
        self.register(owner)
        meta = {f"{SETTING}{k}": v for k, v in settings.items()}
        self.set_fields("describe the session", session_record_id(owner.key), meta)

    def settings(self, owner: SessionOwner) -> dict[str, Any]:
        """How the session's memory was made, as :meth:`describe` recorded it (or empty)."""
        meta = self.fields("read the session", owner, session_record_id(owner.key))
        return _settings(meta) if meta is not None else {}

    def set_marker(self, owner: SessionOwner, key: str, value: str | None) -> None:  # type: ignore[override]
        """Set (or, with None, remove) a rebuild marker of the session's record."""
        self.register(owner)
        super().set_marker(owner, key, value)

    def entries(self, namespace: str | None = None) -> list[SessionInfo]:
        """List sessions (of one namespace, or all), oldest first."""
        return _oldest_first(decoded("session", self.listed(namespace), _session_info))


def _oldest_first(found: list[SessionInfo]) -> list[SessionInfo]:
    found.sort(key=lambda s: (s.created_at, s.namespace, s.session_id))
    return found
