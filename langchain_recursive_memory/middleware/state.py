"""A thread's state beside the log: which messages are new, which may leave the state.

Pure helpers of :class:`~.agent.RecursiveMemoryMiddleware` (no I/O): every message of the
agent's state is stored once, keyed by its ``id``, and at the end of a run the messages
the memory has folded into its summary may leave the state (``RemoveMessage``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, RemoveMessage, SystemMessage

from ..core.recursive import RecursiveMemory
from ..core.storage import StoredTurn
from ..core.turn import Turn
from ..messages import is_summary_message, message_to_turn

__all__ = ["ThreadSession", "may_trim", "remember", "to_store", "trimmed", "unknown"]


@dataclass
class ThreadSession:
    """A session's core memory, the message ids known to be in its log, and its requests.

    ``correction``: tokens the thread's next request leaves free, from the provider's
    reported usage (:func:`~.budget.usage_correction`); ``warned``: whether a message
    sent cut was already reported at WARNING in this thread.
    """

    memory: RecursiveMemory
    user_id: str | None = None
    known: set[str] = field(default_factory=set)
    correction: int = 0
    warned: bool = False


def unknown(session: ThreadSession, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages whose ids are not known to be logged (ids given where missing)."""
    out: list[BaseMessage] = []
    seen: set[str] = set()
    for message in messages:
        if is_summary_message(message):
            continue
        if not message.id:
            message.id = str(uuid.uuid4())
        if message.id in session.known or message.id in seen:
            continue
        seen.add(message.id)
        out.append(message)
    return out


def to_store(
    session: ThreadSession, new: list[BaseMessage], present: list[StoredTurn]
) -> list[Turn]:
    """The turns of ``new`` to add: those the log (``present``) does not hold yet."""
    logged = {s.id for s in present}
    session.known.update(logged)
    return [message_to_turn(m) for m in new if m.id not in logged]


def remember(session: ThreadSession, messages: Sequence[BaseMessage]) -> None:
    """Keep the ids of the state's messages, now logged, as the ones known.

    Only the ids of the current state are worth remembering: older ones never come back,
    and a cold cache costs one read by ids. (A message another process logged meanwhile
    is added again: the log keeps its first record.)
    """
    session.known = {m.id for m in messages if m.id}


def may_trim(session: ThreadSession, messages: Sequence[BaseMessage]) -> bool:
    """Whether the state may hold folded messages (no I/O; a read decides when unsure)."""
    window = session.memory.window_messages
    held = sum(1 for m in messages if not isinstance(m, SystemMessage))
    return window is None or held > window


def trimmed(
    session: ThreadSession, messages: Sequence[BaseMessage], unfolded: set[str]
) -> dict[str, Any] | None:
    """The state update that removes the logged messages the memory has folded.

    What stays is the memory's window (the unfolded messages): what the model still needs
    verbatim, and the state's system messages (instructions the agent's system prompt is
    sent with at every call). A fold never parts a tool call from its results, so neither
    does this. Only messages known to be in the log go (``session.known``).
    """
    gone = [
        m.id
        for m in messages
        if m.id in session.known and m.id not in unfolded and not isinstance(m, SystemMessage)
    ]
    if not gone:
        return None
    session.known.difference_update(gone)
    return {"messages": [RemoveMessage(id=mid) for mid in gone if mid]}
