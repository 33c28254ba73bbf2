"""The Chroma store: the turn log and the versioned summaries, scoped by session.

Layout (``prefix`` defaults to ``"lrm"``; one Chroma database can hold many prefixes):

``{prefix}_turns``
    The turn log, the source of truth. Append-only: a turn is written once (a second add
    with the same turn id is ignored by Chroma) and only its ``folded`` flag changes
    afterwards. Document: the turn's text; metadata: namespace, session id, role, order key,
    token count, folded flag, and the rest of the message as JSON.
``{prefix}_summaries``
    One record per summary version (``S_1, S_2, ...``), each naming the turns folded into it,
    and a ``current`` record per session that points at a recent version (a hint for cold
    readers, never trusted blindly).
``{prefix}_sessions``
    One record per session, for listing sessions.

Every read filters on namespace *and* session id (invariant 3), and record ids embed a
hash of both, so equal session ids in two namespaces never meet.

Concurrency: a summary version is written with Chroma's insert-if-absent ``add`` and read
back; the writer whose fold id is stored wins, the other discards its work and reloads
(a compare-and-set on the version number). After winning, the writer flags the folded
turns, then advances the ``current`` hint. A crash between those steps is repaired by the
next load and the next fold, because readers exclude the turns named by every version
newer than the hint.

Chroma never downloads its default embedding model here: every record is written with an
explicit embedding (a one-dimensional placeholder in these non-vector collections).

Example:
    >>> from langchain_recursive_memory.core import MemoryStore, Turn
    >>> store = MemoryStore.in_memory()
    >>> _ = store.append("default", "s1", [Turn(role="user", text="hi")], [5], "o200k_base")
    >>> [t.turn.text for t in store.load("default", "s1").turns]
    ['hi']
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import ConfigurationError, InvalidInputError, RecursiveMemoryError, StoreError
from .events import Event, TurnNote
from .facts import Fact, merge_fact
from .runtime.retry import RetryPolicy
from .turn import Turn
from .usage import Usage, UsageRecord

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

__all__ = [
    "DEFAULT_NAMESPACE",
    "MemoryStore",
    "SessionInfo",
    "SessionState",
    "StoredTurn",
    "Summary",
    "VectorRecord",
    "default_path",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_NAMESPACE = "default"
"""The namespace used when none is given."""

PATH_ENV = "LANGCHAIN_RECURSIVE_MEMORY_PATH"
SCHEMA = 2
"""Version of the record layout (2: selective session keys ``sk``/``open``/``skk``)."""
MAX_ID_LENGTH = 1024
_PREFIX_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,40}$")
_SPACE_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,59}$")
_PLACEHOLDER = [0.0]


def default_path() -> Path:
    """Return where the embedded store persists by default.

    ``$LANGCHAIN_RECURSIVE_MEMORY_PATH`` when set, else
    ``$XDG_DATA_HOME/langchain-recursive-memory/chroma`` (``XDG_DATA_HOME`` defaults to
    ``~/.local/share``).
    """
    env = os.environ.get(PATH_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "langchain-recursive-memory" / "chroma"


def validate_scope(namespace: str, session_id: str) -> None:
    """Check a namespace and session id.

    Both must be non-empty strings of at most 1,024 characters without NUL characters.
    Any other content (quotes, ``$and``, JSON) is fine: values are never interpolated into
    queries.

    Raises:
        InvalidInputError: Naming the bad value.
    """
    for name, value in (("namespace", namespace), ("session_id", session_id)):
        if not isinstance(value, str):
            raise InvalidInputError.for_value(name, value, "must be a str")
        if not value:
            raise InvalidInputError.for_value(name, value, "must not be empty")
        if len(value) > MAX_ID_LENGTH:
            raise InvalidInputError.for_value(
                name, value, f"is {len(value)} characters long; the limit is {MAX_ID_LENGTH}"
            )
        if "\x00" in value:
            raise InvalidInputError.for_value(name, value, "must not contain NUL characters")


def session_key(namespace: str, session_id: str) -> str:
    """Return the short, fixed-length key that prefixes a session's record ids."""
    digest = hashlib.blake2b(f"{namespace}\x00{session_id}".encode(), digest_size=12)
    return digest.hexdigest()


def _vector_records(got: Any, namespace: str, session_id: str) -> list[VectorRecord]:
    """Vector records of a Chroma ``get`` result that belong to the session."""
    embeddings = got.get("embeddings")
    if embeddings is None:
        embeddings = []
    return [
        VectorRecord(rid, str(m["kind"]), str(m["ref"]), v, str(m.get("h", "")))
        for rid, m, v in zip(got["ids"], got["metadatas"] or [], embeddings, strict=True)
        if m.get("sid") == session_id and m.get("ns") == namespace
    ]


def text_hash(text: str) -> str:
    """Return the short hash stored with a vector to tell when its text has changed."""
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


@dataclass(frozen=True, slots=True)
class StoredTurn:
    """A turn as stored in the log.

    Attributes:
        turn: The turn, with its id and creation time set.
        seq: The order key (nanoseconds since the epoch, unique per writer).
        tokens: The turn's token count as one chat message.
        encoding: The encoding ``tokens`` was counted with.
        folded_in: The summary version that folded it, or 0.
    """

    turn: Turn
    seq: int
    tokens: int
    encoding: str
    folded_in: int = 0

    @property
    def id(self) -> str:
        """The turn id."""
        assert self.turn.id is not None
        return self.turn.id


