"""One session of a store, bound once: what an engine reads and writes through.

``store.session(namespace, session_id)`` validates the session once and returns its
:class:`SessionStore`: the session's turns, summaries, facts, vectors and HiGMem nodes
(:class:`SessionTurns`, :class:`SessionSummaries`, :class:`SessionFacts`,
:class:`SessionVectors`, :class:`SessionNodes`), its user, usage, settings and rebuild
markers. Each part calls one repository (one collection), so a step reaches a Chroma call
through the part, the repository and the client. Records a session writes carry its user
once this process knows it (:meth:`SessionStore.owner`).

Example:
    >>> from langchain_recursive_memory.core import MemoryStore, Turn
    >>> session = MemoryStore.in_memory().session("default", "s1")
    >>> _ = session.turns.append([Turn(role="user", text="hi")], [5], "o200k_base")
    >>> [t.turn.text for t in session.summaries.load().turns], session.turns.count()
    (['hi'], 1)
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..cache import StoreCaches
from ..errors import InvalidInputError
from ..events import Event, TurnNode
from ..facts import Fact, merge_fact
from ..turn import Turn, turn_list
from ..usage import Usage, UsageRecord
from ..validation import check_text, check_tokens
from .directory import UserDirectory
from .frontier import Frontier
from .heads import HEAD_PAGE, SUMMARY_CHAIN, Head, HeadRequest
from .keys import SessionOwner, UserOwner, user_owned
from .lifecycle import SessionLifecycle
from .markers import RebuildMarkers
from .records import IndexLink, SessionState, StoredTurn, Summary, VectorRecord
from .repositories import Repositories
from .user_facts import UserFacts

__all__ = [
    "SessionFacts",
    "SessionNodes",
    "SessionStore",
    "SessionSummaries",
    "SessionTurns",
    "SessionVectors",
    "StoreParts",
]


@dataclass(frozen=True, slots=True)
class StoreParts:
    """What a store is made of, shared by its sessions' handles (``store.parts``).

    Attributes:
        repos: One repository per collection.
        caches: What the process keeps of the database.
        directory: Which user each session belongs to.
        shared_facts: The users' facts, merged across their sessions.
        markers: Rebuild markers.
        lifecycle: Whole sessions and users: list, describe, expire, clear, forget.
        frontier: What a read checks of several sessions at once (heads, open turns).
    """

    repos: Repositories
    caches: StoreCaches
    directory: UserDirectory
    shared_facts: UserFacts
    markers: RebuildMarkers
    lifecycle: SessionLifecycle
    frontier: Frontier

    @classmethod
    def open(cls, repos: Repositories, caches: StoreCaches) -> StoreParts:
        """Assemble the parts over the store's repositories and caches."""
        directory = UserDirectory(repos, caches)
        shared = UserFacts(repos, caches)
        return cls(
            repos=repos,
            caches=caches,
            directory=directory,
            shared_facts=shared,
            markers=RebuildMarkers(repos, directory),
            lifecycle=SessionLifecycle(repos, directory, shared, caches),
            frontier=Frontier(repos, directory, caches),
        )


