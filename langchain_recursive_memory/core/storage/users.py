"""The user list: one record per user, with the stamp of its facts.

A session may belong to a user (within its namespace): the session's record names the
user (:meth:`~.sessions.SessionList.join`), fixed once recorded, and so does its stamp
record (:mod:`.heads`). The user's record in ``{prefix}_users`` carries a *stamp* that
changes whenever the user's facts change (:mod:`.user_facts`), so a process that caches
them knows when to read them again, and the markers of a running rebuild of the user's
facts (:mod:`.markers`). Which user each session belongs to is :mod:`.directory`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from .keys import UserOwner, user_record_id
from .records import UserInfo
from .repository import ListRepository, decoded

__all__ = ["UserList"]


def _user_info(meta: Mapping[str, Any]) -> UserInfo:
    return UserInfo(str(meta["ns"]), str(meta["uid"]), float(meta["created"]))


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
