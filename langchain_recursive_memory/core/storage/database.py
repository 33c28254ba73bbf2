"""The database: the engine, its transactions, the one retried call, and its errors.

The turn log and everything that needs order lives in a relational database reached
through SQLAlchemy 2 (:mod:`.schema`). Any SQLAlchemy URL works; two are first-class:

* **SQLite** (the default): a file in the store's folder (``memory.sqlite3``), in WAL mode
  (readers never wait for a writer) with ``synchronous=FULL`` (a committed turn survives a
  crash of the machine, not only of the process) and a 30 s busy timeout. A write
  transaction starts with ``BEGIN IMMEDIATE``, so two writers never deadlock upgrading
  their locks; several processes may share the file. ``sqlite://`` (in memory) serves one
  process, its transactions taken in turn.
* **PostgreSQL** (``postgresql+psycopg://user:password@host/db``, the ``[postgres]``
  extra), for many workers: reads run at ``REPEATABLE READ`` (one snapshot per read),
  writes at ``READ COMMITTED`` with the session row locked first (:mod:`.turns`), every
  statement bounded by ``statement_timeout``.

:meth:`Database.read` and :meth:`Database.write` run a function of a connection in one
transaction and retry it when the failure is transient (a busy database, a dropped
connection, a serialization failure): every write is either idempotent or a
compare-and-set, so running it again is safe. A failure that is not transient, or one
that lasts, raises :class:`~..errors.StoreError` naming the database with its password
masked. ``aread``/``awrite`` are the async twins: with an async driver (``aiosqlite``,
``psycopg``) they run the same function on SQLAlchemy's async engine (real async I/O),
otherwise in a worker thread. A store method marked
:func:`~..runtime.effects.on_loop` that an async shell runs on its event loop reaches
:meth:`read`/:meth:`write` inside SQLAlchemy's greenlet bridge: they await the async
engine there, so the engines' ``aadd``/``acontext``... do their database I/O on the loop.

Example:
    >>> from sqlalchemy import select
    >>> db = Database.open("sqlite://", "lrm")
    >>> db.read(lambda conn: conn.execute(select(db.tables.sessions.c.id)).all())
    []
    >>> db.name
    'sqlite://'
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, event, make_url, select
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool
from sqlalchemy.util.concurrency import await_only, in_greenlet

from ..errors import (
    ConfigurationError,
    RecursiveMemoryError,
    StoreError,
    WriteOutcomeUnknownError,
)
from ..runtime.retry import Retrying, RetryPolicy
from .schema import SCHEMA_VERSION, Tables
from .sessions import insert_ignore, upsert

__all__ = ["DATABASE_FILE", "DEFAULT_RETRY", "Database", "sqlite_url"]

logger = logging.getLogger("langchain_recursive_memory")

T = TypeVar("T")

DATABASE_FILE = "memory.sqlite3"
"""The SQLite file of an embedded store, in its folder beside Chroma's."""

DEFAULT_RETRY = RetryPolicy(attempts=4, initial_delay=0.05, max_delay=2.0, timeout=30.0)
"""How a transaction that failed for a transient reason is retried."""

BUSY_SECONDS = 30.0
"""How long SQLite waits for another writer's lock before the attempt fails."""

STATEMENT_TIMEOUT_MS = 30_000
"""PostgreSQL's ``statement_timeout``: no statement waits longer (invariant: no call
waits forever)."""

CONNECT_TIMEOUT = 10
"""Seconds a new database connection may take."""

_ASYNC_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+psycopg"}
_TRANSIENT_SQLSTATES = {"40001", "40P01", "55P03", "57P01", "08000", "08003", "08006"}


def sqlite_url(folder: str | os.PathLike[str]) -> str:
    """The URL of the SQLite file of a store kept in ``folder``."""
    return f"sqlite:///{Path(folder).expanduser().resolve() / DATABASE_FILE}"


