"""The chromadb client: opening one, its timeouts, and the one retried call wrapper.

Every Chroma call of the store goes through :meth:`StoreClient.call`, which retries
transient network failures (through :class:`~..runtime.retry.Retrying`) and turns any
other failure into a :class:`~..errors.StoreError`.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ConfigurationError, RecursiveMemoryError, StoreError
from ..runtime.retry import Retrying, RetryPolicy
from .keys import SCHEMA

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = [
    "PATH_ENV",
    "LazyClient",
    "StoreClient",
    "client_identity",
    "default_path",
    "folder_gone",
    "hold_folder",
    "http_client",
    "in_memory_client",
    "in_memory_prefix",
    "path_identity",
    "persistent_client",
    "probe",
    "set_http_timeout",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

PATH_ENV = "LANGCHAIN_RECURSIVE_MEMORY_PATH"
"""The environment variable that overrides :func:`default_path`."""

DEFAULT_RETRY = RetryPolicy(attempts=3, initial_delay=0.2, max_delay=2.0)
"""How Chroma calls are retried unless a policy is given."""


def default_path() -> Path:
    """Return where the embedded store persists by default.

    ``$LANGCHAIN_RECURSIVE_MEMORY_PATH`` when set, else
    ``$XDG_DATA_HOME/langchain-recursive-memory/chroma`` (``XDG_DATA_HOME`` defaults to
    ``~/.local/share``).
    """
    env = os.environ.get(PATH_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "langchain-recursive-memory" / "chroma"


# -- factories --------------------------------------------------------------------------


def persistent_client(path: str | os.PathLike[str] | None = None) -> ClientAPI:
    """Open (or create) an embedded ``PersistentClient`` at ``path`` or :func:`default_path`.

    A process opens each directory once: later calls return the same client (chromadb
    shares one system per directory anyway), so a store opened per request costs no
    client construction. A directory deleted (or replaced) since the process opened it
    is opened anew: the client of the deleted one is closed, never handed out again.

    Raises:
        StoreError: When the directory or the database cannot be opened.
    """
    import chromadb
    from chromadb.config import Settings

    target = Path(path).expanduser() if path is not None else default_path()
    try:
        target.mkdir(parents=True, exist_ok=True)
        key = target.resolve()
        # Held while opening: chromadb fails when two threads open one directory at once.
        with _held_lock:
            hold_folder(key)
            found: ClientAPI | None = _clients.get(key)
            if found is None:
                warn_if_shared(target)
                found = _clients[key] = chromadb.PersistentClient(
                    path=str(target), settings=Settings(anonymized_telemetry=False)
                )
    except Exception as exc:
        raise StoreError(f"cannot open the Chroma store at path={str(target)!r}: {exc}") from exc
    return found


class LazyClient:
    """An embedded ``PersistentClient`` opened on first use (:func:`persistent_client`).

    Opening chromadb costs about a second in a new process; a store whose reads need
    nothing of Chroma (no facts, no embedder: its log is in the database) never pays it.
    Any attribute of the client is forwarded (opening it).

    The client belongs to the directory as it was when this object was made: when that
    directory is deleted (or replaced by another) while the process runs, :meth:`gone`
    says so, and :meth:`get` raises instead of opening whatever is at the path now.

    Args:
        path: The directory; defaults to :func:`default_path`.

    Attributes:
        path: The directory, resolved.
        folder: The directory's identity (device, inode) when this object was made.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        target = Path(path).expanduser() if path is not None else default_path()
        try:
            target.mkdir(parents=True, exist_ok=True)
            self.path = target.resolve()
            with _held_lock:
                self.folder = hold_folder(self.path)
        except OSError as exc:
            raise StoreError(f"cannot open the store at path={str(target)!r}: {exc}") from exc
        self._client: ClientAPI | None = None

    @property
    def identity(self) -> str:
        """What :func:`client_identity` says of the client: its directory."""
        return f"file:{self.path}"

    def gone(self) -> bool:
        """Whether the directory was deleted or replaced since this object was made."""
        return path_identity(self.path) != self.folder

    def check(self, what: str) -> None:
        """Raise :func:`folder_gone` when the directory is :meth:`gone`."""
        if self.gone():
            raise folder_gone(self.path, what)

    def get(self) -> ClientAPI:
        """The client, opened now if it is not yet.

        Raises:
            StoreError: When the directory or Chroma's database cannot be opened, or the
                directory is :meth:`gone`.
        """
        if self._client is None:
            self.check("open Chroma")
            self._client = persistent_client(self.path)
        return self._client

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


