"""A session's head: its stamp record and the newest links of its chains, read together.

**How the memory stays fresh.** A process keeps, per session, a view of its turns (ranked,
:mod:`..retrieval.view`), HiGMem's nodes and events, its facts, and which user it belongs
to. None of it may change an answer: a read answers as a fresh process would. One rule
makes it so, for every cache:

    Each cached value records the store state it was built from: the session's *stamp*,
    its position in the session's *chain*, and the turns that were still *open*. Every
    read fetches those three again, in the two requests it makes anyway (one read by id
    of the stamp and the chain links after the position, one filtered read of the open
    turns); a cached value is used only if the store still shows what it was built from,
    caught up by id where the store moved on along the chain, and is rebuilt otherwise.

What advances each, so that no write goes unseen:

* **The stamp record** (one per session, beside its summaries): its ``epoch`` changes when
  the session starts again (its first write after a clear, an expiry or a forgotten user:
  those delete the record) and when a rebuild drops derived state; its ``facts`` token
  whenever the session's own facts change; its ``moved`` token when a fold gives open turns
  new order keys (turns whose write landed late); it names the session's user once it
  joins one. A user's facts have a stamp of their own on the user's record (:mod:`.users`).
* **The chains**: numbered links, each written insert-if-absent (a compare-and-set) and
  naming the turns it takes out of the open set. The recursive memory's links are its
  summary versions (a fold); HiGMem's are its index links (an indexing). A session is
  followed along the chain of the memory that wrote it (its stamp's ``memory``).
* **The open turns**: every turn is written open in both chains' flags (``open`` and
  ``hopen``, :data:`~.keys.OPEN_FLAGS`); each engine closes its own when a link of its
  chain names the turn. An ``add`` changes the open set; a reader sees it in the read of
  the open turns (their ids only), and reads by id only the turns it does not hold (every
  open turn of a session, with its order key, when the stamp's ``moved`` token changed).
* **A user's stamp record** (one per user, beside the sessions' stamps, read by id in the
  same request as their heads): a process keeps the user's list of sessions with the
  token the record held *before* the list was read, and lists again when it differs. Its
  token changes (an upsert, :meth:`SessionHeads.advance_user`) *after* every change of
  the user's set of sessions: a session registered with the user or joined to it
  (:class:`~.sessions.SessionList` calls it), cleared or expired
  (:class:`~.lifecycle.SessionLifecycle`); forgetting the user or clearing its last
  session deletes the record, and a user without one is listed at every read.

So a read that finds nothing new costs its two requests; what another object or process
wrote costs the reads by id of what changed; only a session that started again (or a
rebuild) is read whole, and a user's sessions are listed again only after their set
changed.

This module is the stamp records (the sessions' and the users') and HiGMem's index links
(all in ``{prefix}_summaries``, beside the summary versions, so that one request by id
reads a session's stamp and the links of either chain) and :meth:`SessionHeads.read_heads`,
that request for several sessions (:meth:`SessionHeads.read_heads_of_user`: and a user's
stamp).

Example:
    >>> from langchain_recursive_memory.core import MemoryStore
    >>> from langchain_recursive_memory.core.storage.keys import SessionOwner
    >>> heads = MemoryStore.in_memory().parts.repos.heads
    >>> owner = SessionOwner.of("default", "s1")
    >>> heads.ensure_stamp(owner, "higmem")
    >>> found = heads.read_heads([HeadRequest(owner, "h", 0)])[owner.key]
    >>> found.stamp.memory, found.links
    ('higmem', [])
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..cache import StoreCaches, session_cache_key
from .client import StoreClient
from .keys import (
    SessionOwner,
    UserOwner,
    index_link_id,
    stamp_record_id,
    summary_version_id,
    user_key,
    user_stamp_id,
)
from .records import IndexLink, SessionStamp, Summary
from .repository import Repository, decoded, placeholders
from .summaries import summary_from_record

__all__ = [
    "CHAINS",
    "HEAD_PAGE",
    "INDEX_CHAIN",
    "SUMMARY_CHAIN",
    "Head",
    "HeadRequest",
    "SessionHeads",
    "chain_of",
]

SUMMARY_CHAIN = "v"
"""The recursive memory's chain: its summary versions."""
INDEX_CHAIN = "h"
"""HiGMem's chain: its index links."""
CHAINS = (SUMMARY_CHAIN, INDEX_CHAIN)

