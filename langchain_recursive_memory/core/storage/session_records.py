"""The engines' protocol: :class:`SessionRecords`, one object over the store's repositories.

What the engines (:mod:`..engine`, :mod:`..recursive`, :mod:`..higmem`) and the adapters
read and write through: the turn log, summary versions and the fold lease, facts,
vectors, HiGMem's nodes, upkeep usage, which user a session belongs to, rebuild markers
and the derived state a rebuild drops. A :class:`~.store.MemoryStore` holds one
(``store.records``); applications use the store's own methods instead.

It is composed of two parts besides the repositories
(:class:`~.repositories.Repositories`): :attr:`SessionRecords.directory`
(:class:`~.users.UserDirectory`: users) and :attr:`SessionRecords.lifecycle`
(:class:`~.lifecycle.SessionLifecycle`: whole sessions and users).

Every method taking a namespace and session id validates them first
(:func:`~.keys.validate_session`) and raises ``InvalidInputError`` for bad ones; a failed
Chroma call raises ``StoreError``.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore, Turn
    >>> records = MemoryStore.in_memory().records
    >>> _ = records.append("default", "s1", [Turn(role="user", text="hi")], [5], "o200k_base")
    >>> [t.turn.text for t in records.load("default", "s1").turns]
    ['hi']
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..cache import StoreCaches, session_cache_key
from ..errors import InvalidInputError
from ..events import Event, TurnNode
from ..facts import Fact, merge_fact
from ..turn import Turn, turn_list
from ..usage import Usage, UsageRecord
from ..validation import check_text, check_tokens
from .client import StoreClient
from .heads import HEAD_PAGE, SUMMARY_CHAIN, Head, HeadRequest
from .keys import SessionOwner, UserOwner, user_owned
from .lifecycle import SessionLifecycle
from .records import IndexLink, SessionInfo, SessionState, StoredTurn, Summary, VectorRecord
from .repositories import Repositories
from .turns import OpenTurns
from .users import UserDirectory

__all__ = ["SessionRecords"]


class SessionRecords:
    """The engines' protocol over one store's repositories (not for applications).

    Args:
        client: The retried chromadb client.
        prefix: The collection name prefix (validated by the caller).
        caches: The store's caches.

    Attributes:
        caches: The store's caches (:class:`~..cache.StoreCaches`).
        repos: The repositories, one per collection.
        directory: Which user each session belongs to, the users' facts, rebuild markers.
        lifecycle: Whole-session and whole-user operations (list, expire, clear, forget).

    Raises:
        StoreError: When the collections cannot be opened.

    Example:
        >>> from langchain_recursive_memory.core import MemoryStore
        >>> records = MemoryStore.in_memory().records
        >>> records.claim_fold("default", "s1", "me", 30.0), records.count_turns("default", "s1")
        (True, 0)
    """

    def __init__(self, client: StoreClient, prefix: str, caches: StoreCaches) -> None:
        self.caches = caches
        self.repos = Repositories.open(client, prefix, caches)
        self.directory = UserDirectory(self.repos, caches)
        self.lifecycle = SessionLifecycle(self.repos, self.directory, caches)

    # -- turns ---------------------------------------------------------------------------

    def append(
        self,
        namespace: str,
        session_id: str,
        turns: Sequence[Turn],
        tokens: Sequence[int],
        encoding: str,
        memory: str = "",
    ) -> list[StoredTurn]:
        """Write turns to the log; durable when this returns.

        Turns without an id get a new, time-ordered one. A turn whose id is already stored
        in this session is not written again (the earlier record wins); repeated ids within
        ``turns`` keep the first. The session is registered (its record and its stamp
        record) before its first turn is written, once per process.

        Args:
            namespace: The namespace.
            session_id: The session.
            turns: The turns, in conversation order.
            tokens: Each turn's token count.
            encoding: The encoding the counts were made with.
            memory: The kind of memory writing (``"hybrid"``, ``"higmem"``...), kept on the
                session's stamp record from its first write.

        Returns:
            The turns as written, with ids, creation times and order keys.

        Raises:
            InvalidInputError: For a bad owner or mismatched lengths.
            StoreError: When Chroma rejects the write (nothing was written).
        """
        owner = self.directory.owner(namespace, session_id)
        turns = turn_list(turns)
        if isinstance(tokens, str) or not isinstance(tokens, Sequence):
            raise InvalidInputError.for_value("tokens", tokens, "must be a sequence of ints")
        for count in tokens:
            check_tokens("tokens", count)
        check_text("encoding", encoding)
        stored = self.repos.turn_log.stamp(owner, turns, tokens, encoding)
        if stored:
            self.repos.session_list.register(owner)
            self.repos.heads.ensure_stamp(owner, memory)
            self.repos.turn_log.write(owner, stored)
        return stored

    def turns(self, namespace: str, session_id: str) -> list[StoredTurn]:
        """Return every logged turn of the session, oldest first (folded or not)."""
        return self.repos.turn_log.log(SessionOwner.of(namespace, session_id))

    def get_turns(
        self, namespace: str, session_id: str, turn_ids: Iterable[str]
    ) -> list[StoredTurn]:
        """Return the session's turns with the given ids, oldest first (missing ids skipped)."""
        return self.repos.turn_log.by_ids(SessionOwner.of(namespace, session_id), turn_ids)

    def count_turns(self, namespace: str, session_id: str) -> int:
        """Return how many turns the session's log holds."""
        return self.repos.turn_log.count(SessionOwner.of(namespace, session_id))

    # -- summaries -----------------------------------------------------------------------

    def latest_summary(self, namespace: str, session_id: str) -> Summary | None:
        """Return the session's latest summary version, or None."""
        return self.repos.summary_log.latest(SessionOwner.of(namespace, session_id))

    def summaries(self, namespace: str, session_id: str) -> list[Summary]:
        """Return every summary version of the session, oldest first."""
        return self.repos.summary_log.versions(SessionOwner.of(namespace, session_id))

    def load(self, namespace: str, session_id: str) -> SessionState:
        """Return the latest summary and the turns it does not cover, oldest first.

        The version hint is read first, then the unfolded turns, then every version at or
        above the hint (with the session's stamp record, in the same request by id): a fold
        committed in between can only make a turn appear both in a summary and in the
        window (never in neither, never folded twice). When the current question (the
        newest user message) is folded already, it is read too (by id, only then) as the
        state's ``question``: the context shows it while it is current.
        """
        owner = SessionOwner.of(namespace, session_id)
        hint = self.repos.summary_log.hint(owner)
        unfolded = self.repos.turn_log.unfolded(owner)
        head = self._head(owner, hint)
        versions = head.versions
        named: set[str] = set()
        for v in versions:
            named.update(v.turn_ids)
        turns = tuple(t for t in unfolded if t.id not in named)
        repair = tuple(t.id for t in unfolded if t.id in named)
        latest = versions[-1] if versions else None
        question = None
        asked = latest.question_id if latest is not None else None
        if asked is not None and not any(t.turn.role == "user" for t in turns):
            found = self.repos.turn_log.by_ids(owner, [asked])
            question = found[0] if found else None
        return SessionState(latest, turns, repair, question, head.stamp, tuple(versions))

    def _head(self, owner: SessionOwner, hint: int) -> Head:
        """The session's stamp and its summary versions at or above ``hint`` (one request)."""
        head = self.heads(owner.namespace, [HeadRequest(owner, SUMMARY_CHAIN, hint)])[owner.key]
        if len(head.versions) > HEAD_PAGE:
            self.repos.summary_log.forget_hint(owner)  # others have been folding: refresh it
        if not head.versions and hint > 1:
            # The session was cleared (maybe by another store object): read from the start.
            self.repos.summary_log.forget_hint(owner)
            return self._head(owner, 0)
        return head

    def heads(self, namespace: str, requests: Sequence[HeadRequest]) -> dict[str, Head]:
        """The stamps and chain links of several sessions, read by id together.

        What a read learns of a session's stamp is taken in on the way: which user it
        belongs to, and whether this process must register it again (its stamp is gone:
        another store object or process cleared it). Returns session key -> head.
        """
        found = self.repos.heads.read_heads(requests)
        for request in requests:
            stamp = found[request.owner.key].stamp
            self.directory.observe(request.owner, stamp)
            if stamp is None:
                self.forget_registration(request.owner)
        return found

    def forget_registration(self, owner: SessionOwner) -> None:
        """Forget that this process registered the session (its records may be gone)."""
        self.repos.session_list.forget(owner)
        self.repos.heads.forget_stamp(owner)
        self.caches.described.pop(session_cache_key(owner.namespace, owner.session_id))

    def summary_hint(self, namespace: str, session_id: str) -> int:
        """The version the session's ``current`` record points at (0: none; a hint)."""
        return self.repos.summary_log.hint(SessionOwner.of(namespace, session_id))

    def stamp_session(self, namespace: str, session_id: str, memory: str) -> None:
        """Write the session's stamp record unless it exists (one stored before stamps)."""
        self.repos.heads.ensure_stamp(self.directory.owner(namespace, session_id), memory)

    def open_turns(
        self,
        namespace: str,
        chains: Mapping[str, str],
        held: Mapping[str, Mapping[str, int]] | None = None,
    ) -> dict[str, OpenTurns]:
        """The open turns of several sessions (session id -> chain), read together.

        ``held``: session id -> turn id -> order key of the turns the caller holds; those
        are not read again unless their order key changed.
        """
        owners = {sid: SessionOwner.of(namespace, sid) for sid in chains}
        keyed = {s.key: held.get(sid, {}) for sid, s in owners.items()} if held else None
        found = self.repos.turn_log.open_turns({s: chains[sid] for sid, s in owners.items()}, keyed)
        return {sid: found[s.key] for sid, s in owners.items()}

    def settle(self, state: SessionState) -> SessionState:
        """Move turns that landed late after the summary's turns (see :meth:`.TurnLog.settle`)."""
        return self.repos.turn_log.settle(state)

    def claim_fold(self, namespace: str, session_id: str, holder: str, period: float) -> bool:
        """Claim (or renew) the session's fold lease for ``holder``; whether it holds it.

        One writer folds a session at a time: the others skip their fold while the lease
        is held. A lease lasts one to two ``period`` seconds unless renewed, so a holder
        that dies blocks folds for at most ``2 * period``.
        """
        owner = self.directory.owner(namespace, session_id)
        return self.repos.summary_log.claim_lease(owner, holder, period, time.time())

    def release_fold(self, namespace: str, session_id: str, holder: str, period: float) -> None:
        """Give up ``holder``'s fold lease (see :meth:`claim_fold`)."""
        owner = SessionOwner.of(namespace, session_id)
        self.repos.summary_log.release_lease(owner, holder, period, time.time())

    def commit_summary(self, new: Summary, repair_ids: Sequence[str] = ()) -> bool:
        """Write summary version ``new`` if no other writer has written that version.

        On success the folded turns (``new.turn_ids`` and ``repair_ids``) are flagged and the
        session's ``current`` hint advances. A crash between those steps is repaired by the
        next load and the next fold (see :meth:`load`).

        Returns:
            True if this call wrote the version; False if another writer had (reload).
        """
        owner = self.directory.owner(new.namespace, new.session_id)
        if not self.repos.summary_log.try_commit(owner, new):
            return False
        flagged = dict.fromkeys(repair_ids, new.version)
        flagged.update(dict.fromkeys(new.turn_ids, new.version))
        self.repos.turn_log.flag_folded(owner, flagged)
        self.repos.summary_log.advance_hint(owner, new)
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
        owner = SessionOwner.of(namespace, session_id)
        if not facts:
            return []
        user = self.directory.session_user(namespace, session_id)
        if user is not None:
            return self.directory.upsert_user_facts(
                SessionOwner.of(namespace, session_id, user), facts
            )
        stored = self.repos.fact_table.get(owner, self.repos.fact_table.ids(owner, facts))
        existing = {f.key: f for f in stored}
        merged = [merge_fact(existing.get(f.key), f) for f in facts]
        self.repos.fact_table.put(owner, merged)
        self.repos.heads.touch(owner, facts=True)
        return merged

    def get_facts(
        self, namespace: str, session_id: str, *, ids: Sequence[str] | None = None
    ) -> list[Fact]:
        """Return the facts the session sees (or those with the given record ids), oldest first.

        Those are its own and, when it belongs to a user, the user's (learned in any of the
        user's sessions); a key both have is the user's.
        """
        owner = SessionOwner.of(namespace, session_id)
        user = self.directory.session_user(namespace, session_id)
        if user is None:
            return self.repos.fact_table.get(owner, ids)
        user_owner = UserOwner.of(namespace, user)
        if ids is None:
            own, theirs = self.repos.fact_table.get(owner), self.repos.fact_table.get(user_owner)
        else:
            mine = [i for i in ids if user_owned(user_owner.key, i)]
            rest = [i for i in ids if not user_owned(user_owner.key, i)]
            own = self.repos.fact_table.get(owner, rest) if rest else []
            theirs = self.repos.fact_table.get(user_owner, mine) if mine else []
        keys = {f.key for f in theirs}
        out = [*(f for f in own if f.key not in keys), *theirs]
        out.sort(key=lambda f: (f.created_at, f.key))
        return out

    # -- vectors (derived: rebuildable from turns and facts) -------------------------------

    def vector_ids(self, space: str, ids: Sequence[str]) -> set[str]:
        """Return which of the record ids already have a vector in ``space``."""
        return self.repos.vector_spaces.existing(ids, space)

    def _owners(
        self, namespace: str, session_id: str, ids: Sequence[str]
    ) -> list[tuple[SessionOwner | UserOwner, list[int]]]:
        """Which of ``ids`` (by position) are the session's and which its user's own."""
        owner = self.directory.owner(namespace, session_id)
        user = self.directory.session_user(namespace, session_id)
        if user is None:
            return [(owner, list(range(len(ids))))]
        user_owner = UserOwner.of(namespace, user)
        theirs = [i for i, rid in enumerate(ids) if user_owned(user_owner.key, rid)]
        taken = set(theirs)
        return [(owner, [i for i in range(len(ids)) if i not in taken]), (user_owner, theirs)]

    def add_vectors(
        self, space: str, namespace: str, session_id: str, records: Sequence[VectorRecord]
    ) -> None:
        """Write (or overwrite) vector records of the session in the ``space`` collection.

        The vectors of its user's facts are written as the user's own.
        """
        for owner, positions in self._owners(namespace, session_id, [r.id for r in records]):
            self.repos.vector_spaces.put(space, owner, [records[i] for i in positions])

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
                out.extend(
                    self.repos.vector_spaces.by_ids(space, owner, [ids[i] for i in positions])
                )
        return out

    def put_turn_nodes(self, namespace: str, session_id: str, nodes: Sequence[TurnNode]) -> None:
        """Write (or overwrite) turn nodes."""
        self.repos.turn_nodes.put(self.directory.owner(namespace, session_id), nodes)

    def commit_link(self, namespace: str, session_id: str, link: IndexLink) -> bool:
        """Write HiGMem index ``link`` unless another indexing wrote its number (then False).

        On success its turns leave the ``hopen`` set (a crash in between leaves them open
        but named: readers merge them twice, harmlessly).
        """
        owner = self.directory.owner(namespace, session_id)
        if not self.repos.heads.try_link(owner, link):
            return False
        self.repos.turn_log.flag_indexed(owner, link.turn_ids)
        return True

    def get_turn_nodes(
        self, namespace: str, session_id: str, turn_ids: Sequence[str] | None = None
    ) -> list[TurnNode]:
        """Return the session's turn nodes (or those of ``turn_ids``), in no particular order."""
        owner = SessionOwner.of(namespace, session_id)
        if turn_ids is not None:
            return self.repos.turn_nodes.by_ids(owner, turn_ids)
        return self.repos.turn_nodes.get(owner)

    def put_events(self, namespace: str, session_id: str, events: Sequence[Event]) -> None:
        """Write (or overwrite) event nodes."""
        self.repos.event_nodes.put(self.directory.owner(namespace, session_id), events)

    def get_events(
        self, namespace: str, session_id: str, event_ids: Sequence[str] | None = None
    ) -> list[Event]:
        """Return the session's event nodes (or those of ``event_ids``), oldest first."""
        owner = SessionOwner.of(namespace, session_id)
        if event_ids is not None:
            return sorted(
                self.repos.event_nodes.by_ids(owner, event_ids), key=lambda e: (e.created_at, e.id)
            )
        return self.repos.event_nodes.get(owner)

    # -- upkeep usage (append-only: one record per operation that called a model) ---------

    def add_usage(self, records: Sequence[UsageRecord]) -> None:
        """Append usage records (LLM calls and tokens of memory upkeep)."""
        self.repos.usage_log.add(records, self.directory.owner)

    def usage(self, namespace: str, session_id: str) -> dict[str, Usage]:
        """Return the session's upkeep spend, per purpose (``"fold"``, ``"higmem-index"``...)."""
        return self.repos.usage_log.totals(SessionOwner.of(namespace, session_id))

    # -- users (see :class:`~.users.UserDirectory`) ------------------------------------------

    def recorded_user(self, namespace: str, session_id: str) -> str | None:
        """The user the session's record names (a user only bound in this process: None)."""
        return self.directory.recorded_user(namespace, session_id)

    def bind_user(self, namespace: str, session_id: str, user_id: str) -> None:
        """Take a session with no user recorded as ``user_id``'s, in this process only."""
        self.directory.bind_user(namespace, session_id, user_id)

    def join_user(self, namespace: str, session_id: str, user_id: str, memory: str = "") -> None:
        """Record that the session belongs to ``user_id`` (fixed once recorded).

        ``memory``: the kind of memory writing, kept on a new session's stamp record.
        """
        self.directory.join_user(namespace, session_id, user_id, memory)

    def user_sessions(self, namespace: str, user_id: str) -> list[SessionInfo]:
        """The sessions of a user, oldest first."""
        return self.directory.user_sessions(namespace, user_id)

    def user_stamp(self, namespace: str, user_id: str) -> str:
        """A token that changes whenever the user's facts change ("" for no user)."""
        return self.directory.user_stamp(namespace, user_id)

    def rebuild_marker(
        self, namespace: str, owner_id: str, task: str, *, user: bool = False
    ) -> Any:
        """The progress a running rebuild recorded (None: none is running)."""
        return self.directory.rebuild_marker(namespace, owner_id, task, user=user)

    def set_rebuild_marker(
        self, namespace: str, owner_id: str, task: str, progress: Any, *, user: bool = False
    ) -> None:
        """Record a running rebuild's progress (JSON), or with None that it finished."""
        self.directory.set_rebuild_marker(namespace, owner_id, task, progress, user=user)

    # -- whole sessions and users (see :class:`~.lifecycle.SessionLifecycle`) ----------------

    def describe_session(
        self, namespace: str, session_id: str, settings: Mapping[str, str | int | float]
    ) -> None:
        """Record how the session's memory was made (``memory``, ``max_tokens``...)."""
        self.lifecycle.describe_session(namespace, session_id, settings)

    def clear(self, namespace: str, session_id: str) -> None:
        """Delete everything stored for the session (see :meth:`.SessionLifecycle.clear`)."""
        self.lifecycle.clear(namespace, session_id)

    def forget_user(self, namespace: str, user_id: str) -> list[str]:
        """Delete every session of the user and everything the user owns; their ids."""
        return self.lifecycle.forget_user(namespace, user_id)

    def drop_facts(self, namespace: str, session_id: str, *, statements: bool = True) -> None:
        """Delete the session's own facts and (``statements``) its statements of its user's."""
        self.lifecycle.drop_facts(namespace, session_id, statements=statements)

    def drop_vectors(self, space: str, namespace: str, session_id: str) -> None:
        """Delete the session's vectors of one embedder (not its user's facts')."""
        self.lifecycle.drop_vectors(space, namespace, session_id)

    def drop_user_facts(self, namespace: str, user_id: str) -> None:
        """Delete every fact of the user and their vectors (a user's rebuild starts so)."""
        self.lifecycle.drop_user_facts(namespace, user_id)

    def drop_nodes(self, namespace: str, session_id: str) -> None:
        """Delete the session's HiGMem turn and event nodes and the events' vectors."""
        self.lifecycle.drop_nodes(namespace, session_id)
