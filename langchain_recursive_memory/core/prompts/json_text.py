"""JSON as models write it: found anywhere in an answer, read leniently. Pure logic.

Models asked for JSON answer JSON lines, pretty-printed objects, one array, fenced blocks,
prose around them, and the usual slips: single quotes, trailing commas, Python's
``None``/``True``/``False``, ``//`` comments, unquoted keys, and an answer cut off by the
output limit. :func:`json_values` returns every JSON value it can read:

* a value that parses (strictly, or after repairing those slips) is returned whole;
* a balanced value that still does not parse is skipped whole (its insides are not
  mistaken for values of their own);
* a value that never closes (the answer was cut off) is entered: the complete values
  inside it are returned, so a truncated array still yields its complete items.

Example:
    >>> from langchain_recursive_memory.core.prompts.json_text import json_values
    >>> json_values("x {'a': None, 'b': [1, 2,],} y [3]")
    [{'a': None, 'b': [1, 2]}, [3]]
    >>> json_values('[{"turn": 1}, {"turn": 2}, {"turn": 3, "keywo')
    [{'turn': 1}, {'turn': 2}]
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["json_values", "loads_lenient"]

_DECODER = json.JSONDecoder(strict=False)  # raw newlines inside strings are common
_OPENERS = {"{": "}", "[": "]"}
_LITERALS = {
    "None": "null",
    "null": "null",
    "True": "true",
    "true": "true",
    "False": "false",
    "false": "false",
    "undefined": "null",
    "NaN": "null",
}
_WORD_RE = re.compile(r"[A-Za-z_][\w-]*")
_SPACE_RE = re.compile(r"\s*")
_FAILED = object()


def _string_end(text: str, start: int) -> int:
    """The index after the string literal opening at ``start`` (or the end of the text)."""
    quote, i = text[start], start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return i + 1
        i += 1
    return len(text)


def _comment_end(text: str, start: int) -> int | None:
    """The index after a ``//`` or ``/* */`` comment opening at ``start``, or None."""
    pair = text[start : start + 2]
    if pair == "//":
        newline = text.find("\n", start)
        return len(text) if newline < 0 else newline
    if pair == "/*":
        close = text.find("*/", start + 2)
        return len(text) if close < 0 else close + 2
    return None


def _closing(text: str, start: int) -> int | None:
    """The index after the bracket that closes the one at ``start``; None if it never does."""
    stack: list[str] = []
    i = start
    while i < len(text):
        ch = text[i]
        if ch in "\"'":
            i = _string_end(text, i)
            continue
        skip = _comment_end(text, i) if ch == "/" else None
        if skip is not None:
            i = skip
            continue
        if ch in _OPENERS:
            stack.append(_OPENERS[ch])
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None  # mismatched: not a value
            if not stack:
                return i + 1
        i += 1
    return None


def _string_json(literal: str) -> str:
    """A string literal (either quote) as a JSON string literal."""
    if literal[0] == '"':
        try:
            _DECODER.decode(literal)
            return literal
        except json.JSONDecodeError:
            pass
    body = literal[1:-1] if len(literal) > 1 and literal[-1] == literal[0] else literal[1:]
    body = body.replace("\\'", "'").replace('\\"', '"')
    return json.dumps(body, ensure_ascii=False)


def _repaired(segment: str) -> str:
    """``segment`` with the common slips of model-written JSON repaired (see the module doc)."""
    out: list[str] = []
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch in "\"'":
            end = _string_end(segment, i)
            out.append(_string_json(segment[i:end]))
            i = end
            continue
        skip = _comment_end(segment, i) if ch == "/" else None
        if skip is not None:
            i = skip
            continue
        word = _WORD_RE.match(segment, i) if ch.isalpha() or ch == "_" else None
        if word is not None:
            after = _SPACE_RE.match(segment, word.end())
            is_key = after is not None and segment[after.end() : after.end() + 1] == ":"
            literal = _LITERALS.get(word.group())
            if is_key:
                out.append(json.dumps(word.group()))
            else:  # a literal, or left as it is (and the value fails)
                out.append(literal if literal is not None else word.group())
            i = word.end()
            continue
        if ch == ",":
            nxt = _SPACE_RE.match(segment, i + 1)
            if nxt is not None and segment[nxt.end() : nxt.end() + 1] in ("}", "]"):
                i += 1  # a trailing comma
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def loads_lenient(segment: str) -> Any:
    """Parse one JSON value strictly, else after :func:`_repaired`.

    Raises:
        ValueError: When the segment is not JSON even after the repairs.

    Example:
        >>> loads_lenient("{sources: [1, 2,], 'time': None}")
        {'sources': [1, 2], 'time': None}
    """
    for text in (segment, None):
        candidate = segment if text is not None else _repaired(segment)
        try:
            value, end = _DECODER.raw_decode(candidate)
        except json.JSONDecodeError:
            continue
        if not candidate[end:].strip():
            return value
    raise ValueError(f"not JSON even after repairs: {segment[:80]!r}")


def _decoded(segment: str) -> Any:
    try:
        return loads_lenient(segment)
    except ValueError:
        return _FAILED


def json_values(body: str) -> list[Any]:
    """Every JSON value in ``body``, in order (see the module doc)."""
    values: list[Any] = []
    pos = 0
    while True:
        starts = [i for i in (body.find("{", pos), body.find("[", pos)) if i >= 0]
        if not starts:
            return values
        start = min(starts)
        end = _closing(body, start)
        if end is None:  # never closes (cut off): read what is complete inside it
            pos = start + 1
            continue
        value = _decoded(body[start:end])
        if value is not _FAILED:
            values.append(value)
        pos = end
