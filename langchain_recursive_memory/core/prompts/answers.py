"""What every parser of model answers does first: drop reasoning, find the JSON in it.

Example:
    >>> from langchain_recursive_memory.core.prompts.answers import json_values, strip_reasoning
    >>> strip_reasoning("<think>hmm</think>The answer.")
    'The answer.'
    >>> json_values('x {"a": 1} y [2]')
    [{'a': 1}, [2]]
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import ModelOutputError

__all__ = ["clean_summary", "json_values", "strip_reasoning"]

_THINK_RE = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.IGNORECASE)
_TAG_RE = re.compile(r"^\s*<summary>\s*|\s*</summary>\s*$", re.IGNORECASE)
_PREAMBLE_RE = re.compile(
    r"^\s*(?:#+\s*)?(?:updated\s+|running\s+|shortened\s+)?summary\s*:\s*", re.IGNORECASE
)


def strip_reasoning(answer: str) -> str:
    """``answer`` without the ``<think>``/``<thinking>``/``<reasoning>`` blocks models print."""
    return _THINK_RE.sub("", answer)


def json_values(body: str) -> list[Any]:
    """Every JSON value in ``body``: JSON lines, pretty-printed objects, arrays, or a mix."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    pos = 0
    while True:
        starts = [i for i in (body.find("{", pos), body.find("[", pos)) if i >= 0]
        if not starts:
            return values
        start = min(starts)
        try:
            value, end = decoder.raw_decode(body, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        values.append(value)
        pos = end


def clean_summary(answer: object) -> str:
    """Strip reasoning, tags and a ``Summary:`` preamble from a model answer.

    Raises:
        ModelOutputError: When the answer is not a string or is empty after cleaning.
    """
    if not isinstance(answer, str):
        raise ModelOutputError(f"the summarizer returned {type(answer).__name__}, not a str")
    text = strip_reasoning(answer).strip()  # reasoning some models print first
    text = _TAG_RE.sub("", text)
    text = _PREAMBLE_RE.sub("", text, count=1).strip()
    if not text:
        raise ModelOutputError(f"the summarizer returned an empty summary: {answer[:80]!r}")
    return text
