"""The :class:`Turn`: one message of one conversation, framework-free.

Adapters translate LangChain messages and LlamaIndex ``ChatMessage`` objects to and from
turns; the core only ever sees turns.

Example:
    >>> from langchain_recursive_memory.core import Turn
    >>> t = Turn(role="user", text="My name is Ada.")
    >>> t.role, t.text
    ('user', 'My name is Ada.')
    >>> Turn.from_json(t.to_json()) == t
    True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

from .errors import InvalidInputError
from .validation import check_json, check_optional_text, check_text, check_timestamp

__all__ = [
    "REASONING_BLOCK_TYPES",
    "ROLE_ALIASES",
    "Role",
    "ToolCall",
    "Turn",
    "blocks_text",
    "canonical_role",
    "group_tool_calls",
    "is_reasoning",
    "reasoning_text",
    "turn_list",
]

Role = Literal["user", "assistant", "system", "tool"]
"""The four roles a turn can have (LangChain's human/ai map to user/assistant)."""

ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")

ROLE_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "human": "user",
        "ai": "assistant",
        "bot": "assistant",
        "model": "assistant",
        "chatbot": "assistant",
        "developer": "system",
        "function": "tool",
    }
)
"""Role names of other formats (LangChain, OpenAI, Gemini, chat datasets), as the core's
roles: the one table of the package (message dicts, LangChain messages, ``summary_role``)."""

