"""The turn log: the source of truth, append-only, ordered by a per-writer clock.

A turn is written once (a second add with the same id is ignored by Chroma) and only its
flags change afterwards: ``folded`` (the summary version that folded it) and the open
flags of the two chains (``open``: no summary version names it yet; ``hopen``: no HiGMem
index link does; see :mod:`.heads`). Document: the turn's text; metadata: namespace,
session id, role, order key, token count, the flags, and the rest of the message as JSON.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from ..cache import StoreCaches, session_cache_key
from ..errors import InvalidInputError, StoreError, WriteOutcomeUnknownError
from ..turn import Turn
from .client import StoreClient
from .keys import (
    OPEN_FLAGS,
    SessionOwner,
    namespace_filter,
    new_turn_id,
    open_filter,
    open_key,
    turn_record_id,
)
from .records import SessionState, StoredTurn
from .repository import Repository, decoded, placeholders

__all__ = [
    "SCAN_PAGE",
    "OpenTurns",
    "TurnLog",
    "TurnRow",
    "turn_from_record",
    "turn_metadata",
]

logger = logging.getLogger("langchain_recursive_memory")

SCAN_PAGE = 5000
"""Records per read of the activity scan over the whole log (Chroma's batch is ~5,461)."""


def turn_metadata(owner: SessionOwner, s: StoredTurn) -> dict[str, Any]:
    """Return the Chroma metadata of a new (unfolded) turn record."""
    meta: dict[str, Any] = {
        **owner.metadata(),
        "open": open_key(owner.key, True),
        "hopen": open_key(owner.key, True),
        "tid": s.id,
        "role": s.turn.role,
        "seq": s.seq,
        "created": float(s.turn.created_at or 0.0),
        "tok": s.tokens,
        "enc": s.encoding,
        "folded": 0,
    }
    payload = s.turn.payload()
    if payload:
        meta["payload"] = json.dumps(payload, ensure_ascii=False, sort_keys=True)
    return meta


def turn_from_record(doc: str, meta: Mapping[str, Any]) -> StoredTurn:
    """Return the stored turn of a record (its document and metadata)."""
    payload = json.loads(str(meta["payload"])) if meta.get("payload") else {}
    turn = Turn.from_payload(
        str(meta["role"]),
        doc,
        payload,
        turn_id=str(meta["tid"]),
        created_at=float(meta["created"]),
    )
    return StoredTurn(
        turn, int(meta["seq"]), int(meta["tok"]), str(meta["enc"]), int(meta["folded"])
    )


@dataclass(frozen=True, slots=True)
class TurnRow:
    """A turn record as Chroma holds it (kept to write it back unchanged)."""

    record_id: str
    document: str
    metadata: dict[str, Any]


def _turn_of_row(row: tuple[str, Mapping[str, Any]]) -> StoredTurn:
    return turn_from_record(*row)


def _turn_and_key(row: tuple[str, Mapping[str, Any]]) -> tuple[StoredTurn, str]:
    return turn_from_record(*row), str(row[1]["sk"])


def _written(meta: Mapping[str, Any]) -> tuple[tuple[str, str], float]:
    """A turn record's session and when it was written (its order key, in seconds)."""
    return (str(meta["ns"]), str(meta["sid"])), int(meta["seq"]) / 1e9


def _created(meta: Mapping[str, Any]) -> tuple[tuple[str, str], float]:
    """A turn record's session and the time its message claims (``created_at``)."""
    return (str(meta["ns"]), str(meta["sid"])), float(meta["created"])


def _oldest_first(turns: list[StoredTurn]) -> list[StoredTurn]:
    turns.sort(key=lambda s: (s.seq, s.id))
    return turns


@dataclass(frozen=True, slots=True)
class OpenTurns:
    """A session's open turns in one chain, as :meth:`TurnLog.open_turns` read them.

    Attributes:
        seqs: Every open turn's id and order key.
        turns: The open turns the reader did not hold (or held with another order key),
            read whole, oldest first.
    """

    seqs: dict[str, int]
    turns: list[StoredTurn]


def _unheld_ids(
    ids: list[str],
    held: Mapping[str, Mapping[str, int]],
    exact: set[str],
    out: dict[str, OpenTurns],
) -> list[str]:
    """The open turn ids to read whole: those not held, and every one of ``exact``'s sessions.

    The held ones' order keys go to ``out`` (see :meth:`TurnLog.open_turns`).
    """
    wanted: list[str] = []
    for rid in ids:
        key, _, tid = str(rid).partition(":t:")
        if key not in out or not tid:
            continue
        seq = held.get(key, {}).get(tid)
        if seq is None or key in exact:
            wanted.append(rid)
        else:
            out[key].seqs[tid] = seq
    return wanted


class TurnLog(Repository):
    """The ``{prefix}_turns`` collection, and the clock that orders new turns.

    Writers on several machines share a session through a Chroma server; a writer whose
    clock lags still orders its turns after every turn it has read: each read of the
    unfolded turns or of the whole log records the session's highest order key.
    """

    name = "turns"
    label = "turns"

    def __init__(self, chroma: StoreClient, prefix: str, caches: StoreCaches) -> None:
        super().__init__(chroma, prefix)
        self.caches = caches

    # -- the clock (the process's, in the store's caches) ----------------------------------

    def _next_seq(self, owner: SessionOwner, count: int) -> list[int]:
        """Order keys for new turns: the clock, but never below what this session has shown."""
        caches, key = self.caches, session_cache_key(owner.namespace, owner.session_id)
        with caches.clock_lock:
            now = time.time_ns()
            start = max(now, caches.last_seq + 1, (caches.clocks.get(key) or 0) + 1)
            caches.last_seq = start + count - 1
            caches.clocks.put(key, caches.last_seq)
        return list(range(start, start + count))

    def _observe_seq(self, owner: SessionOwner, turns: Sequence[StoredTurn]) -> None:
        if turns:
            top = max(t.seq for t in turns)
            caches, key = self.caches, session_cache_key(owner.namespace, owner.session_id)
            with caches.clock_lock:
                if top > (caches.clocks.get(key) or 0):
                    caches.clocks.put(key, top)

    # -- writes ---------------------------------------------------------------------------

    def stamp(
        self, owner: SessionOwner, turns: Sequence[Turn], tokens: Sequence[int], encoding: str
    ) -> list[StoredTurn]:
        """Give new turns their order keys, and ids and creation times where missing.

        Repeated ids within ``turns`` keep the first.

        Raises:
            InvalidInputError: When ``tokens`` does not match ``turns``.
        """
        if len(turns) != len(tokens):
            raise InvalidInputError.for_value("tokens", len(tokens), f"expected {len(turns)}")
        if not turns:
            return []
        seqs = self._next_seq(owner, len(turns))
        stored: list[StoredTurn] = []
        seen: set[str] = set()
        for turn, count, seq in zip(turns, tokens, seqs, strict=True):
            turn_id = turn.id or new_turn_id(seq)
            if turn_id in seen:
                continue
            seen.add(turn_id)
            created = turn.created_at if turn.created_at is not None else seq / 1e9
            stored.append(StoredTurn(turn.with_id(turn_id, created), seq, int(count), encoding))
        return stored

    def write(self, owner: SessionOwner, stored: Sequence[StoredTurn]) -> None:
        """Insert stamped turns, in batches Chroma accepts (an id already stored stays).

        A failed write is checked by reading the ids back: a server that stored the turns
        but lost its answer is a success; what is missing is written once more.

        Raises:
            StoreError: When nothing was stored (adding the turns again is safe).
            WriteOutcomeUnknownError: When whether they were stored cannot be told.
        """
        ids = [turn_record_id(owner.key, s.id) for s in stored]
        try:
            self._insert(owner, stored)
        except WriteOutcomeUnknownError:
            raise
        except StoreError as failure:
            self._confirm(owner, stored, ids, failure)

    def _confirm(
        self, owner: SessionOwner, stored: Sequence[StoredTurn], ids: list[str], failure: StoreError
    ) -> None:
        """After a failed write: succeed if every turn landed, else write the rest once."""
        turns = [s.turn for s in stored]
        try:
            got = self.chroma.call(
                "check appended turns", partial(self.collection.get, ids=ids, include=[])
            )
        except StoreError as exc:
            raise WriteOutcomeUnknownError(
                f"{failure}; whether its {len(ids)} turns were stored is unknown ({exc}). "
                "Add error.turns again when the store answers: their ids make it store "
                "each turn at most once.",
                turns,
            ) from failure
        found = set(got["ids"])
        if not found:
            raise failure  # nothing landed: the caller may simply retry
        missing = [s for s, i in zip(stored, ids, strict=True) if i not in found]
        if not missing:
            logger.info("append reported %s, but all %d turns were stored", failure, len(ids))
            return
        try:
            self._insert(owner, missing)
        except StoreError as exc:
            raise WriteOutcomeUnknownError(
                f"{failure}; {len(found)} of {len(ids)} turns were stored and writing the "
                f"rest failed ({exc}). Add error.turns again: their ids make it store each "
                "turn at most once.",
                turns,
            ) from exc

    def _insert(self, owner: SessionOwner, stored: Sequence[StoredTurn]) -> None:
        ids = [turn_record_id(owner.key, s.id) for s in stored]
        docs = [s.turn.text for s in stored]
        metas = [turn_metadata(owner, s) for s in stored]
        step = self.chroma.batch_size()
        for start in range(0, len(ids), step):
            end = start + step
            self.chroma.call(
                "append turns",
                partial(
                    self.collection.add,
                    ids=ids[start:end],
                    documents=docs[start:end],
                    metadatas=metas[start:end],
                    embeddings=placeholders(len(ids[start:end])),
                ),
            )

    def flag_folded(self, owner: SessionOwner, versions: Mapping[str, int]) -> None:
        """Mark turns as folded into summary versions (they leave the ``open`` set)."""
        closed = open_key(owner.key, False)
        self._flag(owner, {t: {"folded": v, "open": closed} for t, v in versions.items()})

    def flag_indexed(self, owner: SessionOwner, turn_ids: Sequence[str]) -> None:
        """Mark turns as named by a HiGMem index link (they leave the ``hopen`` set)."""
        closed = open_key(owner.key, False)
        self._flag(owner, {t: {"hopen": closed} for t in turn_ids})

    def _flag(self, owner: SessionOwner, fields: Mapping[str, Mapping[str, Any]]) -> None:
        if fields:
            self.chroma.call(
                "flag turns",
                lambda: self.collection.update(
                    ids=[turn_record_id(owner.key, t) for t in fields],
                    metadatas=[dict(f) for f in fields.values()],
                ),
            )

    # -- reads ----------------------------------------------------------------------------

    def unfolded(self, owner: SessionOwner) -> list[StoredTurn]:
        """Return the turns no summary version has flagged, oldest first."""
        out = self._where(owner, open_filter(owner.key))
        self._observe_seq(owner, out)
        return out

    def open_turns(
        self,
        chains: Mapping[SessionOwner, str],
        held: Mapping[str, Mapping[str, int]] | None = None,
        exact: Iterable[str] = (),
    ) -> dict[str, OpenTurns]:
        """The open turns of several sessions, each in its chain's flag, in one read.

        With ``held``, the filtered read returns ids only (what a record's metadata costs
        to read grows with the open turns of every session); the turns not held are read
        by id.

        Args:
            chains: Each session and the chain whose open flag to read (``"v"``: ``open``,
                ``"h"``: ``hopen``; :data:`~.keys.OPEN_FLAGS`).
            held: Session key -> turn id -> order key of the turns the caller holds; those
                are not read again. None: read every turn.
            exact: Keys of sessions whose held open turns may have new order keys (their
                stamp's ``moved`` token changed): every open turn of theirs is read by id.

        Returns:
            Session key -> :class:`OpenTurns`.
        """
        by_key = {owner.key: owner for owner in chains}
        out = {key: OpenTurns({}, []) for key in by_key}
        if not by_key:
            return out
        flags: dict[str, list[str]] = {}
        for owner, chain in chains.items():
            flags.setdefault(OPEN_FLAGS[chain], []).append(open_key(owner.key, True))
        terms = [{flag: {"$in": keys}} for flag, keys in flags.items()]
        where = terms[0] if len(terms) == 1 else {"$or": terms}
        if held is None:
            got = self.chroma.call(
                "read open turns",
                partial(self.collection.get, where=where, include=["documents", "metadatas"]),
            )
            rows = self._open_rows(chains, by_key, got)
        else:
            got = self.chroma.call(
                "read open turns", partial(self.collection.get, where=where, include=[])
            )
            wanted = _unheld_ids(got["ids"], held, set(exact), out)
            rows = []
            if wanted:
                got = self.chroma.call(
                    "read turns by id",
                    partial(self.collection.get, ids=wanted, include=["documents", "metadatas"]),
                )
                rows = self._open_rows(chains, by_key, got)
        for turn, key in decoded("turn", rows, _turn_and_key):
            if key in out:
                out[key].seqs[turn.id] = turn.seq
                out[key].turns.append(turn)
        for key, result in out.items():
            _oldest_first(result.turns)
            self._observe_seq(by_key[key], result.turns)
        return out

    @staticmethod
    def _open_rows(
        chains: Mapping[SessionOwner, str], by_key: Mapping[str, SessionOwner], got: Any
    ) -> list[tuple[str, Mapping[str, Any]]]:
        """The records of ``got`` that are an asked session's open turns in its chain."""
        rows: list[tuple[str, Mapping[str, Any]]] = []
        docs = got.get("documents") or [None] * len(got["ids"])
        for doc, meta in zip(docs, got["metadatas"] or [], strict=True):
            owner = by_key.get(str(meta.get("sk", "")))
            if owner is None or not owner.owns(meta):
                continue
            if meta.get(OPEN_FLAGS[chains[owner]]) != open_key(owner.key, True):
                continue
            rows.append((doc or "", meta))
        return rows

    def log(self, owner: SessionOwner) -> list[StoredTurn]:
        """Return every logged turn of the session, oldest first (folded or not)."""
        out = self._where(owner, owner.where)
        self._observe_seq(owner, out)
        return out

    def _where(self, owner: SessionOwner, where: Mapping[str, Any]) -> list[StoredTurn]:
        rows = self.read("read turns", owner, where=dict(where))
        return _oldest_first(decoded("turn", rows, _turn_of_row))

    def by_ids(self, owner: SessionOwner, turn_ids: Iterable[str]) -> list[StoredTurn]:
        """Return the session's turns with the given ids, oldest first (missing ids skipped)."""
        ids = [turn_record_id(owner.key, t) for t in dict.fromkeys(turn_ids)]
        if not ids:
            return []
        rows = self.read("read turns by id", owner, ids=ids)
        return _oldest_first(decoded("turn", rows, _turn_of_row))

    def move_after(
        self, owner: SessionOwner, turns: Sequence[StoredTurn], after: int
    ) -> list[StoredTurn]:
        """Give ``turns`` new order keys just above ``after``, keeping their order.

        For turns whose write landed after a fold had folded turns ordered after them
        (their writer's clock stamped them before the write landed).
        """
        ordered = sorted(turns, key=lambda s: (s.seq, s.id))
        moved = [replace(s, seq=after + 1 + i) for i, s in enumerate(ordered)]
        if moved:
            self.chroma.call(
                "reorder late turns",
                partial(
                    self.collection.update,
                    ids=[turn_record_id(owner.key, s.id) for s in moved],
                    metadatas=[{"seq": s.seq} for s in moved],
                ),
            )
            self._observe_seq(owner, moved)
        return moved

    def settle(self, state: SessionState) -> SessionState:
        """Move turns that landed late after the turns the summary folded; return the state.

        A writer orders a turn by its clock before the write lands; when another writer
        folds in between, the turn can land ordered before turns already summarized. Such
        a turn gets an order key just after the summary's last one (their order kept), so
        that the next version folds it after them: summary ranges stay contiguous.
        """
        summary = state.summary
        if summary is None or not summary.last_seq:
            return state
        passed = set(summary.passed_ids)
        late = [t for t in state.turns if t.seq <= summary.last_seq and t.id not in passed]
        if not late:
            return state
        owner = SessionOwner.of(summary.namespace, summary.session_id)
        moved = {t.id: t for t in self.move_after(owner, late, summary.last_seq)}
        turns = sorted((moved.get(t.id, t) for t in state.turns), key=lambda t: (t.seq, t.id))
        return replace(state, turns=tuple(turns))

    # -- expiry ---------------------------------------------------------------------------

    def take_before(self, owner: SessionOwner, cutoff_seq: int) -> list[TurnRow]:
        """Delete the session's turns ordered before ``cutoff_seq``; return them as stored.

        Deletes by id exactly the records read, so a turn written meanwhile (whatever its
        order key) stays. :meth:`restore` writes the records back unchanged.
        """
        where = {"$and": [dict(owner.where), {"seq": {"$lt": cutoff_seq}}]}
        got = self.chroma.call(
            "read expiring turns",
            partial(self.collection.get, where=where, include=["documents", "metadatas"]),
        )
        rows = [
            TurnRow(i, d or "", dict(m))
            for i, d, m in zip(
                got["ids"], got["documents"] or [], got["metadatas"] or [], strict=True
            )
            if owner.owns(m)
        ]
        if rows:
            ids = [r.record_id for r in rows]
            self.chroma.call("delete expiring turns", partial(self.collection.delete, ids=ids))
        return rows

    def restore(self, rows: Sequence[TurnRow]) -> None:
        """Write records :meth:`take_before` took back, unchanged."""
        step = self.chroma.batch_size()
        for start in range(0, len(rows), step):
            batch = rows[start : start + step]
            self.chroma.call(
                "restore turns",
                partial(
                    self.collection.upsert,
                    ids=[r.record_id for r in batch],
                    documents=[r.document for r in batch],
                    metadatas=[r.metadata for r in batch],
                    embeddings=placeholders(len(batch)),
                ),
            )

    def any_left(self, owner: SessionOwner) -> bool:
        """Whether the session's log holds any turn."""
        got = self.chroma.call(
            "look for turns",
            partial(self.collection.get, where=dict(owner.where), include=[], limit=1),
        )
        return bool(got["ids"])

    def count(self, owner: SessionOwner) -> int:
        """Return how many turns the session's log holds."""
        got = self.chroma.call(
            "count turns", lambda: self.collection.get(where=owner.where, include=[])
        )
        return len(got["ids"])

    def activity(
        self, namespace: str | None = None, *, created: bool = False
    ) -> dict[tuple[str, str], float]:
        """Return when each session (of a namespace, or all) last stored a turn.

        Scans the whole log (of the namespace) in pages, so no session is missed; the
        time is the newest order key's (``created``: the newest ``created_at``).
        """
        when = _created if created else _written
        where = namespace_filter(namespace)
        latest: dict[tuple[str, str], float] = {}
        page = max(1, min(self.chroma.batch_size(), SCAN_PAGE))
        offset = 0
        while True:
            got = self.chroma.call(
                "scan turns",
                partial(
                    self.collection.get,
                    where=where,
                    include=["metadatas"],
                    limit=page,
                    offset=offset,
                ),
            )
            metas = got["metadatas"] or []
            for key, written in decoded("turn", metas, when):
                if written > latest.get(key, float("-inf")):
                    latest[key] = written
            if len(metas) < page:
                return latest
            offset += page
