"""The Chroma store: the turn log, summaries, facts, HiGMem nodes, vectors and usage.

Layout (``prefix`` defaults to ``"lrm"``; one Chroma database can hold many prefixes):

``{prefix}_turns``
    The turn log, the source of truth. Append-only: a turn is written once (a second add
    with the same turn id is ignored by Chroma) and only its flags change afterwards
    (``folded``, and the ``open``/``hopen`` flags of the two chains). Document: the turn's
    text; metadata: namespace, session id, role, order key, token count, the flags, and the
    rest of the message as JSON.
``{prefix}_summaries``
    One record per summary version (``S_1, S_2, ...``), each naming the turns folded into it,
    a ``current`` record per session that points at a recent version (a hint for cold
    readers, never trusted blindly), each session's *stamp* record and HiGMem's *index
    links* (:mod:`.heads`), and the fold and user leases.
``{prefix}_facts``
    One record per fact key and session (or user), each naming its source turns.
``{prefix}_hg_turns`` and ``{prefix}_hg_events``
    HiGMem's turn nodes (one annotation per turn) and event nodes (summaries and fact
    sheets linking to turn ids).
``{prefix}_usage``
    Upkeep spend, one record per operation that called a model.
``{prefix}_sessions`` and ``{prefix}_users``
    One record per session (with its user, its settings, rebuild markers) and per user
    (the stamp of its facts).
``{prefix}_vec_{space}``
    The vectors of turns, facts, HiGMem windows and events, one collection per embedder.

Everything but the turn log is derived state, rebuildable from it. Every read filters on
the session key and re-checks namespace *and* session id (no API returns another
session's data, but another session of the same user when asked for the user's scope),
and record ids embed a hash of both (:mod:`.keys`), so equal session ids in two
namespaces never meet.

Concurrency: a summary version is written with Chroma's insert-if-absent ``add`` and read
back; the writer whose fold id is stored wins, the other discards its work and reloads
(a compare-and-set on the version number). After winning, the writer flags the folded
turns, then advances the ``current`` hint. A crash between those steps is repaired by the
next load and the next fold, because readers exclude the turns named by every version
newer than the hint. HiGMem's index links are written the same way.

**Freshness**: every cache of a process follows one rule, written in :mod:`.heads`.

Chroma never downloads its default embedding model here: every record is written with an
explicit embedding (a one-dimensional placeholder in the non-vector collections).

Modules: :mod:`.keys` (schema, ids, filters), :mod:`.records` (what reads return),
:mod:`.client` (the chromadb client and the retried call), one repository per collection
(:mod:`.turns`, :mod:`.summaries` and :mod:`.heads`, :mod:`.facts`, :mod:`.nodes`,
:mod:`.usage`, :mod:`.sessions`, :mod:`.users`, :mod:`.vectors`), :mod:`.repositories`
(all of them, opened together); over them, one home per rule: :mod:`.directory` (which
user each session belongs to), :mod:`.user_facts` (merging a user's facts),
:mod:`.markers` (rebuild progress), :mod:`.lifecycle` (list, expire, clear, forget),
:mod:`.frontier` (what a read checks of several sessions at once); :mod:`.session_store`
(one session bound once: what the engines read and write through), :mod:`.migrations`
(what an earlier release's store needs), and :mod:`.store`, :class:`MemoryStore`, what
applications call.

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
from .records import SessionInfo, SessionState, StoredTurn, Summary, UserInfo, VectorRecord
from .session_store import SessionStore
from .store import MemoryStore

__all__ = [
    "DEFAULT_NAMESPACE",
    "MemoryStore",
    "SessionInfo",
    "SessionState",
    "SessionStore",
    "StoredTurn",
    "Summary",
    "UserInfo",
    "VectorRecord",
    "default_path",
    "session_key",
    "text_hash",
    "validate_session",
]
