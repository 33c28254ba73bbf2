"""A local PostgreSQL server, for development, tests and benchmarks.

Production deployments run PostgreSQL themselves; this makes a throwaway cluster
(``initdb`` into a temporary directory, trust authentication, superuser ``postgres``),
starts ``postgres`` on ``127.0.0.1`` at a free port as a child process (``fsync`` on),
waits until it accepts connections, creates a database and gives its URL. PostgreSQL
refuses to run as root: as root, ``initdb`` and ``postgres`` run as the ``postgres``
user (``runuser``, else ``su``), which owns the directory. The binaries are found on
``PATH`` or in the newest ``/usr/lib/postgresql/*/bin`` (:func:`find_bindir`). psycopg
(the ``[postgres]`` extra) is imported only to start a server.

From a shell (prints the URL and the pid file, stops on SIGINT or SIGTERM)::

    python -m langchain_recursive_memory.servers.postgres --url-file url.txt
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from ..core.errors import StoreError
from .chroma import free_port

__all__ = ["READY_SECONDS", "LocalPostgres", "find_bindir", "main"]

READY_SECONDS = 30.0
"""How long :meth:`LocalPostgres.start` waits for the server to accept connections."""
_POLL_SECONDS = 0.1
_STOP_SECONDS = 15.0
_OS_USER = "postgres"
_SUPERUSER = "postgres"


def find_bindir() -> Path | None:
    """The directory of ``initdb`` and ``postgres`` (``PATH``, then Debian's), or None."""
    found = shutil.which("initdb")
    if found is not None:
        return Path(found).parent
    versions = [
        p / "bin"
        for p in Path("/usr/lib/postgresql").glob("*")
        if p.name.isdigit() and (p / "bin" / "initdb").exists()
    ]
    return max(versions, key=lambda p: int(p.parent.name), default=None)


class LocalPostgres:
    """A throwaway PostgreSQL cluster and server on 127.0.0.1 (started, then removed).

    Args:
        database: The database to create (in the URL).
        port: The port (default: a free one).
        bindir: Where ``initdb`` and ``postgres`` are (default: :func:`find_bindir`).

    Attributes:
        url: ``postgresql+psycopg://postgres@127.0.0.1:PORT/DATABASE`` once started.
        path: The temporary directory (cluster in ``data``, log in ``server.log``).
        pid_file: The server's ``postmaster.pid``.

    Example::

        with LocalPostgres() as pg:  # a real server: no doctest
            store = MemoryStore(chromadb.EphemeralClient(), database=pg.url)
    """

    def __init__(
        self, database: str = "lrm", port: int | None = None, bindir: Path | None = None
    ) -> None:
        self.database = database
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.bindir = bindir
        self.url = ""
        self.path: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid_file(self) -> Path | None:
        """The server's ``postmaster.pid`` (None before :meth:`start`)."""
        return None if self.path is None else self.path / "data" / "postmaster.pid"

    def start(self) -> LocalPostgres:
        """Create the cluster, start the server, wait for it and create the database.

        Raises:
            StoreError: When the binaries are missing, ``initdb`` failed, or the server
                did not accept connections in time (the port and the log are named).
        """
        if importlib.util.find_spec("psycopg") is None:
            raise ImportError(
                'LocalPostgres needs psycopg: pip install "langchain-recursive-memory[postgres]"'
            )
        bindir = self.bindir or find_bindir()
        if bindir is None:
            raise StoreError("PostgreSQL's initdb was found neither on PATH nor in /usr/lib")
        self.path = Path(tempfile.mkdtemp(prefix="lrm-pg-"))
        try:
            self._start(bindir, self.path)
        except BaseException:
            self.stop(keep_log=True)  # the error names the log: it stays
            raise
        return self

    def _start(self, bindir: Path, path: Path) -> None:
        as_user = _as_postgres()
        if as_user:
            import pwd

            entry = pwd.getpwnam(_OS_USER)
            os.chown(path, entry.pw_uid, entry.pw_gid)
        data = path / "data"
        init = [str(bindir / "initdb"), "-D", str(data), "-U", _SUPERUSER, "-A", "trust"]
        init += ["-E", "UTF8", "--no-locale", "--no-sync"]  # the server itself fsyncs
        done = subprocess.run(
            as_user + init, cwd=path, capture_output=True, timeout=120, check=False
        )
        if done.returncode != 0:
            output = (done.stdout + done.stderr).decode(errors="replace").strip()
            raise StoreError(f"initdb failed in {data} (exit {done.returncode}): {output}")
        server = [str(bindir / "postgres"), "-D", str(data), "-h", self.host]
        server += ["-p", str(self.port), "-k", str(path)]
        with open(path / "server.log", "ab") as log:
            self.process = subprocess.Popen(
                as_user + server, cwd=path, stdout=log, stderr=subprocess.STDOUT
            )
        self._wait_ready()
        self.url = f"postgresql+psycopg://{_SUPERUSER}@{self.host}:{self.port}/{self.database}"

    def _wait_ready(self) -> None:
        """Connect (2 s a try, 30 s in all) and create the database."""
        import psycopg
        from psycopg import sql

        deadline = time.monotonic() + READY_SECONDS
        while self.process is not None and self.process.poll() is None:
            try:
                conn = psycopg.connect(
                    host=self.host, port=self.port, user=_SUPERUSER, connect_timeout=2
                )
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    what = f"did not accept connections within {READY_SECONDS}s ({exc})"
                    raise self._failure(what) from exc
                time.sleep(_POLL_SECONDS)
                continue
            with conn:
                conn.autocommit = True
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.database)))
            return
        raise self._failure("exited while starting")

    def _failure(self, what: str) -> StoreError:
        """The error naming the port, the log file and the log's last lines."""
        log = self.path / "server.log" if self.path else None
        try:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-8:]) if log else ""
        except OSError:
            tail = ""
        return StoreError(f"PostgreSQL on {self.host}:{self.port} {what}; its log {log}:\n{tail}")

    def stop(self, *, keep_log: bool = False) -> None:
        """Shut the server down (fast shutdown, SIGINT) and remove its directory.

        Waits up to 15 s, then kills it (SIGQUIT, then SIGKILL). Safe to call twice.

        Args:
            keep_log: Remove only the cluster, leaving ``server.log`` (a failed start).
        """
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            pid_file = self.pid_file  # as root the child is runuser: signal the postmaster
            try:
                postmaster = int(pid_file.read_text().split()[0]) if pid_file else process.pid
            except (OSError, ValueError, IndexError):
                postmaster = process.pid
            for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL):
                try:
                    os.kill(postmaster, sig)
                    process.wait(_STOP_SECONDS)
                    break
                except ProcessLookupError:
                    break
                except subprocess.TimeoutExpired:
                    continue
            if process.poll() is None:
                process.kill()
                process.wait(_STOP_SECONDS)
        if self.path is not None:
            shutil.rmtree(self.path / "data" if keep_log else self.path, ignore_errors=True)
            self.path = None

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _as_postgres() -> list[str]:
    """The command prefix that runs a program as the ``postgres`` user (empty: not root)."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    if runuser is not None:
        return [runuser, "-u", _OS_USER, "--"]
    su = shutil.which("su") or "su"
    return [su, _OS_USER, "-s", "/bin/sh", "-c", 'exec "$0" "$@"']


def main(argv: list[str] | None = None) -> int:
    """Start a server, print its URL and pid file, and run until SIGINT or SIGTERM.

    Args:
        argv: ``[--database NAME] [--url-file PATH]``: the URL is also written to
            ``PATH`` once the server accepts connections.

    Returns:
        0 after a requested stop, 1 when the server failed to start or died.
    """
    parser = argparse.ArgumentParser(description="Run a throwaway local PostgreSQL.")
    parser.add_argument("--database", default="lrm")
    parser.add_argument("--url-file", type=Path)
    args = parser.parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.default_int_handler)  # KeyboardInterrupt
    server = LocalPostgres(args.database)
    try:
        started = time.monotonic()
        server.start()
        print(server.url, server.pid_file, sep="\n", flush=True)
        print(f"started in {time.monotonic() - started:.2f}s", flush=True)
        if args.url_file is not None:
            partial = args.url_file.with_name(args.url_file.name + ".tmp")
            partial.write_text(server.url + "\n")
            partial.replace(args.url_file)  # readers never see half a URL
        status = server.process.wait() if server.process else 1
        print(f"PostgreSQL exited by itself ({status}); see {server.path}", flush=True)
        return 1
    except KeyboardInterrupt:
        return 0
    except StoreError as exc:
        print(exc, flush=True)
        return 1
    finally:
        server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
