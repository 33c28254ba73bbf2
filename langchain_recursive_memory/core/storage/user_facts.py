"""A user's facts: merged across the user's sessions, one at a time.

A user's facts are the user's own records (:class:`~.keys.UserOwner`): one per fact key,
merged across sessions by :func:`~..facts.merge_user_fact` (the newest statement wins, by
when it was said). Every change gives the user's record a new stamp
(:meth:`~.users.UserList.touch`), which readers check before they use facts they cached.

The read-merge-write of a user's facts is serialised: within a process by a lock per user
(:data:`~..cache.USER_LOCKS` stripes), across processes by a lease on the user's key (the
fold lease's mechanism, :data:`USER_LEASE_PERIOD`); a fold that cannot get it within
:data:`USER_LEASE_WAIT` fails and is retried later, its messages kept.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> from langchain_recursive_memory.core.facts import Fact
    >>> from langchain_recursive_memory.core.storage.keys import SessionOwner
    >>> store = MemoryStore.in_memory()
    >>> fact = Fact(key="ada/city", text="Ada lives in Oslo.", source_turn_ids=("t1",))
    >>> merged = store.parts.shared_facts.upsert(SessionOwner.of("default", "s1", "ada"), [fact])
    >>> [f.text for f in store.user_facts("default", "ada")]
    ['Ada lives in Oslo.']
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ..cache import StoreCaches, user_cache_key
from ..errors import StoreError
from ..facts import Fact, merge_user_fact, without_session
from .keys import SessionOwner, UserOwner
from .repositories import Repositories

__all__ = ["USER_LEASE_PERIOD", "USER_LEASE_WAIT", "UserFacts"]

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


class UserFacts:
    """The users' facts of one store (see the module doc).

    Args:
        repos: The store's repositories.
        caches: The store's caches (the merge locks live there).
    """

    def __init__(self, repos: Repositories, caches: StoreCaches) -> None:
        self.repos = repos
        self.caches = caches

    def get(self, namespace: str, user_id: str) -> list[Fact]:
        """Return the user's facts (learned in any of its sessions), oldest first."""
        return self.repos.fact_table.get(UserOwner.of(namespace, user_id))

    def stamp(self, namespace: str, user_id: str) -> str:
        """A token that changes whenever the user's facts change ("" for no user)."""
        return self.repos.user_list.stamp(UserOwner.of(namespace, user_id))

    @contextmanager
    def _merging(self, user: UserOwner) -> Iterator[None]:
        """Hold the user's facts for a read-merge-write: a lock here, a lease across processes.

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

    def upsert(self, owner: SessionOwner, facts: Sequence[Fact]) -> list[Fact]:
        """Merge facts a session of a user stated into the user's (one record per key)."""
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

    def drop_session(self, namespace: str, session_id: str, user_id: str) -> None:
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

    def drop(self, namespace: str, user_id: str) -> None:
        """Delete every fact of the user and their vectors (a user's rebuild starts so)."""
        user = UserOwner.of(namespace, user_id)
        self.repos.fact_table.clear(user)
        self.repos.vector_spaces.clear(user)
        self.repos.user_list.touch(user)