class SessionStore:
    """One session of a store (see the module doc).

    Args:
        parts: The store's parts.
        namespace: The namespace.
        session_id: The session id.

    Raises:
        InvalidInputError: For a bad namespace or session id.
    """

    def __init__(self, parts: StoreParts, namespace: str, session_id: str) -> None:
        self.parts = parts
        self.key_owner = SessionOwner.of(namespace, session_id)
        self.namespace, self.session_id, self.key = namespace, session_id, self.key_owner.key
        self.turns = SessionTurns(self)
        self.summaries = SessionSummaries(self)
        self.facts = SessionFacts(self)
        self.vectors = SessionVectors(self)
        self.nodes = SessionNodes(self)

    @property
    def repos(self) -> Repositories:
        """The store's repositories."""
        return self.parts.repos

    def owner(self) -> SessionOwner:
        """The session's owner, with its user when this process knows it (no I/O)."""
        return self.parts.directory.owner(self.namespace, self.session_id)

    # -- its user -------------------------------------------------------------------------

    def user(self) -> str | None:
        """The user the session belongs to, or None (read once per process, then kept)."""
        return self.parts.directory.session_user(self.namespace, self.session_id)

    def recorded_user(self) -> str | None:
        """The user the session's record names (a user only bound in this process: None)."""
        return self.parts.directory.recorded_user(self.namespace, self.session_id)

    def bind_user(self, user_id: str) -> None:
        """Take the session as ``user_id``'s in this process (its first write records it)."""
        self.parts.directory.bind_user(self.namespace, self.session_id, user_id)

    def join_user(self, user_id: str, memory: str = "") -> None:
        """Record that the session belongs to ``user_id`` (:meth:`.UserDirectory.join_user`)."""
        self.parts.directory.join_user(self.namespace, self.session_id, user_id, memory)

    # -- usage, settings, markers, its stamp, the whole session ------------------------------

    def add_usage(self, records: Sequence[UsageRecord]) -> None:
        """Append usage records (LLM calls and tokens of memory upkeep)."""
        self.repos.usage_log.add(records, self.parts.directory.owner)

    def usage(self) -> dict[str, Usage]:
        """The session's upkeep spend, per purpose (``"fold"``, ``"higmem-index"``...)."""
        return self.repos.usage_log.totals(self.key_owner)

    def describe(self, settings: Mapping[str, str | int | float]) -> None:
        """Record how the session's memory was made (``memory``, ``max_tokens``...)."""
        self.parts.lifecycle.describe_session(self.namespace, self.session_id, settings)

    def marker(self, task: str) -> Any:
        """The progress a running rebuild of ``task`` recorded (None: none is running)."""
        return self.parts.markers.get(self.namespace, self.session_id, task)

    def set_marker(self, task: str, progress: Any) -> None:
        """Record a running rebuild's progress (JSON), or with None that it finished."""
        self.parts.markers.set(self.namespace, self.session_id, task, progress)

    def stamp(self, memory: str) -> None:
        """Write the session's stamp record unless it exists (one stored before stamps)."""
        self.repos.heads.ensure_stamp(self.owner(), memory)

    def head(self, chain: str | None, start: int) -> Head:
        """The session's stamp and its ``chain``'s links from ``start`` on (one request)."""
        request = HeadRequest(self.key_owner, chain, start)
        return self.parts.frontier.heads([request])[self.key]

    def clear(self) -> None:
        """Delete everything stored for the session (see :meth:`.SessionLifecycle.clear`)."""
        self.parts.lifecycle.clear(self.namespace, self.session_id)


class _Part:
    """A part of a :class:`SessionStore`: one kind of record of the session."""

    def __init__(self, session: SessionStore) -> None:
        self.session = session
        self.repos = session.parts.repos


