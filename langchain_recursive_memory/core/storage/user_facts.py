"""A user's facts: merged across the user's sessions, one at a time.

A user's facts are the user's own records (:class:`~.keys.UserOwner`): one per fact key,
merged across sessions by :func:`~..facts.merge_user_fact` (the newest statement wins, by
when it was said). Every change advances the ``facts`` counter of the user's row, which
readers check (with each session's head) before they use facts they cached.

The read-merge-write of a user's facts is serialised: within a process by a lock per user
(64 stripes), across processes by a lease on the user's row (the
fold lease's mechanism, :data:`USER_LEASE_PERIOD`); a fold that cannot get it within
:data:`USER_LEASE_WAIT` fails and is retried later, its messages kept.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> from langchain_recursive_memory.core.facts import Fact
    >>> from langchain_recursive_memory.core.storage.keys import SessionOwner
    >>> store = MemoryStore.in_memory()
    >>> fact = Fact(key="ada/city", text="Ada lives in Oslo.", source_turn_ids=("t1",))
    >>> merged = store.shared_facts.upsert(SessionOwner.of("default", "s1", "ada"), [fact])
    >>> [f.text for f in store.user_facts("default", "ada")]
    ['Ada lives in Oslo.']
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sqlalchemy.engine import Connection

from ..cache import user_cache_key
from ..errors import StoreError
from ..facts import Fact, merge_user_fact, without_session
from . import sessions as rows
from .keys import SessionOwner, UserOwner

if TYPE_CHECKING:
    from .parts import StoreParts

__all__ = ["USER_LEASE_PERIOD", "USER_LEASE_WAIT", "UserFacts"]

USER_LEASE_PERIOD = 10.0
"""Seconds of a user's merge lease (a holder that dies blocks merges for at most this)."""
USER_LEASE_WAIT = 3 * USER_LEASE_PERIOD
"""Longest wait for another process's merge of the user's facts before the fold fails
(and is retried later, its messages kept)."""
_LEASE_POLL = 0.05
_USER_LOCKS = 64


class UserFacts:
    """The users' facts of one store (see the module doc).

    Args:
        store: The store's parts.
    """

    def __init__(self, store: StoreParts) -> None:
        self.store = store
        self._locks = [threading.Lock() for _ in range(_USER_LOCKS)]

    def get(self, namespace: str, user_id: str) -> list[Fact]:
        """Return the user's facts (learned in any of its sessions), oldest first."""
        return self.store.fact_table.get(UserOwner.of(namespace, user_id))

    @contextmanager
    def _merging(self, user: UserOwner) -> Iterator[None]:
        """Hold the user's facts for a read-merge-write: a lock here, a lease across processes.

        Raises:
            StoreError: When another process held it for :data:`USER_LEASE_WAIT` seconds.
        """
        db, t = self.store.db, self.store.db.tables
        lock = self._locks[hash(user_cache_key(user.namespace, user.user_id)) % _USER_LOCKS]
        with lock:
            holder = uuid.uuid4().hex
            deadline = time.monotonic() + USER_LEASE_WAIT

            def claim() -> bool:
                def write(conn: Connection) -> bool:
                    rows.ensure_user(conn, t, user, time.time())
                    return rows.claim_lease(
                        conn, t, user, holder, period=USER_LEASE_PERIOD, now=time.time()
                    )

                claimed: bool = db.write(write, "claim the user's lease")
                return claimed

            while not claim():
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"user {user.user_id!r}: another process kept its facts for "
                        f"{USER_LEASE_WAIT:.0f} s; the fold is retried later"
                    )
                time.sleep(_LEASE_POLL)
            try:
                yield
            finally:
                db.write(lambda c: rows.release_lease(c, t, user, holder), "release a lease")

    def _touch(self, user: UserOwner) -> None:
        self.store.db.write(
            lambda c: rows.bump_facts(c, self.store.db.tables, user), "record new facts"
        )

    def upsert(self, owner: SessionOwner, facts: Sequence[Fact]) -> list[Fact]:
        """Merge facts a session of a user stated into the user's (one record per key)."""
        assert owner.user_id is not None
        user = UserOwner.of(owner.namespace, owner.user_id)
        table = self.store.fact_table
        with self._merging(user):
            stored = {f.key: f for f in table.get(user, table.ids(user, facts))}
            merged: dict[str, Fact] = {}
            for fact in facts:
                old = merged.get(fact.key, stored.get(fact.key))
                merged[fact.key] = merge_user_fact(old, fact, owner.session_id)
            out = list(merged.values())
            table.put(user, out)
            self._touch(user)
        return out

    def drop_session(self, namespace: str, session_id: str, user_id: str) -> None:
        """Take what session ``session_id`` stated out of its user's facts.

        A fact only that session stated is deleted; the others fall back to their newest
        statement from another session. The vectors (in every vector collection) of the
        deleted facts, and of those whose wording changed, are deleted; those facts are
        ranked lexically until ``reindex()`` embeds them again. A kept fact whose wording
        did not change keeps its vector.
        """
        user = UserOwner.of(namespace, user_id)
        table = self.store.fact_table
        with self._merging(user):
            facts = [f for f in table.get(user) if session_id in f.session_ids]
            if not facts:
                return
            kept = [left for f in facts if (left := without_session(f, session_id)) is not None]
            ids = table.ids(user, facts)
            kept_text = {f.key: f.text for f in kept}
            gone = [i for i, f in zip(ids, facts, strict=True) if f.key not in kept_text]
            stale = [i for i, f in zip(ids, facts, strict=True) if kept_text.get(f.key) != f.text]
            table.delete_ids("delete the user's facts", gone)
            table.put(user, kept)
            self.store.vector_spaces.delete_ids(stale)
            self._touch(user)

    def drop(self, namespace: str, user_id: str) -> None:
        """Delete every fact of the user and their vectors (a user's rebuild starts so)."""
        user = UserOwner.of(namespace, user_id)
        self.store.fact_table.clear(user)
        self.store.vector_spaces.clear(user)
        self._touch(user)
