"""The records the store returns: stored turns, summary versions, session state, vectors."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..cache import HEALTH_CACHE_ENTRIES
from ..turn import Turn

__all__ = [
    "DAMAGED",
    "SessionInfo",
    "SessionHead",
    "SessionState",
    "StoredTurn",
    "Summary",
    "UserInfo",
    "VectorRecord",
    "decoded",
]


@dataclass(frozen=True, slots=True)
class StoredTurn:
    """A turn as stored in the log.

    Attributes:
        turn: The turn, with its id and creation time set.
        seq: The order key: 1 for the session's first turn, growing in the order the
            turns were committed.
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
        last_seq: The highest order key this and earlier versions folded (0: unknown, a
            record of 0.1.0).
        passed_ids: Unfolded turns ordered before ``last_seq`` that the fold saw and left
            on purpose: not late, never moved. Folds now take the log in order, so only
            records of earlier releases (which held the current question back) name any.
        question_id: The newest user message folded so far (the current question while
            no newer user message exists: the context still shows it verbatim), or None
            (none folded yet, or the fold ended the conversation).
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
    last_seq: int = 0
    passed_ids: tuple[str, ...] = ()
    question_id: str | None = None


@dataclass(frozen=True, slots=True)
class SessionHead:
    """A session's head: its row as read, what every reader of the session checks first.

    Every write of the session changes its head in the writing transaction (see "How the
    memory stays fresh" in :mod:`~langchain_recursive_memory.core.storage`).

    Attributes:
        row: The session row's id: a session cleared and written again gets a new one.
        generation: Grows when a rebuild drops derived state.
        last_seq: The order key of the newest turn (turns are numbered from 1).
        version: The newest summary version (0: none).
        indexed: The newest HiGMem indexing (0: none).
        facts: Grows with every change of the session's own facts.
        user_id: The user the session belongs to, or None.
        memory: The kind of memory that first wrote it (``"higmem"``, ``"hybrid"``...).
        user_facts: Grows with every change of the user's facts (0: no user).
    """

    row: int
    generation: int = 0
    last_seq: int = 0
    version: int = 0
    indexed: int = 0
    facts: int = 0
    user_id: str | None = None
    memory: str = ""
    user_facts: int = 0

    @property
    def epoch(self) -> str:
        """Changes when the session starts again (a new row) or a rebuild drops state."""
        return f"{self.row}.{self.generation}"


@dataclass(frozen=True, slots=True)
class SessionState:
    """What a reader needs: the latest summary and the turns it does not cover.

    Attributes:
        summary: The latest summary version, or None before the first fold.
        turns: The unfolded turns, oldest first.
        repair_ids: Always empty since 0.3.0 (a fold marks its turns in its own
            transaction); kept so that positional arguments mean what they did, until
            0.4.0.
        question: The current question when it is folded already (the summary's
            ``question_id``, when no unfolded turn is a user message): shown verbatim
            while it is current.
        head: The session's head as read with them (None: the session has no row).
    """

    summary: Summary | None
    turns: tuple[StoredTurn, ...]
    repair_ids: tuple[str, ...] = ()
    question: StoredTurn | None = None
    head: SessionHead | None = None


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
    """A session listed by :meth:`MemoryStore.sessions`.

    Attributes:
        namespace: Its namespace.
        session_id: Its id.
        created_at: When it was first stored to.
        settings: How its memory was made (``memory``, ``max_tokens``...; see
            :meth:`MemoryStore.describe_session`), empty when unknown.
        user_id: The user it belongs to, or None.
    """

    namespace: str
    session_id: str
    created_at: float
    settings: Mapping[str, Any] = field(default_factory=dict)
    user_id: str | None = None


@dataclass(frozen=True, slots=True)
class UserInfo:
    """A user listed by :meth:`MemoryStore.users`.

    Attributes:
        namespace: Its namespace.
        user_id: Its id.
        created_at: When its first session joined it.
    """

    namespace: str
    user_id: str
    created_at: float


# -- decoding what is stored ------------------------------------------------------------

logger = logging.getLogger("langchain_recursive_memory")

R = TypeVar("R")
T = TypeVar("T")

_NAMING_KEYS = ("ns", "sid", "tid", "eid", "key", "kind", "version", "ref", "purpose")
_warned: set[str] = set()

DAMAGED = (KeyError, TypeError, ValueError, AttributeError)
"""What decoding a damaged record raises (a missing field, a wrong type, bad JSON, a value
the library refuses): such a record is skipped with a warning, never fatal to a session."""


def decoded(what: str, items: Iterable[R], decode: Callable[[R], T]) -> list[T]:
    """Decode each stored record with ``decode``, skipping (and warning once about) damaged ones.

    A record can lack a field that Chroma dropped (0.1.0 stored NaN timestamps, which Chroma
    silently omits) or that an older or foreign writer never wrote; one such record must not
    make its whole session unreadable.

    Args:
        what: What the records are (``"turn"``...), for the warning.
        items: The records as read (tuples holding their metadata mapping).
        decode: Builds one value from one record.
    """
    out: list[T] = []
    for item in items:
        try:
            out.append(decode(item))
        except DAMAGED as exc:
            _warn_damaged(what, item, exc)
    return out


def _warn_damaged(what: str, item: object, exc: BaseException) -> None:
    parts = item if isinstance(item, tuple) else (item,)
    meta = next((p for p in parts if isinstance(p, Mapping)), {})
    name = ", ".join(f"{k}={meta[k]!r}" for k in _NAMING_KEYS if k in meta) or "unnamed"
    problem = (
        f"missing field {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
    )
    key = f"{what}|{name}|{problem}"
    if key in _warned:
        return
    if len(_warned) >= HEALTH_CACHE_ENTRIES:
        _warned.clear()
    _warned.add(key)
    logger.warning("skipped a damaged %s record (%s): %s", what, name, problem)
