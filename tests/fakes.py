"""Scripted stand-ins for LLMs, shared by the tests (offline, deterministic)."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable

_MESSAGES_RE = re.compile(r"<messages>\n(.*?)\n</messages>", re.S)
_SUMMARY_RE = re.compile(r"<summary>\n(.*?)\n</summary>", re.S)
_FACT_RE = re.compile(r"\b(?:[A-Z][a-z]+|\d[\d.,:/-]*)\b")


def prompt_messages(prompt: str) -> str:
    match = _MESSAGES_RE.search(prompt)
    return match.group(1) if match else ""


def prompt_summary(prompt: str) -> str:
    match = _SUMMARY_RE.search(prompt)
    return match.group(1) if match else ""


class KeywordSummarizer:
    """A summarizer that keeps the capitalized words and numbers it is shown.

    Its answer is ``previous summary`` + ``Mentioned: <names and numbers of the new
    messages>``, shortened to its most recent ``max_words`` words, so it behaves like a
    model that follows the length request. Counts its calls.
    """

    def __init__(self, max_words: int = 120) -> None:
        self.max_words = max_words
        self.calls = 0
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def _answer(self, prompt: str) -> str:
        with self._lock:
            self.calls += 1
            self.prompts.append(prompt)
        if prompt.startswith("Shorten"):
            words = prompt_summary(prompt).split()
            return " ".join(words[-self.max_words :])
        previous = prompt_summary(prompt)
        if previous.startswith("(empty"):
            previous = ""
        facts = _FACT_RE.findall(prompt_messages(prompt))
        text = f"{previous} Mentioned: {' '.join(dict.fromkeys(facts))}.".strip()
        return " ".join(text.split()[-self.max_words :])

    def complete(self, prompt: str) -> str:
        return self._answer(prompt)

    async def acomplete(self, prompt: str) -> str:
        await asyncio.sleep(0)
        return self._answer(prompt)


class VerboseModel(KeywordSummarizer):
    """Ignores the requested length: always answers ``words`` words."""

    def __init__(self, words: int = 2000) -> None:
        super().__init__()
        self.words = words

    def _answer(self, prompt: str) -> str:
        with self._lock:
            self.calls += 1
        return " ".join(f"Fact{i} is {i}." for i in range(self.words // 3))


class FailingModel(KeywordSummarizer):
    """Fails (raises, hangs or answers garbage) while ``failing`` is True."""

    def __init__(self, mode: str = "raise", hang_seconds: float = 5.0) -> None:
        super().__init__()
        self.mode = mode
        self.failing = True
        self.failed_calls = 0
        self.hang_seconds = hang_seconds

    def _answer(self, prompt: str) -> str:
        if not self.failing:
            return super()._answer(prompt)
        with self._lock:
            self.failed_calls += 1
        if self.mode == "raise":
            raise ConnectionError("provider unavailable (scripted)")
        if self.mode == "empty":
            return "   "
        if self.mode == "hang":
            time.sleep(self.hang_seconds)
            return "late answer"
        raise AssertionError(self.mode)

    async def acomplete(self, prompt: str) -> str:
        if self.failing and self.mode == "hang":
            await asyncio.sleep(self.hang_seconds)
        return self._answer(prompt)


class CallbackModel(KeywordSummarizer):
    """Runs ``before(prompt)`` before answering (to interleave events in tests)."""

    def __init__(self, before: Callable[[str], None]) -> None:
        super().__init__()
        self.before = before

    def _answer(self, prompt: str) -> str:
        self.before(prompt)
        return super()._answer(prompt)