HEAD_PAGE = 8
"""Links of a chain read per request (more means the reader was far behind: read on)."""

_STAMP_KIND = "stamp"
_USER_KIND = "ustamp"
_LINK_KIND = "index"
_VERSION_KIND = "version"


def chain_of(memory: str | None) -> str:
    """The chain a session written by ``memory`` (``"higmem"``, ``"hybrid"``...) follows."""
    return INDEX_CHAIN if memory == "higmem" else SUMMARY_CHAIN


@dataclass(frozen=True, slots=True)
class HeadRequest:
    """What to read of one session: its stamp, and a chain's links from ``start`` on.

    Attributes:
        owner: The session.
        chain: :data:`SUMMARY_CHAIN`, :data:`INDEX_CHAIN`, or None (the stamp only).
        start: The first link number to read (the reader's own position, to check that
            the store still holds it; 0 or 1: from the first).
    """

    owner: SessionOwner
    chain: str | None
    start: int


@dataclass
class Head:
    """What :meth:`SessionHeads.read_heads` found of one session.

    Attributes:
        stamp: Its stamp record, or None (none written: a new, cleared, or 0.1.0 session).
        versions: Summary versions from the requested start on, oldest first, contiguous.
        links: Index links from the requested start on, oldest first, contiguous.
    """

    stamp: SessionStamp | None = None
    versions: list[Summary] = field(default_factory=list)
    links: list[IndexLink] = field(default_factory=list)


def _stamp_of(meta: Mapping[str, Any]) -> SessionStamp:
    user = meta.get("uid")
    return SessionStamp(
        epoch=str(meta["epoch"]),
        facts=str(meta.get("facts", "")),
        memory=str(meta.get("memory", "")),
        user_id=str(user) if user is not None else None,
        index_hint=int(meta.get("hint", 0)),
        moved=str(meta.get("moved", "")),
    )


def _link_of(meta: Mapping[str, Any]) -> IndexLink:
    return IndexLink(
        number=int(meta["version"]),
        token=str(meta["token"]),
        turn_ids=tuple(json.loads(str(meta["turn_ids"]))),
        event_ids=tuple(json.loads(str(meta.get("event_ids", "[]")))),
        created_at=float(meta["created"]),
    )


def _contiguous(items: list[Any], start: int, number: Any) -> list[Any]:
    """``items`` sorted by ``number``, cut at the first gap from ``start`` on."""
    items.sort(key=number)
    out: list[Any] = []
    expect = max(start, 1)
    for item in items:
        if number(item) != expect:
            break
        out.append(item)
        expect += 1
    return out


