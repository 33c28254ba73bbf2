r"""What every parser of model answers does first: drop reasoning, wrappers and chatter.

Real models wrap what was asked for: reasoning blocks (closed, opened by the chat template
so that only ``</think>`` appears, or cut off by the output limit so that ``<think>``
never closes), prefaces (``"Here is the updated summary:"``, ``"**Updated Summary:**"``),
code fences, closing chatter (``"Let me know if..."``), and refusals
(``"I'm sorry, but I can't help with that."``). The helpers here remove or detect them;
``tests/data/model_answers/`` holds the answers they were written against.

Example:
    >>> from langchain_recursive_memory.core.prompts.answers import clean_summary, strip_reasoning
    >>> strip_reasoning("<think>hmm</think>The answer.")
    'The answer.'
    >>> strip_reasoning("the template opened the block</think>\n\nThe answer.").strip()
    'The answer.'
    >>> clean_summary("**Updated Summary:**\n\nAda lives in Oslo.")
    'Ada lives in Oslo.'
"""

from __future__ import annotations

import re

from ..errors import ModelOutputError
from ..retrieval.lexical import tokenize
from .json_text import json_values

__all__ = [
    "MIN_JUDGED_TERMS",
    "MIN_KEPT_SHARE",
    "REFUSAL_WORDS",
    "SAYS_NONE_WORDS",
    "UNGROUNDED_TOKENS",
    "check_grounded",
    "check_kept",
    "clean_summary",
    "is_refusal",
    "json_values",
    "parse_summary",
    "says_none",
    "strip_reasoning",
    "unfence",
]

UNGROUNDED_TOKENS = 4
"""A summary with at least this many distinct content words, none of them in what it
summarizes, is not a summary of it (an error text, another conversation); a shorter one
(``"Summary of it all."``) cannot be judged and passes."""
REFUSAL_WORDS = 40
"""Longest answer read as a refusal when it opens like one (``"I'm sorry, but..."``);
tuned on the refusals of ``tests/data/model_answers/summary.jsonl``."""
SAYS_NONE_WORDS = 16
"""Longest answer read as "nothing" when it says so (``"No new facts."``, ``"None of the
turns are relevant."``); tuned on ``tests/data/model_answers/``."""
MIN_KEPT_SHARE = 0.3
"""A new summary must keep at least this share of the previous summary's names and
numbers, or it lost the previous summary (it summarized only the new messages); tuned on
``tests/data/model_answers/summary.jsonl`` (faithful updates keep 0.6-1.0)."""
MIN_JUDGED_TERMS = 8
"""A previous summary with fewer distinct names and numbers is not judged for loss."""
PREFACE_WORDS = 30
"""Longest first paragraph removed as a preface (``"I'll update the summary..."``)."""

_REASONING_TAGS = r"think|thinking|reasoning|reflection"
_THINK_RE = re.compile(rf"<({_REASONING_TAGS})>.*?</\1\s*>", re.S | re.IGNORECASE)
_CLOSE_RE = re.compile(rf"</(?:{_REASONING_TAGS})\s*>", re.IGNORECASE)
_OPEN_RE = re.compile(rf"<(?:{_REASONING_TAGS})>", re.IGNORECASE)
_TAG_RE = re.compile(r"^\s*<summary>\s*|\s*</summary>\s*$", re.IGNORECASE)
_FENCE_RE = re.compile(r"^\s*```[\w-]*[ \t]*\n(.*?)\n?```\s*$", re.S)
_MARKUP = r"[#*_>\s]*"
_LABEL_RE = re.compile(
    rf"^{_MARKUP}(?:the\s+)?(?:updated|running|shortened|revised|new|current|concise|final)?"
    rf"[ \t]*summary(?:\s+of\s+the\s+conversation)?(?:[ \t]*\([^)\n]*\))?[ \t]*[*_]*"
    r"(?:[ \t]*[:\-\u2013][ \t]*[*_]*\s*|[ \t]*\n\s*|[ \t]*$)",
    re.IGNORECASE,
)
_PREFACE_RE = re.compile(
    rf"^{_MARKUP}(?:(?:sure|certainly|okay|ok|of course|absolutely|alright)[!,.]?\s*)?"
    r"(?:here(?:'s| is| are)|below is|this is|i(?:'ve| have)\s+\w+|i(?:'ll| will)\s+\w+|"
    r"let me\s+\w+)\b[^\n]*",
    re.IGNORECASE,
)
_CHATTER_RE = re.compile(
    r"^\s*[(*_]*(?:let me know|i hope|feel free|hope this|if you(?:'d| would) like|"
    r"word count|token count|\(?\d+\s+(?:words|tokens)\)?)",
    re.IGNORECASE,
)
_REFUSAL_RE = re.compile(
    r"^[\W_]*(?:i'?m sorry|i am sorry|sorry\b|i apologi[sz]e|unfortunately,? i|"
    r"i (?:can(?:no|')t|am unable|'m unable|am not able|'m not able|won'?t)|as an ai\b)",
    re.IGNORECASE,
)
_NONE_RE = re.compile(
    r"^[\W_]*(?:none|nothing|no\b|n/?a\b|there (?:are|is|were) no\b|i found no\b|"
    r"(?:the )?(?:new )?messages? (?:contain|have|hold)s? no\b)",
    re.IGNORECASE,
)
_KEY_TERM_RE = re.compile(r"\b(?:[A-Z][\w'\u2019-]*|\w*\d[\w/:.-]*)")


