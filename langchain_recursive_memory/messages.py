"""Conversion between LangChain messages and core :class:`~.core.Turn` objects.

The round trip keeps content (strings and content blocks), tool calls, tool call ids,
names, message ids and the ``additional_kwargs`` / ``response_metadata`` /
``usage_metadata`` fields (made JSON-safe).

Example:
    >>> from langchain_core.messages import AIMessage
    >>> from langchain_recursive_memory.messages import message_to_turn, turn_to_message
    >>> msg = AIMessage("", tool_calls=[{"name": "add", "args": {"a": 1}, "id": "c1"}])
    >>> turn = message_to_turn(msg)
    >>> turn.role, turn.tool_calls[0].name
    ('assistant', 'add')
    >>> turn_to_message(turn).tool_calls[0]["args"]
    {'a': 1}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .core.errors import MissingDependencyError

try:  # the framework first: without it, name the extra that installs it
    import langchain_core  # noqa: F401
except ImportError as exc:
    raise MissingDependencyError.for_import(exc, __name__) from exc

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    BaseMessageChunk,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_chunk_to_message,
)

from .core.errors import InvalidInputError
from .core.turn import ROLE_ALIASES, ROLES, ToolCall, Turn, blocks_text, canonical_role

__all__ = [
    "SUMMARY_KIND",
    "is_summary_message",
    "message_to_turn",
    "messages_to_turns",
    "turn_to_message",
]

SUMMARY_KIND = "summary"
ANONYMOUS = "lrm_no_id"
"""``Turn.extra`` key of a message given without an id (it is given back without one)."""
_ROLE_BY_CLASS: dict[type[BaseMessage], str] = {
    HumanMessage: "user",
    AIMessage: "assistant",
    SystemMessage: "system",
    ToolMessage: "tool",
    FunctionMessage: "tool",
}


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str, ensure_ascii=False))


def is_summary_message(message: BaseMessage) -> bool:
    """Whether ``message`` is a summary message produced by this package."""
    meta = message.response_metadata or {}
    return meta.get("lrm_kind") == SUMMARY_KIND


def messages_to_turns(messages: Iterable[BaseMessage]) -> list[Turn]:
    """Convert a sequence of LangChain messages to turns, skipping this package's summaries.

    Raises:
        InvalidInputError: For something that is not a sequence of ``BaseMessage`` (a str,
            None, a dict, one message on its own), naming the value.
    """
    if isinstance(messages, BaseMessage):
        raise InvalidInputError.for_value(
            "messages", messages, "must be a sequence of messages; wrap one message in a list"
        )
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
        raise InvalidInputError.for_value(
            "messages", messages, "must be a sequence of LangChain messages"
        )
    items = list(messages)
    for i, item in enumerate(items):
        if not isinstance(item, BaseMessage):
            raise InvalidInputError.for_value(f"messages[{i}]", item, "must be a BaseMessage")
    return [message_to_turn(m) for m in items if not is_summary_message(m)]


def message_to_turn(message: BaseMessage) -> Turn:
    """Convert a LangChain message to a :class:`Turn`.

    Raises:
        InvalidInputError: For something that is not a ``BaseMessage`` or has an unknown
            role.
    """
    if not isinstance(message, BaseMessage):
        raise InvalidInputError.for_value("message", message, "must be a LangChain BaseMessage")
    if isinstance(message, BaseMessageChunk):
        # A streamed answer arrives as an accumulated chunk (AIMessageChunk...).
        message = message_chunk_to_message(message)
    text, blocks = _content(message.content)
    extra: dict[str, Any] = {}
    if not message.id:  # the store gives the turn an id; the message comes back without it
        extra[ANONYMOUS] = True
    if message.additional_kwargs:
        extra["additional_kwargs"] = _json_safe(message.additional_kwargs)
    if message.response_metadata:
        extra["response_metadata"] = _json_safe(message.response_metadata)
    if isinstance(message, ChatMessage):
        extra["chat_role"] = message.role
    tool_calls, tool_call_id = _tool_fields(message, extra)
    return Turn(
        role=_role(message),
        text=text,
        blocks=blocks,
        tool_calls=tool_calls,
        tool_call_id=tool_call_id,
        name=message.name,
        id=message.id or None,
        extra=extra,
    )


def _tool_fields(
    message: BaseMessage, extra: dict[str, Any]
) -> tuple[tuple[ToolCall, ...], str | None]:
    """A message's tool calls and tool call id; what else its kind carries goes to ``extra``."""
    if isinstance(message, AIMessage):
        return _tool_calls(message, extra), None
    if isinstance(message, ToolMessage):
        if message.status != "success":
            extra["status"] = message.status
        if message.artifact is not None:
            extra["artifact"] = _json_safe(message.artifact)
        return (), message.tool_call_id
    if isinstance(message, FunctionMessage):
        extra["function_message"] = True
    return (), None


