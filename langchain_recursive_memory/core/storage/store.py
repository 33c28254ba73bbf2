"""The user surface: :class:`MemoryStore`, what applications call on a store.

A store is two stores, each for what it does well: a database (:mod:`.database`; SQLite
in the store's folder by default, any SQLAlchemy URL such as PostgreSQL for many workers)
holds the log and everything that needs order, and Chroma holds the facts and vectors.

A store lists, describes, expires, clears and forgets sessions and users, and reads a
session's turns, summaries and upkeep spend. What the engines read and write through is
one session bound once, ``store.session(namespace, session_id)``
(:class:`~.session_store.SessionStore`), and one user, ``store.user(namespace, user_id)``
(:class:`UserStore`). Applications go through a memory (``RecursiveMemory``, ``HiGMem``...).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Engine
from sqlalchemy.engine import URL, Connection

from ..cache import CacheLimits, StoreCaches
from ..errors import ConfigurationError, StoreError
from ..facts import Fact
from ..runtime.effects import on_loop
from ..runtime.retry import RetryPolicy
from ..usage import Usage
from . import client as chroma_client
from . import sessions as rows
from .client import StoreClient
from .database import Database, sqlite_url
from .facts import FactTable
from .keys import UserOwner, validate_prefix
from .lifecycle import SessionLifecycle
from .migrations import Migration
from .migrations import migrate as migrate_store
from .parts import StoreParts
from .records import SessionHead, SessionInfo, StoredTurn, Summary, UserInfo
from .session_store import SessionStore
from .user_facts import UserFacts
from .vectors import VectorSpaces

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["MemoryStore", "UserStore"]

logger = logging.getLogger("langchain_recursive_memory")

T = TypeVar("T")

_CHECKED = "chroma_migrated_at"
"""The ``{prefix}_meta`` key that says Chroma was checked for an earlier release's log."""