class SessionHeads(Repository):
    """The stamp records and index links, in the ``{prefix}_summaries`` collection.

    Args:
        chroma: The client.
        prefix: The collection name prefix.
        caches: The store's caches (the stamps this process has written are kept there).
    """

    name = "summaries"
    label = "summaries"

    def __init__(self, chroma: StoreClient, prefix: str, caches: StoreCaches) -> None:
        super().__init__(chroma, prefix)
        self.caches = caches

    # -- the stamp record ---------------------------------------------------------------------

    def _stamped_key(self, owner: SessionOwner) -> tuple[str, ...]:
        return (*session_cache_key(owner.namespace, owner.session_id), "stamp")

    def ensure_stamp(self, owner: SessionOwner, memory: str = "") -> None:
        """Write the session's stamp record unless it exists (insert-if-absent, a new epoch).

        Args:
            owner: The session (with its user, when known).
            memory: The kind of memory writing the session (kept from the first write).
        """
        key = self._stamped_key(owner)
        if self.caches.registered.get(key):
            return
        meta = {**owner.metadata(), "kind": _STAMP_KIND, "epoch": uuid.uuid4().hex}
        if memory:
            meta["memory"] = memory
        self._write("stamp the session", self.collection.add, stamp_record_id(owner.key), meta)
        self.caches.registered.put(key, True)

    def _write(self, what: str, method: Any, record_id: str, meta: Mapping[str, Any]) -> None:
        """Write one record of no document (``method``: the collection's add or upsert)."""
        self.chroma.call(
            what,
            partial(
                method,
                ids=[record_id],
                documents=[""],
                metadatas=[dict(meta)],
                embeddings=placeholders(1),
            ),
        )

    def forget_stamp(self, owner: SessionOwner) -> None:
        """Forget that this process wrote the session's stamp (it was deleted)."""
        self.caches.registered.pop(self._stamped_key(owner))

    def touch(self, owner: SessionOwner, **fields: Any) -> None:
        """Set fields of the session's stamp record (written first if it is missing).

        ``facts=True`` or ``epoch=True`` give that field a new random token.
        """
        self.ensure_stamp(owner)
        meta = {k: uuid.uuid4().hex if v is True else v for k, v in fields.items()}
        self.set_fields("stamp the session", stamp_record_id(owner.key), meta)

    def join_user(self, owner: SessionOwner, memory: str = "") -> None:
        """Name the session's user on its stamp record (``owner.user_id``).

        ``memory``: the kind of memory writing, kept if this writes the stamp first.
        """
        assert owner.user_id is not None
        self.ensure_stamp(owner, memory)
        uk = user_key(owner.namespace, owner.user_id)
        self.set_fields(
            "stamp the session", stamp_record_id(owner.key), {"uid": owner.user_id, "uk": uk}
        )

    # -- the user's stamp record ----------------------------------------------------------------

    def advance_user(self, user: UserOwner) -> None:
        """Give the user's stamp record a new token: its set of sessions has just changed.

        An upsert (the record is written if it is missing). Call it *after* the change: a
        reader that read the token before the change reads another one next time.
        """
        meta = {**user.metadata(), "kind": _USER_KIND, "token": uuid.uuid4().hex}
        self._write(
            "stamp the user's sessions", self.collection.upsert, user_stamp_id(user.key), meta
        )

    def drop_user(self, user: UserOwner) -> None:
        """Delete the user's stamp record (the user is gone: no token, nothing is cached)."""
        self.delete_ids("delete the user's stamp", [user_stamp_id(user.key)])

    # -- the index chain (HiGMem's) -----------------------------------------------------------

    def try_link(self, owner: SessionOwner, link: IndexLink) -> bool:
        """Write index link ``link.number`` unless another indexing has: a compare-and-set.

        Returns:
            True if this call wrote it; False if another writer had (read the chain again).
        """
        lid = index_link_id(owner.key, link.number)
        meta = {
            **owner.metadata(),
            "kind": _LINK_KIND,
            "version": link.number,
            "token": link.token,
            "turn_ids": json.dumps(list(link.turn_ids)),
            "event_ids": json.dumps(list(link.event_ids)),
            "created": link.created_at,
        }
        self._write("write an index link", self.collection.add, lid, meta)
        got = self.chroma.call(
            "read back an index link",
            partial(self.collection.get, ids=[lid], include=["metadatas"]),
        )
        metas = got["metadatas"] or []
        won = bool(metas) and metas[0].get("token") == link.token
        if won:
            self.touch(owner, hint=link.number)
        return won

    def drop_links(self, owner: SessionOwner) -> None:
        """Delete the session's index links (a rebuild of its nodes starts so)."""
        self.delete_where("delete the index links", {"$and": [owner.where, {"kind": _LINK_KIND}]})

    # -- the read -----------------------------------------------------------------------------

    def read_heads(self, requests: Sequence[HeadRequest]) -> dict[str, Head]:
        """Read the stamps and chain links of several sessions by id: one request (per page).

        Args:
            requests: One per session (at most one per session key).

        Returns:
            Session key -> :class:`Head`; each chain's links from the requested start on,
            contiguous (cut at the first missing number).
        """
        return self.read_heads_of_user(requests, None)[0]

    def read_heads_of_user(
        self, requests: Sequence[HeadRequest], user: UserOwner | None
    ) -> tuple[dict[str, Head], str | None]:
        """:meth:`read_heads`, and the token of ``user``'s stamp record in the same request.

        Returns:
            The heads, and the user's token (None: no user given, or no record).
        """
        token: str | None = None
        out = {r.owner.key: Head() for r in requests}
        by_key = {r.owner.key: r for r in requests}
        pages = {r.owner.key: max(r.start, 1) for r in requests if r.chain is not None}
        first = True
        rows: dict[str, list[Mapping[str, Any]]] = {key: [] for key in out}
        docs: dict[str, list[tuple[str, Mapping[str, Any]]]] = {key: [] for key in out}
        while first or pages:
            ids = [stamp_record_id(key) for key in out] if first else []
            if first and user is not None:
                ids.append(user_stamp_id(user.key))
            for key, start in pages.items():
                build = index_link_id if by_key[key].chain == "h" else summary_version_id
                ids.extend(build(key, n) for n in range(start, start + HEAD_PAGE))
            got = self.chroma.call(
                "read the session heads",
                partial(self.collection.get, ids=ids, include=["documents", "metadatas"]),
            )
            counts, found = _sort_head_rows(got, by_key, user, rows, docs)
            token = found if first else token
            pages = {k: pages[k] + HEAD_PAGE for k, n in counts.items() if n == HEAD_PAGE}
            first = False
        for key, head in out.items():
            _fill_head(head, by_key[key], rows[key], docs[key])
        return out, token


