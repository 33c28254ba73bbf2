"""Rebuild markers: the progress a running rebuild leaves, so that it resumes after a stop.

A rebuild of a session's derived state (facts, vectors, HiGMem's nodes) records its
progress as a marker on the session's record; a rebuild of a user's facts, on the user's
record (:func:`~.keys.rebuild_key`: one marker per task). A marker is JSON; None means no
rebuild of that task is running.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> markers = MemoryStore.in_memory().parts.markers
    >>> markers.set("default", "s1", "facts", 3)
    >>> markers.get("default", "s1", "facts"), markers.get("default", "s1", "nodes")
    (3, None)
"""

from __future__ import annotations

import json
from typing import Any

from .directory import UserDirectory
from .keys import SessionOwner, UserOwner, rebuild_key
from .repositories import Repositories

__all__ = ["RebuildMarkers"]


class RebuildMarkers:
    """The rebuild markers of one store's sessions and users.

    Args:
        repos: The store's repositories.
        directory: Which user each session belongs to (a session's record keeps it).
    """

    def __init__(self, repos: Repositories, directory: UserDirectory) -> None:
        self.repos = repos
        self.directory = directory

    def get(self, namespace: str, owner_id: str, task: str, *, user: bool = False) -> Any:
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

    def set(
        self, namespace: str, owner_id: str, task: str, progress: Any, *, user: bool = False
    ) -> None:
        """Record a running rebuild's progress (JSON), or with None that it finished."""
        key = rebuild_key(task)
        value = json.dumps(progress) if progress is not None else None
        if user:
            self.repos.user_list.set_marker(UserOwner.of(namespace, owner_id), key, value)
        else:
            owner = self.directory.owner(namespace, owner_id)
            self.repos.session_list.set_marker(owner, key, value)
