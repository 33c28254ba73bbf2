"""A store written by an earlier release: its log moved into the database, once.

Until 0.2.0 the whole store lived in Chroma: the log (``{prefix}_turns``), summary
versions and stamps (``{prefix}_summaries``), HiGMem's nodes (``{prefix}_hg_turns``,
``{prefix}_hg_events``), usage, sessions and users. Since 0.3.0 all of that is in the
database; Chroma keeps the facts and the vectors, whose records are unchanged.

:func:`migrate` moves a store of 0.1.0 or 0.2.0 into the database. It runs by itself the
first time a process opens the store (logged; ``lrm migrate`` runs it by hand, and
``--dry-run`` says what it would move):

* each session moves in one transaction (its row with its user, settings and rebuild
  markers; its turns, summary versions, HiGMem nodes and events, usage), oldest first as
  the earlier releases listed them, so a migration that stops (a crash, a failed call)
  resumes where it stopped: a session the database holds already is skipped, and two
  processes migrating at once move each session once (the row is insert-if-absent);
* a session is found by its record or, when a crash left that unwritten, by its turns;
* its turns keep their ids, texts, times and which version folded them (a turn that a
  crashed fold named but left unflagged, which the earlier release's reads left out of
  the window, is that version's); their order keys become 1, 2, 3... in the order the
  log held them (``seq``, then id), and each summary version's ``last_seq`` follows (the
  new key of the last turn at or before the old one; 0.1.0 recorded none: 0 stays 0);
  a turn whose time Chroma dropped (0.1.0 stored NaN as given) gets its write time;
* HiGMem's nodes and events become the session's first indexing (turns without a node
  still wait to be indexed);
* 0.1.0 vector collections (``{prefix}_vec_{embedder}-d{dimension}``) are renamed to
  ``{prefix}_vec_{embedder}`` where that name is free (others are left and reported:
  vectors are derived, ``reindex()`` makes them again); one that another process has
  just renamed is a success.

What is not moved: leases, the summary hints and stamps (the session's row is its head
now), a user without a session, and a user's rebuild marker (a user rebuild that 0.2.0
left unfinished starts over).

The moved collections are left in Chroma, unread, and ``{prefix}_turns`` is marked
``lrm_schema=3`` when every session has moved: an earlier release that then reads or
writes the log stops with an error that names the schema (it checks a collection's
``lrm_schema`` before using it), instead of reading a log that no longer grows.
(A new store gets the marker too.) To go back to 0.2.0, see ``docs/upgrading-0.3.md``.

Example:
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> MemoryStore.in_memory().migrate(dry_run=True).sessions
    []
"""

from __future__ import annotations

import json
import logging
import re
import time
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from ..errors import StoreError
from ..events import Event, TurnNode
from ..turn import Turn
from .client import StoreClient
from .keys import (
    SCHEMA,
    VECTOR_COLLECTION_PREFIX,
    SessionOwner,
    UserOwner,
    collection_name,
    user_key,
)
from .nodes import put as put_nodes
from .records import StoredTurn, Summary, decoded
from .schema import Tables
from .sessions import ensure_user
from .summaries import summary_row
from .turns import turn_row

if TYPE_CHECKING:
    from .parts import StoreParts

__all__ = ["LEGACY_SPACE_RE", "LOG_SCHEMA", "Migration", "legacy_vector_collections", "migrate"]

logger = logging.getLogger("langchain_recursive_memory")

LEGACY_SPACE_RE = re.compile(r"^(?P<space>[a-z0-9][a-z0-9-]*?)-d(?P<dimension>[0-9]+)$")
"""A 0.1.0 vector space name: ``{embedder}-d{dimension}``."""

LOG_SCHEMA = 3
"""The ``lrm_schema`` of ``{prefix}_turns`` once the log is in the database."""

_PAGE = 5000  # records per Chroma read (its batch is about 5,461)
_SETTING = "set_"
_MARKER = "rb_"
_NODE_HEAD = "head"  # a per-session record of development versions before 0.2.0 (skipped)


