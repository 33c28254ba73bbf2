"""The user surface: :class:`MemoryStore`, what applications call on a store.

A store lists, describes, expires, clears and forgets sessions and users, and reads a
session's turns, summaries and upkeep spend. What the engines read and write through
(appends, loads, folds, facts, vectors, HiGMem's nodes...) is its
:attr:`MemoryStore.records` (:class:`~.session_records.SessionRecords`), the engines'
protocol: not for applications, which go through a memory (``RecursiveMemory``,
``HiGMem``...) instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..cache import CacheLimits, StoreCaches
from ..errors import ConfigurationError
from ..facts import Fact
from ..runtime.retry import RetryPolicy
from ..usage import Usage
from . import client as chroma_client
from .client import StoreClient
from .keys import validate_prefix
from .migrations import Migration, migrate_collections
from .records import SessionInfo, StoredTurn, Summary, UserInfo
from .session_records import SessionRecords

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["MemoryStore"]


class MemoryStore:
    """Chroma-backed storage of turns, summaries, facts, HiGMem nodes, vectors and usage.

    Use a factory, or pass any chromadb client:

    * :meth:`persistent` (the default of the memories): an embedded
      ``PersistentClient`` at :func:`~.client.default_path` or a given path;
    * :meth:`in_memory`: an embedded ``EphemeralClient`` (tests, demos);
    * :meth:`http`: a Chroma server (``chroma run``) through ``HttpClient``;
    * ``MemoryStore(client)``: any chromadb ``ClientAPI``.

    Every method taking a namespace and session id validates them first
    (:func:`~.keys.validate_session`) and raises ``InvalidInputError`` for bad ones; a
    failed Chroma call raises ``StoreError``. The engines' protocol is :attr:`records`.

    Args:
        client: A chromadb client.
        prefix: Collection name prefix (letters, digits, ``.``, ``_``, ``-``).
        http_timeout: Seconds any one HTTP request to a Chroma server may take.
        retry: How transient network failures are retried.
        cache: How much the caches keep (:class:`~..cache.CacheLimits`: 256 sessions and
            512 MiB by default): every store object of the process over the same database
            and prefix (and limits) shares them. A :class:`~..cache.StoreCaches` object
            instead: this store uses those (``StoreCaches()``: caches of its own).

    Attributes:
        client: The chromadb client.
        prefix: The collection name prefix.
        identity: A string naming the database (path or server address).
        caches: What the engines keep between calls (:class:`~..cache.StoreCaches`),
            shared with the process's other store objects over the same database.
        records: The engines' protocol over the store's repositories
            (:class:`~.session_records.SessionRecords`): what the engines and adapters
            read and write through, not for applications.

    Raises:
        ConfigurationError: For a bad prefix or timeout.
        StoreError: When the collections cannot be opened.

    Example:
        >>> from langchain_recursive_memory.core import MemoryStore, RecursiveMemory, Turn
        >>> store = MemoryStore.in_memory()
        >>> _ = RecursiveMemory("s1", store=store).add([Turn(role="user", text="hi")])
        >>> [s.session_id for s in store.sessions()], store.count_turns("default", "s1")
        (['s1'], 1)
        >>> store.clear("default", "s1")
        >>> store.sessions()
        []
    """

    def __init__(
        self,
        client: ClientAPI,
        *,
        prefix: str = "lrm",
        http_timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        cache: CacheLimits | StoreCaches | None = None,
    ) -> None:
        validate_prefix(prefix)
        if http_timeout <= 0:
            raise ConfigurationError.for_value("http_timeout", http_timeout, "must be > 0")
        # chromadb's HttpClient waits forever by default; every request gets a timeout here.
        chroma_client.set_http_timeout(client, http_timeout)
        self.client = client
        self.prefix = prefix
        self.identity = chroma_client.client_identity(client)
        if isinstance(cache, StoreCaches):
            self.caches = cache
        else:
            self.caches = StoreCaches.shared(self.identity, prefix, cache)
        chroma = StoreClient(client, retry, self.caches.collections)
        if not self.caches.migrated:  # a store of an earlier release: once per process
            self.caches.migrated = True
            migrate_collections(chroma, prefix)
        self.records = SessionRecords(chroma, prefix, self.caches)

    @property
    def retry(self) -> RetryPolicy:
        """How transient network failures of Chroma calls are retried."""
        return self.records.repos.client.retry

    @retry.setter
    def retry(self, policy: RetryPolicy) -> None:
        self.records.repos.client.retry = policy

    # -- construction -------------------------------------------------------------------

    @classmethod
    def persistent(cls, path: str | os.PathLike[str] | None = None, **kwargs: Any) -> MemoryStore:
        """Open (or create) an embedded, persistent store.

        Args:
            path: The directory; defaults to :func:`~.client.default_path`.
            **kwargs: Passed to the constructor (``prefix``).
        """
        return cls(chroma_client.persistent_client(path), **kwargs)

    @classmethod
    def in_memory(cls, **kwargs: Any) -> MemoryStore:
        """Create an embedded store that lives in this process only.

        Each call gets a fresh, empty store (collections get a random prefix unless
        ``prefix`` is given), because chromadb shares one in-memory system per process.
        """
        kwargs.setdefault("prefix", chroma_client.in_memory_prefix())
        return cls(chroma_client.in_memory_client(), **kwargs)

    @classmethod
    def http(
        cls,
        host: str = "localhost",
        port: int = 8000,
        *,
        ssl: bool = False,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        **kwargs: Any,
    ) -> MemoryStore:
        """Connect to a Chroma server (``chroma run --host H --port P``).

        Args:
            host: Server host.
            port: Server port.
            ssl: Use HTTPS.
            headers: Extra HTTP headers (authentication).
            timeout: Seconds any one HTTP request may take (chromadb's own default waits
                forever).
            **kwargs: Passed to the constructor (``prefix``).
        """
        client = chroma_client.http_client(host, port, ssl=ssl, headers=headers, timeout=timeout)
        kwargs.setdefault("http_timeout", timeout)
        return cls(client, **kwargs)

    def migrate(self, *, dry_run: bool = False) -> Migration:
        """Bring a store written by an earlier release up to this one (``lrm migrate``).

        Runs by itself the first time a process opens the store; see
        :mod:`.migrations` for what it does.

        Args:
            dry_run: Only report what would be done.
        """
        return migrate_collections(self.records.repos.client, self.prefix, dry_run=dry_run)

    # -- sessions ------------------------------------------------------------------------

    def sessions(self, namespace: str | None = None) -> list[SessionInfo]:
        """List sessions (of one namespace, or all), oldest first."""
        return self.records.lifecycle.sessions(namespace)

    def describe_session(
        self, namespace: str, session_id: str, settings: Mapping[str, str | int | float]
    ) -> None:
        """Record how the session's memory was made (``memory``, ``max_tokens``...).

        The engines record it on their first write in a process; the command line reads it
        to show and recall a session the way it was made.
        """
        self.records.lifecycle.describe_session(namespace, session_id, settings)

    def session_settings(self, namespace: str, session_id: str) -> dict[str, Any]:
        """How the session's memory was made (see :meth:`describe_session`), or empty."""
        return self.records.lifecycle.session_settings(namespace, session_id)

    def activity(
        self, namespace: str | None = None, *, by: str = "written"
    ) -> dict[tuple[str, str], float]:
        """Return when each session (of a namespace, or all) last stored a turn.

        ``by="written"`` (default): when the newest turn was written, not the time the
        message claims; ``by="created"``: the newest turn's own ``created_at`` (see
        :meth:`.SessionLifecycle.activity`).

        Raises:
            ConfigurationError: For a ``by`` not in :data:`~.lifecycle.EXPIRE_BY`.
        """
        return self.records.lifecycle.activity(namespace, by=by)

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
        scheduled job). Everything of an expired session is deleted, as by :meth:`clear`;
        safe while writers are active (see :meth:`.SessionLifecycle.expire`).

        Args:
            older_than: Age in seconds (> 0).
            namespace: Only this namespace (default: all).
            now: The current time (default: ``time.time()``).
            by: ``"written"`` (the last write, default) or ``"created"`` (the newest
                turn's own ``created_at``).

        Returns:
            The ``(namespace, session_id)`` pairs deleted.

        Raises:
            ConfigurationError: For a bad ``older_than``, ``now`` or ``by``.
            InvalidInputError: For a bad namespace.
        """
        return self.records.lifecycle.expire(older_than, namespace=namespace, now=now, by=by)

    def clear(self, namespace: str, session_id: str) -> None:
        """Delete everything stored for the session: turns, summaries, facts, vectors.

        What the session stated is taken out of its user's facts (see :mod:`.lifecycle`).
        """
        self.records.lifecycle.clear(namespace, session_id)

    # -- a session's records ---------------------------------------------------------------

    def turns(self, namespace: str, session_id: str) -> list[StoredTurn]:
        """Return every logged turn of the session, oldest first (folded or not)."""
        return self.records.turns(namespace, session_id)

    def count_turns(self, namespace: str, session_id: str) -> int:
        """Return how many turns the session's log holds."""
        return self.records.count_turns(namespace, session_id)

    def latest_summary(self, namespace: str, session_id: str) -> Summary | None:
        """Return the session's latest summary version, or None."""
        return self.records.latest_summary(namespace, session_id)

    def summaries(self, namespace: str, session_id: str) -> list[Summary]:
        """Return every summary version of the session, oldest first."""
        return self.records.summaries(namespace, session_id)

    def usage(self, namespace: str, session_id: str) -> dict[str, Usage]:
        """Return the session's upkeep spend, per purpose (``"fold"``, ``"higmem-index"``...)."""
        return self.records.usage(namespace, session_id)

    # -- users ---------------------------------------------------------------------------

    def users(self, namespace: str | None = None) -> list[UserInfo]:
        """List users (of one namespace, or all), oldest first."""
        return self.records.directory.users(namespace)

    def user_sessions(self, namespace: str, user_id: str) -> list[SessionInfo]:
        """The sessions of a user, oldest first."""
        return self.records.directory.user_sessions(namespace, user_id)

    def user_facts(self, namespace: str, user_id: str) -> list[Fact]:
        """Return the user's facts (learned in any of its sessions), oldest first."""
        return self.records.directory.user_facts(namespace, user_id)

    def session_user(self, namespace: str, session_id: str) -> str | None:
        """The user the session belongs to, or None (read once per process, then kept)."""
        return self.records.directory.session_user(namespace, session_id)

    def forget_user(self, namespace: str, user_id: str) -> list[str]:
        """Delete every session of the user and everything the user owns.

        The right to erasure: the user's sessions (turns, summaries, facts, HiGMem nodes,
        vectors, usage), the user's facts and their vectors, and its record (see
        :meth:`.SessionLifecycle.forget_user`). Stop the user's writers first.

        Returns:
            The ids of the sessions deleted.

        Raises:
            InvalidInputError: For a bad namespace or user id.
        """
        return self.records.lifecycle.forget_user(namespace, user_id)
