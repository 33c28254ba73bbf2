"""HiGMem's parameters and its retrieval result.

Example:
    >>> from langchain_recursive_memory.core import HiGMemConfig
    >>> HiGMemConfig().candidate_events, HiGMemConfig(batch_size=1).batch_size
    (10, 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConfigurationError
from ..events import DEFAULT_MAX_EVENT_TURNS, DEFAULT_SESSION_GAP
from ..retrieval.ranking import RankerParams
from ..turn import Turn
from ..validation import KnownFields

__all__ = [
    "CONTEXT_CHARS",
    "EVENT_REFS",
    "HEURISTIC_CONTEXT_TOKENS",
    "HEURISTIC_KEYWORDS",
    "LIST_ITEMS",
    "MERGED_KEYWORDS",
    "NEW_EVENT_SUMMARY_CHARS",
    "HiGMemConfig",
    "RetrievedTurn",
]

LIST_ITEMS = 12
"""Most keywords, tags or entities kept from one answer of the model."""
MERGED_KEYWORDS = 24
"""Most keywords (and tags) a frozen event keeps when it merges its turns' ones."""
EVENT_REFS = 5
"""Most events one turn may be affiliated with."""
CONTEXT_CHARS = 500
"""Longest context sentence of a turn node."""
NEW_EVENT_SUMMARY_CHARS = 300
"""Length of the stand-in summary of a new event the model gave none."""
HEURISTIC_KEYWORDS = 8
"""Keywords of a turn node (and an event) built without an LLM."""
HEURISTIC_CONTEXT_TOKENS = 40
"""Longest context sentence of a turn node built without an LLM (its first sentence)."""


@dataclass(frozen=True, slots=True)
class HiGMemConfig(KnownFields):
    """HiGMem's parameters; the defaults are the paper's (``batch_size`` is ours).

    Attributes:
        batch_size: Turns analysed per LLM call (official code: 1 turn, ~3 calls).
        candidate_events: Events shown as affiliation candidates (paper: top 10).
        rewrite_limit: Events with fewer turns are rewritten; then only keywords and tags
            merge (paper: 10).
        context_turns: Earlier turns shown when analysing (paper: 4).
        retrieval_turns: Candidate turns of guided retrieval (paper: top 10).
        retrieval_events: Events of guided retrieval (paper: ``--k_event 10``).
        filter_chunk: Turns per LLM relevance-filter call (paper: 10).
        query_rewrite: Rewrite the question into keywords with the LLM first (default off,
            as in the authors' paper-aligned run).
        no_llm_k: Turns returned by the no-LLM path (default 8).
        session_gap: Seconds of silence that start a new session (segment); default 1800.
        max_event_turns: Longest session event of the no-LLM method (default 40).
        max_line_tokens: Longest turn text shown in a prompt (default 200 tokens).
        ranker: Weights of the multi-scale hybrid ranking.
    """

    batch_size: int = 4
    candidate_events: int = 10
    rewrite_limit: int = 10
    context_turns: int = 4
    retrieval_turns: int = 10
    retrieval_events: int = 10
    filter_chunk: int = 10
    query_rewrite: bool = False
    no_llm_k: int = 8
    session_gap: float = DEFAULT_SESSION_GAP
    max_event_turns: int = DEFAULT_MAX_EVENT_TURNS
    max_line_tokens: int = 200
    ranker: RankerParams = field(default_factory=RankerParams)

    def __post_init__(self) -> None:
        for name in (
            "batch_size",
            "candidate_events",
            "rewrite_limit",
            "retrieval_turns",
            "retrieval_events",
            "filter_chunk",
            "no_llm_k",
            "max_event_turns",
            "max_line_tokens",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigurationError.for_value(name, value, "must be an integer >= 1")
        if self.context_turns < 0:
            raise ConfigurationError.for_value("context_turns", self.context_turns, "must be >= 0")
        if self.session_gap <= 0:
            raise ConfigurationError.for_value("session_gap", self.session_gap, "must be > 0")


@dataclass(frozen=True, slots=True)
class RetrievedTurn:
    """A turn returned by :meth:`HiGMem.retrieve` (which returns them best first).

    Attributes:
        turn: The logged turn (id, role, text, time...).
        speaker: Who spoke.
        score: The ranking score (for guided retrieval: of the candidate ranking; turns
            found only through an event get 0).
        event_ids: The events the turn belongs to.
        found_by: ``"ranking"``, ``"event:<id>"`` (predicted inside an event), or both.
        session_id: The session it is from, when not the memory's own (``scope="user"``).
        rank: Its place in the retrieval, 1 = best (what ``retrieve`` orders by; kept
            when a caller re-sorts the turns by time for the model to read).
    """

    turn: Turn
    speaker: str
    score: float
    event_ids: tuple[str, ...] = ()
    found_by: tuple[str, ...] = ()
    session_id: str | None = None
    rank: int = 0