# Block types whose payload is binary or media, counted at a fixed cost, never as text.
MEDIA_BLOCK_TYPES = frozenset(
    {
        "image",
        "image_url",
        "input_image",
        "audio",
        "input_audio",
        "file",
        "input_file",
        "video",
        "document",
    }
)
REASONING_BLOCK_TYPES = frozenset({"thinking", "redacted_thinking", "reasoning"})
"""Block types of a model's reasoning (Anthropic's thinking, LangChain's and OpenAI's
reasoning): stored and replayed to the provider, never part of a turn's text."""
_TEXT_KEYS = ("text", "content", "summary")
_REASONING_KEYS = ("thinking", "reasoning", "summary", "text")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool (function) call requested by an assistant turn.

    Attributes:
        name: The tool's name.
        args: The call's arguments, JSON-serializable.
        id: The provider's call id, which the tool result turn refers to.
        error: Why the call is invalid (its arguments were malformed or truncated), or
            None. An invalid call is never executed, but providers are sent it and want
            a result for it: the context shows one if none was stored.
    """

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        check_text("tool name", self.name)
        check_optional_text("tool call id", self.id)
        check_optional_text("tool call error", self.error)
        if not isinstance(self.args, Mapping):
            raise InvalidInputError.for_value("args", self.args, "must be a mapping")
        check_json("args", self.args)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict."""
        data = {"name": self.name, "args": dict(self.args), "id": self.id}
        if self.error is not None:
            data["error"] = self.error
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        """Build a call from :meth:`to_dict` output."""
        error = data.get("error")
        return cls(
            name=str(data["name"]),
            args=dict(data.get("args") or {}),
            id=data.get("id"),
            error=str(error) if error is not None else None,
        )


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of one conversation.

    Attributes:
        role: ``"user"``, ``"assistant"``, ``"system"`` or ``"tool"``.
        text: The message's plain text: what was said (for content blocks, their text
            parts joined; reasoning blocks are not part of it, see :func:`blocks_text`).
            Everything that indexes, recalls, summarizes or extracts facts reads it.
        blocks: The original content blocks when the content was a list (images, thinking,
            ...), JSON-serializable; ``None`` for plain text content.
        tool_calls: Tool calls requested by an assistant turn.
        tool_call_id: For a tool turn, the id of the call it answers.
        name: An optional participant or tool name.
        id: The turn id. Assigned by the store when missing; a turn added twice with the
            same id is stored once.
        created_at: Seconds since the epoch; assigned by the store when missing.
        extra: Framework-specific fields kept for a lossless round trip
            (``additional_kwargs``, ``response_metadata``...), JSON-serializable.
    """

    role: str
    text: str = ""
    blocks: tuple[Mapping[str, Any], ...] | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    id: str | None = None
    created_at: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise InvalidInputError.for_value("role", self.role, f"must be one of {ROLES}")
        check_text("text", self.text)
        if self.id is not None and (not isinstance(self.id, str) or not self.id.strip()):
            raise InvalidInputError.for_value("id", self.id, "must be a non-empty str or None")
        check_optional_text("id", self.id)
        check_optional_text("name", self.name)
        check_optional_text("tool_call_id", self.tool_call_id)
        check_timestamp("created_at", self.created_at)
        if self.blocks is not None:
            object.__setattr__(self, "blocks", _checked_blocks(self.blocks))
        object.__setattr__(self, "tool_calls", _checked_tool_calls(self.tool_calls))
        if not isinstance(self.extra, Mapping):
            raise InvalidInputError.for_value("extra", self.extra, "must be a mapping")
        if self.extra:
            check_json("extra", self.extra)

    @property
    def speaker(self) -> str:
        """Who spoke: the participant name when set, else the role."""
        return self.name or self.role

    @property
    def has_tool_calls(self) -> bool:
        """Whether this is an assistant turn that requests tool calls."""
        return bool(self.tool_calls)

    def with_id(self, turn_id: str, created_at: float) -> Turn:
        """Return a copy with the id and creation time set."""
        return replace(self, id=turn_id, created_at=created_at)

    def payload(self) -> dict[str, Any]:
        """Return the fields beyond role and text, for storage (JSON-serializable)."""
        data: dict[str, Any] = {}
        if self.blocks is not None:
            data["blocks"] = [dict(b) for b in self.blocks]
        if self.tool_calls:
            data["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            data["name"] = self.name
        if self.extra:
            data["extra"] = dict(self.extra)
        return data

    def to_json(self) -> str:
        """Serialize the turn to a JSON string (lossless)."""
        data = {"role": self.role, "text": self.text, **self.payload()}
        if self.id is not None:
            data["id"] = self.id
        if self.created_at is not None:
            data["created_at"] = self.created_at
        return json.dumps(data, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_payload(
        cls,
        role: str,
        text: str,
        payload: Mapping[str, Any],
        *,
        turn_id: str | None = None,
        created_at: float | None = None,
    ) -> Turn:
        """Rebuild a turn from its role, text and :meth:`payload`."""
        blocks = payload.get("blocks")
        return cls(
            role=role,
            text=text,
            blocks=tuple(blocks) if blocks is not None else None,
            tool_calls=tuple(ToolCall.from_dict(c) for c in payload.get("tool_calls", ())),
            tool_call_id=payload.get("tool_call_id"),
            name=payload.get("name"),
            id=turn_id,
            created_at=created_at,
            extra=dict(payload.get("extra") or {}),
        )

    @classmethod
    def from_json(cls, text: str) -> Turn:
        """Parse :meth:`to_json` output.

        Raises:
            InvalidInputError: For text that is not a JSON object of a turn.
        """
        try:
            data = json.loads(check_text("text", text))
        except json.JSONDecodeError as exc:
            raise InvalidInputError.for_value("text", text, f"is not JSON ({exc})") from exc
        if not isinstance(data, dict) or "role" not in data:
            raise InvalidInputError.for_value("text", text, "is not a JSON object with a role")
        return cls.from_payload(
            data["role"],
            data.get("text", ""),
            data,
            turn_id=data.get("id"),
            created_at=data.get("created_at"),
        )


def _checked_blocks(blocks: Any) -> tuple[Mapping[str, Any], ...]:
    """A turn's content blocks, checked: a sequence of JSON mappings, as a tuple."""
    if isinstance(blocks, str | bytes | Mapping) or not isinstance(blocks, Sequence):
        raise InvalidInputError.for_value("blocks", blocks, "must be a sequence")
    for block in blocks:
        if not isinstance(block, Mapping):
            raise InvalidInputError.for_value("block", block, "must be a mapping")
    return tuple(check_json("blocks", blocks))


def _checked_tool_calls(calls: Any) -> tuple[ToolCall, ...]:
    """A turn's tool calls, checked: a sequence of :class:`ToolCall`, as a tuple."""
    if type(calls) is tuple and all(type(call) is ToolCall for call in calls):
        return calls  # the common case, and every turn read back: no ABC checks
    if isinstance(calls, str | bytes) or not isinstance(calls, Sequence):
        raise InvalidInputError.for_value("tool_calls", calls, "must be a sequence")
    for call in calls:
        if not isinstance(call, ToolCall):
            raise InvalidInputError.for_value("tool_call", call, "must be a ToolCall")
    return tuple(calls)


def canonical_role(name: str) -> str | None:
    """The core role ``name`` stands for (a role or one of :data:`ROLE_ALIASES`, any case).

    None when it is neither.

    Example:
        >>> canonical_role("Human"), canonical_role("tool"), canonical_role("wizard")
        ('user', 'tool', None)
    """
    role = ROLE_ALIASES.get(name.lower(), name.lower())
    return role if role in ROLES else None


