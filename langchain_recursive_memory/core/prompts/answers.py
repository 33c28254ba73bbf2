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
from ..retrieval.lexical import tokenize

__all__ = ["UNGROUNDED_TOKENS", "check_grounded", "clean_summary", "json_values", "strip_reasoning"]

UNGROUNDED_TOKENS = 4
"""A summary with at least this many distinct content words, none of them in what it
summarizes, is not a summary of it (an error text, another conversation); a shorter one
(``"Summary of it all."``) cannot be judged and passes."""

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


def check_grounded(summary: str, sources: str) -> str:
    """``summary``, checked to share content with ``sources``.

    ``sources`` is what the summary folds: the messages and the previous summary.

    Raises:
        ModelOutputError: When the summary has :data:`UNGROUNDED_TOKENS` or more distinct
            content words and none of them appears in ``sources`` (a provider's error text
            answered instead of raised, say): the fold fails and is retried, and the
            previous summary is kept.
    """
    words = set(tokenize(summary))
    if len(words) >= UNGROUNDED_TOKENS and not words & set(tokenize(sources)):
        raise ModelOutputError(
            f"the summary shares no content with the folded messages: {summary[:120]!r}"
        )
    return summary
