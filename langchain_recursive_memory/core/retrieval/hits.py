"""The recalled item: a fact or an archived turn, with its score and provenance.

Example:
    >>> from langchain_recursive_memory.core import RecallHit
    >>> hit = RecallHit("t1", "turn", "My locker code is 4471.", 0.9, ("t1",))
    >>> hit.kind, hit.source_turn_ids
    ('turn', ('t1',))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RecallHit"]


@dataclass(frozen=True, slots=True)
class RecallHit:
    """One recalled memory.

    Attributes:
        id: The turn id (kind ``"turn"``) or fact key (kind ``"fact"``).
        kind: ``"turn"`` or ``"fact"``.
        text: The turn's text or the fact.
        score: The ranking score (higher is better; comparable within one recall).
        source_turn_ids: Provenance: the turn itself, or the turns a fact came from.
        time: Seconds since the epoch of the turn (or of the fact's last update).
        role: The turn's role (turns only).
        lexical_rank: Rank in the BM25 ranking (1 = best), or None if absent.
        dense_rank: Rank in the embedding ranking, or None if absent or no embedder.
        metadata: More about it: a fact's ``subject`` and ``stated_time``; a user's fact's
            ``user_id``, ``session_id`` (the session that said its current wording) and
            ``session_ids`` (every session that stated it); a turn of another session's
            ``session_id``.
    """

    id: str
    kind: str
    text: str
    score: float
    source_turn_ids: tuple[str, ...]
    time: float | None = None
    role: str | None = None
    lexical_rank: int | None = None
    dense_rank: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
