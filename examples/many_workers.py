"""Several workers on one memory: a PostgreSQL database and a Chroma server.

Every worker (process, machine) opens the same two: the database keeps the log in order
(each append is one transaction, order keys given under the session's row lock), Chroma
keeps the facts and vectors. Here two "workers" (two store objects with caches of their
own) write one conversation and read the same context.

Run it against yours: ``LRM_DATABASE_URL=postgresql+psycopg://user:password@host/db``,
``CHROMA_SERVER_HOST`` and ``CHROMA_SERVER_PORT``; without them it starts a throwaway
PostgreSQL and ``chroma run`` of its own (the development helpers the tests use), which
needs PostgreSQL's binaries (``apt install postgresql``) and ``pip install
"langchain-recursive-memory[postgres]"``.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from contextlib import ExitStack

from langchain_recursive_memory.core import HybridMemory, MemoryStore, Turn
from langchain_recursive_memory.core.cache import StoreCaches


def servers(stack: ExitStack) -> tuple[str, int, str]:
    """The Chroma server and the database to use: yours (environment), or throwaway ones."""
    from langchain_recursive_memory.servers import LocalChromaServer, LocalPostgres

    host, port = os.environ.get("CHROMA_SERVER_HOST"), os.environ.get("CHROMA_SERVER_PORT")
    if not (host and port):
        folder = stack.enter_context(tempfile.TemporaryDirectory())
        chroma = stack.enter_context(LocalChromaServer(folder))
        host, port = chroma.host, str(chroma.port)
    url = os.environ.get("LRM_DATABASE_URL") or stack.enter_context(LocalPostgres()).url
    return host, int(port), url


def main() -> None:
    with ExitStack() as stack:
        chroma_host, chroma_port, database_url = servers(stack)
        prefix = f"demo{uuid.uuid4().hex[:8]}"  # a fresh set of tables and collections
        store = MemoryStore.http(chroma_host, chroma_port, database=database_url, prefix=prefix)
        worker_b = MemoryStore.http(
            chroma_host, chroma_port, database=database_url, prefix=prefix, cache=StoreCaches()
        )
        a = HybridMemory("ticket-7", store=store, max_tokens=400)
        b = HybridMemory("ticket-7", store=worker_b, max_tokens=400)
        a.add(Turn(role="user", text="My order number is 88-1234."))
        b.add(Turn(role="assistant", text="Thanks, I found order 88-1234."))
        for i in range(30):
            (a if i % 2 else b).add(Turn(role="user", text=f"Small talk number {i}."))
        question = "What is my order number?"
        assert a.context(question) == b.context(question)  # the same memory, any worker
        print(f"{store.count_turns('default', 'ticket-7')} turns, one log:")
        print(a.context(question).recalled[0].text)
        store.db.tables.metadata.drop_all(store.db.engine)  # clean up the demo
        store.close()
        worker_b.close()


if __name__ == "__main__":
    main()
