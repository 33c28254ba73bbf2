"""Exact, offline token counting with tiktoken.

tiktoken downloads its encoding files on first use, which fails on an offline machine and
hangs on a stalled network. This module never lets it: the ``cl100k_base`` and
``o200k_base`` files ship inside this package (gzipped, checked against tiktoken's official
SHA-256 hashes on load), and the :class:`tiktoken.Encoding` is built from them directly.
No network call is ever made.

The encoding is chosen from the model name: ``o200k_base`` for the GPT-4o, GPT-4.1,
GPT-4.5, GPT-5, gpt-oss and o-series families, ``cl100k_base`` for everything else
(including non-OpenAI models, for which it is a close, documented approximation). Pass
``encoding=`` to override.

Message overhead follows OpenAI's published accounting for chat models: 3 tokens per
message, 1 more when a ``name`` is set, and 3 per request for the reply priming. Tool calls
count their name and JSON arguments plus 3; a media block (image, audio, file) counts a
fixed ``media_tokens`` (default 765, a 1024x1024 high-detail image) instead of 0.

Example:
    >>> from langchain_recursive_memory.core import TokenCounter, Turn
    >>> counter = TokenCounter("gpt-4o")
    >>> counter.encoding_name
    'o200k_base'
    >>> counter.count_text("hello world")
    2
    >>> counter.count_turn(Turn(role="user", text="hello world"))
    6
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import json
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from functools import cache, lru_cache
from importlib import resources
from typing import Any

import tiktoken

from .errors import ConfigurationError, TokenizerError
from .turn import MEDIA_BLOCK_TYPES, Turn

__all__ = ["TokenCounter", "encoding_for_model", "encoding_name_for_model", "get_encoding"]

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING_TOKENS = 3
TOKENS_PER_TOOL_CALL = 3
DEFAULT_MEDIA_TOKENS = 765

# Tokens of tool definitions, as OpenAI counts them (openai-cookbook, "How to count tokens
# with tiktoken", num_tokens_for_tools, measured there against the API's prompt_tokens).
FUNCTION_START_O200K = 7
FUNCTION_START = 10
PROPERTIES_START = 3
PROPERTY_START = 3
ENUM_START = -3
ENUM_ITEM = 3
FUNCTIONS_END = 12
_NESTED_SCHEMA_KEYS = frozenset({"properties", "items", "anyOf", "oneOf", "allOf", "required"})

COUNT_CACHE = 65536
"""Distinct long texts whose counts a counter memoises."""
CACHED_TEXT_CHARS = 64
"""Shorter texts are counted each time (encoding them costs less than hashing)."""
CUT_SEARCH_SHARE = 0.25
"""A cut looks for a sentence or word end within the last quarter of the allowed text."""

_CALL_BLOCK_TYPES = frozenset({"tool_call", "tool_use", "function_call", "tool-call"})

_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"

# Constructor arguments of tiktoken_ext.openai_public, with the mergeable ranks read from
# the files bundled here instead of downloaded. tests/test_tokenizer.py checks that the
# resulting encodings tokenize exactly like tiktoken's own.
_ENCODINGS: dict[str, dict[str, Any]] = {
    "cl100k_base": {
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "pat_str": (
            r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""  # noqa: E501
        ),
        "special_tokens": {
            _ENDOFTEXT: 100257,
            _FIM_PREFIX: 100258,
            _FIM_MIDDLE: 100259,
            _FIM_SUFFIX: 100260,
            _ENDOFPROMPT: 100276,
        },
    },
    "o200k_base": {
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "pat_str": "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        "special_tokens": {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    },
}

# Model families tokenized with o200k_base. Matched against the start of the model name
# after any "provider:" or "provider/" prefix.
_O200K_PATTERN = re.compile(
    r"^(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o1|o3|o4|codex-)", re.IGNORECASE
)

_load_lock = threading.Lock()


def _line(*parts: Any) -> str:
    """``a:b:c`` of the parts given, a trailing full stop of the last one dropped."""
    text = ":".join(str(p) if p is not None else "" for p in parts)
    return text[:-1] if text.endswith(".") else text


def encoding_name_for_model(model: str) -> str:
    """Return the bundled encoding to count tokens for ``model``.

    ``o200k_base`` for the GPT-4o / GPT-4.1 / GPT-4.5 / GPT-5 / gpt-oss / o-series family,
    ``cl100k_base`` otherwise. A ``provider:`` or ``provider/`` prefix is ignored.

    Example:
        >>> encoding_name_for_model("openai:gpt-4o-mini")
        'o200k_base'
        >>> encoding_name_for_model("anthropic:claude-sonnet-4-5")
        'cl100k_base'
    """
    name = model.strip()
    for sep in (":", "/"):
        if sep in name:
            name = name.rsplit(sep, 1)[-1]
    if _O200K_PATTERN.match(name):
        return "o200k_base"
    return "cl100k_base"


@cache
def _load(name: str) -> tiktoken.Encoding:
    spec = _ENCODINGS[name]
    try:
        ref = resources.files(__package__).joinpath("_data").joinpath(f"{name}.tiktoken.gz")
        raw = gzip.decompress(ref.read_bytes())
    except (OSError, EOFError) as exc:  # pragma: no cover - broken installation
        raise TokenizerError(f"cannot read the bundled {name} encoding file: {exc}") from exc
    if hashlib.sha256(raw).hexdigest() != spec["sha256"]:  # pragma: no cover - corrupted
        raise TokenizerError(f"the bundled {name} encoding file does not match its hash")
    # binascii's decoder directly: base64.b64decode's wrapper doubles the time of loading
    # o200k_base's 200,000 ranks (a fresh process's first count).
    decode = binascii.a2b_base64
    ranks = {
        decode(token): int(rank)
        for token, rank in (line.split() for line in raw.splitlines() if line)
    }
    return tiktoken.Encoding(
        name=name,
        pat_str=spec["pat_str"],
        mergeable_ranks=ranks,
        special_tokens=spec["special_tokens"],
    )


def get_encoding(name: str) -> tiktoken.Encoding:
    """Return the bundled tiktoken encoding ``name`` (loaded once, never downloaded).

    Args:
        name: ``"cl100k_base"`` or ``"o200k_base"``.

    Raises:
        TokenizerError: For any other name.
    """
    if name not in _ENCODINGS:
        raise TokenizerError(
            f"encoding={name!r}: not bundled; choose one of {sorted(_ENCODINGS)} "
            "or pass your own counter"
        )
    with _load_lock:
        return _load(name)


def encoding_for_model(model: str) -> tiktoken.Encoding:
    """Return the bundled encoding for ``model`` (see :func:`encoding_name_for_model`)."""
    return get_encoding(encoding_name_for_model(model))


class TokenCounter:
    """Counts tokens of text, turns and whole contexts, exactly and offline.

    Args:
        model: A model name (``"gpt-4o-mini"``, ``"openai:gpt-4.1"``, ``"claude-..."``);
            chooses the encoding. Defaults to ``"gpt-4o"``.
        encoding: ``"o200k_base"`` or ``"cl100k_base"``, overriding the choice by model.
        media_tokens: Tokens counted for each image/audio/file block (default 765).

    Counts of long texts are cached (a bounded LRU keyed by the text), so recounting the
    same window on every turn costs a dictionary lookup.
    """

    def __init__(
        self,
        model: str = "gpt-4o",
        *,
        encoding: str | None = None,
        media_tokens: int = DEFAULT_MEDIA_TOKENS,
    ) -> None:
        if media_tokens < 0:
            raise ConfigurationError.for_value("media_tokens", media_tokens, "must be >= 0")
        self.model = model
        self.encoding_name = encoding or encoding_name_for_model(model)
        self._encoding = get_encoding(self.encoding_name)
        self.media_tokens = media_tokens
        self._cached_count = lru_cache(maxsize=COUNT_CACHE)(self._count_uncached)

    def __repr__(self) -> str:
        return f"TokenCounter(model={self.model!r}, encoding={self.encoding_name!r})"

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The underlying :class:`tiktoken.Encoding`."""
        return self._encoding

    def _count_uncached(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))

    def count_text(self, text: str) -> int:
        """Return the number of tokens of ``text`` (special tokens counted as text)."""
        if not text:
            return 0
        if len(text) < CACHED_TEXT_CHARS:
            return self._count_uncached(text)
        return self._cached_count(text)

    def truncate(self, text: str, max_tokens: int) -> str:
        """Return the longest prefix of ``text`` with at most ``max_tokens`` tokens.

        The cut prefers the end of a sentence, then of a word, within the last quarter of the
        allowed tokens, so the result reads as a complete thought where possible.
        """
        if max_tokens <= 0:
            return ""
        tokens = self._encoding.encode(text, disallowed_special=())
        if len(tokens) <= max_tokens:
            return text
        head = self._encoding.decode(tokens[:max_tokens])
        # decode may end in a partial multi-byte character shown as U+FFFD: drop it.
        head = head.rstrip("\ufffd")
        floor = int(len(head) * (1 - CUT_SEARCH_SHARE))
        for marks in ((". ", "! ", "? ", ".\n", "!\n", "?\n"), (" ", "\n")):
            cut = max(head.rfind(m) for m in marks)
            if cut >= floor:
                head = head[: cut + 1]
                break
        head = head.rstrip()
        while head and self.count_text(head) > max_tokens:  # pragma: no cover - defensive
            head = head[:-1]
        return head

    def _count_value(self, value: Any) -> int:
        """Tokens of a content block: text as text, media at ``media_tokens``, anywhere.

        Media is recognised by its block ``type`` (or LlamaIndex's ``block_type``) at any
        depth (an image inside a tool result's content...); every other string, however
        long (a reasoning block, a web page), is counted exactly as text.
        """
        if isinstance(value, str):
            return self.count_text(value)
        if isinstance(value, Mapping):
            kind = value.get("type", value.get("block_type"))
            if kind in MEDIA_BLOCK_TYPES:
                return self.media_tokens
            text = value.get("text")
            if isinstance(text, str) and set(value) <= {"type", "text", "block_type"}:
                return self.count_text(text)
            total = 0
            for key, item in value.items():
                total += self.count_text(str(key))
                total += self._count_value(item)
            return total
        if isinstance(value, list | tuple):
            return sum(self._count_value(v) for v in value)
        return self.count_text(json.dumps(value, ensure_ascii=False))

    def count_block(self, block: Any) -> int:
        """Return the tokens of one content block, as :meth:`count_turn` counts it.

        Text-bearing blocks (text, reasoning, tool results) count their text; media
        blocks count ``media_tokens``.
        """
        return self._count_value(block)

    def count_turn(self, turn: Turn) -> int:
        """Return the tokens ``turn`` costs as one message of a chat request.

        Includes the per-message overhead, the name, tool calls and content blocks (media
        blocks at ``media_tokens`` each); excludes the per-request reply priming.
        """
        total = TOKENS_PER_MESSAGE + self.count_text(turn.role)
        if turn.blocks is not None:
            blocks = turn.blocks
            if turn.tool_calls:  # the calls are counted below, once
                blocks = tuple(b for b in blocks if b.get("type") not in _CALL_BLOCK_TYPES)
            total += sum(self._count_value(b) for b in blocks)
        else:
            total += self.count_text(turn.text)
        if turn.name:
            total += TOKENS_PER_NAME + self.count_text(turn.name)
        for call in turn.tool_calls:
            total += TOKENS_PER_TOOL_CALL + self.count_text(call.name)
            total += self.count_text(json.dumps(dict(call.args), ensure_ascii=False))
        if turn.tool_call_id:
            total += self.count_text(turn.tool_call_id)
        return total

    def count_tools(self, tools: Sequence[Mapping[str, Any]], *, as_sent: bool = True) -> int:
        """Return the tokens tool (function) definitions add to a request.

        ``tools`` are the definitions as the provider is sent them (OpenAI-style
        ``{"type": "function", "function": {...}}``, the bare ``{"name", "description",
        "parameters"}``, Anthropic's ``{"name", "description", "input_schema"}``).

        By default (``as_sent=True``) they are counted as the JSON the provider receives:
        the conservative count (providers other than OpenAI count at least that much).
        ``as_sent=False`` counts them the way OpenAI counts function definitions (the
        openai-cookbook's ``num_tokens_for_tools``): per function ``name:description``
        plus a fixed start (7 tokens for the o200k models, 10 for cl100k), per property
        ``key:type:description`` plus 3 (enum values 3 each, the list -3), 3 per
        properties block and 12 per request; nested object and array schemas, which that
        formula leaves out, are counted as their JSON text. That count is smaller: fine
        for OpenAI, an undercount for other providers.

        Example:
            >>> tool = {"name": "add", "description": "Add two numbers.",
            ...         "parameters": {"type": "object", "properties": {
            ...             "a": {"type": "integer"}, "b": {"type": "integer"}}}}
            >>> counter = TokenCounter("gpt-4o")
            >>> counter.count_tools([tool]), counter.count_tools([tool], as_sent=False)
            (47, 40)
        """
        if not tools:
            return 0
        if as_sent:
            return self.count_text(json.dumps(list(tools), ensure_ascii=False, default=str))
        start = FUNCTION_START_O200K if self.encoding_name == "o200k_base" else FUNCTION_START
        total = FUNCTIONS_END
        for tool in tools:
            function = tool.get("function", tool)
            total += start + self.count_text(
                _line(function.get("name"), function.get("description"))
            )
            properties = (function.get("parameters") or {}).get("properties") or {}
            if properties:
                total += PROPERTIES_START
            for key, schema in properties.items():
                total += self._count_property(
                    str(key), schema if isinstance(schema, Mapping) else {}
                )
        return total

    def _count_property(self, key: str, schema: Mapping[str, Any]) -> int:
        total = PROPERTY_START + self.count_text(
            _line(key, schema.get("type"), schema.get("description"))
        )
        enum = schema.get("enum")
        if isinstance(enum, list | tuple):
            total += ENUM_START + sum(ENUM_ITEM + self.count_text(str(v)) for v in enum)
        nested = {k: v for k, v in schema.items() if k in _NESTED_SCHEMA_KEYS}
        if nested:
            total += self.count_text(json.dumps(nested, ensure_ascii=False, default=str))
        return total

    def count_turns(self, turns: Iterable[Turn]) -> int:
        """Return the tokens of a whole request made of ``turns`` (with reply priming)."""
        return REPLY_PRIMING_TOKENS + sum(self.count_turn(t) for t in turns)

    def message_overhead(self, role: str) -> int:
        """Return the tokens a message of ``role`` costs beyond its content."""
        return TOKENS_PER_MESSAGE + self.count_text(role)