def folder_gone(path: Path, what: str) -> StoreError:
    """The error of a store whose folder was deleted (or replaced) while in use."""
    return StoreError(
        f"the store's folder {path} is gone: it was deleted (or replaced) while this process "
        f"used it, so this store object cannot {what}. Open the store again "
        f"(MemoryStore.persistent({str(path)!r})) to start a new, empty one there."
    )


LOCK_FILE = ".lrm-process.lock"
"""The file in an embedded store's directory that the process using it holds locked."""
_held_locks: dict[Path, Any] = {}
_clients: dict[Path, Any] = {}
_folders: dict[Path, tuple[int | None, tuple[int, int]]] = {}
"""Each directory the process opened: a descriptor held open on it (None where a
directory cannot be opened, as on Windows) and its identity (device, inode). While the
descriptor is open the inode is not reused: a directory made again at the path differs."""
_held_lock = threading.RLock()


def path_identity(path: Path) -> tuple[int, int] | None:
    """The (device, inode) of ``path`` (None: nothing is there)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def hold_folder(path: Path) -> tuple[int, int]:
    """The identity of the directory at ``path`` (resolved), held from now on.

    When the directory the process held at ``path`` was deleted or replaced, everything
    the process kept of it goes first: its Chroma client (closed, and chromadb's system
    for the path dropped), its lock file and descriptor. Call with ``_held_lock`` held.

    Raises:
        OSError: When there is no directory at ``path``.
    """
    now = path_identity(path)
    held = _folders.get(path)
    if held is not None and held[1] == now:
        return held[1]
    if held is not None:
        _forget_folder(path)
    fd: int | None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # pragma: no cover - Windows cannot open a directory
        fd = None
    try:
        found = os.fstat(fd) if fd is not None else os.stat(path)
    except OSError:
        if fd is not None:
            os.close(fd)
        raise
    identity = (found.st_dev, found.st_ino)
    _folders[path] = (fd, identity)
    _release_at_exit()
    return identity


def _forget_folder(path: Path) -> None:
    """Drop what the process kept of a directory that was deleted or replaced."""
    client = _clients.pop(path, None)
    if client is not None:
        logger.info(
            "the embedded store's folder %s was deleted or replaced while this process used "
            "it: its Chroma client is closed, and the store opened there now starts anew",
            path,
        )
        _close_client(client)
    handle = _held_locks.pop(path, None)
    if handle is not None:
        handle.close()
    fd, _ = _folders.pop(path, (None, None))
    if fd is not None:
        os.close(fd)


def _close_client(client: Any) -> None:
    """Close a chromadb client and drop chromadb's shared system of its directory.

    chromadb keeps one system per directory for the process; another client of the same
    directory would keep it (and so the deleted directory's files) alive otherwise.
    """
    try:
        client.close()
    except Exception as exc:  # a client of a deleted directory may fail to close
        logger.debug("closing the Chroma client of a deleted folder failed: %s", exc)
    try:
        from chromadb.api.shared_system_client import SharedSystemClient

        identifier = getattr(client, "_identifier", None)
        if identifier is not None:
            SharedSystemClient._identifier_to_system.pop(identifier, None)
            SharedSystemClient._identifier_to_refcount.pop(identifier, None)
    except Exception as exc:  # pragma: no cover - another chromadb layout
        logger.debug("chromadb's system of a deleted folder not dropped: %s", exc)


_at_exit = False


def _release_at_exit() -> None:
    """Close the lock files and descriptors at interpreter exit (once registered)."""
    global _at_exit
    if not _at_exit:
        _at_exit = True
        atexit.register(_release_all)


def _release_all() -> None:
    """Close every lock file and directory descriptor the process holds (at exit)."""
    with _held_lock:
        for handle in _held_locks.values():
            if handle is not None:
                handle.close()
        _held_locks.clear()
        for fd, _ in _folders.values():
            if fd is not None:
                os.close(fd)
        _folders.clear()


def warn_if_shared(path: Path) -> bool:
    """Warn when another process has the embedded store at ``path`` open; whether it has.

    Chroma's embedded mode does not promise that several processes can use one directory
    at once (each process keeps its own caches and indexes). Each process holds an
    advisory lock (``flock``) on :data:`LOCK_FILE` while it has the store open; a second
    process finds it taken and is warned to use a Chroma server instead. The lock is
    released (its file closed) when the process exits. (On platforms without ``fcntl``
    nothing is checked.)
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return False
    key = path.resolve()
    with _held_lock:
        if key in _held_locks:
            return False
        handle = open(key / LOCK_FILE, "a")  # noqa: SIM115 - held for the process's life
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            _held_locks[key] = None  # warned once per process and path
            logger.warning(
                "another process has the embedded Chroma store at %s open. Chroma does not "
                "promise that several processes can share an embedded store; run a server "
                "(chroma run --path %s) and connect every process with MemoryStore.http().",
                key,
                key,
            )
            return True
        _held_locks[key] = handle
        _release_at_exit()
        return False


def in_memory_client() -> ClientAPI:
    """Return an embedded ``EphemeralClient`` (shared by the whole process, in chromadb)."""
    import chromadb
    from chromadb.config import Settings

    return chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))


