"""Conversion between LlamaIndex ``ChatMessage`` objects and core :class:`Turn` objects.

The round trip is lossless for messages that came from LlamaIndex: the role (including
``developer``, ``function``, ``chatbot`` and ``model``, which the core stores as
system/tool/assistant and this module restores), the text, every content block
(``TextBlock``, ``ImageBlock``, ``AudioBlock``, ``VideoBlock``, ``DocumentBlock``,
``ThinkingBlock``, ``ToolCallBlock``, ``CitableBlock``...) and ``additional_kwargs``.

What the core needs is filled in on the way:

* ``Turn.text`` is the message's ``content`` (its text blocks joined), the text the
  summarizer reads and recall searches.
* ``Turn.blocks`` holds each block as ``block.model_dump(mode="json")`` plus a ``type``
  key equal to its ``block_type``, so the core token counter charges image, audio, video
  and document blocks its fixed media cost instead of counting their base64 data as text.
  A message made of exactly one text block keeps ``blocks=None``.
* ``Turn.tool_calls`` lists the calls of an assistant message, from its ``ToolCallBlock``
  blocks and from ``additional_kwargs["tool_calls"]`` (OpenAI, Anthropic and
  ``ToolSelection`` shapes) or a legacy ``additional_kwargs["function_call"]``.
* ``Turn.tool_call_id`` of a tool message is ``additional_kwargs["tool_call_id"]``, so the
  core never separates a tool result from the call it answers.

Turns written by other adapters (LangChain) or by the core itself are rebuilt as native
LlamaIndex messages: text and image blocks, tool calls as ``ToolCallBlock``, the tool
call id in ``additional_kwargs``. Their framework-specific fields are not copied into
``additional_kwargs``, which LlamaIndex LLM integrations forward to the provider.

Example:
    >>> from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
    >>> from llamaindex_higmem.messages import chat_message_to_turn, turn_to_chat_message
    >>> call = ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs={"a": 1})
    >>> msg = ChatMessage(role="assistant", blocks=[call])
    >>> turn = chat_message_to_turn(msg)
    >>> turn.role, turn.tool_calls[0].name, turn.tool_calls[0].id
    ('assistant', 'add', 'c1')
    >>> turn_to_chat_message(turn) == msg
    True
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping, Sequence
from io import IOBase
from typing import Any, get_args

from llama_index.core.base.llms.types import (
    ChatMessage,
    ContentBlock,
    ImageBlock,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)
from pydantic import BaseModel, TypeAdapter, ValidationError

from langchain_recursive_memory.core.errors import InvalidInputError
from langchain_recursive_memory.core.turn import ToolCall, Turn

__all__ = [
    "FRAMEWORK",
    "SummaryMessage",
    "chat_message_to_turn",
    "is_summary_message",
    "turn_to_chat_message",
]

logger = logging.getLogger("langchain_recursive_memory")

FRAMEWORK = "llama_index"
"""Value of ``Turn.extra["framework"]`` for turns converted from LlamaIndex messages."""

SUMMARY_KIND = "summary"

# MessageRole -> core role. Roles other than the four core ones are restored from
# ``Turn.extra["llamaindex_role"]``.
_ROLES: dict[MessageRole, str] = {
    MessageRole.USER: "user",
    MessageRole.ASSISTANT: "assistant",
    MessageRole.SYSTEM: "system",
    MessageRole.TOOL: "tool",
    MessageRole.DEVELOPER: "system",
    MessageRole.FUNCTION: "tool",
    MessageRole.CHATBOT: "assistant",
    MessageRole.MODEL: "assistant",
}

_BLOCK_ADAPTER: TypeAdapter[Any] = TypeAdapter(ContentBlock)
_BLOCK_CLASSES: dict[str, type[BaseModel]] = {
    cls.model_fields["block_type"].default: cls for cls in get_args(get_args(ContentBlock)[0])
}


class SummaryMessage(ChatMessage):
    """The first message :meth:`RecursiveSummaryMemory.get` returns.

    It holds the running summary of the folded conversation and, for a question, the
    memories recalled for it. It is an ordinary ``ChatMessage`` to every LLM integration;
    the memory recognises it by its class and never stores it back as a conversation
    message (for example when a chat engine passes ``get()``'s output to ``set``).
    """


def is_summary_message(message: object) -> bool:
    """Whether ``message`` is a summary message produced by this package.

    Example:
        >>> is_summary_message(SummaryMessage(role="user", content="Summary: ...")), (
        ...     is_summary_message(ChatMessage(role="user", content="hi"))
        ... )
        (True, False)
    """
    return isinstance(message, SummaryMessage)


# -- helpers ------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """Return ``value`` with bytes as base64 text and everything JSON-serializable."""
    if isinstance(value, BaseModel):
        return _jsonable(value.model_dump())
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, IOBase):
        value.seek(0)
        data = value.read()
        return _jsonable(data if isinstance(data, bytes) else str(data).encode())
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.loads(json.dumps(value, default=str, ensure_ascii=False))


def _dump_block(block: BaseModel) -> dict[str, Any]:
    try:
        data = block.model_dump(mode="json")
    except (ValueError, TypeError):  # raw binary in an IO object or non-UTF-8 bytes
        data = _jsonable(block.model_dump())
    data = json.loads(json.dumps(data, default=str, ensure_ascii=False))
    block_type = data.get("block_type")
    return {"type": block_type, **data} if isinstance(block_type, str) else data


def _load_block(data: Mapping[str, Any]) -> Any:
    payload = {k: v for k, v in data.items() if k != "type"}
    try:
        return _BLOCK_ADAPTER.validate_python(payload)
    except ValidationError as exc:
        cls = _BLOCK_CLASSES.get(str(payload.get("block_type")))
        if cls is None:
            logger.warning("content block of unknown type dropped: %s", exc)
            return None
        # For example an ImageBlock whose file ``path`` no longer exists: keep it as it was.
        return cls.model_construct(**payload)


def _parse_args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(_jsonable(raw))
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {"arguments": raw}
        return dict(parsed) if isinstance(parsed, dict) else {"arguments": parsed}
    if raw is None:
        return {}
    return {"arguments": _jsonable(raw)}


def _call_from_kwargs(item: Any) -> ToolCall | None:
    """Read one entry of ``additional_kwargs["tool_calls"]`` (any common provider shape)."""
    data = _jsonable(item)
    if not isinstance(data, dict):
        return None
    raw_function = data.get("function")
    function: dict[str, Any] = raw_function if isinstance(raw_function, dict) else {}
    name = data.get("name") or data.get("tool_name") or function.get("name")
    if not isinstance(name, str) or not name:
        return None
    raw: Any = None
    for key in ("args", "input", "arguments", "tool_kwargs"):
        if key in data:
            raw = data[key]
            break
    else:
        raw = function.get("arguments")
    call_id = data.get("id") or data.get("tool_id") or data.get("tool_call_id")
    return ToolCall(name=name, args=_parse_args(raw), id=str(call_id) if call_id else None)


def _tool_calls(message: ChatMessage) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = [
        ToolCall(
            name=block.tool_name,
            args=_parse_args(block.tool_kwargs),
            id=block.tool_call_id or None,
        )
        for block in message.blocks
        if isinstance(block, ToolCallBlock)
    ]
    kwargs = message.additional_kwargs
    raw_calls = kwargs.get("tool_calls")
    if isinstance(raw_calls, Sequence) and not isinstance(raw_calls, str | bytes):
        seen = {c.id for c in calls if c.id is not None}
        for item in raw_calls:
            call = _call_from_kwargs(item)
            if call is not None and (call.id is None or call.id not in seen):
                calls.append(call)
    legacy = kwargs.get("function_call")
    if not calls and legacy is not None:
        call = _call_from_kwargs(legacy)
        if call is not None:
            calls.append(call)
    return tuple(calls)


# -- conversion ---------------------------------------------------------------------------


def chat_message_to_turn(message: ChatMessage) -> Turn:
    """Convert a LlamaIndex ``ChatMessage`` to a :class:`Turn`.

    Args:
        message: The message. Its ``additional_kwargs`` are made JSON-safe (pydantic
            objects dumped, bytes as base64), as LlamaIndex's own serialization does.

    Returns:
        The turn (without an id: the store assigns one).

    Raises:
        InvalidInputError: For something that is not a ``ChatMessage``.
    """
    if not isinstance(message, ChatMessage):
        raise InvalidInputError.for_value("message", message, "must be a llama_index ChatMessage")
    li_role = MessageRole(message.role)
    role = _ROLES[li_role]
    blocks = list(message.blocks)
    text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
    stored_blocks: tuple[Mapping[str, Any], ...] | None = None
    if not (len(blocks) == 1 and isinstance(blocks[0], TextBlock)):
        stored_blocks = tuple(_dump_block(b) for b in blocks)
    kwargs = dict(message.additional_kwargs)
    extra: dict[str, Any] = {"framework": FRAMEWORK}
    if kwargs:
        extra["additional_kwargs"] = _jsonable(kwargs)
    if li_role.value != role:
        extra["llamaindex_role"] = li_role.value
    tool_call_id = kwargs.get("tool_call_id") if role == "tool" else None
    name = kwargs.get("name")
    return Turn(
        role=role,
        text=text,
        blocks=stored_blocks,
        tool_calls=_tool_calls(message) if role == "assistant" else (),
        tool_call_id=str(tool_call_id) if tool_call_id else None,
        name=name if isinstance(name, str) and name else None,
        extra=extra,
    )


def _foreign_blocks(turn: Turn) -> list[Any]:
    """Blocks for a turn written by another adapter or the core (text and images kept)."""
    out: list[Any] = []
    for block in turn.blocks or ():
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            out.append(TextBlock(text=block["text"]))
        elif kind in ("image_url", "image", "input_image"):
            image = _foreign_image(block)
            if image is not None:
                out.append(image)
    if turn.text and not any(isinstance(b, TextBlock) for b in out):
        out.insert(0, TextBlock(text=turn.text))
    return out


def _foreign_image(block: Mapping[str, Any]) -> ImageBlock | None:
    url = block.get("image_url")
    if isinstance(url, Mapping):
        url = url.get("url")
    url = url or block.get("url")
    try:
        if isinstance(url, str) and url:
            return ImageBlock(url=url)
        data = block.get("base64") or block.get("data")
        if isinstance(data, str) and data:
            mime = block.get("mime_type") or block.get("mimeType")
            return ImageBlock(image=data.encode(), image_mimetype=mime)
    except (ValidationError, ValueError):
        return None
    return None


def turn_to_chat_message(turn: Turn) -> ChatMessage:
    """Convert a :class:`Turn` back to the LlamaIndex ``ChatMessage`` it came from.

    The summary turn of a context becomes a :class:`SummaryMessage`.

    Raises:
        InvalidInputError: For something that is not a ``Turn``.
    """
    if not isinstance(turn, Turn):
        raise InvalidInputError.for_value("turn", turn, "must be a Turn")
    extra = turn.extra
    native = extra.get("framework") == FRAMEWORK
    role: str = turn.role
    saved_role = extra.get("llamaindex_role")
    if native and saved_role in MessageRole._value2member_map_:
        role = str(saved_role)
    kwargs: dict[str, Any] = {}
    blocks: list[Any]
    if native:
        kwargs = dict(extra.get("additional_kwargs") or {})
        if turn.blocks is None:
            blocks = [TextBlock(text=turn.text)]
        else:
            blocks = [b for b in (_load_block(d) for d in turn.blocks) if b is not None]
    else:
        blocks = [TextBlock(text=turn.text)] if turn.blocks is None else _foreign_blocks(turn)
        if turn.blocks is None and not turn.text and turn.tool_calls:
            blocks = []
        blocks += [
            ToolCallBlock(tool_call_id=c.id, tool_name=c.name, tool_kwargs=dict(c.args))
            for c in turn.tool_calls
            if c.error is None  # an invalid call of another framework is not a call here
        ]
        if turn.role == "tool" and turn.tool_call_id:
            kwargs["tool_call_id"] = turn.tool_call_id
    cls = SummaryMessage if extra.get("lrm_kind") == SUMMARY_KIND else ChatMessage
    return cls(role=MessageRole(role), blocks=blocks, additional_kwargs=kwargs)
