"""Units of the window: messages that are folded together or shown together. Pure logic.

Messages are handled in *units* (see :func:`~..turn.group_tool_calls`): an assistant
message with tool calls and its tool results are folded together or kept together, never
split, so a provider never sees a tool result without its call.

Example:
    >>> from langchain_recursive_memory.core.recursive.units import select_suffix
    >>> select_suffix([[1], [2, 3], [4]], [[5], [5, 5], [5]], budget=15)
    [2, 3, 4]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from ..storage import StoredTurn
from ..tokenizer import TokenCounter
from ..turn import Turn, group_tool_calls

__all__ = [
    "awaiting_results",
    "drop_orphan_results",
    "placeholder_results",
    "select_suffix",
    "turn_tokens",
    "units_of",
    "window_units",
]

T = TypeVar("T")


def turn_tokens(stored: StoredTurn, counter: TokenCounter) -> int:
    """Return the stored count when it was made with ``counter``'s encoding, else recount."""
    if stored.encoding == counter.encoding_name:
        return stored.tokens
    return counter.count_turn(stored.turn)


def units_of(turns: Sequence[StoredTurn]) -> list[list[StoredTurn]]:
    """``turns`` grouped into units (a tool-calling message with its results)."""
    by_id = {id(s.turn): s for s in turns}
    return [[by_id[id(t)] for t in group] for group in group_tool_calls([s.turn for s in turns])]


def window_units(
    turns: Sequence[StoredTurn], counter: TokenCounter
) -> tuple[list[list[StoredTurn]], list[list[int]]]:
    """Return ``turns`` as units with their token costs (for :func:`select_suffix`)."""
    units = units_of(turns)
    return units, [[turn_tokens(s, counter) for s in unit] for unit in units]


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


def awaiting_results(unit: Sequence[StoredTurn]) -> bool:
    """Whether a unit's tool calls still wait for some of their results."""
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


def placeholder_results(unit: Sequence[StoredTurn]) -> list[Turn]:
    """Tool results standing in for the invalid calls of ``unit`` that have none.

    An invalid call (malformed arguments) is never executed, but providers are sent it and
    reject a call without a result. The placeholders are shown, never stored.
    """
    answered = {s.turn.tool_call_id for s in unit if s.turn.role == "tool"}
    return [
        Turn(
            role="tool",
            text=f"Tool call {call.name} with id {call.id} could not be executed - "
            "arguments were malformed or truncated.",
            name=call.name,
            tool_call_id=call.id,
            id=f"placeholder-{call.id}",
            extra={"lrm_kind": "placeholder", "status": "error"},
        )
        for s in unit
        for call in s.turn.tool_calls
        if call.error is not None and call.id is not None and call.id not in answered
    ]