@dataclass(frozen=True, slots=True)
class Summary:
    """One version of a session's running summary.

    Attributes:
        namespace: The session's namespace.
        session_id: The session id.
        version: 1 for the first summary, then +1 per fold step.
        text: The summary text.
        tokens: Its token count (text only).
        turn_ids: The turns folded into this version (not those of earlier versions).
        first_turn_id: The first turn the summary covers (the session's first folded turn).
        last_turn_id: The last turn folded so far.
        covered: How many turns all versions up to this one folded in total.
        method: ``"llm"`` or ``"extractive"`` (no LLM configured).
        created_at: Seconds since the epoch.
        fold_id: A random id of the fold that wrote it (for compare-and-set).
    """

    namespace: str
    session_id: str
    version: int
    text: str
    tokens: int
    turn_ids: tuple[str, ...]
    first_turn_id: str | None
    last_turn_id: str | None
    covered: int
    method: str
    created_at: float = field(default_factory=time.time)
    fold_id: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass(frozen=True, slots=True)
class SessionState:
    """What a reader needs: the latest summary and the turns it does not cover.

    Attributes:
        summary: The latest summary version, or None before the first fold.
        turns: The unfolded turns, oldest first.
        repair_ids: Turns named by recent summary versions whose folded flag may not be
            written yet; the next fold writes it.
    """

    summary: Summary | None
    turns: tuple[StoredTurn, ...]
    repair_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class VectorRecord:
    """A vector of a turn, fact, window or event, in an embedder's collection.

    Attributes:
        id: The record id (unique in the collection).
        kind: What it embeds (``"turn"``, ``"fact"``, ``"hg_w1"``, ``"hg_event"``...).
        ref: The turn id, fact key or event id it belongs to.
        vector: The embedding.
        text_hash: A hash of the embedded text, to tell when it is stale.
    """

    id: str
    kind: str
    ref: str
    vector: Sequence[float]
    text_hash: str = ""


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session listed by :meth:`MemoryStore.sessions`."""

    namespace: str
    session_id: str
    created_at: float


class MemoryStore:
    """Chroma-backed storage of turns and summaries.

    Use a factory, or pass any chromadb client:

    * :meth:`persistent` (the default of the memories): an embedded
      ``PersistentClient`` at :func:`default_path` or a given path;
    * :meth:`in_memory`: an embedded ``EphemeralClient`` (tests, demos);
    * :meth:`http`: a Chroma server (``chroma run``) through ``HttpClient``;
    * ``MemoryStore(client)``: any chromadb ``ClientAPI``.

    Args:
        client: A chromadb client.
        prefix: Collection name prefix (letters, digits, ``.``, ``_``, ``-``).

    Raises:
        ConfigurationError: For a bad prefix.
        StoreError: When the collections cannot be opened.
    """

    def __init__(
        self,
        client: ClientAPI,
        *,
        prefix: str = "lrm",
        http_timeout: float = 30.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not isinstance(prefix, str) or not _PREFIX_RE.match(prefix):
            raise ConfigurationError.for_value(
                "prefix", prefix, "use 1-41 letters, digits, '.', '_' or '-', starting alnum"
            )
        if http_timeout <= 0:
            raise ConfigurationError.for_value("http_timeout", http_timeout, "must be > 0")
        # chromadb's HttpClient waits forever by default; every request gets a timeout here.
        _set_http_timeout(client, http_timeout)
        self.client = client
        self.prefix = prefix
        self.identity = _client_identity(client)
        self.retry = retry or RetryPolicy(attempts=3, initial_delay=0.2, max_delay=2.0)
        # chromadb's Collection type is precise beyond use here (numpy unions); Any it is.
        self._turns: Any = self._collection("turns")
        self._summaries: Any = self._collection("summaries")
        self._sessions: Any = self._collection("sessions")
        self._facts: Any = self._collection("facts")
        self._notes: Any = self._collection("hg_turns")
        self._events: Any = self._collection("hg_events")
        self._usage: Any = self._collection("usage")
        self._vectors: dict[str, Any] = {}
        self._clock_lock = threading.Lock()
        self._last_seq = 0
        self._registered: set[str] = set()
        self._hints: dict[str, int] = {}
        self._session_seq: dict[str, int] = {}
        self._max_batch = 0

    # -- construction -------------------------------------------------------------------

    @classmethod
    def persistent(cls, path: str | os.PathLike[str] | None = None, **kwargs: Any) -> MemoryStore:
        """Open (or create) an embedded, persistent store.

        Args:
            path: The directory; defaults to :func:`default_path`.
            **kwargs: Passed to the constructor (``prefix``).
        """
        import chromadb
        from chromadb.config import Settings

        target = Path(path).expanduser() if path is not None else default_path()
        try:
            target.mkdir(parents=True, exist_ok=True)
            client = chromadb.PersistentClient(
                path=str(target), settings=Settings(anonymized_telemetry=False)
            )
        except Exception as exc:
            raise StoreError(
                f"cannot open the Chroma store at path={str(target)!r}: {exc}"
            ) from exc
        return cls(client, **kwargs)

    @classmethod
    def in_memory(cls, **kwargs: Any) -> MemoryStore:
        """Create an embedded store that lives in this process only.

        Each call gets a fresh, empty store (collections get a random prefix unless
        ``prefix`` is given), because chromadb shares one in-memory system per process.
        """
        import chromadb
        from chromadb.config import Settings

        kwargs.setdefault("prefix", f"mem{uuid.uuid4().hex[:12]}")
        client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
        return cls(client, **kwargs)

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
        import chromadb
        from chromadb.config import Settings

        if timeout <= 0:
            raise ConfigurationError.for_value("timeout", timeout, "must be > 0")
        _probe(host, port, ssl=ssl, headers=headers, timeout=timeout)
        try:
            client = chromadb.HttpClient(
                host=host,
                port=port,
                ssl=ssl,
                headers=dict(headers) if headers else None,
                settings=Settings(anonymized_telemetry=False),
            )
        except Exception as exc:
            raise StoreError(f"cannot reach the Chroma server at {host}:{port}: {exc}") from exc
        kwargs.setdefault("http_timeout", timeout)
        return cls(client, **kwargs)

    def _collection(self, name: str, **options: Any) -> Any:
        full = f"{self.prefix}_{name}"
        col = self._call(
            f"open collection {full!r}",
            lambda: self.client.get_or_create_collection(
                full, embedding_function=None, metadata={"lrm_schema": SCHEMA}, **options
            ),
        )
        found = (col.metadata or {}).get("lrm_schema")
        if found != SCHEMA:
            raise StoreError(
                f"collection {full!r} has lrm_schema={found!r}, this version needs {SCHEMA}: "
                "it was written by a development version; use another prefix or path"
            )
        return col

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        """Run a Chroma call; retry transient network failures with bounded backoff.

        Every write is idempotent (fixed ids, insert-if-absent), so a retry after a
        timeout whose request did land changes nothing.
        """
        delays = list(self.retry.delays())
        for attempt in range(len(delays) + 1):
            try:
                return fn()
            except RecursiveMemoryError:
                raise
            except Exception as exc:
                if attempt < len(delays) and _transient(exc):
                    logger.info("Chroma call %r failed (%s); retrying", what, exc)
                    time.sleep(delays[attempt])
                    continue
                raise StoreError(f"Chroma failed to {what}: {type(exc).__name__}: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _next_seq(self, skey: str, count: int) -> list[int]:
        """Order keys for new turns: the clock, but never below what this session has shown.

        Writers on several machines share a session through a Chroma server; a writer whose
        clock lags still orders its turns after every turn it has read (each ``load`` and
        ``turns`` call records the session's highest key).
        """
        with self._clock_lock:
            now = time.time_ns()
            start = max(now, self._last_seq + 1, self._session_seq.get(skey, 0) + 1)
            self._last_seq = start + count - 1
            self._session_seq[skey] = self._last_seq
        return list(range(start, start + count))

    def _observe_seq(self, skey: str, turns: Sequence[StoredTurn]) -> None:
        if turns:
            top = max(t.seq for t in turns)
            with self._clock_lock:
                if top > self._session_seq.get(skey, 0):
                    self._session_seq[skey] = top

    @staticmethod
    def _scope(namespace: str, session_id: str) -> dict[str, Any]:
        # One equality on the session key: Chroma's metadata filter cost grows with the
        # records each predicate matches, so an unselective {"ns": ...} would make every
        # read slow down as the whole database grows. Results are re-checked on ns/sid.
        return {"sk": session_key(namespace, session_id)}

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
        validate_scope(namespace, session_id)
        if len(turns) != len(tokens):
            raise InvalidInputError.for_value("tokens", len(tokens), f"expected {len(turns)}")
        if not turns:
            return []
        skey = session_key(namespace, session_id)
        seqs = self._next_seq(skey, len(turns))
        stored: list[StoredTurn] = []
        seen: set[str] = set()
        for turn, count, seq in zip(turns, tokens, seqs, strict=True):
            turn_id = turn.id or f"{seq:019d}-{uuid.uuid4().hex[:8]}"
            if turn_id in seen:
                continue
            seen.add(turn_id)
            created = turn.created_at if turn.created_at is not None else seq / 1e9
            stored.append(StoredTurn(turn.with_id(turn_id, created), seq, int(count), encoding))
        ids = [f"{skey}:t:{s.id}" for s in stored]
        docs = [s.turn.text for s in stored]
        metas = [self._turn_meta(namespace, session_id, s) for s in stored]
        self._register(namespace, session_id, skey)
        step = self._batch_size()
        for start in range(0, len(ids), step):
            end = start + step
            self._call(
                "append turns",
                partial(
                    self._turns.add,
                    ids=ids[start:end],
                    documents=docs[start:end],
                    metadatas=metas[start:end],
                    embeddings=[_PLACEHOLDER] * len(ids[start:end]),
                ),
            )
        return stored

    def _batch_size(self) -> int:
        """The most records Chroma accepts in one write."""
        if not self._max_batch:
            try:
                self._max_batch = int(self.client.get_max_batch_size())
            except Exception:
                self._max_batch = 1000
        return max(1, self._max_batch)

    @staticmethod
    def _turn_meta(namespace: str, session_id: str, s: StoredTurn) -> dict[str, Any]:
        skey = session_key(namespace, session_id)
        meta: dict[str, Any] = {
            "ns": namespace,
            "sid": session_id,
            "sk": skey,
            "open": f"{skey}:1",
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

    @staticmethod
    def _to_stored(doc: str | None, meta: Mapping[str, Any]) -> StoredTurn:
        payload = json.loads(str(meta["payload"])) if meta.get("payload") else {}
        turn = Turn.from_payload(
            str(meta["role"]),
            doc or "",
            payload,
            turn_id=str(meta["tid"]),
            created_at=float(meta["created"]),
        )
        return StoredTurn(
            turn, int(meta["seq"]), int(meta["tok"]), str(meta["enc"]), int(meta["folded"])
        )

    def _get_turns(
        self, namespace: str, session_id: str, where: Mapping[str, Any]
    ) -> list[StoredTurn]:
        got = self._call(
            "read turns",
            lambda: self._turns.get(where=dict(where), include=["documents", "metadatas"]),
        )
        docs = got["documents"] or []
        metas = got["metadatas"] or []
        turns = [
            self._to_stored(d, m)
            for d, m in zip(docs, metas, strict=True)
            if m.get("sid") == session_id and m.get("ns") == namespace
        ]
        turns.sort(key=lambda s: (s.seq, s.id))
        return turns

    def turns(self, namespace: str, session_id: str) -> list[StoredTurn]:
        """Return every logged turn of the session, oldest first (folded or not)."""
        validate_scope(namespace, session_id)
        out = self._get_turns(namespace, session_id, self._scope(namespace, session_id))
        self._observe_seq(session_key(namespace, session_id), out)
        return out

    def get_turns(
        self, namespace: str, session_id: str, turn_ids: Iterable[str]
    ) -> list[StoredTurn]:
        """Return the session's turns with the given ids, oldest first (missing ids skipped)."""
        validate_scope(namespace, session_id)
        skey = session_key(namespace, session_id)
        ids = [f"{skey}:t:{t}" for t in dict.fromkeys(turn_ids)]
        if not ids:
            return []
        got = self._call(
            "read turns by id",
            lambda: self._turns.get(ids=ids, include=["documents", "metadatas"]),
        )
        out = [
            self._to_stored(d, m)
            for d, m in zip(got["documents"] or [], got["metadatas"] or [], strict=True)
            if m.get("sid") == session_id and m.get("ns") == namespace
        ]
        out.sort(key=lambda s: (s.seq, s.id))
        return out

    def record_ids(self, collection: str, namespace: str, session_id: str) -> list[str]:
        """Return the record ids of the session in one collection (cheap: no documents).

        ``collection`` is ``"turns"``, ``"hg_turns"``, ``"hg_events"`` or ``"facts"``.
        """
        validate_scope(namespace, session_id)
        col = {
            "turns": self._turns,
            "hg_turns": self._notes,
            "hg_events": self._events,
            "facts": self._facts,
        }.get(collection)
        if col is None:
            raise InvalidInputError.for_value("collection", collection, "unknown collection")
        got = self._call(
            f"read {collection} ids",
            lambda: col.get(where=self._scope(namespace, session_id), include=[]),
        )
        return list(got["ids"])

    def count_turns(self, namespace: str, session_id: str) -> int:
        """Return how many turns the session's log holds."""
        validate_scope(namespace, session_id)
        got = self._call(
            "count turns",
            lambda: self._turns.get(where=self._scope(namespace, session_id), include=[]),
        )
        return len(got["ids"])

    # -- summaries -----------------------------------------------------------------------

    @staticmethod
    def _summary_meta(s: Summary, kind: str) -> dict[str, Any]:
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
        }
        if s.first_turn_id is not None:
            meta["first_tid"] = s.first_turn_id
        if s.last_turn_id is not None:
            meta["last_tid"] = s.last_turn_id
        return meta

    @staticmethod
    def _to_summary(doc: str | None, meta: Mapping[str, Any]) -> Summary:
        first = meta.get("first_tid")
        last = meta.get("last_tid")
        return Summary(
            namespace=str(meta["ns"]),
            session_id=str(meta["sid"]),
            version=int(meta["version"]),
            text=doc or "",
            tokens=int(meta["tok"]),
            turn_ids=tuple(json.loads(str(meta["turn_ids"]))),
            first_turn_id=str(first) if first is not None else None,
            last_turn_id=str(last) if last is not None else None,
            covered=int(meta["covered"]),
            method=str(meta["method"]),
            created_at=float(meta["created"]),
            fold_id=str(meta["fold_id"]),
        )

    def _hint(self, namespace: str, session_id: str, skey: str) -> int:
        hint = self._hints.get(skey)
        if hint is None:
            got = self._call(
                "read the summary hint",
                lambda: self._summaries.get(ids=[f"{skey}:current"], include=["metadatas"]),
            )
            metas = got["metadatas"] or []
            hint = 0
            for m in metas:
                if m.get("sid") == session_id and m.get("ns") == namespace:
                    hint = int(m["version"])
            self._hints[skey] = hint
        return hint

    def _recent_versions(
        self, namespace: str, session_id: str, hint: int | None = None
    ) -> list[Summary]:
        """Summary versions >= the hint (read before anything the caller relies on)."""
        skey = session_key(namespace, session_id)
        if hint is None:
            hint = self._hint(namespace, session_id, skey)
        # Versions are contiguous (each is written only after the one before it), so they
        # are read by id, a page at a time, until one is missing: no filtered scan.
        versions: list[Summary] = []
        first = max(hint, 1)
        page = 8
        while True:
            ids = [f"{skey}:v:{v:010d}" for v in range(first, first + page)]
            got = self._call(
                "read summaries",
                partial(self._summaries.get, ids=ids, include=["documents", "metadatas"]),
            )
            found = [
                self._to_summary(d, m)
                for d, m in zip(got["documents"] or [], got["metadatas"] or [], strict=True)
                if m.get("sid") == session_id and m.get("ns") == namespace
            ]
            versions.extend(found)
            if len(found) < page:
                break
            first += page
        versions.sort(key=lambda s: s.version)
        if len(versions) > 8:
            # Others have been folding: refresh the hint from the current record.
            self._hints.pop(skey, None)
        if not versions and hint > 0:
            # The session was cleared (maybe by another store object): forget the hint.
            self._hints.pop(skey, None)
            self._registered.discard(skey)
            return self._recent_versions(namespace, session_id, 0)
        return versions

    def latest_summary(self, namespace: str, session_id: str) -> Summary | None:
        """Return the session's latest summary version, or None."""
        validate_scope(namespace, session_id)
        versions = self._recent_versions(namespace, session_id)
        return versions[-1] if versions else None

    def summaries(self, namespace: str, session_id: str) -> list[Summary]:
        """Return every summary version of the session, oldest first."""
        validate_scope(namespace, session_id)
        where = self._scope(namespace, session_id)
        got = self._call(
            "read summaries",
            lambda: self._summaries.get(where=where, include=["documents", "metadatas"]),
        )
        out = [
            self._to_summary(d, m)
            for d, m in zip(got["documents"] or [], got["metadatas"] or [], strict=True)
            if m.get("kind") == "version"
            and m.get("sid") == session_id
            and m.get("ns") == namespace
        ]
        out.sort(key=lambda s: s.version)
        return out

    def load(self, namespace: str, session_id: str) -> SessionState:
        """Return the latest summary and the turns it does not cover, oldest first.

        The version hint is read first, then the unfolded turns, then every version at or
        above the hint: a fold committed in between can only make a turn appear both in a
        summary and in the window (never in neither, never folded twice).
        """
        validate_scope(namespace, session_id)
        skey = session_key(namespace, session_id)
        hint = self._hint(namespace, session_id, skey)
        unfolded = self._get_turns(namespace, session_id, {"open": f"{skey}:1"})
        self._observe_seq(skey, unfolded)
        versions = self._recent_versions(namespace, session_id, hint)
        named: set[str] = set()
        for v in versions:
            named.update(v.turn_ids)
        turns = tuple(t for t in unfolded if t.id not in named)
        repair = tuple(t.id for t in unfolded if t.id in named)
        return SessionState(versions[-1] if versions else None, turns, repair)

    def state_from_turns(
        self, namespace: str, session_id: str, turns: Sequence[StoredTurn]
    ) -> SessionState:
        """Like :meth:`load`, from an already read full list of the session's turns."""
        validate_scope(namespace, session_id)
        versions = self._recent_versions(namespace, session_id)
        named: set[str] = set()
        for v in versions:
            named.update(v.turn_ids)
        unfolded = [t for t in turns if t.folded_in == 0]
        return SessionState(
            versions[-1] if versions else None,
            tuple(t for t in unfolded if t.id not in named),
            tuple(t.id for t in unfolded if t.id in named),
        )

    def commit_summary(self, new: Summary, repair_ids: Sequence[str] = ()) -> bool:
        """Write summary version ``new`` if no other writer has written that version.

        On success the folded turns (``new.turn_ids`` and ``repair_ids``) are flagged and the
        session's ``current`` hint advances.

        Returns:
            True if this call wrote the version; False if another writer had (reload).
        """
        validate_scope(new.namespace, new.session_id)
        skey = session_key(new.namespace, new.session_id)
        vid = f"{skey}:v:{new.version:010d}"
        meta = self._summary_meta(new, "version")
        self._call(
            "write a summary",
            lambda: self._summaries.add(
                ids=[vid], documents=[new.text], metadatas=[meta], embeddings=[_PLACEHOLDER]
            ),
        )
        got = self._call(
            "read back a summary", lambda: self._summaries.get(ids=[vid], include=["metadatas"])
        )
        metas = got["metadatas"] or []
        if not metas or metas[0].get("fold_id") != new.fold_id:
            self._hints.pop(skey, None)
            return False
        flagged = dict.fromkeys(repair_ids, new.version)
        flagged.update(dict.fromkeys(new.turn_ids, new.version))
        if flagged:
            self._call(
                "flag folded turns",
                lambda: self._turns.update(
                    ids=[f"{skey}:t:{t}" for t in flagged],
                    metadatas=[{"folded": v, "open": f"{skey}:0"} for v in flagged.values()],
                ),
            )
        self._call(
            "advance the summary hint",
            lambda: self._summaries.upsert(
                ids=[f"{skey}:current"],
                documents=[new.text],
                metadatas=[self._summary_meta(new, "current")],
                embeddings=[_PLACEHOLDER],
            ),
        )
        self._hints[skey] = new.version
        return True

    # -- facts ---------------------------------------------------------------------------

    def upsert_facts(self, namespace: str, session_id: str, facts: Sequence[Fact]) -> list[Fact]:
        """Store facts, each *updating* the stored fact with the same key (if any).

        Returns:
            The facts as stored (merged with their earlier versions).
        """
        validate_scope(namespace, session_id)
        if not facts:
            return []
        skey = session_key(namespace, session_id)
        ids = [f"{skey}:f:{f.key_hash}" for f in facts]
        existing = {f.key: f for f in self.get_facts(namespace, session_id, ids=ids)}
        merged = [merge_fact(existing.get(f.key), f) for f in facts]
        metas = [
            {"ns": namespace, "sid": session_id, "sk": skey, **f.to_metadata()} for f in merged
        ]
        self._call(
            "write facts",
            lambda: self._facts.upsert(
                ids=ids,
                documents=[f.text for f in merged],
                metadatas=metas,
                embeddings=[_PLACEHOLDER] * len(ids),
            ),
        )
        return merged

    def get_facts(
        self, namespace: str, session_id: str, *, ids: Sequence[str] | None = None
    ) -> list[Fact]:
        """Return the session's facts (or those with the given record ids), oldest first."""
        validate_scope(namespace, session_id)
        if ids is not None:
            got = self._call(
                "read facts",
                lambda: self._facts.get(ids=list(ids), include=["documents", "metadatas"]),
            )
        else:
            got = self._call(
                "read facts",
                lambda: self._facts.get(
                    where=self._scope(namespace, session_id), include=["documents", "metadatas"]
                ),
            )
        out = [
            Fact.from_metadata(d or "", m)
            for d, m in zip(got["documents"] or [], got["metadatas"] or [], strict=True)
            if m.get("sid") == session_id and m.get("ns") == namespace
        ]
        out.sort(key=lambda f: (f.created_at, f.key))
        return out

    def fact_record_id(self, namespace: str, session_id: str, fact: Fact) -> str:
        """The Chroma id of a fact's record (also used for its vector)."""
        return f"{session_key(namespace, session_id)}:f:{fact.key_hash}"

    # -- vectors (derived: rebuildable from turns and facts) -------------------------------

    def _vector_collection(self, space: str) -> Any:
        col = self._vectors.get(space)
        if col is None:
            if not _SPACE_RE.match(space):
                raise ConfigurationError.for_value(
                    "space", space, "use 1-60 lowercase letters, digits or '-'"
                )
            col = self._collection(
                f"vec_{space}", configuration={"hnsw": {"space": "cosine", "ef_search": 200}}
            )
            self._vectors[space] = col
        return col

    def vector_ids(self, space: str, ids: Sequence[str]) -> set[str]:
        """Return which of the record ids already have a vector in ``space``."""
        if not ids:
            return set()
        col = self._vector_collection(space)
        got = self._call("read vector ids", lambda: col.get(ids=list(ids), include=[]))
        return set(got["ids"])

    def add_vectors(
        self, space: str, namespace: str, session_id: str, records: Sequence[VectorRecord]
    ) -> None:
        """Write (or overwrite) vector records of the session in the ``space`` collection."""
        validate_scope(namespace, session_id)
        if not records:
            return
        col = self._vector_collection(space)
        skey = session_key(namespace, session_id)
        self._call(
            "write vectors",
            lambda: col.upsert(
                ids=[r.id for r in records],
                embeddings=[list(r.vector) for r in records],
                metadatas=[
                    {
                        "ns": namespace,
                        "sid": session_id,
                        "sk": skey,
                        "skk": f"{skey}:{r.kind}",
                        "kind": r.kind,
                        "ref": r.ref,
                        "h": r.text_hash,
                    }
                    for r in records
                ],
            ),
        )

    @staticmethod
    def _kinds_scope(namespace: str, session_id: str, kinds: Sequence[str]) -> dict[str, Any]:
        skey = session_key(namespace, session_id)
        keys = [f"{skey}:{kind}" for kind in kinds]
        return {"skk": keys[0]} if len(keys) == 1 else {"skk": {"$in": keys}}

    def get_vectors(
        self, space: str, namespace: str, session_id: str, kinds: Sequence[str]
    ) -> list[VectorRecord]:
        """Return the session's vector records of the given kinds (with their vectors)."""
        validate_scope(namespace, session_id)
        col = self._vector_collection(space)
        where = self._kinds_scope(namespace, session_id, kinds)
        got = self._call(
            "read vectors", lambda: col.get(where=where, include=["embeddings", "metadatas"])
        )
        return _vector_records(got, namespace, session_id)

    def vectors_by_ids(
        self, space: str, namespace: str, session_id: str, ids: Sequence[str]
    ) -> list[VectorRecord]:
        """Return the session's vector records with the given record ids (missing ids skipped).

        Reads by id cost the same however large the collection is, unlike filtered reads.
        """
        validate_scope(namespace, session_id)
        if not ids:
            return []
        col = self._vector_collection(space)
        got = self._call(
            "read vectors by id",
            lambda: col.get(ids=list(dict.fromkeys(ids)), include=["embeddings", "metadatas"]),
        )
        return _vector_records(got, namespace, session_id)

    def query_vectors(
        self,
        space: str,
        namespace: str,
        session_id: str,
        vector: Sequence[float],
        n: int,
        kinds: Sequence[str] = ("turn", "fact"),
    ) -> list[tuple[str, str, float]]:
        """Return up to ``n`` ``(kind, ref, distance)`` nearest to ``vector`` in the session."""
        validate_scope(namespace, session_id)
        col = self._vector_collection(space)
        where = self._kinds_scope(namespace, session_id, kinds)
        got = self._call(
            "query vectors",
            lambda: col.query(
                query_embeddings=[list(vector)],
                n_results=n,
                where=where,
                include=["metadatas", "distances"],
            ),
        )
        metas = (got.get("metadatas") or [[]])[0]
        dists = (got.get("distances") or [[]])[0]
        return [
            (str(m["kind"]), str(m["ref"]), float(d))
            for m, d in zip(metas, dists, strict=True)
            if m.get("sid") == session_id and m.get("ns") == namespace
        ]

    def _vector_spaces(self) -> list[Any]:
        names = self._call("list collections", lambda: self.client.list_collections())
        prefix = f"{self.prefix}_vec_"
        for item in names:
            name = item if isinstance(item, str) else item.name
            if name.startswith(prefix):
                self._vector_collection(name[len(prefix) :])
        return list(self._vectors.values())

    # -- HiGMem turn nodes and event nodes (derived: rebuildable from the log) -------------

    def put_notes(self, namespace: str, session_id: str, notes: Sequence[TurnNote]) -> None:
        """Write (or overwrite) turn nodes."""
        validate_scope(namespace, session_id)
        if not notes:
            return
        skey = session_key(namespace, session_id)
        self._call(
            "write turn nodes",
            lambda: self._notes.upsert(
                ids=[f"{skey}:n:{n.turn_id}" for n in notes],
                documents=[n.context for n in notes],
                metadatas=[
                    {"ns": namespace, "sid": session_id, "sk": skey, **n.to_metadata()}
                    for n in notes
                ],
                embeddings=[_PLACEHOLDER] * len(notes),
            ),
        )

    def get_notes(self, namespace: str, session_id: str) -> list[TurnNote]:
        """Return the session's turn nodes (in no particular order)."""
        validate_scope(namespace, session_id)
        got = self._call(
            "read turn nodes",
            lambda: self._notes.get(
                where=self._scope(namespace, session_id), include=["documents", "metadatas"]
            ),
        )
        return [
            TurnNote.from_metadata(d or "", m)
            for d, m in zip(got["documents"] or [], got["metadatas"] or [], strict=True)
            if m.get("sid") == session_id and m.get("ns") == namespace
        ]

    def put_events(self, namespace: str, session_id: str, events: Sequence[Event]) -> None:
        """Write (or overwrite) event nodes."""
        validate_scope(namespace, session_id)
        if not events:
            return
        skey = session_key(namespace, session_id)
        self._call(
            "write events",
            lambda: self._events.upsert(
                ids=[f"{skey}:e:{e.id}" for e in events],
                documents=[e.summary for e in events],
                metadatas=[
                    {"ns": namespace, "sid": session_id, "sk": skey, **e.to_metadata()}
                    for e in events
                ],
                embeddings=[_PLACEHOLDER] * len(events),
            ),
        )

    def get_events(self, namespace: str, session_id: str) -> list[Event]:
        """Return the session's event nodes, oldest first."""
        validate_scope(namespace, session_id)
        got = self._call(
            "read events",
            lambda: self._events.get(
                where=self._scope(namespace, session_id), include=["documents", "metadatas"]
            ),
        )
        out = [
            Event.from_metadata(d or "", m)
            for d, m in zip(got["documents"] or [], got["metadatas"] or [], strict=True)
            if m.get("sid") == session_id and m.get("ns") == namespace
        ]
        out.sort(key=lambda e: (e.created_at, e.id))
        return out

    def delete_events(self, namespace: str, session_id: str, event_ids: Sequence[str]) -> None:
        """Delete event nodes by id."""
        validate_scope(namespace, session_id)
        if not event_ids:
            return
        skey = session_key(namespace, session_id)
        self._call(
            "delete events",
            lambda: self._events.delete(ids=[f"{skey}:e:{e}" for e in event_ids]),
        )

    # -- upkeep usage (append-only: one record per operation that called a model) ---------

    def add_usage(self, records: Sequence[UsageRecord]) -> None:
        """Append usage records (LLM calls and tokens of memory upkeep)."""
        if not records:
            return
        metas = []
        for r in records:
            validate_scope(r.namespace, r.session_id)
            metas.append(
                {
                    "ns": r.namespace,
                    "sid": r.session_id,
                    "sk": session_key(r.namespace, r.session_id),
                    "purpose": r.purpose,
                    "calls": r.usage.calls,
                    "failed": r.usage.failed_calls,
                    "in": r.usage.input_tokens,
                    "out": r.usage.output_tokens,
                    "reported": r.usage.reported_calls,
                    "created": r.created_at,
                }
            )
        self._call(
            "write usage",
            lambda: self._usage.add(
                ids=[f"u:{uuid.uuid4().hex}" for _ in records],
                documents=[r.purpose for r in records],
                metadatas=metas,
                embeddings=[_PLACEHOLDER] * len(records),
            ),
        )

    def usage(self, namespace: str, session_id: str) -> dict[str, Usage]:
        """Return the session's upkeep spend, per purpose (``"fold"``, ``"higmem-index"``...)."""
        validate_scope(namespace, session_id)
        got = self._call(
            "read usage",
            lambda: self._usage.get(
                where=self._scope(namespace, session_id), include=["metadatas"]
            ),
        )
        out: dict[str, Usage] = {}
        for m in got["metadatas"] or []:
            if m.get("sid") != session_id or m.get("ns") != namespace:
                continue
            out.setdefault(str(m["purpose"]), Usage()).add(
                Usage(
                    calls=int(m["calls"]),
                    failed_calls=int(m["failed"]),
                    input_tokens=int(m["in"]),
                    output_tokens=int(m["out"]),
                    reported_calls=int(m["reported"]),
                )
            )
        return out

    # -- sessions ------------------------------------------------------------------------

    def _register(self, namespace: str, session_id: str, skey: str) -> None:
        if skey in self._registered:
            return
        meta = {"ns": namespace, "sid": session_id, "sk": skey, "created": time.time()}
        self._call(
            "register the session",
            lambda: self._sessions.add(
                ids=[skey], documents=[session_id], metadatas=[meta], embeddings=[_PLACEHOLDER]
            ),
        )
        self._registered.add(skey)

    def sessions(self, namespace: str | None = None) -> list[SessionInfo]:
        """List sessions (of one namespace, or all), oldest first."""
        where = {"ns": namespace} if namespace is not None else None
        got = self._call(
            "list sessions", lambda: self._sessions.get(where=where, include=["metadatas"])
        )
        out = [
            SessionInfo(str(m["ns"]), str(m["sid"]), float(m["created"]))
            for m in got["metadatas"] or []
        ]
        out.sort(key=lambda s: (s.created_at, s.namespace, s.session_id))
        return out

    def activity(self, namespace: str | None = None) -> dict[tuple[str, str], float]:
        """Return when each session (of a namespace, or all) last stored a turn.

        The time is when the newest turn was written (its order key), not the time the
        message claims (an imported transcript can be years old). Reads the turn log itself,
        in pages, so no session is missed.
        """
        where = {"ns": namespace} if namespace is not None else None
        latest: dict[tuple[str, str], float] = {}
        page = max(1, min(self._batch_size(), 5000))
        offset = 0
        while True:
            got = self._call(
                "scan turns",
                partial(
                    self._turns.get, where=where, include=["metadatas"], limit=page, offset=offset
                ),
            )
            metas = got["metadatas"] or []
            for m in metas:
                key = (str(m["ns"]), str(m["sid"]))
                written = int(m["seq"]) / 1e9
                if written > latest.get(key, float("-inf")):
                    latest[key] = written
            if len(metas) < page:
                return latest
            offset += page

    def expire(
        self, older_than: float, *, namespace: str | None = None, now: float | None = None
    ) -> list[tuple[str, str]]:
        """Delete every session that stored no turn in the last ``older_than`` seconds.

        A time-to-live for conversations: run it periodically (for example daily, from a
        scheduled job). Everything of an expired session is deleted, as by :meth:`clear`.

        Args:
            older_than: Age in seconds (> 0).
            namespace: Only this namespace (default: all).
            now: The current time (default: ``time.time()``).

        Returns:
            The ``(namespace, session_id)`` pairs deleted.
        """
        if older_than <= 0:
            raise ConfigurationError.for_value("older_than", older_than, "must be > 0")
        cutoff = (time.time() if now is None else now) - older_than
        expired = [key for key, last in self.activity(namespace).items() if last < cutoff]
        for ns, sid in expired:
            self.clear(ns, sid)
        return expired

    def clear(self, namespace: str, session_id: str) -> None:
        """Delete everything stored for the session: turns, summaries, facts, vectors."""
        validate_scope(namespace, session_id)
        scope = self._scope(namespace, session_id)
        skey = session_key(namespace, session_id)
        collections = [
            ("turns", self._turns),
            ("summaries", self._summaries),
            ("facts", self._facts),
            ("turn nodes", self._notes),
            ("events", self._events),
            ("usage", self._usage),
            *(("vectors", col) for col in self._vector_spaces()),
            ("sessions", self._sessions),
        ]
        for name, col in collections:
            self._call(f"delete the session's {name}", partial(col.delete, where=scope))
        self._registered.discard(skey)
        self._hints.pop(skey, None)