def is_reasoning(block: Any) -> bool:
    """Whether a content block is a model's reasoning (see :data:`REASONING_BLOCK_TYPES`)."""
    return isinstance(block, Mapping) and (
        block.get("type", block.get("block_type")) in REASONING_BLOCK_TYPES
    )


def blocks_text(blocks: Sequence[Any]) -> str:
    r"""Join the text parts of a list of content blocks (strings or dicts): what was said.

    Media blocks contribute nothing; neither do reasoning blocks (``thinking``,
    ``redacted_thinking``, ``reasoning``): they are kept in the blocks, replayed to the
    provider, and read with :func:`reasoning_text` when asked for.

    Example:
        >>> blocks_text(["hi", {"type": "text", "text": "there"}, {"type": "image_url"}])
        'hi\nthere'
        >>> blocks_text([{"type": "thinking", "thinking": "Hm."}, {"type": "text", "text": "Yes"}])
        'Yes'
    """
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping):
            if block.get("type") in MEDIA_BLOCK_TYPES or is_reasoning(block):
                continue
            parts.extend(_first_text(block, _TEXT_KEYS))
    return "\n".join(parts)


def reasoning_text(blocks: Sequence[Any]) -> str:
    """Join the text of the reasoning blocks of a list of content blocks.

    Anthropic ``thinking``, LangChain ``reasoning`` and OpenAI reasoning summaries
    (``summary: [{"text": ...}]``); ``redacted_thinking`` has no readable text.

    Example:
        >>> reasoning_text([{"type": "reasoning", "summary": [{"text": "Checked."}]}])
        'Checked.'
    """
    parts: list[str] = []
    for block in blocks:
        if not is_reasoning(block):
            continue
        summary = block.get("summary")
        if isinstance(summary, list):
            parts.extend(s["text"] for s in summary if isinstance(s, Mapping) and s.get("text"))
        else:
            parts.extend(_first_text(block, _REASONING_KEYS))
    return "\n".join(parts)


def _first_text(block: Mapping[str, Any], keys: Sequence[str]) -> list[str]:
    """The first non-empty string of ``keys`` in ``block`` (as a list: empty or one)."""
    for key in keys:
        value = block.get(key)
        if isinstance(value, str) and value:
            return [value]
    return []


def group_tool_calls(turns: Sequence[Turn]) -> list[list[Turn]]:
    """Split turns into units that must never be separated.

    An assistant turn with tool calls and the tool turns that answer it form one unit; so
    does a run of tool-calling assistant turns whose calls are still open (parallel calls
    some providers send as several messages) with all their results. Every other turn is
    a unit of its own. A tool turn whose call is not open before it (its assistant turn is
    not in ``turns``, or it was answered already) forms a unit of its own.

    Example:
        >>> a = Turn(role="assistant", tool_calls=(ToolCall("f", {}, "c1"),))
        >>> b = Turn(role="assistant", tool_calls=(ToolCall("g", {}, "c2"),))
        >>> ra = Turn(role="tool", text="1", tool_call_id="c1")
        >>> rb = Turn(role="tool", text="2", tool_call_id="c2")
        >>> [len(g) for g in group_tool_calls([Turn(role="user", text="q"), a, b, ra, rb])]
        [1, 4]
    """
    groups: list[list[Turn]] = []
    open_calls: set[str] = set()
    calling = False  # the current group starts with a tool-calling assistant turn
    for turn in turns:
        if calling and turn.role == "tool":
            if turn.tool_call_id is None or turn.tool_call_id in open_calls:
                groups[-1].append(turn)
                open_calls.discard(turn.tool_call_id or "")
                continue
        elif calling and open_calls and turn.role == "assistant" and turn.has_tool_calls:
            groups[-1].append(turn)
            open_calls |= {c.id for c in turn.tool_calls if c.id is not None}
            continue
        groups.append([turn])
        calling = turn.role == "assistant" and turn.has_tool_calls
        open_calls = {c.id for c in turn.tool_calls if c.id is not None}
    return groups


def turn_list(turns: Turn | Sequence[Turn]) -> list[Turn]:
    """One turn or several as a list, each checked to be a :class:`Turn`.

    Raises:
        InvalidInputError: For anything but a Turn or an iterable of Turns (a str, None,
            a dict...), naming the value.
    """
    if isinstance(turns, Turn):
        return [turns]
    if isinstance(turns, str | bytes | Mapping) or not isinstance(turns, Iterable):
        raise InvalidInputError.for_value("turns", turns, "must be a Turn or a sequence of Turns")
    items = list(turns)
    for i, item in enumerate(items):
        if not isinstance(item, Turn):
            raise InvalidInputError.for_value(f"turns[{i}]", item, "must be a Turn")
    return items
