"""Messages as JSON objects, in the shapes providers and frameworks write them, as turns.

:func:`turns_from_dict` reads one message object of any of these shapes (a JSONL
transcript mixes them freely) into structured turns; content lists stay content blocks
(images count their media cost, not their base64 as text), tool calls stay tool calls:

* **OpenAI** chat messages: ``content`` a string, null or a list of parts (``text``,
  ``image_url``, ``input_audio``, ``file``, ``refusal``); ``tool_calls`` with
  ``function.arguments`` as a JSON string (malformed arguments make an invalid call, never
  a dropped one); ``tool_call_id`` of ``role: tool``; the legacy ``function_call``.
* **Anthropic** messages: content blocks ``text``, ``image``, ``document``, ``tool_use``
  (a call), ``tool_result`` (a tool turn of its own), ``thinking``, ``redacted_thinking``
  and server-side ``compaction`` blocks.
* **LangChain** ``messages_to_dict`` records (``{"type": "ai", "data": {...}}``) and
  plain dicts with ``tool_calls`` of ``{name, args, id}``.
* **LlamaIndex** ``ChatMessage.model_dump()`` (``blocks`` with ``block_type``).
* This package's own records: ``{role, content|text, name?, id?, created_at?, session?}``.

Example:
    >>> from langchain_recursive_memory.core.message_dicts import turns_from_dict
    >>> call = {"id": "c1", "type": "function",
    ...         "function": {"name": "add", "arguments": '{"a": 1}'}}
    >>> [turn] = turns_from_dict({"role": "assistant", "content": None, "tool_calls": [call]})
    >>> turn.text, turn.tool_calls[0].name, dict(turn.tool_calls[0].args)
    ('', 'add', {'a': 1})
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InvalidInputError, _short
from .turn import ROLE_ALIASES, ROLES, ToolCall, Turn, blocks_text, canonical_role

__all__ = ["ROLE_ALIASES", "turns_from_dict"]


_CALL_TYPES = frozenset({"tool_use", "tool_call", "function_call"})


def turns_from_dict(record: Mapping[str, Any], n: int | str = 1) -> list[Turn]:
    """The turns of one message object (see the module doc).

    ``n`` names the record in errors: its number (``record 3``), or where it was read
    (``chat.jsonl:5``, as :func:`~.ingest.read_jsonl` passes).

    An Anthropic user message whose content holds ``tool_result`` blocks becomes one tool
    turn per result, then a user turn for the rest of its content, if any.

    Raises:
        InvalidInputError: ``<where>: <what cannot be read>``, e.g. ``chat.jsonl:5:
            unknown role 'wizard' (use user, assistant, system or tool)``.
    """
    where = n if isinstance(n, str) else f"record {n}"
    if not isinstance(record, Mapping):
        raise _bad(where, f"not a message object (got {_short(record)})")
    rec: Mapping[str, Any] = record
    if "data" in rec and "type" in rec and isinstance(rec["data"], Mapping):
        rec = {**rec["data"], "role": rec["type"]}  # LangChain's messages_to_dict
    role = _role(rec, where)
    blocks = _blocks(rec.get("content", rec.get("text", rec.get("blocks"))), where)
    common = {
        "name": rec.get("name") if isinstance(rec.get("name"), str) else None,
        "created_at": _created_at(rec.get("created_at"), where),
        "extra": {"session": str(rec["session"])} if rec.get("session") is not None else {},
    }
    results = [b for b in blocks or () if b.get("type") == "tool_result"]
    if results:  # Anthropic: tool results travel in a user message
        rest = tuple(b for b in blocks or () if b.get("type") != "tool_result")
        turns = [_tool_result_turn(b, common) for b in results]
        if rest:
            turns.append(_turn("user", rest, rec, common, calls=(), call_id=None))
        return turns
    calls = _calls(rec, blocks, where) if role == "assistant" else ()
    kwargs = _kwargs(rec)
    call_id = rec.get("tool_call_id", kwargs.get("tool_call_id")) if role == "tool" else None
    return [_turn(role, blocks, rec, common, calls=calls, call_id=call_id)]


def _turn(
    role: str,
    blocks: tuple[Mapping[str, Any], ...] | None,
    rec: Mapping[str, Any],
    common: Mapping[str, Any],
    *,
    calls: tuple[ToolCall, ...],
    call_id: Any,
) -> Turn:
    if blocks is None:
        raw = rec.get("content", rec.get("text"))
        text = raw if isinstance(raw, str) else ""
    elif (
        len(blocks) == 1 and blocks[0].get("type") == "text" and set(blocks[0]) <= {"type", "text"}
    ):
        text, blocks = str(blocks[0].get("text") or ""), None  # plain text, as one block
    else:
        text = blocks_text(blocks)
    return Turn(
        role=role,
        text=text,
        blocks=blocks,
        tool_calls=calls,
        tool_call_id=str(call_id) if call_id is not None else None,
        id=str(rec["id"]) if rec.get("id") not in (None, "") else None,
        **common,
    )


def _kwargs(rec: Mapping[str, Any]) -> Mapping[str, Any]:
    """A record's ``additional_kwargs`` (LlamaIndex and LangChain keep tool fields there)."""
    kwargs = rec.get("additional_kwargs")
    return kwargs if isinstance(kwargs, Mapping) else {}


