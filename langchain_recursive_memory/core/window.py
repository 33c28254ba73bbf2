"""The window of recent messages: when to fold, what to fold, what to show. Pure logic.

Messages are handled in *units* (see :func:`~.turn.group_tool_calls`): an assistant
message with tool calls and its tool results are folded together or kept together, never
split, so a provider never sees a tool result without its call.

Example:
    >>> from langchain_recursive_memory.core.window import select_suffix
    >>> select_suffix([[1], [2, 3], [4]], [[5], [5, 5], [5]], budget=15)
    [2, 3, 4]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from .config import MemoryConfig
from .store import StoredTurn
from .tokenizer import TokenCounter
from .turn import group_tool_calls

__all__ = ["FoldPlan", "plan_fold", "select_suffix", "turn_tokens"]

T = TypeVar("T")


def turn_tokens(stored: StoredTurn, counter: TokenCounter) -> int:
    """Return the stored count when it was made with ``counter``'s encoding, else recount."""
    if stored.encoding == counter.encoding_name:
        return stored.tokens
    return counter.count_turn(stored.turn)


def _units(turns: Sequence[StoredTurn]) -> list[list[StoredTurn]]:
    by_id = {id(s.turn): s for s in turns}
    return [[by_id[id(t)] for t in group] for group in group_tool_calls([s.turn for s in turns])]


def select_suffix(
    units: Sequence[Sequence[T]], costs: Sequence[Sequence[int]], budget: int
) -> list[T]:
    """Return the longest run of whole units, ending with the newest, within ``budget``."""
    kept: list[Sequence[T]] = []
    used = 0
    for unit, cost in zip(reversed(units), reversed(costs), strict=True):
        total = sum(cost)
        if used + total > budget:
            break
        kept.append(unit)
        used += total
    return [item for unit in reversed(kept) for item in unit]


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
) -> FoldPlan | None:
    """Decide whether the unfolded ``turns`` must be folded, and how.

    A fold is due when their tokens exceed ``config.window_budget`` or their number exceeds
    ``config.max_messages`` (or when ``force``). It keeps the newest whole units within
    ``keep_tokens`` / ``keep_messages`` and folds everything older, in chunks of at most
    ``fold_chunk_tokens`` prompt tokens.

    Returns:
        The plan, or None when nothing needs folding.
    """
    counts = [turn_tokens(t, counter) for t in turns]
    over_tokens = sum(counts) > config.window_budget
    over_messages = config.max_messages is not None and len(turns) > config.max_messages
    if not (over_tokens or over_messages or force):
        return None
    reason = "tokens" if over_tokens else "messages" if over_messages else "forced"
    units = _units(turns)
    cost_of = {s.id: c for s, c in zip(turns, counts, strict=True)}
    keep_tokens = config.keep_tokens_effective
    keep_messages = config.keep_messages_effective
    kept_units = 0
    used_tokens = 0
    used_messages = 0
    for unit in reversed(units):
        unit_tokens = sum(cost_of[s.id] for s in unit)
        if used_tokens + unit_tokens > keep_tokens:
            break
        if keep_messages is not None and used_messages + len(unit) > keep_messages:
            break
        used_tokens += unit_tokens
        used_messages += len(unit)
        kept_units += 1
    fold_units = units[: len(units) - kept_units]
    if fold_units and len(fold_units) == len(units) and not force:
        # The newest unit is kept even when it alone exceeds keep_tokens: it is the current
        # question (shown cut to the budget; the next fold takes it), or it still waits for
        # its tool results (folding it now would leave them without their call).
        fold_units = fold_units[:-1]
    elif fold_units and len(fold_units) == len(units) and _awaiting_results(fold_units[-1]):
        fold_units = fold_units[:-1]
    if not fold_units:
        return None
    prompt_cap = config.max_prompt_message_tokens + 16
    chunks: list[tuple[StoredTurn, ...]] = []
    current: list[StoredTurn] = []
    current_tokens = 0
    for unit in fold_units:
        unit_tokens = sum(min(cost_of[s.id], prompt_cap) for s in unit)
        if current and current_tokens + unit_tokens > config.fold_chunk_tokens:
            chunks.append(tuple(current))
            current, current_tokens = [], 0
        current.extend(unit)
        current_tokens += unit_tokens
    if current:
        chunks.append(tuple(current))
    keep = tuple(s for unit in units[len(fold_units) :] for s in unit)
    return FoldPlan(tuple(chunks), keep, reason)


def _awaiting_results(unit: Sequence[StoredTurn]) -> bool:
    calls = {c.id for s in unit for c in s.turn.tool_calls if c.id is not None}
    answered = {s.turn.tool_call_id for s in unit if s.turn.role == "tool"}
    return bool(calls - answered)


def drop_orphan_results(window: list[StoredTurn]) -> list[StoredTurn]:
    """Drop tool results whose call id names no call in the window (providers reject them).

    They stay in the log; this only keeps them out of the messages handed to the model.
    """
    out: list[StoredTurn] = []
    open_calls: set[str] = set()
    for stored in window:
        turn = stored.turn
        if turn.role == "tool":
            # A result naming a call that is not in the window is an orphan. One without
            # a call id (legacy function messages) cannot be checked, and is kept.
            if turn.tool_call_id is not None and turn.tool_call_id not in open_calls:
                continue
        elif turn.role == "assistant":
            open_calls = {c.id for c in turn.tool_calls if c.id is not None}
        else:
            open_calls = set()
        out.append(stored)
    return out


def window_units(
    turns: Sequence[StoredTurn], counter: TokenCounter
) -> tuple[list[list[StoredTurn]], list[list[int]]]:
    """Return ``turns`` as units with their token costs (for :func:`select_suffix`)."""
    units = _units(turns)
    return units, [[turn_tokens(s, counter) for s in unit] for unit in units]
