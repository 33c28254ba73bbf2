"""The fold policy: when a fold is due, what it folds, in which chunks. Pure logic.

A fold is due when the unfolded messages exceed ``window_budget`` tokens or
``max_messages`` messages (:func:`fold_due`, the one home of that rule). It keeps the
newest whole units within ``keep_tokens`` / ``keep_messages`` verbatim and folds everything
older, in log order, in chunks of at most ``fold_chunk_tokens`` prompt tokens
(:func:`plan_fold`). The current question is folded in its place, with what follows it,
and shown verbatim by the context while it is current (:mod:`.context`).

Example:
    >>> from langchain_recursive_memory.core import MemoryConfig
    >>> from langchain_recursive_memory.core.recursive.planner import fold_due
    >>> cfg = MemoryConfig(max_tokens=1000, max_messages=10)
    >>> fold_due(120, 4, cfg), fold_due(120, 11, cfg), fold_due(5000, 4, cfg)
    (None, 'messages', 'tokens')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..config import MemoryConfig
from ..storage import StoredTurn
from ..tokenizer import TokenCounter
from .units import awaiting_results, turn_tokens, units_of

__all__ = ["PROMPT_LINE_OVERHEAD", "FoldPlan", "fold_due", "plan_fold"]

PROMPT_LINE_OVERHEAD = 16
"""Tokens a message's line costs in the summary prompt beyond its (capped) text: the
time stamp, the role and the cut marker (measured on the prompt of :mod:`..prompts`)."""


def fold_due(tokens: int, messages: int, config: MemoryConfig, reserve: int = 0) -> str | None:
    """Why unfolded messages must be folded (``"tokens"``, ``"messages"``), or None.

    Args:
        tokens: Tokens of the unfolded messages.
        messages: How many there are.
        config: The budgets.
        reserve: Tokens the caller's request uses beside the memory's messages now (its
            system prompt and tools), beyond the configured ``reserve_tokens``.
    """
    if tokens > config.window_budget - reserve:
        return "tokens"
    if config.max_messages is not None and messages > config.max_messages:
        return "messages"
    return None


@dataclass(frozen=True, slots=True)
class FoldPlan:
    """What one fold does.

    Attributes:
        chunks: The messages to fold, oldest first, split into summarizer calls.
        keep: The messages that stay verbatim in the window.
        reason: ``"tokens"``, ``"messages"`` or ``"forced"``.
    """

    chunks: tuple[tuple[StoredTurn, ...], ...]
    keep: tuple[StoredTurn, ...]
    reason: str

    @property
    def folded(self) -> tuple[StoredTurn, ...]:
        """All messages the plan folds."""
        return tuple(t for chunk in self.chunks for t in chunk)


def plan_fold(
    turns: Sequence[StoredTurn],
    config: MemoryConfig,
    counter: TokenCounter,
    *,
    force: bool = False,
    reserve: int = 0,
    keep: bool = True,
    question: StoredTurn | None = None,
) -> FoldPlan | None:
    """Decide whether the unfolded ``turns`` must be folded, and how.

    A fold takes the oldest units in log order (each summary version covers the range of
    the log right after the previous one's), the current question (the newest user
    message) in its place: the summarizer sees it with the tool results that answer it.
    The context keeps showing it verbatim while it is current, so its tokens stay counted
    in the window (``question``, once folded) and no unforced fold ends on it (folding it
    alone would free nothing). The newest unit (what the model has not seen yet) is never
    folded unforced, nor a newest unit still waiting for its tool results. With
    ``keep=False`` (and ``force``: a conversation that ends) no recent message stays
    verbatim: every one is folded.

    Args:
        turns: The unfolded turns, oldest first.
        config: The budgets.
        counter: Counts tokens.
        force: Fold even when no fold is due.
        reserve: Tokens the caller's request uses beside the memory's messages now.
        keep: Keep the newest units within the keep budgets verbatim.
        question: The current question when it is folded already (shown beside ``turns``).

    Returns:
        The plan, or None when nothing needs folding.
    """
    counts = [turn_tokens(t, counter) for t in turns]
    shown = turn_tokens(question, counter) if question is not None else 0
    messages = len(turns) + (question is not None)
    reason = fold_due(sum(counts) + shown, messages, config, reserve) or (
        "forced" if force else None
    )
    if reason is None:
        return None
    units = units_of(turns)
    cost_of = {s.id: c for s, c in zip(turns, counts, strict=True)}
    current = _current_question(units)
    end = len(units)
    if keep:
        end -= _kept_units(units, cost_of, config, reserve + shown)
        if current is not None and current < end:  # folded now, shown still: keep room
            shown = sum(cost_of[s.id] for s in units[current])
            end = len(units) - _kept_units(units, cost_of, config, reserve + shown)
    if units and (not force or awaiting_results(units[-1])):
        end = min(end, len(units) - 1)  # the newest unit: not seen yet
    if not force and current is not None and end == current + 1:
        end = current  # it is folded with what follows it
    if end <= 0:
        return None
    chunks = _chunks(units[:end], cost_of, config, current)
    verbatim = tuple(s for unit in units[end:] for s in unit)
    return FoldPlan(chunks, verbatim, reason)


def _current_question(units: Sequence[Sequence[StoredTurn]]) -> int | None:
    """The position of the newest unit that is a user message, or None."""
    return next((i for i in range(len(units) - 1, -1, -1) if units[i][0].turn.role == "user"), None)


def _kept_units(
    units: Sequence[Sequence[StoredTurn]],
    cost_of: dict[str, int],
    config: MemoryConfig,
    reserve: int,
) -> int:
    """How many of the newest whole units stay verbatim after the fold."""
    window = max(0, config.window_budget - reserve)
    keep_tokens = min(config.keep_tokens_effective, window)
    if config.keep_tokens is None:  # the default: half of what the window has now
        keep_tokens = window // 2
    keep_messages = config.keep_messages_effective
    kept = used_tokens = used_messages = 0
    for unit in reversed(units):
        unit_tokens = sum(cost_of[s.id] for s in unit)
        if used_tokens + unit_tokens > keep_tokens:
            break
        if keep_messages is not None and used_messages + len(unit) > keep_messages:
            break
        used_tokens += unit_tokens
        used_messages += len(unit)
        kept += 1
    return kept


def _chunks(
    units: Sequence[Sequence[StoredTurn]],
    cost_of: dict[str, int],
    config: MemoryConfig,
    question: int | None = None,
) -> tuple[tuple[StoredTurn, ...], ...]:
    """The units to fold, in summarizer calls of at most ``fold_chunk_tokens`` tokens.

    The unit at position ``question`` (the current question) starts a new call rather
    than end one, when the unit after it would not fit the same call: the summarizer
    sees the question with the first of what follows it.
    """
    prompt_cap = config.max_prompt_message_tokens + PROMPT_LINE_OVERHEAD
    costs = [sum(min(cost_of[s.id], prompt_cap) for s in unit) for unit in units]
    chunks: list[tuple[StoredTurn, ...]] = []
    current: list[StoredTurn] = []
    current_tokens = 0
    for i, unit in enumerate(units):
        need = costs[i]
        if i == question and i + 1 < len(units):
            need += costs[i + 1]
        if current and current_tokens + need > config.fold_chunk_tokens:
            chunks.append(tuple(current))
            current, current_tokens = [], 0
        current.extend(unit)
        current_tokens += costs[i]
    if current:
        chunks.append(tuple(current))
    return tuple(chunks)
