"""The store: the log in a database, the facts and vectors in Chroma.

Two stores, each for what it does well:

* **A database** (SQLAlchemy 2; SQLite in the store's folder by default, any URL, such as
  PostgreSQL, for many workers) holds what needs order and atomicity: sessions and users,
  the turn log (the source of truth), summary versions, HiGMem's turn and event nodes,
  upkeep usage, leases and rebuild markers (:mod:`.schema` lists the tables).
* **Chroma** holds what is searched by similarity: the facts (``{prefix}_facts``, each
  naming its source turns) and, with an embedder, the vectors of turns, facts, windows and
  events (``{prefix}_vec_{space}``, one collection per embedder).

Everything but the turn log is derived state, rebuildable from it. Every read is scoped
to its session (and namespace): rows by the session's row, Chroma records by a key that
hashes namespace *and* session id (:mod:`.keys`), re-checked on both.

**How the memory stays fresh.** A process keeps, per session, what its reads rank (the
turns' index, HiGMem's nodes, the facts) in the store's caches. A read answers as a fresh
process would, by one rule: every cached value records the session's *head* it was built
from (:class:`~.records.SessionHead`: the session row's id and rebuild generation, the
order key of its newest turn, its newest summary version and HiGMem indexing, and its
facts counters), and every read reads the head first, one statement. Whatever the head
says moved is caught up with ``seq > last seen`` (``version > ...``, ``link > ...``);
a new row (the session was cleared and written again) or a new generation (a rebuild)
makes the value be read again whole. Every write of a session moves its head in the
writing transaction, and order keys are given out under the row's lock, so catching up
misses nothing. A user's sessions and their heads are one query.

Modules: :mod:`.schema` (tables), :mod:`.database` (engine, transactions, retries,
errors), one module per kind of row (:mod:`.sessions` with the users and heads,
:mod:`.turns`, :mod:`.summaries`, :mod:`.nodes`, :mod:`.usage`), Chroma's part
(:mod:`.client`, :mod:`.facts`, :mod:`.vectors`), :mod:`.user_facts` (merging a user's
facts), :mod:`.lifecycle` (list, expire, clear, forget), :mod:`.migrations` (a store of an
earlier release), :mod:`.session_store` (one session bound once: what the engines read
and write through), and :mod:`.store`, :class:`MemoryStore`, what applications call.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore, Turn
    >>> store = MemoryStore.in_memory()
    >>> session = store.session("default", "s1")  # what the engines write through
    >>> _ = session.turns.append([Turn(role="user", text="hi")], [5], "o200k_base")
    >>> [t.turn.text for t in session.summaries.load().turns]
    ['hi']
    >>> [t.turn.text for t in store.turns("default", "s1")]
    ['hi']
"""

from .client import default_path
from .keys import DEFAULT_NAMESPACE, session_key, text_hash, validate_session
from .records import (
    SessionHead,
    SessionInfo,
    SessionState,
    StoredTurn,
    Summary,
    UserInfo,
    VectorRecord,
)
from .session_store import SessionStore
from .store import MemoryStore, UserStore

__all__ = [
    "DEFAULT_NAMESPACE",
    "MemoryStore",
    "SessionHead",
    "SessionInfo",
    "SessionState",
    "SessionStore",
    "StoredTurn",
    "Summary",
    "UserInfo",
    "UserStore",
    "VectorRecord",
    "default_path",
    "session_key",
    "text_hash",
    "validate_session",
]
