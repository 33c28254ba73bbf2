"""The versioned summaries: one record per version, and a ``current`` hint per session.

Each version (``S_1, S_2, ...``) names the turns folded into it. The ``current`` record
points at a recent version: a hint for cold readers, never trusted blindly, because every
version at or above it is read too. Versions are contiguous (each is written only after
the one before it), so they are read by id, a page at a time, until one is missing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import partial
from typing import Any

from ..cache import StoreCaches, session_cache_key
from ..errors import InvalidInputError
from .client import StoreClient
from .keys import (
    AnyScope,
    SessionOwner,
    fold_lease_id,
    session_key,
    summary_hint_id,
    summary_version_id,
)
from .records import Summary
from .repository import Repository, decoded, placeholders

__all__ = ["SummaryLog", "summary_from_record", "summary_metadata"]

_PAGE = 8
"""Versions read per request; more than this above the hint means the hint is stale."""


def summary_metadata(s: Summary, kind: str) -> dict[str, Any]:
    """Return the Chroma metadata of a summary record (``kind``: version or current)."""
    meta: dict[str, Any] = {
        "ns": s.namespace,
        "sid": s.session_id,
        "sk": session_key(s.namespace, s.session_id),
        "kind": kind,
        "version": s.version,
        "tok": s.tokens,
        "covered": s.covered,
        "method": s.method,
        "created": s.created_at,
        "fold_id": s.fold_id,
        "turn_ids": json.dumps(list(s.turn_ids)),
        "last_seq": s.last_seq,
        "passed": json.dumps(list(s.passed_ids)),
    }
    if s.first_turn_id is not None:
        meta["first_tid"] = s.first_turn_id
    if s.last_turn_id is not None:
        meta["last_tid"] = s.last_turn_id
    if s.question_id is not None:
        meta["question"] = s.question_id
    return meta


def _summary_of_row(row: tuple[str, Mapping[str, Any]]) -> Summary:
    return summary_from_record(*row)


def summary_from_record(doc: str, meta: Mapping[str, Any]) -> Summary:
    """Return the summary of a record (its document and metadata)."""
    first = meta.get("first_tid")
    last = meta.get("last_tid")
    return Summary(
        namespace=str(meta["ns"]),
        session_id=str(meta["sid"]),
        version=int(meta["version"]),
        text=doc,
        tokens=int(meta["tok"]),
        turn_ids=tuple(json.loads(str(meta["turn_ids"]))),
        first_turn_id=str(first) if first is not None else None,
        last_turn_id=str(last) if last is not None else None,
        covered=int(meta["covered"]),
        method=str(meta["method"]),
        created_at=float(meta["created"]),
        fold_id=str(meta["fold_id"]),
        last_seq=int(meta.get("last_seq", 0)),
        passed_ids=tuple(json.loads(str(meta.get("passed", "[]")))),
        question_id=str(question) if (question := meta.get("question")) is not None else None,
    )


def _owned(known: Mapping[str, tuple[SessionOwner, int]], meta: Mapping[str, Any]) -> bool:
    """Whether a record belongs to one of the ``known`` sessions."""
    try:
        entry = known.get(session_key(str(meta["ns"]), str(meta["sid"])))
    except (KeyError, InvalidInputError):
        return False
    return entry is not None and entry[0].owns(meta)


class SummaryLog(Repository):
    """The ``{prefix}_summaries`` collection's versions, hints and leases.

    Each session's hint, as last read or written, is kept in the store's caches (never
    trusted blindly: the versions at and above it are read too).

    Args:
        chroma: The client.
        prefix: The collection name prefix.
        caches: The store's caches.
    """

    name = "summaries"
    label = "summaries"

    def __init__(self, chroma: StoreClient, prefix: str, caches: StoreCaches) -> None:
        super().__init__(chroma, prefix)
        self._hints = caches.hints

    def _hint_key(self, owner: SessionOwner) -> tuple[str, str, str]:
        return session_cache_key(owner.namespace, owner.session_id)

    def forget_hint(self, owner: SessionOwner) -> None:
        """Read the session's hint again next time (it was stale, or the session cleared)."""
        self._hints.pop(self._hint_key(owner))

    def hint(self, owner: SessionOwner) -> int:
        """Return the version the session's ``current`` record points at (0: none)."""
        hint = self._hints.get(self._hint_key(owner))
        if hint is None:
            got = self.chroma.call(
                "read the summary hint",
                lambda: self.collection.get(
                    ids=[summary_hint_id(owner.key)], include=["metadatas"]
                ),
            )
            hint = 0
            owned = [m for m in got["metadatas"] or [] if owner.owns(m)]
            for version in decoded("summary hint", owned, lambda m: int(m["version"])):
                hint = version
            self._hints.put(self._hint_key(owner), hint)
        return hint

    def recent(self, owner: SessionOwner, hint: int | None = None) -> list[Summary]:
        """Return the versions at or above the hint, oldest first.

        Args:
            owner: The session.
            hint: The hint read earlier (before anything the caller relies on), or None to
                read it now.
        """
        if hint is None:
            hint = self.hint(owner)
        versions: list[Summary] = []
        first = max(hint, 1)
        while True:
            ids = [summary_version_id(owner.key, v) for v in range(first, first + _PAGE)]
            rows = self.read("read summaries", owner, ids=ids)
            found = decoded("summary", rows, _summary_of_row)
            versions.extend(found)
            if len(found) < _PAGE:
                break
            first += _PAGE
        versions.sort(key=lambda s: s.version)
        if len(versions) > _PAGE:
            # Others have been folding: refresh the hint from the current record.
            self.forget_hint(owner)
        if not versions and hint > 0:
            # The session was cleared (maybe by another store object): forget the hint.
            self.forget_hint(owner)
            return self.recent(owner, 0)
        return versions

    def since(self, known: Mapping[str, tuple[SessionOwner, int]]) -> dict[str, list[Summary]]:
        """The versions above a known one of several sessions, oldest first, by id.

        One request per page of versions for all the sessions together (usually one).

        Args:
            known: Session key -> ``(owner, version known)``.
        """
        out: dict[str, list[Summary]] = {key: [] for key in known}
        first = {key: version + 1 for key, (_, version) in known.items()}
        while first:
            ids = [
                summary_version_id(key, v)
                for key, start in first.items()
                for v in range(start, start + _PAGE)
            ]
            got = self.chroma.call(
                "read summaries",
                partial(self.collection.get, ids=ids, include=["documents", "metadatas"]),
            )
            rows = [
                (d or "", m)
                for d, m in zip(got["documents"] or [], got["metadatas"] or [], strict=True)
                if m.get("kind") == "version" and _owned(known, m)
            ]
            counts: dict[str, int] = {}
            for summary in decoded("summary", rows, _summary_of_row):
                key = session_key(summary.namespace, summary.session_id)
                out[key].append(summary)
                counts[key] = counts.get(key, 0) + 1
            first = {key: first[key] + _PAGE for key, n in counts.items() if n == _PAGE}
        for versions in out.values():
            versions.sort(key=lambda s: s.version)
        return out

    def latest(self, owner: SessionOwner) -> Summary | None:
        """Return the session's latest version, or None."""
        versions = self.recent(owner)
        return versions[-1] if versions else None

    def versions(self, owner: SessionOwner) -> list[Summary]:
        """Return every version of the session, oldest first (a filtered scan)."""
        rows = self.read("read summaries", owner, where=owner.where)
        out = decoded(
            "summary", [r for r in rows if r[1].get("kind") == "version"], _summary_of_row
        )
        out.sort(key=lambda s: s.version)
        return out

    def try_commit(self, owner: SessionOwner, new: Summary) -> bool:
        """Write version ``new`` unless another writer has: a compare-and-set.

        The version is written with Chroma's insert-if-absent ``add`` and read back; the
        writer whose fold id is stored wins.

        Returns:
            True if this call wrote the version; False if another writer had.
        """
        vid = summary_version_id(owner.key, new.version)
        meta = {**summary_metadata(new, "version"), **owner.metadata()}
        self.chroma.call(
            "write a summary",
            lambda: self.collection.add(
                ids=[vid], documents=[new.text], metadatas=[meta], embeddings=placeholders(1)
            ),
        )
        got = self.chroma.call(
            "read back a summary", lambda: self.collection.get(ids=[vid], include=["metadatas"])
        )
        metas = got["metadatas"] or []
        if not metas or metas[0].get("fold_id") != new.fold_id:
            self.forget_hint(owner)
            return False
        return True

    def advance_hint(self, owner: SessionOwner, new: Summary) -> None:
        """Point the session's ``current`` record at version ``new``."""
        self.chroma.call(
            "advance the summary hint",
            partial(
                self.collection.upsert,
                ids=[summary_hint_id(owner.key)],
                documents=[new.text],
                metadatas=[{**summary_metadata(new, "current"), **owner.metadata()}],
                embeddings=placeholders(1),
            ),
        )
        self._hints.put(self._hint_key(owner), new.version)

    # -- the fold lease ------------------------------------------------------------------

    def claim_lease(self, owner: AnyScope, holder: str, period: float, now: float) -> bool:
        """Claim the owner's lease for the current period and the next.

        A session's is its fold lease; a user's (:class:`~.keys.UserOwner`) guards the
        merge of the user's facts.

        Lease records are insert-if-absent, one per period (``now // period``): the first
        claim of a period wins it, and a holder that dies holds it at most two periods.
        A holder renews by claiming again (it already holds the current period).

        Returns:
            Whether ``holder`` holds the current period's lease.
        """
        epoch = int(now // period)
        ids = [fold_lease_id(owner.key, e) for e in (epoch, epoch + 1)]
        meta = {**owner.metadata(), "kind": "lease", "holder": holder}
        self.chroma.call(
            "claim the fold lease",
            partial(
                self.collection.add,
                ids=ids,
                documents=["", ""],
                metadatas=[meta, meta],
                embeddings=placeholders(2),
            ),
        )
        got = self.chroma.call(
            "read the fold lease",
            partial(self.collection.get, ids=ids[:1], include=["metadatas"]),
        )
        metas = [m for m in got["metadatas"] or [] if owner.owns(m)]
        return bool(metas) and metas[0].get("holder") == holder

    def release_lease(self, owner: AnyScope, holder: str, period: float, now: float) -> None:
        """Give up ``holder``'s claims on the lease (the current and the next period's)."""
        epoch = int(now // period)
        ids = [fold_lease_id(owner.key, e) for e in (epoch - 1, epoch, epoch + 1)]
        got = self.chroma.call(
            "read the fold lease",
            partial(self.collection.get, ids=ids, include=["metadatas"]),
        )
        mine = [
            i
            for i, m in zip(got["ids"], got["metadatas"] or [], strict=True)
            if owner.owns(m) and m.get("holder") == holder
        ]
        if mine:
            self.chroma.call("release the fold lease", partial(self.collection.delete, ids=mine))

    def clear(self, owner: AnyScope) -> None:
        """Delete every summary record of the session (its stamp too) and forget its hint."""
        super().clear(owner)
        if isinstance(owner, SessionOwner):
            self.forget_hint(owner)
