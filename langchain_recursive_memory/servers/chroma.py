"""A local ``chroma run`` server, for development, tests and benchmarks.

Production deployments run Chroma themselves (a container, a service); this starts one
on ``127.0.0.1`` as a child process, waits for its heartbeat and stops it again, so that
code can be tried against server mode without any setup.

Example:
    >>> from langchain_recursive_memory.servers import free_port
    >>> 1024 < free_port() < 65536
    True

Usage (a real server process)::

    with LocalChromaServer(tmp_path) as server:
        store = MemoryStore.http(server.host, server.port, database=url)
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from ..core.errors import StoreError

__all__ = ["HEARTBEAT_SECONDS", "LocalChromaServer", "free_port", "wait_for_heartbeat"]

HEARTBEAT_SECONDS = 30.0
"""How long :meth:`LocalChromaServer.start` waits for the server to answer."""
_POLL_SECONDS = 0.2
_STOP_SECONDS = 10.0


def free_port() -> int:
    """A TCP port nothing listens on now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_heartbeat(
    port: int, timeout: float = HEARTBEAT_SECONDS, host: str = "127.0.0.1"
) -> None:
    """Wait until a Chroma server answers its heartbeat on ``host:port``.

    Raises:
        StoreError: When none answered within ``timeout`` seconds.
    """
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"http://{host}:{port}/api/v2/heartbeat", timeout=1.0).is_success:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise StoreError(f"no Chroma server answered on {host}:{port} within {timeout}s")
        time.sleep(_POLL_SECONDS)


class LocalChromaServer:
    """A ``chroma run`` child process on 127.0.0.1 (started, stopped and restarted).

    Args:
        path: The server's data directory (its log goes to ``path/server.log``).
        port: The port (default: a free one). A restart keeps the port and the data.
    """

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path = Path(path)
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> LocalChromaServer:
        """Start the server and wait for its heartbeat.

        Raises:
            StoreError: When it did not answer in time.
        """
        chroma = shutil.which("chroma", path=str(Path(sys.executable).parent)) or "chroma"
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / "server.log", "ab") as log:
            self.process = subprocess.Popen(
                [
                    chroma,
                    "run",
                    "--path",
                    str(self.path),
                    "--host",
                    self.host,
                    "--port",
                    str(self.port),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_for_heartbeat(self.port, host=self.host)
        return self

    def stop(self) -> None:
        """Stop the server (terminate, then kill after 10 s)."""
        process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(_STOP_SECONDS)

    def __enter__(self) -> LocalChromaServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