@dataclass
class Migration:
    """What :func:`migrate` did (or, dry, would do).

    Attributes:
        renamed: ``(old collection, new collection)`` pairs of vector collections.
        left: ``(collection, why)`` of the legacy collections left as they are.
        dry_run: Nothing was changed.
        sessions: ``(namespace, session_id, turns)`` of each session moved into the
            database (or that would be).
        seconds: How long it took.
    """

    renamed: list[tuple[str, str]] = field(default_factory=list)
    left: list[tuple[str, str]] = field(default_factory=list)
    dry_run: bool = False
    sessions: list[tuple[str, str, int]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def needed(self) -> bool:
        """Whether there was anything to migrate."""
        return bool(self.sessions or self.renamed or self.left)


def legacy_vector_collections(names: list[str], prefix: str) -> dict[str, list[str]]:
    """The 0.1.0 vector collections among ``names``: new name -> the old names mapping to it."""
    start = collection_name(prefix, VECTOR_COLLECTION_PREFIX)
    out: dict[str, list[str]] = {}
    for name in sorted(names):
        if not name.startswith(start):
            continue
        match = LEGACY_SPACE_RE.match(name[len(start) :])
        if match is not None:
            out.setdefault(start + match["space"], []).append(name)
    return out


def migrate(store: StoreParts, *, dry_run: bool = False) -> Migration:
    """Bring ``store`` up to this release (see the module doc).

    Args:
        store: The store.
        dry_run: Only report what would be done.

    Returns:
        What was done.

    Raises:
        StoreError: When the database or Chroma failed (run it again: it resumes).
    """
    started = time.monotonic()
    done = Migration(dry_run=dry_run)
    chroma = store.chroma
    names = chroma.collection_names()
    _rename_vectors(chroma, store.prefix, names, done)
    log_name = collection_name(store.prefix, "turns")
    if log_name in names:
        log = chroma.client.get_collection(log_name)
        if (log.metadata or {}).get("lrm_schema") == SCHEMA:
            _LegacyLog(store, names).move(done)
            if not dry_run:
                _mark_moved(chroma, log_name)
    elif not dry_run:
        _mark_moved(chroma, log_name)
    done.seconds = time.monotonic() - started
    if done.sessions and not dry_run:
        turns = sum(n for _, _, n in done.sessions)
        logger.warning(
            "moved %d sessions (%d turns) of the store %s from Chroma into the database %s "
            "in %.1f s (0.3.0 keeps the log in a database; the Chroma collections are left "
            "unread)",
            len(done.sessions),
            turns,
            store.identity,
            store.db.name,
            done.seconds,
        )
    return done


def _rename(chroma: StoreClient, old: str, new: str) -> None:
    """Rename a 0.1.0 vector collection (another process that just did is a success)."""
    try:
        chroma.call(
            "rename a vector collection",
            partial(lambda o, n: chroma.client.get_collection(o).modify(name=n), old, new),
        )
    except StoreError:
        names = set(chroma.collection_names())
        if old in names or new not in names:
            raise
        logger.info("vector collection %s was renamed to %s by another process", old, new)
    else:
        logger.info("migrated the vector collection %s to %s (0.1.0 naming)", old, new)
    chroma.forget_collection(old)


def _mark_moved(chroma: StoreClient, name: str) -> None:
    """Mark ``{prefix}_turns`` as moved (created empty when absent: a marker)."""

    def mark() -> None:
        col = chroma.client.get_or_create_collection(
            name, embedding_function=None, metadata={"lrm_schema": LOG_SCHEMA}
        )
        if (col.metadata or {}).get("lrm_schema") != LOG_SCHEMA:
            col.modify(metadata={**(col.metadata or {}), "lrm_schema": LOG_SCHEMA})

    chroma.call("mark the log as moved", mark)
    chroma.forget_collection(name)


def _rename_vectors(chroma: StoreClient, prefix: str, names: list[str], done: Migration) -> None:
    for new, olds in legacy_vector_collections(names, prefix).items():
        if len(olds) > 1:
            done.left += [(old, f"{len(olds)} legacy collections map to {new}") for old in olds]
        elif new in names:
            done.left.append((olds[0], f"{new} exists already"))
        else:
            done.renamed.append((olds[0], new))
    if not done.dry_run:
        for old, new in done.renamed:
            _rename(chroma, old, new)
    for old, why in done.left:
        logger.warning(
            "vector collection %s (0.1.0 naming) was left as it is: %s; reindex() embeds "
            "its vectors again under the new name (lrm migrate --help)",
            old,
            why,
        )


# -- the legacy log ----------------------------------------------------------------------------


def _legacy_turn(doc: str, meta: Mapping[str, Any]) -> StoredTurn:
    payload = json.loads(str(meta["payload"])) if meta.get("payload") else {}
    # 0.1.0 could store a NaN time, which Chroma drops: the turn is kept, at its write
    # time (what a turn given no time gets; the order key was the writer's clock, in ns).
    created = meta.get("created")
    when = float(created) if created is not None else int(meta["seq"]) / 1e9
    turn = Turn.from_payload(
        str(meta["role"]), doc, payload, turn_id=str(meta["tid"]), created_at=when
    )
    return StoredTurn(
        turn, int(meta["seq"]), int(meta["tok"]), str(meta["enc"]), int(meta["folded"])
    )


def _legacy_summary(doc: str, meta: Mapping[str, Any]) -> Summary:
    question = meta.get("question")
    return Summary(
        namespace=str(meta["ns"]),
        session_id=str(meta["sid"]),
        version=int(meta["version"]),
        text=doc,
        tokens=int(meta["tok"]),
        turn_ids=tuple(json.loads(str(meta["turn_ids"]))),
        first_turn_id=str(meta["first_tid"]) if meta.get("first_tid") is not None else None,
        last_turn_id=str(meta["last_tid"]) if meta.get("last_tid") is not None else None,
        covered=int(meta["covered"]),
        method=str(meta["method"]),
        created_at=float(meta["created"]),
        fold_id=str(meta["fold_id"]),
        last_seq=int(meta.get("last_seq", 0)),
        passed_ids=tuple(json.loads(str(meta.get("passed", "[]")))),
        question_id=str(question) if question is not None else None,
    )


class _LegacyLog:
    """The Chroma collections of a store written by 0.1.0 or 0.2.0 (see the module doc)."""

    def __init__(self, store: StoreParts, names: list[str]) -> None:
        self.store = store
        self.chroma = store.chroma
        self.prefix = store.prefix
        self.names = set(names)

    def _all(
        self, name: str, where: Mapping[str, Any] | None = None, *, documents: bool = True
    ) -> list[tuple[str, dict[str, Any]]]:
        """Every record (document, metadata) of a legacy collection (``where``: matching).

        ``documents=False``: the metadata only (the documents read as "").
        """
        full = collection_name(self.prefix, name)
        if full not in self.names:
            return []
        col = self.chroma.client.get_collection(full)
        out: list[tuple[str, dict[str, Any]]] = []
        offset = 0
        while True:
            got = self.chroma.call(
                f"read {full}",
                partial(
                    col.get,
                    where=dict(where) if where else None,
                    include=["documents", "metadatas"] if documents else ["metadatas"],
                    limit=_PAGE,
                    offset=offset,
                ),
            )
            metas = got["metadatas"] or []
            docs = got["documents"] or [""] * len(metas)
            out += [(d or "", dict(m)) for d, m in zip(docs, metas, strict=True)]
            if len(metas) < _PAGE:
                return out
            offset += _PAGE

    def sessions(self) -> dict[str, dict[str, Any]]:
        """Every session the legacy store knows: by key, its record (or what its turns say).

        Oldest first, as the earlier releases listed them (created, namespace, id): the
        database lists its sessions in the order of their rows.
        """
        found: dict[str, dict[str, Any]] = {}
        for _, meta in self._all("sessions", documents=False):
            if "sk" in meta and "ns" in meta and "sid" in meta:
                found[str(meta["sk"])] = meta
        recordless: dict[str, dict[str, Any]] = {}  # sessions whose record a crash left out
        for _, meta in self._all("turns", documents=False):
            key = meta.get("sk")
            if key is None or key in found or "ns" not in meta or "sid" not in meta:
                continue
            when = float(meta.get("created") or 0.0)
            entry = recordless.setdefault(str(key), {"ns": meta["ns"], "sid": meta["sid"]})
            entry["created"] = min(when, entry.get("created", when))
        found.update(recordless)
        order = sorted(
            found, key=lambda k: (float(found[k].get("created") or 0.0), *_names(found[k]))
        )
        return {key: found[key] for key in order}

    def move(self, done: Migration) -> None:
        """Move every session the database does not hold yet (each in one transaction)."""
        t = self.store.db.tables
        held = set(
            self.store.db.read(lambda c: list(c.execute(select(t.sessions.c.skey)).scalars()))
        )
        users = {str(m.get("uk")): m for _, m in self._all("users") if m.get("uk")}
        for skey, meta in self.sessions().items():
            if skey in held:
                continue
            owner = SessionOwner.of(str(meta["ns"]), str(meta["sid"]))
            rows = [r for r in self._all("turns", {"sk": skey}) if owner.owns(r[1])]
            turns = decoded("turn", rows, lambda r: _legacy_turn(*r))
            moved = (owner.namespace, owner.session_id, len(turns))
            if done.dry_run:
                done.sessions.append(moved)
                continue
            session = _LegacySession(self, owner, meta, turns, users)
            if self.store.db.write(session.write, f"move session {owner.session_id!r}"):
                done.sessions.append(moved)


def _names(meta: Mapping[str, Any]) -> tuple[str, str]:
    return str(meta["ns"]), str(meta["sid"])


class _LegacySession:
    """One legacy session, read from Chroma, written into the database in one transaction."""

    def __init__(
        self,
        log: _LegacyLog,
        owner: SessionOwner,
        meta: Mapping[str, Any],
        turns: list[StoredTurn],
        users: Mapping[str, Mapping[str, Any]],
    ) -> None:
        self.owner = owner
        self.meta = meta
        self.tables = log.store.db.tables

        def owned(name: str) -> list[tuple[str, dict[str, Any]]]:
            return [r for r in log._all(name, {"sk": owner.key}) if owner.owns(r[1])]

        self.summary_rows = owned("summaries")
        self.node_rows = owned("hg_turns")
        self.event_rows = owned("hg_events")
        self.usage_rows = owned("usage")
        self.users = users
        turns.sort(key=lambda s: (s.seq, s.id))
        self.old_seqs = [s.seq for s in turns]
        self.summaries = self._summaries()
        named: dict[str, int] = {}  # turn id -> the first version naming it
        for version in self.summaries:
            for turn_id in version.turn_ids:
                named.setdefault(turn_id, version.version)
        # A fold that crashed between writing its version and flagging the turns left
        # them unflagged; the earlier release's reads left them out of the window all the
        # same (its "repair_ids"): they are the naming version's.
        self.turns = [
            StoredTurn(s.turn, i, s.tokens, s.encoding, s.folded_in or named.get(s.id, 0))
            for i, s in enumerate(turns, start=1)
        ]

    def _new_seq(self, old: int) -> int:
        """The new order key of the last turn ordered at or before old key ``old``."""
        return bisect_right(self.old_seqs, old) if old else 0

    def _stamp(self) -> Mapping[str, Any]:
        return next((m for _, m in self.summary_rows if m.get("kind") == "stamp"), {})

    def _summaries(self) -> list[Summary]:
        rows = [r for r in self.summary_rows if r[1].get("kind") == "version"]
        found = decoded("summary", rows, lambda r: _legacy_summary(*r))
        found.sort(key=lambda s: s.version)
        return [replace(s, last_seq=self._new_seq(s.last_seq)) for s in found]

    def _markers(self) -> dict[str, Any]:
        return {
            k[len(_MARKER) :]: json.loads(v)
            for k, v in self.meta.items()
            if k.startswith(_MARKER) and isinstance(v, str)
        }

    def _row(self, stamp: Mapping[str, Any], indexed: bool) -> dict[str, Any]:
        """The session's row (its head as the legacy store left it)."""
        owner, meta = self.owner, self.meta
        settings = {k[len(_SETTING) :]: v for k, v in meta.items() if k.startswith(_SETTING)}
        markers = self._markers()
        first = self.turns[0].turn.created_at if self.turns else None
        created = float(meta.get("created") or first or time.time())
        return {
            "ns": owner.namespace,
            "sid": owner.session_id,
            "skey": owner.key,
            "memory": str(stamp.get("memory") or settings.get("memory") or ""),
            "settings": json.dumps(settings) if settings else None,
            "created_at": created,
            # The legacy order keys were the writers' clocks (ns): the last write's time.
            "written_at": (self.old_seqs[-1] / 1e9) if self.old_seqs else created,
            "newest_created": max((float(s.turn.created_at or 0.0) for s in self.turns), default=0),
            "last_seq": len(self.turns),
            "version": self.summaries[-1].version if self.summaries else 0,
            "indexed": 1 if indexed else 0,
            "facts": 1,  # its facts (in Chroma) are read, not known absent
            "generation": 0,
            "markers": json.dumps(markers) if markers else None,
        }

    def write(self, conn: Connection) -> bool:
        """Write the session into the database (the caller's transaction).

        Returns:
            False when the database holds the session already (another process moved it
            meanwhile): nothing is written.
        """
        t = self.tables
        stamp = self._stamp()
        nodes = decoded(
            "turn node",
            [r for r in self.node_rows if r[1].get("kind") != _NODE_HEAD],
            lambda r: TurnNode.from_metadata(*r),
        )
        events = decoded("event", self.event_rows, lambda r: Event.from_metadata(*r))
        values = self._row(stamp, bool(nodes or events))
        user_id = self.meta.get("uid") or stamp.get("uid")
        if user_id is not None:
            user = UserOwner(
                self.owner.namespace, str(user_id), user_key(self.owner.namespace, str(user_id))
            )
            values.update(user_id=user.user_id, ukey=user.key)
            since = float(self.users.get(user.key, {}).get("created") or values["created_at"])
            ensure_user(conn, t, user, since, facts=1)  # its facts are in Chroma
        row = _claim_row(conn, t, values)
        if row is None:
            return False
        if self.turns:
            conn.execute(insert(t.turns), [turn_row(row, s) for s in self.turns])
        if self.summaries:
            conn.execute(insert(t.summaries), [summary_row(row, s) for s in self.summaries])
        put_nodes(conn, t, row, 1, nodes=nodes, events=events)
        self._usage(conn, row)
        return True

    def _usage(self, conn: Connection, row: int) -> None:
        usage = [
            {
                "session": row,
                "purpose": str(m.get("purpose", "")),
                "calls": int(m.get("calls", 0)),
                "failed": int(m.get("failed", 0)),
                "input": int(m.get("in", 0)),
                "output": int(m.get("out", 0)),
                "reported": int(m.get("reported", 0)),
                "created_at": float(m.get("created", 0.0) or 0.0),
            }
            for _, m in self.usage_rows
            if "purpose" in m
        ]
        if usage:
            conn.execute(insert(self.tables.usage), usage)


def _claim_row(conn: Connection, t: Tables, values: Mapping[str, Any]) -> int | None:
    """Insert the session's row unless the database holds it; its id (None: held)."""
    s = t.sessions
    if conn.execute(select(s.c.id).where(s.c.skey == values["skey"])).scalar() is not None:
        return None
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    stmt = (
        dialect.insert(s)
        .values(**values)
        .on_conflict_do_nothing(index_elements=[s.c.skey])
        .returning(s.c.id)
    )
    found = conn.execute(stmt).scalar()
    return int(found) if found is not None else None
