from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from langchain_recursive_memory.core import MemoryStore, RetryPolicy

# Never touch a developer's real store from the tests.
os.environ.setdefault("LANGCHAIN_RECURSIVE_MEMORY_PATH", "/nonexistent/lrm-tests-must-pass-a-path")

FAST_RETRY = RetryPolicy(attempts=2, initial_delay=0.0, timeout=5.0, cooldown=0.0)


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore.in_memory()


@pytest.fixture
def fast_retry() -> RetryPolicy:
    return FAST_RETRY


@pytest.fixture(autouse=True)
def _fresh_session_caches():
    """Fold cool-downs and caches are shared per session in a process; tests start clean."""
    from langchain_recursive_memory.core.cache import clear_caches

    clear_caches()
    yield
    clear_caches()


# -- a real Chroma server (`chroma run`) for the tests marked `server` -----------------------


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_heartbeat(port: int, timeout: float = 30.0) -> None:
    import time

    import httpx

    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1.0).is_success:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"no Chroma server answered on port {port}")
        time.sleep(0.2)


class ChromaServer:
    """A `chroma run` process on 127.0.0.1 (started, stopped and restarted by pid)."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path = path
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.process: object = None

    def start(self) -> ChromaServer:
        import shutil
        import subprocess

        chroma = shutil.which("chroma", path=str(Path(sys.executable).parent)) or "chroma"
        log = open(self.path / "server.log", "ab")  # noqa: SIM115 - kept for the process
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
        wait_for_heartbeat(self.port)
        return self

    def stop(self) -> None:
        import subprocess

        process = self.process
        if isinstance(process, subprocess.Popen) and process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """The CI's server (CHROMA_SERVER_HOST/PORT, started by .ci/run), or one of our own."""
    host, port = os.environ.get("CHROMA_SERVER_HOST"), os.environ.get("CHROMA_SERVER_PORT")
    if host and port:
        yield host, int(port)
        return
    server = ChromaServer(tmp_path_factory.mktemp("chroma-server")).start()
    try:
        yield server.host, server.port
    finally:
        server.stop()


@pytest.fixture
def server_store(chroma_server) -> MemoryStore:
    """A store on the server, with a fresh collection prefix per test."""
    import uuid

    host, port = chroma_server
    return MemoryStore.http(host, port, prefix=f"t{uuid.uuid4().hex[:12]}")
