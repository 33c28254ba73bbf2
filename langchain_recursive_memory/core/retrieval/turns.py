"""A session's turns as the ranker sees them: speaker, text, segment and date.

Both engines rank archived turns with :class:`~.ranking.TurnRanker`; windows of
neighbouring turns never cross a *segment* (a conversation session: an explicit
``Turn.extra["session"]`` label, or ``session_gap`` seconds of silence, at most
``max_event_turns`` turns; see :func:`~..events.segment_labels`).

Example:
    >>> from langchain_recursive_memory.core import Turn
    >>> from langchain_recursive_memory.core.storage import StoredTurn
    >>> from langchain_recursive_memory.core.retrieval.turns import ranked_turns
    >>> turn = Turn(role="user", name="Ada", text="hi", id="t1", created_at=0.0)
    >>> turn = StoredTurn(turn, 1, 4, "o200k_base")
    >>> ranked_turns([turn])[0].line
    'Ada: hi'
"""

from __future__ import annotations

from collections.abc import Sequence

from ..dates import utc_date
from ..events import DEFAULT_MAX_EVENT_TURNS, DEFAULT_SESSION_GAP, segment_labels
from ..storage import StoredTurn
from .ranking import RankedTurn

__all__ = ["ranked_turns", "turn_segments"]


def turn_segments(
    turns: Sequence[StoredTurn],
    *,
    session_gap: float = DEFAULT_SESSION_GAP,
    max_event_turns: int = DEFAULT_MAX_EVENT_TURNS,
) -> list[str]:
    """The segment label of each turn (oldest first)."""
    labels = [
        str(t.turn.extra["session"]) if t.turn.extra.get("session") is not None else None
        for t in turns
    ]
    return segment_labels(
        labels,
        [t.turn.created_at for t in turns],
        session_gap=session_gap,
        max_event_turns=max_event_turns,
    )


def ranked_turns(
    turns: Sequence[StoredTurn], segments: Sequence[str] | None = None
) -> list[RankedTurn]:
    """``turns`` as :class:`~.ranking.RankedTurn` (segments computed when not given)."""
    labels = segments if segments is not None else turn_segments(turns)
    return [
        RankedTurn(
            t.id, t.turn.name or t.turn.role, t.turn.text, label, utc_date(t.turn.created_at)
        )
        for t, label in zip(turns, labels, strict=True)
    ]