def strip_reasoning(answer: str) -> str:
    """``answer`` without its reasoning (``<think>``, ``<thinking>``, ``<reasoning>``...).

    Closed blocks are removed; everything up to a lone closing tag is reasoning (the chat
    template opened the block); everything after an opening tag that never closes is
    reasoning cut off by the output limit.
    """
    text = _THINK_RE.sub("", answer)
    closes = list(_CLOSE_RE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    opened = _OPEN_RE.search(text)
    if opened:
        text = text[: opened.start()]
    return text


def unfence(text: str) -> str:
    """The inside of a code fence that is the whole of ``text`` (else ``text``)."""
    match = _FENCE_RE.match(text)
    return match.group(1).strip() if match else text


def is_refusal(text: str) -> bool:
    """Whether ``text`` is a short refusal (``"I'm sorry, but I can't help with that."``)."""
    return bool(_REFUSAL_RE.match(text)) and len(text.split()) <= REFUSAL_WORDS


def says_none(text: str) -> bool:
    """Whether ``text`` is a short "nothing" (``"No new facts."``, ``"None."``, ``"N/A"``)."""
    return bool(_NONE_RE.match(text.strip())) and len(text.split()) <= SAYS_NONE_WORDS


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def _without_wrapping(text: str) -> str:
    """``text`` without a preface paragraph or label, a fence, and closing chatter."""
    parts = _paragraphs(text)
    if len(parts) > 1 and not _LABEL_RE.match(parts[0]):
        first = parts[0]
        if (
            _PREFACE_RE.match(first)
            and len(first.split()) <= PREFACE_WORDS
            and (first.rstrip("*_ ").endswith(":") or "summar" in first.lower())
        ):
            parts = parts[1:]
    while len(parts) > 1 and _CHATTER_RE.match(parts[-1]):
        parts = parts[:-1]
    text = unfence("\n\n".join(parts))
    lines = text.split("\n")
    if len(lines) > 1 and _PREFACE_RE.match(lines[0]) and lines[0].rstrip("*_ ").endswith(":"):
        text = "\n".join(lines[1:]).strip()  # "Here's the updated summary:" on its own line
    return _LABEL_RE.sub("", text, count=1).strip()


def clean_summary(answer: object) -> str:
    """The summary in a model answer: reasoning, tags, prefaces, fences and chatter removed.

    Raises:
        ModelOutputError: When the answer is not a string, is a refusal, or is empty after
            cleaning (reasoning only, or cut off inside its reasoning).
    """
    if not isinstance(answer, str):
        raise ModelOutputError(f"the summarizer returned {type(answer).__name__}, not a str")
    text = _TAG_RE.sub("", strip_reasoning(answer).strip())
    for _ in range(2):  # a fenced answer may carry its own preface inside
        text = _TAG_RE.sub("", _without_wrapping(text))
    if not text:
        raise ModelOutputError(f"the summarizer returned an empty summary: {answer[:80]!r}")
    if is_refusal(text):
        raise ModelOutputError(f"the summarizer refused: {text[:80]!r}")
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


def _key_terms(text: str) -> set[str]:
    """The names and numbers of ``text`` (capitalised words and words with digits), stemmed."""
    return set(tokenize(" ".join(_KEY_TERM_RE.findall(text))))


def check_kept(summary: str, previous: str | None) -> str:
    """``summary``, checked to keep the previous summary's names and numbers.

    Raises:
        ModelOutputError: When ``previous`` has :data:`MIN_JUDGED_TERMS` or more distinct
            names and numbers and ``summary`` keeps fewer than :data:`MIN_KEPT_SHARE` of
            them: the model summarized the new messages only, and the previous summary is
            kept.

    Example:
        >>> before = "Ada (34) is a nurse in Oslo; Bob flies for Widerøe since 2019; Miso is 2."
        >>> check_kept("Ada (34), a nurse in Oslo, and Bob (Widerøe) adopted Miso.", before)
        'Ada (34), a nurse in Oslo, and Bob (Widerøe) adopted Miso.'
        >>> try:
        ...     check_kept("Ada and Bob booked Lisbon for June.", before)
        ... except ModelOutputError as exc:
        ...     print(str(exc)[:60])
        the summary lost 75% of the previous summary's names and num
    """
    terms = _key_terms(previous or "")
    if len(terms) < MIN_JUDGED_TERMS:
        return summary
    kept = len(terms & set(tokenize(summary))) / len(terms)
    if kept < MIN_KEPT_SHARE:
        raise ModelOutputError(
            f"the summary lost {1 - kept:.0%} of the previous summary's names and numbers "
            f"(it kept {kept:.0%}): {summary[:120]!r}"
        )
    return summary


def parse_summary(answer: object, *, previous: str | None, sources: str) -> str:
    """The new summary of a fold's answer: cleaned, grounded, and keeping the previous one.

    Raises:
        ModelOutputError: See :func:`clean_summary`, :func:`check_grounded` and
            :func:`check_kept`; the fold then keeps the previous summary.
    """
    return check_kept(check_grounded(clean_summary(answer), sources), previous)
