"""Scripted stand-ins for LLMs, shared by the tests (offline, deterministic)."""

from __future__ import annotations

import asyncio
import json
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


_NUMBERED_RE = re.compile(r"^\[(\d+)\] (?:\[[^\]]*\] )?(\w+)(?: \([^)]*\))?: (.*)$")
_STATEMENT_RE = re.compile(r"\b[Mm]y ([a-z ]+?) (?:is|are) ([^.?!]+?)(?= and [Mm]y |[.?!]|$)")


class FactModel(KeywordSummarizer):
    """Answers combined summary + facts prompts (and separate facts prompts).

    Facts: every "my <attribute> is <value>" in the numbered messages becomes
    ``{"key": "user/<attribute>", "fact": "The user's <attribute> is <value>."}``.
    The summary is *forgetful*: it only mentions the newest chunk, like a summary that has
    drifted, so anything older must come back through facts or recall.
    ``malformed`` answers start out broken for that many calls.
    """

    def __init__(self, malformed: int = 0, mode: str = "combined") -> None:
        super().__init__(max_words=40)
        self.malformed = malformed
        self.mode = mode

    def _facts(self, prompt: str) -> list[str]:
        lines = []
        for line in prompt_messages(prompt).splitlines():
            match = _NUMBERED_RE.match(line)
            if not match:
                continue
            number, _role, text = match.groups()
            for attr, value in _STATEMENT_RE.findall(text):
                attr = attr.strip()
                key = attr.replace(" ", "_")
                fact = f"The user's {attr} is {value}."
                lines.append(
                    json.dumps(
                        {
                            "key": f"user/{key}",
                            "subject": "user",
                            "fact": fact,
                            "time": "",
                            "sources": [int(number)],
                        }
                    )
                )
        return lines

    def _answer(self, prompt: str) -> str:
        with self._lock:
            self.calls += 1
            self.prompts.append(prompt)
            broken = self.malformed > 0
            if broken:
                self.malformed -= 1
        if prompt.startswith("Extract the atomic facts"):
            if broken:
                return "<facts>\nthis is not json\n</facts>"
            return "<facts>\n" + "\n".join(self._facts(prompt)) + "\n</facts>"
        words = _FACT_RE.findall(prompt_messages(prompt))
        summary = "Recently: " + " ".join(dict.fromkeys(words[-30:])) + "."
        if "<facts></facts>" not in prompt:  # not asked for facts
            return summary
        if broken:
            return f"<summary>{summary}</summary>\n<facts>\n{{not json at all\n</facts>"
        return (
            f"<summary>{summary}</summary>\n<facts>\n"
            + "\n".join(self._facts(prompt))
            + "\n</facts>"
        )


class BagOfWordsEmbedder:
    """A tiny deterministic, *semantic-ish* embedder: hashed bag of lowercase words.

    Texts that share words get similar vectors (unlike DeterministicFakeEmbedding), which
    is enough to test dense ranking and fusion offline.
    """

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.calls = 0

    def _vec(self, text: str) -> list[float]:
        import hashlib
        import math

        v = [0.0] * self.dim
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            h = int(hashlib.md5(word.encode()).hexdigest(), 16)
            v[h % self.dim] += 1.0
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / norm for x in v]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return self._vec(text)