def _role(message: BaseMessage) -> str:
    if isinstance(message, ChatMessage):
        role = canonical_role(message.role)
        if role is None:
            names = sorted({*ROLES, *ROLE_ALIASES})
            raise InvalidInputError.for_value(
                "message.role", message.role, f"must be one of {names}"
            )
        return role
    role = _ROLE_BY_CLASS.get(type(message)) or next(
        (r for cls, r in _ROLE_BY_CLASS.items() if isinstance(message, cls)),
        canonical_role(message.type),
    )
    if role is None:
        raise InvalidInputError.for_value(
            "message.type", message.type, "is not a chat message type this memory stores"
        )
    return role


def _content(content: Any) -> tuple[str, tuple[Mapping[str, Any], ...] | None]:
    """A message's text, and its content blocks when its content is a list."""
    if isinstance(content, str):
        return content, None
    if isinstance(content, Sequence):
        items = [
            {"type": "text", "text": b} if isinstance(b, str) else _json_safe(b) for b in content
        ]
        return blocks_text(items), tuple(items)
    raise InvalidInputError.for_value("message.content", content, "must be a str or a list")


def _tool_calls(message: AIMessage, extra: dict[str, Any]) -> tuple[ToolCall, ...]:
    """An AI message's tool calls (its invalid ones too) and their extra fields."""
    if message.invalid_tool_calls:
        extra["invalid_tool_calls"] = _json_safe(message.invalid_tool_calls)
    if message.usage_metadata:
        extra["usage_metadata"] = _json_safe(message.usage_metadata)
    # Invalid tool calls are calls too for the provider (it is sent them and rejects a call
    # without a result), so the core keeps them with their results.
    return tuple(
        ToolCall(name=c["name"], args=_json_safe(c.get("args") or {}), id=c.get("id"))
        for c in message.tool_calls
    ) + tuple(
        ToolCall(name=c.get("name") or "unknown", id=c["id"], error=c.get("error") or "invalid")
        for c in message.invalid_tool_calls
        if c.get("id")
    )


def turn_to_message(turn: Turn) -> BaseMessage:
    """Convert a :class:`Turn` back to the LangChain message it came from."""
    content: Any = [dict(b) for b in turn.blocks] if turn.blocks is not None else turn.text
    extra = dict(turn.extra)
    common: dict[str, Any] = {
        "content": content,
        "id": None if extra.get(ANONYMOUS) else turn.id,
        "name": turn.name,
        "additional_kwargs": dict(extra.get("additional_kwargs") or {}),
        "response_metadata": dict(extra.get("response_metadata") or {}),
    }
    if extra.get("lrm_kind") == SUMMARY_KIND:
        common["response_metadata"].update(
            {"lrm_kind": SUMMARY_KIND, "lrm_version": extra.get("lrm_version")}
        )
    if "chat_role" in extra:
        return ChatMessage(role=str(extra["chat_role"]), **common)
    if turn.role == "user":
        return HumanMessage(**common)
    if turn.role == "system":
        return SystemMessage(**common)
    if turn.role == "assistant":
        message = AIMessage(
            **common,
            tool_calls=[
                {"name": c.name, "args": dict(c.args), "id": c.id, "type": "tool_call"}
                for c in turn.tool_calls
                if c.error is None
            ],
            invalid_tool_calls=list(extra.get("invalid_tool_calls") or []),
        )
        if extra.get("usage_metadata"):
            message.usage_metadata = extra["usage_metadata"]
        return message
    if extra.get("function_message"):
        return FunctionMessage(**{**common, "name": turn.name or ""})
    return ToolMessage(
        **common,
        tool_call_id=turn.tool_call_id or "",
        status=extra.get("status", "success"),
        artifact=extra.get("artifact"),
    )