class Database:
    """One database of a store (see the module doc).

    Args:
        engine: A SQLAlchemy engine.
        prefix: The table name prefix.
        retry: How transient failures are retried.

    Attributes:
        engine: The engine.
        tables: The prefix's tables.
        name: The URL with its password masked (names the database in errors).
        dialect: ``"sqlite"``, ``"postgresql"``...
    """

    def __init__(self, engine: Engine, prefix: str, retry: RetryPolicy | None = None) -> None:
        self.engine = engine
        self.tables = Tables.of(prefix)
        self.retry = retry or DEFAULT_RETRY
        self.name = engine.url.render_as_string(hide_password=True)
        self.dialect = engine.dialect.name
        self._memory = self.dialect == "sqlite" and engine.url.database in (None, "", ":memory:")
        # One SQLite connection in memory: its transactions are taken in turn.
        self._turn = threading.RLock() if self._memory else None
        self._async: AsyncEngine | bool | None = None
        if self.dialect == "sqlite":
            _sqlite_transactions(engine)

    @classmethod
    def open(
        cls,
        url: str | URL | Engine,
        prefix: str,
        *,
        retry: RetryPolicy | None = None,
        create: bool = True,
    ) -> Database:
        """Open the database at ``url`` (an engine is used as given) and create its tables.

        Raises:
            ConfigurationError: For a URL SQLAlchemy cannot parse or has no driver for.
            StoreError: When the database cannot be reached (its name, password masked).
        """
        engine = url if isinstance(url, Engine) else _engine(url)
        db = cls(engine, prefix, retry)
        if create:
            db.create()
        return db

    # -- transactions ---------------------------------------------------------------------

    def _options(self, write: bool) -> dict[str, Any]:
        options: dict[str, Any] = {"lrm_write": write}
        if self.dialect == "postgresql" and not write:
            options["isolation_level"] = "REPEATABLE READ"
        return options

    def _once(self, fn: Callable[[Connection], T], write: bool) -> T:
        """One attempt: ``fn`` in a transaction; a failing commit raises :class:`_AtCommit`."""
        with self._turn or _NO_LOCK, self.engine.connect() as conn:
            conn = conn.execution_options(**self._options(write))
            transaction = conn.begin()
            try:
                result = fn(conn)
            except BaseException:
                transaction.rollback()
                raise
            try:
                transaction.commit()
            except SQLAlchemyError as exc:  # it may have landed: its answer was lost
                raise _AtCommit(exc) from exc
            return result

    def read(self, fn: Callable[[Connection], T], what: str = "read") -> T:
        """Run ``fn`` in a read transaction (one snapshot), retried when transient.

        Raises:
            StoreError: When the database failed for good (it names the database).
        """
        return self._run(fn, False, what)

    def write(self, fn: Callable[[Connection], T], what: str = "write") -> T:
        """Run ``fn`` in a write transaction (all or nothing), retried when transient.

        Raises:
            StoreError: When the database failed for good (nothing was written).
        """
        return self._run(fn, True, what)

    def _run(self, fn: Callable[[Connection], T], write: bool, what: str) -> T:
        if in_greenlet() and self._async_engine() is not None:
            # An async shell's store call on its event loop (runtime.effects.on_loop):
            # the async driver awaits the I/O there.
            return await_only(self._arun(fn, write, what))
        retrying = Retrying(self.retry, partial(self._error, what), _transient)
        while True:
            try:
                return self._once(fn, write)
            except RecursiveMemoryError:
                raise
            except (SQLAlchemyError, _AtCommit) as exc:
                delay = retrying.failed(exc)
                logger.info("database %s: %s failed (%s); retrying", self.name, what, exc)
                time.sleep(delay)

    def _error(self, what: str, exc: Exception, attempts: int) -> StoreError:
        at_commit = isinstance(exc, _AtCommit)
        failure = exc.failure if isinstance(exc, _AtCommit) else exc
        cause = str(getattr(failure, "orig", None) or failure).strip().splitlines()
        detail = cause[0] if cause else type(failure).__name__
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        message = f"the database {self.name} failed to {what}{tries}: {detail}"
        if at_commit:
            return WriteOutcomeUnknownError(
                f"{message} (at the commit: whether it was written is unknown)"
            )
        return StoreError(message)

    async def aread(self, fn: Callable[[Connection], T], what: str = "read") -> T:
        """Async twin of :meth:`read`."""
        return await self._arun(fn, False, what)

    async def awrite(self, fn: Callable[[Connection], T], what: str = "write") -> T:
        """Async twin of :meth:`write`."""
        return await self._arun(fn, True, what)

    async def _arun(self, fn: Callable[[Connection], T], write: bool, what: str) -> T:
        engine = self._async_engine()
        if engine is None:
            return await asyncio.to_thread(self._run, fn, write, what)
        retrying = Retrying(self.retry, partial(self._error, what), _transient)
        while True:
            try:
                return await self._aonce(engine, fn, write)
            except RecursiveMemoryError:
                raise
            except (SQLAlchemyError, _AtCommit) as exc:
                delay = retrying.failed(exc)
                logger.info("database %s: %s failed (%s); retrying", self.name, what, exc)
                await asyncio.sleep(delay)

    async def _aonce(self, engine: AsyncEngine, fn: Callable[[Connection], T], write: bool) -> T:
        """Async twin of :meth:`_once`."""
        async with engine.connect() as conn:
            conn = await conn.execution_options(**self._options(write))
            transaction = await conn.begin()
            try:
                result = await conn.run_sync(fn)
            except BaseException:
                await transaction.rollback()
                raise
            try:
                await transaction.commit()
            except SQLAlchemyError as exc:
                raise _AtCommit(exc) from exc
            return result

    def _async_engine(self) -> AsyncEngine | None:
        """The async engine over the same database (None: no async driver, or in memory)."""
        if self._async is None:
            self._async = False
            driver = _ASYNC_DRIVERS.get(self.dialect)
            if driver is not None and not self._memory:
                try:
                    url = self.engine.url.set(drivername=driver)
                    engine = create_async_engine(url, **_engine_options(url))
                    if self.dialect == "sqlite":
                        _sqlite_transactions(engine.sync_engine)
                    self._async = engine
                except (ImportError, ArgumentError) as exc:
                    logger.info("database %s: no async driver (%s)", self.name, exc)
        return self._async if isinstance(self._async, AsyncEngine) else None

    # -- schema --------------------------------------------------------------------------

    def create(self) -> None:
        """Create the prefix's tables unless they exist, and check the schema version.

        Raises:
            StoreError: When the database cannot be reached, or holds a newer schema.
        """
        version_key = "schema"

        def create(conn: Connection) -> str | None:
            self.tables.metadata.create_all(conn, checkfirst=True)
            meta = self.tables.meta
            found = conn.execute(select(meta.c.value).where(meta.c.key == version_key)).scalar()
            if found is None:
                row = {"key": version_key, "value": str(SCHEMA_VERSION)}
                insert_ignore(conn, meta, row, [meta.c.key])
            return found

        found = self.write(create, "create its tables")
        if found is not None and int(found) > SCHEMA_VERSION:
            raise StoreError(
                f"the database {self.name} was written by a newer release (schema {found}; "
                f"this one reads {SCHEMA_VERSION}): upgrade langchain-recursive-memory"
            )

    def get_meta(self, key: str) -> str | None:
        """A value of the ``{prefix}_meta`` table (None: unset)."""
        meta = self.tables.meta
        return self.read(
            lambda conn: conn.execute(select(meta.c.value).where(meta.c.key == key)).scalar()
        )

    def set_meta(self, key: str, value: str) -> None:
        """Set a value of the ``{prefix}_meta`` table."""
        meta = self.tables.meta

        self.write(
            lambda conn: upsert(conn, meta, [{"key": key, "value": value}], [meta.c.key]),
            f"record {key}",
        )

    def dispose(self) -> None:
        """Close the engine's connections (the store is done with)."""
        self.engine.dispose()
        if isinstance(self._async, AsyncEngine):
            self._async.sync_engine.dispose()


