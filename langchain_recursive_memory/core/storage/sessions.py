"""The session list: one record per session, for listing and expiring sessions."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from .client import StoreClient
from .keys import Scope, namespace_filter, session_record_id
from .records import SessionInfo
from .repository import Repository, decoded, placeholders

__all__ = ["SETTING", "SessionList"]

SETTING = "set_"
"""Prefix of a session record's metadata keys that say how its memory was made."""


def _settings(meta: Mapping[str, Any]) -> dict[str, Any]:
    return {k[len(SETTING) :]: v for k, v in meta.items() if k.startswith(SETTING)}


def _session_info(meta: Mapping[str, Any]) -> SessionInfo:
    return SessionInfo(str(meta["ns"]), str(meta["sid"]), float(meta["created"]), _settings(meta))


class SessionList(Repository):
    """The ``{prefix}_sessions`` collection, with a cache of the sessions registered."""

    name = "sessions"
    label = "sessions"

    def __init__(self, chroma: StoreClient, prefix: str) -> None:
        super().__init__(chroma, prefix)
        self._registered: set[str] = set()

    def register(self, scope: Scope) -> None:
        """Record the session once (insert-if-absent: the first registration's time stays)."""
        if scope.key in self._registered:
            return
        meta = {**scope.metadata(), "created": time.time()}
        self.chroma.call(
            "register the session",
            lambda: self.collection.add(
                ids=[session_record_id(scope.key)],
                documents=[scope.session_id],
                metadatas=[meta],
                embeddings=placeholders(1),
            ),
        )
        self._registered.add(scope.key)

    def forget(self, skey: str) -> None:
        """Forget that the session was registered (it was cleared)."""
        self._registered.discard(skey)

    def describe(self, scope: Scope, settings: Mapping[str, str | int | float]) -> None:
        """Record how the session's memory was made (merged into its record)."""
        self.register(scope)
        meta = {f"{SETTING}{k}": v for k, v in settings.items()}
        self.chroma.call(
            "describe the session",
            lambda: self.collection.update(ids=[session_record_id(scope.key)], metadatas=[meta]),
        )

    def settings(self, scope: Scope) -> dict[str, Any]:
        """How the session's memory was made, as :meth:`describe` recorded it (or empty)."""
        got = self.chroma.call(
            "read the session",
            lambda: self.collection.get(ids=[session_record_id(scope.key)], include=["metadatas"]),
        )
        metas = [m for m in got["metadatas"] or [] if scope.owns(m)]
        return _settings(metas[0]) if metas else {}

    def entries(self, namespace: str | None = None) -> list[SessionInfo]:
        """List sessions (of one namespace, or all), oldest first."""
        where = namespace_filter(namespace)
        got = self.chroma.call(
            "list sessions", lambda: self.collection.get(where=where, include=["metadatas"])
        )
        out = decoded("session", got["metadatas"] or [], _session_info)
        out.sort(key=lambda s: (s.created_at, s.namespace, s.session_id))
        return out

    def clear(self, scope: Scope) -> None:
        """Delete the session's record and forget that it was registered."""
        super().clear(scope)
        self.forget(scope.key)