class SessionTurns(_Part):
    """The session's turn log (the source of truth)."""

    def append(
        self,
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
            turns: The turns, in conversation order.
            tokens: Each turn's token count.
            encoding: The encoding the counts were made with.
            memory: The kind of memory writing (``"hybrid"``, ``"higmem"``...), kept on
                the session's stamp record from its first write.

        Returns:
            The turns as written, with ids, creation times and order keys.

        Raises:
            InvalidInputError: For mismatched lengths or bad counts.
            StoreError: When Chroma rejects the write (nothing was written).
        """
        owner = self.session.owner()
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

    def all(self) -> list[StoredTurn]:
        """Every logged turn of the session, oldest first (folded or not)."""
        return self.repos.turn_log.log(self.session.key_owner)

    def by_ids(self, turn_ids: Iterable[str]) -> list[StoredTurn]:
        """The session's turns with the given ids, oldest first (missing ids skipped)."""
        return self.repos.turn_log.by_ids(self.session.key_owner, turn_ids)

    def count(self) -> int:
        """How many turns the session's log holds."""
        return self.repos.turn_log.count(self.session.key_owner)

    def settle(self, state: SessionState) -> SessionState:
        """Move turns that landed late after the summary's turns (see :meth:`.TurnLog.settle`).

        Moving any gives the session's stamp a new ``moved`` token (readers holding those
        open turns read their order keys again).
        """
        settled = self.repos.turn_log.settle(state)
        if settled is not state:
            self.repos.heads.touch(self.session.owner(), moved=True)
        return settled


class SessionSummaries(_Part):
    """The session's summary versions, the fold lease, and the state a reader loads."""

    def latest(self) -> Summary | None:
        """The latest summary version, or None."""
        return self.repos.summary_log.latest(self.session.key_owner)

    def versions(self) -> list[Summary]:
        """Every summary version, oldest first."""
        return self.repos.summary_log.versions(self.session.key_owner)

    def hint(self) -> int:
        """The version the ``current`` record points at (0: none; a hint)."""
        return self.repos.summary_log.hint(self.session.key_owner)

    def load(self) -> SessionState:
        """The latest summary and the turns it does not cover, oldest first.

        The version hint is read first, then the unfolded turns, then every version at or
        above the hint (with the session's stamp record, in the same request by id): a fold
        committed in between can only make a turn appear both in a summary and in the
        window (never in neither, never folded twice). When the current question (the
        newest user message) is folded already, it is read too (by id, only then) as the
        state's ``question``: the context shows it while it is current.
        """
        owner = self.session.key_owner
        hint = self.hint()
        unfolded = self.repos.turn_log.unfolded(owner)
        head = self._head(hint)
        named = {t for v in head.versions for t in v.turn_ids}
        turns = tuple(t for t in unfolded if t.id not in named)
        repair = tuple(t.id for t in unfolded if t.id in named)
        latest = head.versions[-1] if head.versions else None
        question = None
        asked = latest.question_id if latest is not None else None
        if asked is not None and not any(t.turn.role == "user" for t in turns):
            found = self.repos.turn_log.by_ids(owner, [asked])
            question = found[0] if found else None
        return SessionState(latest, turns, repair, question, head.stamp, tuple(head.versions))

    def _head(self, hint: int) -> Head:
        """The stamp and the summary versions at or above ``hint`` (one request)."""
        head = self.session.head(SUMMARY_CHAIN, hint)
        if len(head.versions) > HEAD_PAGE:
            self.repos.summary_log.forget_hint(self.session.key_owner)  # others folded
        if not head.versions and hint > 1:
            # The session was cleared (maybe by another store object): read from the start.
            self.repos.summary_log.forget_hint(self.session.key_owner)
            return self._head(0)
        return head

    def claim_lease(self, holder: str, period: float) -> bool:
        """Claim (or renew) the session's fold lease for ``holder``; whether it holds it.

        One writer folds a session at a time: the others skip their fold while the lease
        is held. A lease lasts one to two ``period`` seconds unless renewed, so a holder
        that dies blocks folds for at most ``2 * period``.
        """
        return self.repos.summary_log.claim_lease(self.session.owner(), holder, period, time.time())

    def release_lease(self, holder: str, period: float) -> None:
        """Give up ``holder``'s fold lease (see :meth:`claim_lease`)."""
        owner = self.session.key_owner
        self.repos.summary_log.release_lease(owner, holder, period, time.time())

    def commit(self, new: Summary, repair_ids: Sequence[str] = ()) -> bool:
        """Write summary version ``new`` if no other writer has written that version.

        On success the folded turns (``new.turn_ids`` and ``repair_ids``) are flagged and the
        session's ``current`` hint advances. A crash between those steps is repaired by the
        next load and the next fold (see :meth:`load`).

        Returns:
            True if this call wrote the version; False if another writer had (reload).
        """
        owner = self.session.owner()
        if not self.repos.summary_log.try_commit(owner, new):
            return False
        flagged = dict.fromkeys(repair_ids, new.version)
        flagged.update(dict.fromkeys(new.turn_ids, new.version))
        self.repos.turn_log.flag_folded(owner, flagged)
        self.repos.summary_log.advance_hint(owner, new)
        return True


class SessionFacts(_Part):
    """The facts the session sees: its own and, when it belongs to a user, the user's."""

    def upsert(self, facts: Sequence[Fact]) -> list[Fact]:
        """Store facts, each *updating* the stored fact with the same key (if any).

        The facts of a session that belongs to a user are the user's: each updates the
        user's fact of its key (:func:`~..facts.merge_user_fact`), whichever session
        stated it before. Returns the facts as stored (merged with earlier versions).
        """
        if not facts:
            return []
        session = self.session
        user = session.user()
        if user is not None:
            owner = SessionOwner.of(session.namespace, session.session_id, user)
            return session.parts.shared_facts.upsert(owner, facts)
        owner = session.key_owner
        stored = self.repos.fact_table.get(owner, self.repos.fact_table.ids(owner, facts))
        existing = {f.key: f for f in stored}
        merged = [merge_fact(existing.get(f.key), f) for f in facts]
        self.repos.fact_table.put(owner, merged)
        self.repos.heads.touch(owner, facts=True)
        return merged

    def get(self, *, ids: Sequence[str] | None = None) -> list[Fact]:
        """The facts the session sees (or those with the given record ids), oldest first.

        A key both the session and its user have is the user's.
        """
        session = self.session
        owner, user = session.key_owner, session.user()
        if user is None:
            return self.repos.fact_table.get(owner, ids)
        user_owner = UserOwner.of(session.namespace, user)
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

    def drop(self, *, statements: bool = True) -> None:
        """Delete the session's own facts and (``statements``) its statements of its user's."""
        self.session.parts.lifecycle.drop_facts(
            self.session.namespace, self.session.session_id, statements=statements
        )


class SessionVectors(_Part):
    """The session's vectors (and its user's facts'), one collection per embedder space."""

    def _owners(self, ids: Sequence[str]) -> list[tuple[SessionOwner | UserOwner, list[int]]]:
        """Which of ``ids`` (by position) are the session's and which its user's own."""
        owner, user = self.session.owner(), self.session.user()
        if user is None:
            return [(owner, list(range(len(ids))))]
        user_owner = UserOwner.of(self.session.namespace, user)
        theirs = [i for i, rid in enumerate(ids) if user_owned(user_owner.key, rid)]
        taken = set(theirs)
        return [(owner, [i for i in range(len(ids)) if i not in taken]), (user_owner, theirs)]

    def existing(self, space: str, ids: Sequence[str]) -> set[str]:
        """Which of the record ids already have a vector in ``space``."""
        return self.repos.vector_spaces.existing(ids, space)

    def put(self, space: str, records: Sequence[VectorRecord]) -> None:
        """Write (or overwrite) vector records; those of the user's facts as the user's own."""
        for owner, positions in self._owners([r.id for r in records]):
            self.repos.vector_spaces.put(space, owner, [records[i] for i in positions])

    def by_ids(self, space: str, ids: Sequence[str]) -> list[VectorRecord]:
        """The vector records with the given ids (the user's facts' too; missing ones skipped).

        Reads by id cost the same however large the collection is, unlike filtered reads.
        """
        out: list[VectorRecord] = []
        for owner, positions in self._owners(ids):
            if positions:
                found = self.repos.vector_spaces.by_ids(space, owner, [ids[i] for i in positions])
                out.extend(found)
        return out

    def drop(self, space: str) -> None:
        """Delete the session's vectors of one embedder (not its user's facts')."""
        session = self.session
        session.parts.lifecycle.drop_vectors(space, session.namespace, session.session_id)


class SessionNodes(_Part):
    """HiGMem's turn nodes, events and index links of the session."""

    def put_turn_nodes(self, nodes: Sequence[TurnNode]) -> None:
        """Write (or overwrite) turn nodes."""
        self.repos.turn_nodes.put(self.session.owner(), nodes)

    def turn_nodes(self, turn_ids: Sequence[str] | None = None) -> list[TurnNode]:
        """The session's turn nodes (or those of ``turn_ids``), in no particular order."""
        owner = self.session.key_owner
        if turn_ids is not None:
            return self.repos.turn_nodes.by_ids(owner, turn_ids)
        return self.repos.turn_nodes.get(owner)

    def put_events(self, events: Sequence[Event]) -> None:
        """Write (or overwrite) event nodes."""
        self.repos.event_nodes.put(self.session.owner(), events)

    def events(self, event_ids: Sequence[str] | None = None) -> list[Event]:
        """The session's event nodes (or those of ``event_ids``), oldest first."""
        owner = self.session.key_owner
        if event_ids is None:
            return self.repos.event_nodes.get(owner)
        found = self.repos.event_nodes.by_ids(owner, event_ids)
        return sorted(found, key=lambda e: (e.created_at, e.id))

    def commit_link(self, link: IndexLink) -> bool:
        """Write HiGMem index ``link`` unless another indexing wrote its number (then False).

        On success its turns leave the ``hopen`` set (a crash in between leaves them open
        but named: readers merge them twice, harmlessly).
        """
        owner = self.session.owner()
        if not self.repos.heads.try_link(owner, link):
            return False
        self.repos.turn_log.flag_indexed(owner, link.turn_ids)
        return True

    def drop(self) -> None:
        """Delete the turn nodes, events, index links and the events' vectors (a rebuild)."""
        self.session.parts.lifecycle.drop_nodes(self.session.namespace, self.session.session_id)