def _transient(exc: BaseException) -> bool:
    """Whether a failure is worth retrying (network trouble, not a rejected request)."""
    import httpx

    return isinstance(exc, httpx.TransportError | ConnectionError | TimeoutError)


def _client_identity(client: Any) -> str:
    """A string naming the database a client talks to (path, or server address)."""
    settings = getattr(client, "get_settings", None)
    try:
        conf = settings() if callable(settings) else None
    except Exception:
        conf = None
    if conf is not None:
        if getattr(conf, "chroma_server_host", None):
            return f"http://{conf.chroma_server_host}:{conf.chroma_server_http_port}"
        if getattr(conf, "is_persistent", False):
            return f"file:{Path(conf.persist_directory).resolve()}"
    return f"client:{id(client)}"


def _set_http_timeout(client: Any, timeout: float) -> None:
    """Give chromadb's HTTP session a timeout (its default waits forever)."""
    import httpx

    server = getattr(client, "_server", None)
    session = getattr(server, "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(timeout)


def _probe(
    host: str, port: int, *, ssl: bool, headers: Mapping[str, str] | None, timeout: float
) -> None:
    """Check that a Chroma server answers its heartbeat within ``timeout`` seconds.

    chromadb's ``HttpClient`` talks to the server while it is being built, with no timeout;
    probing first turns a dead or stalled server into a prompt ``StoreError``.
    """
    import httpx

    url = f"{'https' if ssl else 'http'}://{host}:{port}/api/v2/heartbeat"
    try:
        response = httpx.get(url, headers=dict(headers or {}), timeout=timeout)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        raise StoreError(
            f"the Chroma server at {host}:{port} did not answer its heartbeat within "
            f"{timeout}s: {type(exc).__name__}: {exc}"
        ) from exc