def in_memory_prefix() -> str:
    """Return a fresh, random collection prefix (a new, empty in-memory store)."""
    return f"mem{uuid.uuid4().hex[:12]}"


def http_client(
    host: str, port: int, *, ssl: bool, headers: Mapping[str, str] | None, timeout: float
) -> ClientAPI:
    """Connect to a Chroma server, after checking that it answers (see :func:`probe`).

    Raises:
        ConfigurationError: For a timeout that is not positive.
        StoreError: When the server does not answer.
    """
    import chromadb
    from chromadb.config import Settings

    if timeout <= 0:
        raise ConfigurationError.for_value("timeout", timeout, "must be > 0")
    probe(host, port, ssl=ssl, headers=headers, timeout=timeout)
    try:
        return chromadb.HttpClient(
            host=host,
            port=port,
            ssl=ssl,
            headers=dict(headers) if headers else None,
            settings=Settings(anonymized_telemetry=False),
        )
    except Exception as exc:
        raise StoreError(f"cannot reach the Chroma server at {host}:{port}: {exc}") from exc


def probe(
    host: str, port: int, *, ssl: bool, headers: Mapping[str, str] | None, timeout: float
) -> None:
    """Check that a Chroma server answers its heartbeat within ``timeout`` seconds.

    chromadb's ``HttpClient`` talks to the server while it is being built, with no timeout;
    probing first turns a dead or stalled server into a prompt ``StoreError``.

    Raises:
        StoreError: When the heartbeat fails or takes too long.
    """
    import httpx

    url = f"{'https' if ssl else 'http'}://{host}:{port}/api/v2/heartbeat"
    try:
        response = httpx.get(url, headers=dict(headers or {}), timeout=timeout)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        raise StoreError(
            f"the Chroma server at {host}:{port} did not answer its heartbeat within "
            f"{timeout}s: {type(exc).__name__}: {exc}"
        ) from exc


