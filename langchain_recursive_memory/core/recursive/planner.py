"""The fold policy: when a fold is due, what it folds, in which chunks. Pure logic.

A fold is due when the unfolded messages exceed ``window_budget`` tokens or
``max_messages`` messages (:func:`fold_due`, the one home of that rule). It keeps the
newest whole units within ``keep_tokens`` / ``keep_messages`` verbatim and folds everything
older, in chunks of at most ``fold_chunk_tokens`` prompt tokens (:func:`plan_fold`).

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
) -> FoldPlan | None:
    """Decide whether the unfolded ``turns`` must be folded, and how.

    The newest user message and the newest unit are never folded unforced (see
    :func:`_pinned`): a version may then skip the held-back question, which a later fold
    takes once a newer user message exists. With ``keep=False`` (and ``force``: a
    conversation that ends) no recent message stays verbatim: every one is folded.

    Returns:
        The plan, or None when nothing needs folding.
    """
    counts = [turn_tokens(t, counter) for t in turns]
    reason = fold_due(sum(counts), len(turns), config, reserve) or ("forced" if force else None)
    if reason is None:
        return None
    units = units_of(turns)
    cost_of = {s.id: c for s, c in zip(turns, counts, strict=True)}
    kept = _kept_units(units, cost_of, config, reserve) if keep else 0
    pinned = _pinned(units, force)
    fold_units = [u for i, u in enumerate(units[: len(units) - kept]) if i not in pinned]
    if not fold_units:
        return None
    chunks = _chunks(fold_units, cost_of, config)
    folded = {id(u) for u in fold_units}
    verbatim = tuple(s for unit in units if id(unit) not in folded for s in unit)
    return FoldPlan(chunks, verbatim, reason)


def _pinned(units: Sequence[Sequence[StoredTurn]], force: bool) -> set[int]:
    """The units a fold never takes, by position.

    The newest user message and the newest unit: the current question and what the model
    has not seen yet (shown, cut to the budget if need be, and folded once a later message
    follows). A forced fold takes them too, but a newest unit still waiting for its tool
    results.
    """
    if not units:
        return set()
    newest = len(units) - 1
    if force:
        return {newest} if awaiting_results(units[newest]) else set()
    question = next((i for i in range(newest, -1, -1) if units[i][0].turn.role == "user"), newest)
    return {question, newest}


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
    units: Sequence[Sequence[StoredTurn]], cost_of: dict[str, int], config: MemoryConfig
) -> tuple[tuple[StoredTurn, ...], ...]:
    """The units to fold, in summarizer calls of at most ``fold_chunk_tokens`` tokens."""
    prompt_cap = config.max_prompt_message_tokens + PROMPT_LINE_OVERHEAD
    chunks: list[tuple[StoredTurn, ...]] = []
    current: list[StoredTurn] = []
    current_tokens = 0
    for unit in units:
        unit_tokens = sum(min(cost_of[s.id], prompt_cap) for s in unit)
        if current and current_tokens + unit_tokens > config.fold_chunk_tokens:
            chunks.append(tuple(current))
            current, current_tokens = [], 0
        current.extend(unit)
        current_tokens += unit_tokens
    if current:
        chunks.append(tuple(current))
    return tuple(chunks)