def _bad(where: str, problem: str) -> InvalidInputError:
    """The error of a record that cannot be read: ``<where>: <problem>``."""
    return InvalidInputError(f"{where}: {problem}")


def _role(rec: Mapping[str, Any], where: str) -> str:
    role = canonical_role(str(rec.get("role", "")))
    if role is None:
        given = rec.get("role")
        what = "no role" if given is None else f"unknown role {_short(given)}"
        raise _bad(where, f"{what} (use {', '.join(ROLES[:-1])} or {ROLES[-1]})")
    return role


def _blocks(content: Any, where: str) -> tuple[Mapping[str, Any], ...] | None:
    """Content as blocks: None for a string (or null), a tuple of dicts for a list."""
    if content is None or isinstance(content, str):
        return None
    if not isinstance(content, Sequence):
        raise _bad(
            where,
            f"content must be a string, null or a list of parts (got {_short(content)})",
        )
    out = []
    for part in content:
        if isinstance(part, str):
            out.append({"type": "text", "text": part})
        elif isinstance(part, Mapping):
            block = json.loads(json.dumps(part, default=str, ensure_ascii=False))
            if "type" not in block and "block_type" in block:  # LlamaIndex
                block["type"] = block["block_type"]
            out.append(block)
        else:
            raise _bad(where, f"a content part must be an object or a string (got {_short(part)})")
    return tuple(out)


def _calls(
    rec: Mapping[str, Any], blocks: tuple[Mapping[str, Any], ...] | None, where: str
) -> tuple[ToolCall, ...]:
    """An assistant message's tool calls, from ``tool_calls``, ``function_call`` or blocks."""
    kwargs = _kwargs(rec)
    raw: list[Any] = list(rec.get("tool_calls") or kwargs.get("tool_calls") or [])
    if isinstance(rec.get("function_call"), Mapping):
        raw.append({"function": rec["function_call"]})
    raw += [b for b in blocks or () if b.get("type") in _CALL_TYPES]
    return tuple(_call(c, where) for c in raw)


def _call(raw: Any, where: str) -> ToolCall:
    if not isinstance(raw, Mapping):
        raise _bad(where, f"a tool call must be an object (got {_short(raw)})")
    nested = raw.get("function")
    function: Mapping[str, Any] = nested if isinstance(nested, Mapping) else raw
    name = str(function.get("name") or raw.get("tool_name") or "unknown")
    call_id = raw.get("id") or raw.get("tool_call_id")  # LlamaIndex: ToolCallBlock
    args: Any = function.get(
        "arguments", raw.get("args", raw.get("input", raw.get("tool_kwargs", {})))
    )
    error = None
    if isinstance(args, str):  # OpenAI: a JSON string, maybe truncated
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            args, error = {}, f"arguments are not JSON: {exc}"
    if not isinstance(args, Mapping):
        args, error = {}, f"arguments are not an object: {args!r:.60}"
    return ToolCall(name, dict(args), str(call_id) if call_id else None, error)


def _tool_result_turn(block: Mapping[str, Any], common: Mapping[str, Any]) -> Turn:
    content = block.get("content")
    blocks = _blocks(content, "tool_result") if isinstance(content, list) else None
    text = blocks_text(blocks) if blocks is not None else str(content or "")
    extra = {**common["extra"], **({"status": "error"} if block.get("is_error") else {})}
    return Turn(
        role="tool",
        text=text,
        blocks=blocks,
        tool_call_id=str(block.get("tool_use_id") or block.get("id") or "") or None,
        created_at=common["created_at"],
        extra=extra,
    )


def _created_at(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError as exc:
            problem = f"created_at {_short(value)} must be ISO 8601 or seconds since the epoch"
            raise _bad(where, problem) from exc
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(where, f"created_at {_short(value)} must be a number or an ISO 8601 string")
    if not math.isfinite(value):
        raise _bad(where, f"created_at {_short(value)} must be finite")
    return float(value)