def set_http_timeout(client: Any, timeout: float) -> None:
    """Give chromadb's HTTP session a timeout (its default waits forever)."""
    if isinstance(client, LazyClient):  # embedded: no HTTP
        return
    import httpx

    server = getattr(client, "_server", None)
    session = getattr(server, "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(timeout)


def client_identity(client: Any) -> str:
    """Return a string naming the database a client talks to (path, or server address)."""
    if isinstance(client, LazyClient):
        return client.identity
    settings = getattr(client, "get_settings", None)
    try:
        conf = settings() if callable(settings) else None
    except Exception:
        conf = None
    if conf is not None:
        # chromadb reads CHROMA_SERVER_HOST/PORT from the environment into every client's
        # settings, local ones too: what the client is says which database it talks to.
        remote = "fastapi" in str(getattr(conf, "chroma_api_impl", "")).lower()
        if remote and getattr(conf, "chroma_server_host", None):
            return f"http://{conf.chroma_server_host}:{conf.chroma_server_http_port}"
        if not remote and getattr(conf, "is_persistent", False):
            return f"file:{Path(conf.persist_directory).resolve()}"
    return f"client:{id(client)}"


def _transient(exc: Exception) -> bool:
    """Whether a failure is worth retrying (network trouble, not a rejected request)."""
    import httpx

    return isinstance(exc, httpx.TransportError | ConnectionError | TimeoutError)


def _store_error(what: str, exc: Exception, attempts: int) -> StoreError:
    """The error a Chroma call that failed for good raises."""
    return StoreError(f"Chroma failed to {what}: {type(exc).__name__}: {exc}")


# -- the client as the repositories use it ----------------------------------------------


class StoreClient:
    """A chromadb client with retried calls, schema-checked collections and batch limits.

    Args:
        client: A chromadb client.
        retry: How transient network failures are retried.
        opened: Collections already opened, by name (shared by the store objects of a
            process over one database: a new store object opens nothing again).

    Attributes:
        client: The chromadb client.
        retry: The retry policy (read at every call).
        max_batch: The most records one write may carry, once known (0: ask Chroma).
    """

    def __init__(
        self,
        client: ClientAPI | LazyClient,
        retry: RetryPolicy | None = None,
        opened: dict[str, Any] | None = None,
    ) -> None:
        self.client = client
        self.retry = retry or DEFAULT_RETRY
        self.max_batch = 0
        self._opened: dict[str, Any] = opened if opened is not None else {}

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """Run a Chroma call; retry transient network failures with bounded backoff.

        Every write is idempotent (fixed ids, insert-if-absent), so a retry after a
        timeout whose request did land changes nothing.

        Args:
            what: What the call does, for the error message ("append turns").
            fn: The call.

        Raises:
            RecursiveMemoryError: Raised by ``fn`` itself, unchanged.
            StoreError: When the call failed for good, chained to the last failure.
        """
        retrying = Retrying(self.retry, partial(_store_error, what), _transient)
        while True:
            try:
                return fn()
            except RecursiveMemoryError:
                raise
            except Exception as exc:
                if isinstance(self.client, LazyClient) and self.client.gone():
                    raise folder_gone(self.client.path, what) from exc
                delay = retrying.failed(exc)
                logger.info("Chroma call %r failed (%s); retrying", what, exc)
                time.sleep(delay)

    def collection(self, name: str, **options: Any) -> Any:
        """Open (or create) collection ``name`` and check its schema version.

        chromadb's ``Collection`` type is precise beyond use here (numpy unions), hence
        ``Any``.

        Raises:
            StoreError: When it cannot be opened, or was written with another schema.
        """
        found_open = self._opened.get(name)
        if found_open is not None:
            return found_open
        col = self.call(
            f"open collection {name!r}",
            lambda: self.client.get_or_create_collection(
                name, embedding_function=None, metadata={"lrm_schema": SCHEMA}, **options
            ),
        )
        found = (col.metadata or {}).get("lrm_schema")
        if found != SCHEMA:
            raise StoreError(
                f"collection {name!r} has lrm_schema={found!r}, this version needs {SCHEMA}: "
                "it was written by a development version; use another prefix or path"
            )
        self._opened[name] = col
        return col

    def forget_collection(self, name: str) -> None:
        """Forget an opened collection (it was renamed or deleted)."""
        self._opened.pop(name, None)

    def collection_names(self) -> list[str]:
        """Return the names of every collection of the database."""
        items = self.call("list collections", lambda: self.client.list_collections())
        return [item if isinstance(item, str) else item.name for item in items]

    def batch_size(self) -> int:
        """Return the most records Chroma accepts in one write."""
        if not self.max_batch:
            try:
                self.max_batch = int(self.client.get_max_batch_size())
            except Exception:
                self.max_batch = 1000
        return max(1, self.max_batch)
