"""Units of the window: messages that are folded together or shown together. Pure logic.

Messages are handled in *units* (see :func:`~..turn.group_tool_calls`): an assistant
message with tool calls and its tool results are folded together or kept together, never
split, so a provider never sees a tool result without its call.

Example:
    >>> from langchain_recursive_memory.core.recursive.units import suffix_start
    >>> suffix_start([[5], [5, 5], [5]], budget=15)
    1
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence

from ..storage import StoredTurn
from ..tokenizer import TokenCounter
from ..turn import Turn, group_tool_calls

__all__ = [
    "awaiting_results",
    "drop_orphan_results",
    "placeholder_results",
    "suffix_start",
    "turn_tokens",
    "units_of",
    "window_units",
]

logger = logging.getLogger("langchain_recursive_memory")

ORPHANS_REMEMBERED = 4096
"""How many dropped tool results the process remembers having warned about."""

_warned: OrderedDict[tuple[str, str | None], None] = OrderedDict()
_warned_lock = threading.Lock()


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
    """Return ``turns`` as units with their token costs (for :func:`suffix_start`)."""
    units = units_of(turns)
    return units, [[turn_tokens(s, counter) for s in unit] for unit in units]


def suffix_start(costs: Sequence[Sequence[int]], budget: int) -> int:
    """Where the longest run of whole units ending with the newest within ``budget`` starts.

    ``costs`` holds each unit's message costs; ``len(costs)`` means not even the newest
    unit fits.
    """
    used = 0
    for i in range(len(costs) - 1, -1, -1):
        used += sum(costs[i])
        if used > budget:
            return i + 1
    return 0


def awaiting_results(unit: Sequence[StoredTurn]) -> bool:
    """Whether a unit's tool calls still wait for some of their results."""
    calls = {c.id for s in unit for c in s.turn.tool_calls if c.id is not None}
    answered = {s.turn.tool_call_id for s in unit if s.turn.role == "tool"}
    return bool(calls - answered)


def drop_orphan_results(window: list[StoredTurn]) -> list[StoredTurn]:
    """Drop tool results whose call is not shown before them (providers reject them).

    They stay in the log; this only keeps them out of the messages handed to the model.
    Such a result forms a unit of its own (see :func:`~..turn.group_tool_calls`); one
    without a call id (a legacy function message) cannot be checked, and is kept. Each
    result dropped is logged once per process (a warning naming its call id), not at
    every read.
    """
    kept: list[StoredTurn] = []
    for unit in units_of(window):
        first = unit[0].turn
        if first.role == "tool" and first.tool_call_id is not None:
            _warn_orphan(unit[0])
            continue
        kept += unit
    return kept


def _warn_orphan(stored: StoredTurn) -> None:
    """Warn, once per process and message, that a tool result without its call is left out."""
    turn = stored.turn
    key = (str(turn.tool_call_id), turn.id)
    with _warned_lock:
        if key in _warned:
            _warned.move_to_end(key)
            return
        _warned[key] = None
        while len(_warned) > ORPHANS_REMEMBERED:
            _warned.popitem(last=False)
    logger.warning(
        "a tool result (message %s) answers the tool call id %r, which no message before "
        "it makes: it is left out of the messages handed to the model (providers reject "
        "a tool result without its call); it stays in the log",
        turn.id,
        turn.tool_call_id,
    )


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