class MemoryStore:
    """The memory's storage: a database for the log, Chroma for the facts and vectors.

    Use a factory, or pass a chromadb client (and a database):

    * :meth:`persistent` (the default of the memories): a folder holding both, SQLite
      (``memory.sqlite3``) and an embedded Chroma ``PersistentClient``;
    * :meth:`in_memory`: both in this process only (tests, demos);
    * :meth:`http`: a Chroma server (``chroma run``) and a database URL (PostgreSQL) that
      every worker shares;
    * ``MemoryStore(client, database=...)``: any chromadb ``ClientAPI`` and any database.

    Every method taking a namespace and session id validates them first and raises
    ``InvalidInputError`` for bad ones; a failed database or Chroma call raises
    ``StoreError`` naming what failed. The engines go through :meth:`session`.

    Args:
        client: A chromadb client.
        database: A SQLAlchemy URL (``"postgresql+psycopg://user:pw@host/db"``) or engine.
            Default: the SQLite file in a ``PersistentClient``'s folder, or one in memory
            for an in-memory client; a Chroma server needs one given.
        prefix: Table and collection name prefix (letters, digits, ``.``, ``_``, ``-``).
        http_timeout: Seconds any one HTTP request to a Chroma server may take.
        retry: How transient failures (network, a busy database) are retried.
        cache: How much the caches keep (:class:`~..cache.CacheLimits`: 256 sessions and
            512 MiB by default): every store object of the process over the same database
            and prefix (and limits) shares them. A :class:`~..cache.StoreCaches` object
            instead: this store uses those (``StoreCaches()``: caches of its own).
        migrate: Move what an earlier release wrote into the database when the process
            first opens the store (:mod:`.migrations`); False leaves it (``lrm migrate``).

    Attributes:
        client: The chromadb client.
        db: The database (:class:`~.database.Database`).
        prefix: The name prefix.
        identity: A string naming the databases (for the caches).
        caches: What the engines keep between calls (:class:`~..cache.StoreCaches`),
            shared with the process's other store objects over the same database.

    Raises:
        ConfigurationError: For a bad prefix, timeout or database URL, or a server client
            without a database.
        StoreError: When the database cannot be opened (it is named, password masked).

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
        client: ClientAPI | chroma_client.LazyClient,
        *,
        database: str | URL | Engine | None = None,
        prefix: str = "lrm",
        http_timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        cache: CacheLimits | StoreCaches | None = None,
        migrate: bool = True,
    ) -> None:
        validate_prefix(prefix)
        if http_timeout <= 0:
            raise ConfigurationError.for_value("http_timeout", http_timeout, "must be > 0")
        # chromadb's HttpClient waits forever by default; every request gets a timeout here.
        chroma_client.set_http_timeout(client, http_timeout)
        self.client = client
        self.prefix = prefix
        chroma_identity = chroma_client.client_identity(client)
        target = _database_of(client, chroma_identity, database)
        memory = target == "sqlite://"
        watch: _Watch | None = None
        if memory:  # the in-memory store of this client and prefix, while one is open
            self.db, shared = _memory_database(client, prefix, retry, cache)
        else:
            self.db, watch = _WatchedDatabase.watched(client, target, prefix, retry)
        self.identity = f"{chroma_identity}|{self.db.name}"
        if isinstance(cache, StoreCaches):
            self.caches = cache
        elif memory:
            self.caches = shared
        else:  # a folder made again where a deleted one was gets caches of its own
            token = f"|{watch.token}" if watch is not None and watch.token else ""
            self.caches = StoreCaches.shared(self.identity + token, prefix, cache)
        self.chroma = StoreClient(client, retry, self.caches.collections)
        self.fact_table = FactTable(self.chroma, prefix)
        self.vector_spaces = VectorSpaces(self.chroma, prefix)
        self._parts = StoreParts(
            self.db,
            self.chroma,
            prefix,
            self.identity,
            self.caches,
            self.fact_table,
            self.vector_spaces,
        )
        self.shared_facts = UserFacts(self._parts)
        self.lifecycle = SessionLifecycle(self._parts, self.shared_facts)
        if not memory and migrate and not self.caches.migrated:  # an earlier release's store
            if self.db.get_meta(_CHECKED) is None:  # once per database, then never again
                migrate_store(self._parts)
                self.db.set_meta(_CHECKED, str(time.time()))
            self.caches.migrated = True
            self.lifecycle.purge()

    @property
    def retry(self) -> RetryPolicy:
        """How transient failures of database and Chroma calls are retried."""
        return self.chroma.retry

    @retry.setter
    def retry(self, policy: RetryPolicy) -> None:
        self.chroma.retry = policy
        self.db.retry = policy

    def session(self, namespace: str, session_id: str) -> SessionStore:
        """One session of the store, validated once: what the engines read and write through.

        Raises:
            InvalidInputError: For a bad namespace or session id.
        """
        return SessionStore(
            self._parts,
            namespace,
            session_id,
            shared_facts=self.shared_facts,
            lifecycle=self.lifecycle,
        )

    def user(self, namespace: str, user_id: str) -> UserStore:
        """One user of the store: its sessions' heads, its facts, its rebuild markers.

        Raises:
            InvalidInputError: For a bad namespace or user id.
        """
        return UserStore(self, namespace, user_id)

    def close(self) -> None:
        """Close the database connections (the store is done with; Chroma's stay open)."""
        self.db.dispose()

    # -- construction -------------------------------------------------------------------

    @classmethod
    def persistent(cls, path: str | os.PathLike[str] | None = None, **kwargs: Any) -> MemoryStore:
        """Open (or create) an embedded, persistent store in a folder.

        **A folder deleted while the process runs.** A store opened at the path afterwards
        is a new, empty one (the folder is made again): nothing the process kept of the
        deleted store (its Chroma client, its caches) is used for it. A store object
        opened before the deletion raises ``StoreError`` naming the folder and saying it
        is gone on its next write (to the database or Chroma), and when it first needs
        Chroma; what it had read stays readable until then. Deleting ``memory.sqlite3``
        alone is met the same way.

        Args:
            path: The folder; defaults to :func:`~.client.default_path`.
            **kwargs: Passed to the constructor (``prefix``, ``database``...).
        """
        return cls(chroma_client.LazyClient(path), **kwargs)

    @classmethod
    def in_memory(cls, **kwargs: Any) -> MemoryStore:
        """Create a store that lives in this process only (a fresh, empty one each call)."""
        kwargs.setdefault("prefix", chroma_client.in_memory_prefix())
        return cls(chroma_client.in_memory_client(), **kwargs)

    @classmethod
    def http(
        cls,
        host: str = "localhost",
        port: int = 8000,
        *,
        database: str | URL | Engine | None = None,
        ssl: bool = False,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        **kwargs: Any,
    ) -> MemoryStore:
        """Connect to a Chroma server (``chroma run --host H --port P``) and a database.

        Args:
            host: Server host.
            port: Server port.
            database: The database every worker shares
                (``"postgresql+psycopg://user:password@host/db"``).
            ssl: Use HTTPS.
            headers: Extra HTTP headers (authentication).
            timeout: Seconds any one HTTP request may take (chromadb's own default waits
                forever).
            **kwargs: Passed to the constructor (``prefix``).

        Raises:
            ConfigurationError: Without a database.
        """
        if database is None:
            raise ConfigurationError.for_value(
                "database",
                None,
                "a Chroma server needs a database its workers share, e.g. "
                "database='postgresql+psycopg://user:password@host/db'",
            )
        client = chroma_client.http_client(host, port, ssl=ssl, headers=headers, timeout=timeout)
        kwargs.setdefault("http_timeout", timeout)
        return cls(client, database=database, **kwargs)

    def migrate(self, *, dry_run: bool = False) -> Migration:
        """Bring a store written by an earlier release up to this one (``lrm migrate``).

        Runs by itself the first time a process opens the store; see :mod:`.migrations`.

        Args:
            dry_run: Only report what would be done.
        """
        done = migrate_store(self._parts, dry_run=dry_run)
        if not dry_run:
            self.db.set_meta(_CHECKED, str(time.time()))
        return done

    # -- sessions ------------------------------------------------------------------------

    @on_loop
    def sessions(self, namespace: str | None = None) -> list[SessionInfo]:
        """List sessions (of one namespace, or all), oldest first."""
        return self.lifecycle.sessions(namespace)

    def describe_session(
        self, namespace: str, session_id: str, settings: Mapping[str, str | int | float]
    ) -> None:
        """Record how the session's memory was made (``memory``, ``max_tokens``...)."""
        self.session(namespace, session_id).describe(settings)

    def session_settings(self, namespace: str, session_id: str) -> dict[str, Any]:
        """How the session's memory was made (see :meth:`describe_session`), or empty."""
        return self.session(namespace, session_id).settings()

    def activity(
        self, namespace: str | None = None, *, by: str = "written"
    ) -> dict[tuple[str, str], float]:
        """Return when each session (of a namespace, or all) last stored a turn.

        ``by="written"`` (default): when the newest turn was written; ``by="created"``:
        the newest turn's own ``created_at``.

        Raises:
            ConfigurationError: For a ``by`` not in :data:`~.lifecycle.EXPIRE_BY`.
        """
        return self.lifecycle.activity(namespace, by=by)

    def expire(
        self,
        older_than: float,
        *,
        namespace: str | None = None,
        now: float | None = None,
        by: str = "written",
    ) -> list[tuple[str, str]]:
        """Delete every session that stored no turn in the last ``older_than`` seconds.

        A time-to-live for conversations: run it periodically (a scheduled job).
        Everything of an expired session is deleted, as by :meth:`clear`; safe while
        writers are active (see :mod:`.lifecycle`).

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
        return self.lifecycle.expire(older_than, namespace=namespace, now=now, by=by)

    def clear(self, namespace: str, session_id: str) -> None:
        """Delete everything stored for the session: turns, summaries, facts, vectors.

        What the session stated is taken out of its user's facts (see :mod:`.lifecycle`).
        """
        self.lifecycle.clear(namespace, session_id)

    # -- a session's records ---------------------------------------------------------------

    @on_loop
    def turns(self, namespace: str, session_id: str) -> list[StoredTurn]:
        """Return every logged turn of the session, oldest first (folded or not)."""
        return self.session(namespace, session_id).turns.all()

    @on_loop
    def count_turns(self, namespace: str, session_id: str) -> int:
        """Return how many turns the session's log holds."""
        return self.session(namespace, session_id).turns.count()

    @on_loop
    def latest_summary(self, namespace: str, session_id: str) -> Summary | None:
        """Return the session's latest summary version, or None."""
        return self.session(namespace, session_id).summaries.latest()

    @on_loop
    def summaries(self, namespace: str, session_id: str) -> list[Summary]:
        """Return every summary version of the session, oldest first."""
        return self.session(namespace, session_id).summaries.versions()

    @on_loop
    def usage(self, namespace: str, session_id: str) -> dict[str, Usage]:
        """Return the session's upkeep spend, per purpose (``"fold"``, ``"higmem-index"``...)."""
        return self.session(namespace, session_id).usage()

    # -- users ---------------------------------------------------------------------------

    @on_loop
    def users(self, namespace: str | None = None) -> list[UserInfo]:
        """List users (of one namespace, or all), oldest first."""
        return self.lifecycle.users(namespace)

    @on_loop
    def user_sessions(self, namespace: str, user_id: str) -> list[SessionInfo]:
        """The sessions of a user, oldest first."""
        return self.lifecycle.sessions(user=UserOwner.of(namespace, user_id))

    def user_facts(self, namespace: str, user_id: str) -> list[Fact]:
        """Return the user's facts (learned in any of its sessions), oldest first."""
        return self.shared_facts.get(namespace, user_id)

    @on_loop
    def session_user(self, namespace: str, session_id: str) -> str | None:
        """The user the session belongs to, or None (as its row names it)."""
        return self.session(namespace, session_id).recorded_user()

    def forget_user(self, namespace: str, user_id: str) -> list[str]:
        """Delete every session of the user and everything the user owns.

        The right to erasure: the user's sessions (turns, summaries, facts, HiGMem nodes,
        vectors, usage), the user's facts and their vectors, and its row, in one database
        transaction and then in Chroma (see :mod:`.lifecycle`). Stop the user's writers
        first.

        Returns:
            The ids of the sessions deleted.

        Raises:
            InvalidInputError: For a bad namespace or user id.
        """
        return self.lifecycle.forget_user(namespace, user_id)


class UserStore:
    """One user of a store: what a user-scope read or rebuild goes through.

    Args:
        store: The store.
        namespace: The namespace.
        user_id: The user.

    Raises:
        InvalidInputError: For a bad namespace or user id.
    """

    def __init__(self, store: MemoryStore, namespace: str, user_id: str) -> None:
        self.store = store
        self.owner = UserOwner.of(namespace, user_id)

    @on_loop
    def heads(self) -> dict[str, SessionHead]:
        """The heads of every session of the user, by session id, oldest first (one read)."""
        t = self.store.db.tables
        found: dict[str, SessionHead] = self.store.db.read(
            lambda c: rows.user_heads(c, t, self.owner), "read the user's sessions"
        )
        return found

    def facts(self) -> list[Fact]:
        """The user's facts, oldest first."""
        return self.store.shared_facts.get(self.owner.namespace, self.owner.user_id)

    def drop_facts(self) -> None:
        """Delete the user's facts and their vectors (a user's rebuild starts so)."""
        self.store.shared_facts.drop(self.owner.namespace, self.owner.user_id)

    @on_loop
    def marker(self, task: str) -> Any:
        """The progress a running rebuild of the user's ``task`` recorded (None: none)."""
        t = self.store.db.tables
        return self.store.db.read(lambda c: rows.marker(c, t, self.owner, task), "read a marker")

    @on_loop
    def set_marker(self, task: str, progress: Any) -> None:
        """Record a rebuild's progress on the user's row (None: it finished)."""
        t = self.store.db.tables

        def write(conn: Connection) -> None:
            rows.set_marker(conn, t, self.owner, task, progress)

        self.store.db.write(write, "mark the user's rebuild")


class _Watch:
    """The files a store object was opened on, and whether they are still there.

    Its embedded folder (:class:`~.client.LazyClient`) and its SQLite file, each by
    identity (device, inode): a file deleted, or deleted and made again, is gone.

    Attributes:
        folder: The embedded client (None: Chroma is not a folder of this store).
        path: The SQLite file (None: another database).
        file: The file's identity when the store was opened.
    """

    def __init__(self, folder: chroma_client.LazyClient | None, path: Path | None) -> None:
        self.folder = folder
        self.path = path
        self.file = chroma_client.path_identity(path) if path is not None else None

    @classmethod
    def of(cls, client: Any, db: Database) -> _Watch | None:
        """The watch of a store over ``client`` and ``db`` (None: nothing to watch)."""
        folder = client if isinstance(client, chroma_client.LazyClient) else None
        name = db.engine.url.database if db.dialect == "sqlite" else None
        path = Path(name).resolve() if name and name != ":memory:" else None
        return cls(folder, path) if folder is not None or path is not None else None

    @property
    def token(self) -> str:
        """Names the files as they are (a folder made again gets another)."""
        folder = self.folder.folder if self.folder is not None else None
        return f"{folder or ''}{self.file or ''}"

    def check(self, what: str) -> None:
        """Raise ``StoreError`` when the folder or the file is gone.

        Raises:
            StoreError: Naming the folder (or file) and saying it is gone.
        """
        if self.folder is not None:
            self.folder.check(what)
        if self.path is not None and chroma_client.path_identity(self.path) != self.file:
            raise StoreError(
                f"the store's database file {self.path} is gone: it was deleted (or "
                f"replaced) while this process used it, so this store object cannot {what}. "
                "Open the store again to start a new, empty one there."
            )


class _WatchedDatabase(Database):
    """A store's database whose writes first check that its files are still there.

    SQLite writes into a deleted file without a word (its open connections keep it), and
    Chroma fails with "attempt to write a readonly database": both say the folder is gone
    instead (:meth:`MemoryStore.persistent`).
    """

    watch: _Watch | None = None

    @classmethod
    def watched(
        cls, client: Any, url: str | URL | Engine, prefix: str, retry: RetryPolicy | None
    ) -> tuple[Database, _Watch | None]:
        """Open the database of a store over ``client``, and watch the store's files."""
        db = cls.open(url, prefix, retry=retry)
        watch = _Watch.of(client, db)
        if isinstance(db, _WatchedDatabase):
            db.watch = watch
        return db, watch

    def write(self, fn: Callable[[Connection], T], what: str = "write") -> T:
        """:meth:`Database.write`, once the store's files are known to be there."""
        if self.watch is not None:
            self.watch.check(what)
        return super().write(fn, what)

    async def awrite(self, fn: Callable[[Connection], T], what: str = "write") -> T:
        """:meth:`Database.awrite`, once the store's files are known to be there."""
        if self.watch is not None:
            self.watch.check(what)
        return await super().awrite(fn, what)


def _database_of(
    client: Any, identity: str, database: str | URL | Engine | None
) -> str | URL | Engine:
    """The database a store over ``client`` uses when none is given (see the class doc)."""
    if database is not None:
        return database
    if identity.startswith("file:"):
        return sqlite_url(identity[len("file:") :])
    if identity.startswith("http"):
        raise ConfigurationError.for_value(
            "database",
            None,
            "a Chroma server needs a database its workers share, e.g. "
            "database='postgresql+psycopg://user:password@host/db'",
        )
    return "sqlite://"


_memory_stores: weakref.WeakValueDictionary[tuple[int, str], Database] = (
    weakref.WeakValueDictionary()
)
_memory_caches: weakref.WeakKeyDictionary[Database, StoreCaches] = weakref.WeakKeyDictionary()
_memory_lock = threading.Lock()


def _memory_database(
    client: Any, prefix: str, retry: RetryPolicy | None, limits: Any
) -> tuple[Database, StoreCaches]:
    """The in-memory database (and caches) of an in-memory Chroma client and prefix.

    Every store object over the same client and prefix shares it while one of them is
    alive; when the last is dropped, so are the database, the caches and the prefix's
    collections in the (process-wide) in-memory Chroma.
    """
    with _memory_lock:
        db = _memory_stores.get((id(client), prefix))
        if db is None:
            db = Database.open("sqlite://", prefix, retry=retry)
            _memory_stores[(id(client), prefix)] = db
            _memory_caches[db] = StoreCaches(limits if isinstance(limits, CacheLimits) else None)
            weakref.finalize(db, _drop_collections, client, prefix, db.engine)
        return db, _memory_caches[db]


def _drop_collections(client: Any, prefix: str, engine: Any) -> None:
    """Free what an in-memory store held: its collections in the shared in-memory Chroma."""
    engine.dispose()
    try:
        for item in client.list_collections():
            name = item if isinstance(item, str) else item.name
            if name.startswith(f"{prefix}_"):
                client.delete_collection(name)
    except Exception as exc:  # at interpreter exit Chroma may be gone already
        logger.debug("in-memory store %s: collections not dropped (%s)", prefix, exc)