def _sort_head_rows(
    got: Mapping[str, Any],
    by_key: Mapping[str, HeadRequest],
    user: UserOwner | None,
    rows: dict[str, list[Mapping[str, Any]]],
    docs: dict[str, list[tuple[str, Mapping[str, Any]]]],
) -> tuple[dict[str, int], str | None]:
    """Sort one page of :meth:`SessionHeads.read_heads_of_user` into stamps and chain links.

    Returns:
        How many chain links each session key got, and the user's stamp token (if read).
    """
    token: str | None = None
    counts: dict[str, int] = {}
    for doc, meta in zip(got["documents"] or [], got["metadatas"] or [], strict=True):
        if user is not None and meta.get("kind") == _USER_KIND and user.owns(meta):
            token = str(meta.get("token", "")) or None
            continue
        key = str(meta.get("sk", ""))
        request = by_key.get(key)
        if request is None or not request.owner.owns(meta):
            continue
        if meta.get("kind") == _STAMP_KIND:
            rows[key].append(meta)
        elif meta.get("kind") in (_LINK_KIND, _VERSION_KIND):
            docs[key].append((doc or "", meta))
            counts[key] = counts.get(key, 0) + 1
    return counts, token


def _fill_head(
    head: Head,
    request: HeadRequest,
    stamp_rows: list[Mapping[str, Any]],
    chain_rows: list[tuple[str, Mapping[str, Any]]],
) -> None:
    """Decode a session's stamp and its chain's links (contiguous from the start) into ``head``."""
    stamps = decoded("session stamp", stamp_rows, _stamp_of)
    head.stamp = stamps[0] if stamps else None
    if request.chain == "h":
        links = decoded("index link", [m for _, m in chain_rows], _link_of)
        head.links = _contiguous(links, request.start, lambda link: link.number)
    elif request.chain == "v":
        found = decoded("summary", chain_rows, lambda r: summary_from_record(*r))
        head.versions = _contiguous(found, request.start, lambda s: s.version)
