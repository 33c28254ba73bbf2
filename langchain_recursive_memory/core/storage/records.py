"""The records the store returns: stored turns, summary versions, session state, vectors."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..turn import Turn

__all__ = [
    "IndexLink",
    "SessionInfo",
    "SessionStamp",
    "SessionState",
    "StoredTurn",
    "Summary",
    "UserInfo",
    "VectorRecord",
]


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
        last_seq: The highest order key this and earlier versions folded (0: unknown, a
            record of 0.1.0). A turn that lands later with a lower key is moved after it
            before it is folded (see :meth:`~.session_store.SessionTurns.settle`).
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
class SessionStamp:
    """A session's stamp record: what every reader of the session checks (see :mod:`.heads`).

    Attributes:
        epoch: Changes when the session starts again (its first write after a clear, an
            expiry or a forgotten user) and when a rebuild drops derived state.
        facts: Changes whenever the session's own facts change.
        memory: The kind of memory that first wrote it (``"higmem"``, ``"hybrid"``...),
            which says which chain its readers follow.
        user_id: The user the session belongs to, or None.
        index_hint: A recent HiGMem index link number (a hint for cold readers).
        moved: Changes whenever open turns are given new order keys (a fold settling
            turns that landed late): readers then check the order keys of the open turns
            they hold, not only their ids.
    """

    epoch: str
    facts: str = ""
    memory: str = ""
    user_id: str | None = None
    index_hint: int = 0
    moved: str = ""


@dataclass(frozen=True, slots=True)
class IndexLink:
    """One link of a session's HiGMem index chain: the turns one indexing named.

    Links are numbered from 1 and written insert-if-absent, like summary versions; a
    reader that holds link ``number`` reads the links after it by id.

    Attributes:
        number: Its place in the chain.
        token: A random id of the indexing that wrote it (the compare-and-set winner).
        turn_ids: The turns it indexed (their turn nodes were written before it).
        event_ids: The events that indexing wrote or rewrote.
        created_at: Seconds since the epoch.
    """

    number: int
    token: str
    turn_ids: tuple[str, ...]
    event_ids: tuple[str, ...] = ()
    created_at: float = field(default_factory=time.time)


@dataclass(frozen=True, slots=True)
class SessionState:
    """What a reader needs: the latest summary and the turns it does not cover.

    Attributes:
        summary: The latest summary version, or None before the first fold.
        turns: The unfolded turns, oldest first.
        repair_ids: Turns named by recent summary versions whose folded flag may not be
            written yet; the next fold writes it.
        question: The current question when it is folded already (the summary's
            ``question_id``, when no unfolded turn is a user message): shown verbatim
            while it is current.
        stamp: The session's stamp record as read with the summaries (None: none).
        versions: The summary versions read (those at or above the hint), oldest first.
    """

    summary: Summary | None
    turns: tuple[StoredTurn, ...]
    repair_ids: tuple[str, ...] = ()
    question: StoredTurn | None = None
    stamp: SessionStamp | None = None
    versions: tuple[Summary, ...] = ()


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
