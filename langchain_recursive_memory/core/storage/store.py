"""The facade: :class:`MemoryStore`, one object over the store's repositories."""

from __future__ import annotations

import os
import time
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..cache import CacheLimits, StoreCaches
from ..errors import ConfigurationError, InvalidInputError
from ..events import Event, TurnNote
from ..facts import Fact, merge_fact
from ..runtime.retry import RetryPolicy
from ..turn import Turn, turn_list
from ..usage import Usage, UsageRecord
from ..validation import check_text, check_tokens
from . import client as chroma_client
from .client import StoreClient
from .facts import FactTable
from .keys import (
    Scope,
    UserScope,
    owned_fact_record_id,
    user_owned,
    validate_prefix,
)
from .lifecycle import SessionLifecycle
from .nodes import EventNodes, TurnNodes
from .records import SessionState, StoredTurn, Summary, VectorRecord
from .sessions import SessionList
from .summaries import SummaryLog
from .turns import TurnLog
from .usage import UsageLog
from .users import UserList
from .vectors import VectorSpaces

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = ["MemoryStore"]


class MemoryStore(SessionLifecycle):
    """Chroma-backed storage of turns, summaries, facts, HiGMem nodes, vectors and usage.

    Use a factory, or pass any chromadb client:

    * :meth:`persistent` (the default of the memories): an embedded
      ``PersistentClient`` at :func:`~.client.default_path` or a given path;
    * :meth:`in_memory`: an embedded ``EphemeralClient`` (tests, demos);
    * :meth:`http`: a Chroma server (``chroma run``) through ``HttpClient``;
    * ``MemoryStore(client)``: any chromadb ``ClientAPI``.

    Every method taking a namespace and session id validates them first
    (:func:`~.keys.validate_scope`) and raises ``InvalidInputError`` for bad ones; a
    failed Chroma call raises ``StoreError``.

    Args:
        client: A chromadb client.
        prefix: Collection name prefix (letters, digits, ``.``, ``_``, ``-``).
        http_timeout: Seconds any one HTTP request to a Chroma server may take.
        retry: How transient network failures are retried.
        cache: How much this store's caches keep (:class:`~..cache.CacheLimits`: 256
            sessions and 256 MiB by default).

    Attributes:
        client: The chromadb client.
        prefix: The collection name prefix.
        identity: A string naming the database (path or server address).
        caches: What the engines keep between calls, for this store only
            (:class:`~..cache.StoreCaches`).

    Raises:
        ConfigurationError: For a bad prefix or timeout.
        StoreError: When the collections cannot be opened.
    """

    def __init__(
        self,
        client: ClientAPI,
        *,
        prefix: str = "lrm",
        http_timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        cache: CacheLimits | None = None,
    ) -> None:
        validate_prefix(prefix)
        if http_timeout <= 0:
            raise ConfigurationError.for_value("http_timeout", http_timeout, "must be > 0")
        # chromadb's HttpClient waits forever by default; every request gets a timeout here.
        chroma_client.set_http_timeout(client, http_timeout)
        self.client = client
        self.prefix = prefix
        self.identity = chroma_client.client_identity(client)
        self.caches = StoreCaches(cache)
        self._chroma = StoreClient(client, retry)
        self._turn_log = TurnLog(self._chroma, prefix)
        self._sessions = SessionList(self._chroma, prefix)
        self._summary_log = SummaryLog(self._chroma, prefix, on_cleared=self._sessions.forget)
        self._facts = FactTable(self._chroma, prefix)
        self._notes = TurnNodes(self._chroma, prefix)
        self._events = EventNodes(self._chroma, prefix)
        self._usage = UsageLog(self._chroma, prefix)
        self._vector_spaces = VectorSpaces(self._chroma, prefix)
        self._users = UserList(self._chroma, prefix)

    @property
    def retry(self) -> RetryPolicy:
        """How transient network failures of Chroma calls are retried."""
        return self._chroma.retry

    @retry.setter
    def retry(self, policy: RetryPolicy) -> None:
        self._chroma.retry = policy

    # -- construction -------------------------------------------------------------------

    @classmethod
    def persistent(cls, path: str | os.PathLike[str] | None = None, **kwargs: Any) -> MemoryStore:
        """Open (or create) an embedded, persistent store.

        Args:
            path: The directory; defaults to :func:`~.client.default_path`.
            **kwargs: Passed to the constructor (``prefix``).
        """
        return cls(chroma_client.persistent_client(path), **kwargs)

    @classmethod
    def in_memory(cls, **kwargs: Any) -> MemoryStore:
        """Create an embedded store that lives in this process only.

        Each call gets a fresh, empty store (collections get a random prefix unless
        ``prefix`` is given), because chromadb shares one in-memory system per process.
        """
        kwargs.setdefault("prefix", chroma_client.in_memory_prefix())
        return cls(chroma_client.in_memory_client(), **kwargs)

    @classmethod
    def http(
        cls,
        host: str = "localhost",
        port: int = 8000,
        *,
        ssl: bool = False,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        **kwargs: Any,
    ) -> MemoryStore:
        """Connect to a Chroma server (``chroma run --host H --port P``).

        Args:
            host: Server host.
            port: Server port.
            ssl: Use HTTPS.
            headers: Extra HTTP headers (authentication).
            timeout: Seconds any one HTTP request may take (chromadb's own default waits
                forever).
            **kwargs: Passed to the constructor (``prefix``).
        """
        client = chroma_client.http_client(host, port, ssl=ssl, headers=headers, timeout=timeout)
        kwargs.setdefault("http_timeout", timeout)
        return cls(client, **kwargs)

    # -- turns ---------------------------------------------------------------------------

    def append(
        self,
        namespace: str,
        session_id: str,
        turns: Sequence[Turn],
        tokens: Sequence[int],
        encoding: str,
    ) -> list[StoredTurn]:
        """Write turns to the log; durable when this returns.

        Turns without an id get a new, time-ordered one. A turn whose id is already stored
        in this session is not written again (the earlier record wins); repeated ids within
        ``turns`` keep the first.

        Args:
            namespace: The namespace.
            session_id: The session.
            turns: The turns, in conversation order.
            tokens: Each turn's token count.
            encoding: The encoding the counts were made with.

        Returns:
            The turns as written, with ids, creation times and order keys.

        Raises:
            InvalidInputError: For a bad scope or mismatched lengths.
            StoreError: When Chroma rejects the write (nothing was written).
        """
        scope = self._scope(namespace, session_id)
        turns = turn_list(turns)
        if isinstance(tokens, str) or not isinstance(tokens, Sequence):
            raise InvalidInputError.for_value("tokens", tokens, "must be a sequence of ints")
        for count in tokens:
            check_tokens("tokens", count)
        check_text("encoding", encoding)
        stored = self._turn_log.stamp(scope, turns, tokens, encoding)
        if stored:
            self._sessions.register(scope)
            self._turn_log.write(scope, stored)
        return stored

    def turns(self, namespace: str, session_id: str) -> list[StoredTurn]:
        """Return every logged turn of the session, oldest first (folded or not)."""
        return self._turn_log.log(Scope.of(namespace, session_id))

    def get_turns(
        self, namespace: str, session_id: str, turn_ids: Iterable[str]
    ) -> list[StoredTurn]:
        """Return the session's turns with the given ids, oldest first (missing ids skipped)."""
        return self._turn_log.by_ids(Scope.of(namespace, session_id), turn_ids)

    def count_turns(self, namespace: str, session_id: str) -> int:
        """Return how many turns the session's log holds."""
        return self._turn_log.count(Scope.of(namespace, session_id))

    # -- summaries -----------------------------------------------------------------------

    def latest_summary(self, namespace: str, session_id: str) -> Summary | None:
        """Return the session's latest summary version, or None."""
        return self._summary_log.latest(Scope.of(namespace, session_id))

    def summaries(self, namespace: str, session_id: str) -> list[Summary]:
        """Return every summary version of the session, oldest first."""
        return self._summary_log.versions(Scope.of(namespace, session_id))

    def load(self, namespace: str, session_id: str) -> SessionState:
        """Return the latest summary and the turns it does not cover, oldest first.

        The version hint is read first, then the unfolded turns, then every version at or
        above the hint: a fold committed in between can only make a turn appear both in a
        summary and in the window (never in neither, never folded twice). When the current
        question (the newest user message) is folded already, it is read too (by id, only
        then) as the state's ``question``: the context shows it while it is current.
        """
        scope = Scope.of(namespace, session_id)
        hint = self._summary_log.hint(scope)
        unfolded = self._turn_log.unfolded(scope)
        versions = self._summary_log.recent(scope, hint)
        named: set[str] = set()
        for v in versions:
            named.update(v.turn_ids)
        turns = tuple(t for t in unfolded if t.id not in named)
        repair = tuple(t.id for t in unfolded if t.id in named)
        latest = versions[-1] if versions else None
        question = None
        asked = latest.question_id if latest is not None else None
        if asked is not None and not any(t.turn.role == "user" for t in turns):
            found = self._turn_log.by_ids(scope, [asked])
            question = found[0] if found else None
        return SessionState(latest, turns, repair, question)

    def summaries_since(self, namespace: str, known: Mapping[str, int]) -> dict[str, list[Summary]]:
        """Each session's versions above the one known (session id -> version), in one read."""
        scopes = {sid: Scope.of(namespace, sid) for sid in known}
        found = self._summary_log.since({s.key: (s, known[sid]) for sid, s in scopes.items()})
        return {sid: found[s.key] for sid, s in scopes.items()}

    def unfolded_turns(
        self,
        namespace: str,
        session_ids: Sequence[str],
        known: Mapping[str, Container[str]] | None = None,
    ) -> dict[str, list[StoredTurn]]:
        """The unfolded turns of several sessions (session id -> oldest first), read together.

        ``known``: session id -> turn ids the caller holds; those are not read again.
        """
        scopes = {sid: Scope.of(namespace, sid) for sid in dict.fromkeys(session_ids)}
        keyed = {s.key: known.get(sid, ()) for sid, s in scopes.items()} if known else None
        found = self._turn_log.unfolded_of(list(scopes.values()), keyed)
        return {sid: found[s.key] for sid, s in scopes.items()}

    def settle(self, state: SessionState) -> SessionState:
        """Move turns that landed late after the summary's turns (see :meth:`TurnLog.settle`)."""
        return self._turn_log.settle(state)

    def claim_fold(self, namespace: str, session_id: str, holder: str, period: float) -> bool:
        """Claim (or renew) the session's fold lease for ``holder``; whether it holds it.

        One writer folds a session at a time: the others skip their fold while the lease
        is held. A lease lasts one to two ``period`` seconds unless renewed, so a holder
        that dies blocks folds for at most ``2 * period``.
        """
        scope = self._scope(namespace, session_id)
        return self._summary_log.claim_lease(scope, holder, period, time.time())

    def release_fold(self, namespace: str, session_id: str, holder: str, period: float) -> None:
        """Give up ``holder``'s fold lease (see :meth:`claim_fold`)."""
        scope = Scope.of(namespace, session_id)
        self._summary_log.release_lease(scope, holder, period, time.time())

    def commit_summary(self, new: Summary, repair_ids: Sequence[str] = ()) -> bool:
        """Write summary version ``new`` if no other writer has written that version.

        On success the folded turns (``new.turn_ids`` and ``repair_ids``) are flagged and the
        session's ``current`` hint advances. A crash between those steps is repaired by the
        next load and the next fold (see :meth:`load`).

        Returns:
            True if this call wrote the version; False if another writer had (reload).
        """
        scope = self._scope(new.namespace, new.session_id)
        if not self._summary_log.try_commit(scope, new):
            return False
        flagged = dict.fromkeys(repair_ids, new.version)
        flagged.update(dict.fromkeys(new.turn_ids, new.version))
        self._turn_log.flag_folded(scope, flagged)
        self._summary_log.advance_hint(scope, new)
        return True

    # -- facts ---------------------------------------------------------------------------

    def upsert_facts(self, namespace: str, session_id: str, facts: Sequence[Fact]) -> list[Fact]:
        """Store facts, each *updating* the stored fact with the same key (if any).

        The facts of a session that belongs to a user are the user's: each updates the
        user's fact of its key (:func:`~..facts.merge_user_fact`), whichever session
        stated it before.

        Returns:
            The facts as stored (merged with their earlier versions).
        """
        scope = Scope.of(namespace, session_id)
        if not facts:
            return []
        user = self.session_user(namespace, session_id)
        if user is not None:
            return self._upsert_user_facts(Scope.of(namespace, session_id, user), facts)
        stored = self._facts.get(scope, self._facts.ids(scope, facts))
        existing = {f.key: f for f in stored}
        merged = [merge_fact(existing.get(f.key), f) for f in facts]
        self._facts.put(scope, merged)
        return merged

    def get_facts(
        self, namespace: str, session_id: str, *, ids: Sequence[str] | None = None
    ) -> list[Fact]:
        """Return the facts the session sees (or those with the given record ids), oldest first.

        Those are its own and, when it belongs to a user, the user's (learned in any of the
        user's sessions); a key both have is the user's.
        """
        scope = Scope.of(namespace, session_id)
        user = self.session_user(namespace, session_id)
        if user is None:
            return self._facts.get(scope, ids)
        owner = UserScope.of(namespace, user)
        if ids is None:
            own, theirs = self._facts.get(scope), self._facts.get(owner)
        else:
            mine = [i for i in ids if user_owned(owner.key, i)]
            rest = [i for i in ids if not user_owned(owner.key, i)]
            own = self._facts.get(scope, rest) if rest else []
            theirs = self._facts.get(owner, mine) if mine else []
        keys = {f.key for f in theirs}
        out = [*(f for f in own if f.key not in keys), *theirs]
        out.sort(key=lambda f: (f.created_at, f.key))
        return out

    def fact_record_id(self, namespace: str, session_id: str, fact: Fact) -> str:
        """The Chroma id of a fact's record (also used for its vector): the user's, if any."""
        user = self.session_user(namespace, session_id)
        return owned_fact_record_id(namespace, session_id, user, fact.key_hash)

    # -- vectors (derived: rebuildable from turns and facts) -------------------------------

    def vector_ids(self, space: str, ids: Sequence[str]) -> set[str]:
        """Return which of the record ids already have a vector in ``space``."""
        return self._vector_spaces.existing(ids, space)

    def _owners(
        self, namespace: str, session_id: str, ids: Sequence[str]
    ) -> list[tuple[Scope | UserScope, list[int]]]:
        """Which of ``ids`` (by position) are the session's and which its user's own."""
        scope = self._scope(namespace, session_id)
        user = self.session_user(namespace, session_id)
        if user is None:
            return [(scope, list(range(len(ids))))]
        owner = UserScope.of(namespace, user)
        theirs = [i for i, rid in enumerate(ids) if user_owned(owner.key, rid)]
        taken = set(theirs)
        return [(scope, [i for i in range(len(ids)) if i not in taken]), (owner, theirs)]

    def add_vectors(
        self, space: str, namespace: str, session_id: str, records: Sequence[VectorRecord]
    ) -> None:
        """Write (or overwrite) vector records of the session in the ``space`` collection.

        The vectors of its user's facts are written as the user's own.
        """
        for owner, positions in self._owners(namespace, session_id, [r.id for r in records]):
            self._vector_spaces.put(space, owner, [records[i] for i in positions])

    def vectors_by_ids(
        self, space: str, namespace: str, session_id: str, ids: Sequence[str]
    ) -> list[VectorRecord]:
        """Return the session's vector records with the given record ids (missing ids skipped).

        Reads by id cost the same however large the collection is, unlike filtered reads.
        The vectors of its user's facts are found too.
        """
        out: list[VectorRecord] = []
        for owner, positions in self._owners(namespace, session_id, ids):
            if positions:
                out.extend(self._vector_spaces.by_ids(space, owner, [ids[i] for i in positions]))
        return out

    def put_notes(
        self, namespace: str, session_id: str, notes: Sequence[TurnNote], head: str | None = None
    ) -> None:
        """Write (or overwrite) turn nodes; with ``head``, set the index head token too."""
        self._notes.put_with_head(self._scope(namespace, session_id), notes, head)

    def index_heads(self, namespace: str, session_ids: Sequence[str]) -> dict[str, str | None]:
        """Each session's HiGMem index head token (None: none), in one read."""
        scopes = {sid: Scope.of(namespace, sid) for sid in dict.fromkeys(session_ids)}
        found = self._notes.heads(list(scopes.values()))
        return {sid: found[s.key] for sid, s in scopes.items()}

    def close_turns(self, namespace: str, session_id: str, turn_ids: Sequence[str]) -> None:
        """Mark turns as absorbed by HiGMem's index: they leave :meth:`unfolded_turns`."""
        self._turn_log.flag_folded(Scope.of(namespace, session_id), dict.fromkeys(turn_ids))

    def get_notes(self, namespace: str, session_id: str) -> list[TurnNote]:
        """Return the session's turn nodes (in no particular order)."""
        return self._notes.get(Scope.of(namespace, session_id))

    def put_events(self, namespace: str, session_id: str, events: Sequence[Event]) -> None:
        """Write (or overwrite) event nodes."""
        self._events.put(self._scope(namespace, session_id), events)

    def get_events(self, namespace: str, session_id: str) -> list[Event]:
        """Return the session's event nodes, oldest first."""
        return self._events.get(Scope.of(namespace, session_id))

    # -- upkeep usage (append-only: one record per operation that called a model) ---------

    def add_usage(self, records: Sequence[UsageRecord]) -> None:
        """Append usage records (LLM calls and tokens of memory upkeep)."""
        self._usage.add(records, self._scope)

    def usage(self, namespace: str, session_id: str) -> dict[str, Usage]:
        """Return the session's upkeep spend, per purpose (``"fold"``, ``"higmem-index"``...)."""
        return self._usage.totals(Scope.of(namespace, session_id))