class _AtCommit(Exception):
    """A transaction whose commit failed: it may have landed (its answer was lost)."""

    def __init__(self, failure: SQLAlchemyError) -> None:
        super().__init__(str(failure))
        self.failure = failure


def _transient(exc: Exception) -> bool:
    """Whether a failed transaction is worth another attempt."""
    if isinstance(exc, _AtCommit):
        exc = exc.failure
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    code = getattr(getattr(exc, "orig", None), "sqlstate", None)
    if code in _TRANSIENT_SQLSTATES:
        return True
    text = str(getattr(exc, "orig", exc)).lower()
    return isinstance(exc, OperationalError) and (
        "locked" in text or "busy" in text or "connection" in text or "server closed" in text
    )


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_LOCK = _NoLock()


def _engine_options(url: URL) -> dict[str, Any]:
    if url.get_backend_name() == "sqlite":
        if url.database in (None, "", ":memory:"):
            return {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
        return {"connect_args": {"timeout": BUSY_SECONDS}}
    if url.get_backend_name() == "postgresql":
        args: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT}
        if "asyncpg" not in url.drivername:
            args["options"] = f"-c statement_timeout={STATEMENT_TIMEOUT_MS}"
        return {"pool_pre_ping": True, "connect_args": args}
    return {"pool_pre_ping": True}


def _engine(url: str | URL) -> Engine:
    """A new engine for ``url`` with the options of its database (module doc)."""
    from sqlalchemy import create_engine

    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigurationError.for_value(
            "database", str(url), f"not a database URL: {exc}"
        ) from exc
    if parsed.drivername == "postgresql":  # psycopg 3, not SQLAlchemy's default psycopg2
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    try:
        return create_engine(parsed, **_engine_options(parsed))
    except (ImportError, ArgumentError) as exc:
        shown = parsed.render_as_string(hide_password=True)
        raise ConfigurationError.for_value(
            "database",
            shown,
            f'{exc} (PostgreSQL needs: pip install "langchain-recursive-memory[postgres]")',
        ) from exc


def _sqlite_transactions(engine: Engine) -> None:
    """SQLite: the library says when transactions begin (``BEGIN IMMEDIATE`` to write)."""
    if getattr(engine, "_lrm_sqlite", False):
        return
    engine._lrm_sqlite = True  # type: ignore[attr-defined]

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # the driver begins nothing itself
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        if engine.url.database not in (None, "", ":memory:"):
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=FULL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        write = conn.get_execution_options().get("lrm_write", True)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
