"""Development servers: a local ``chroma run`` and a throwaway PostgreSQL.

For development, tests, examples and benchmarks: each starts its server as a child
process on ``127.0.0.1`` at a free port, waits until it answers and removes it again, so
that a store over a Chroma server and PostgreSQL (``MemoryStore.http(host, port,
database=url)``) can be tried without any setup. Production deployments run both
themselves.

Example:
    >>> from langchain_recursive_memory.servers import free_port
    >>> 1024 < free_port() < 65536
    True
"""

from .chroma import HEARTBEAT_SECONDS, LocalChromaServer, free_port, wait_for_heartbeat
from .postgres import READY_SECONDS, LocalPostgres, find_bindir

__all__ = [
    "HEARTBEAT_SECONDS",
    "LocalChromaServer",
    "LocalPostgres",
    "READY_SECONDS",
    "find_bindir",
    "free_port",
    "wait_for_heartbeat",
]
