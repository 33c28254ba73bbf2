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


_TURN_LINE_RE = re.compile(r"^\[(\d+)\] (?:\[[^\]]*\] )?([^:]+): (.*)$")
_EVENT_LINE_RE = re.compile(r"^(E\d+) \((\d+) turns\): (.*)$")
_STOP = {
    "the",
    "a",
    "an",
    "what",
    "did",
    "does",
    "do",
    "is",
    "was",
    "who",
    "when",
    "where",
    "how",
    "to",
    "of",
    "and",
    "in",
    "on",
    "my",
    "i",
    "you",
    "about",
    "for",
    "with",
}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP and len(w) > 2}


class HiGMemModel:
    """Scripted LLM for HiGMem: answers analysis, turn-prediction, filter and rewrite prompts.

    Affiliation: a turn joins the candidate event whose summary shares a word with it,
    else a new event titled after its first capitalized word. Prediction and filter keep
    the turns sharing a word with the question. ``delay`` makes each call sleep (to observe
    concurrency); ``broken`` answers that many calls with garbage first.
    """

    def __init__(self, delay: float = 0.0, broken: int = 0) -> None:
        self.calls: dict[str, int] = {"analyse": 0, "predict": 0, "filter": 0, "rewrite": 0}
        self.delay = delay
        self.broken = broken
        self._lock = threading.Lock()
        self.active = 0
        self.max_active = 0

    def _kind(self, prompt: str) -> str:
        if prompt.startswith("You index a conversation"):
            return "analyse"
        if prompt.startswith("An event from a conversation"):
            return "predict"
        if prompt.startswith("A question and candidate turns"):
            return "filter"
        return "rewrite"

    def _answer(self, prompt: str) -> str:
        kind = self._kind(prompt)
        with self._lock:
            self.calls[kind] += 1
            if self.broken > 0:
                self.broken -= 1
                return "I am not going to answer in JSON today."
        if kind == "analyse":
            return self._analyse(prompt)
        if kind in ("predict", "filter"):
            question = re.search(r"Question: (.*)", prompt).group(1)
            block = prompt.split("<turns>\n")[1].split("\n</turns>")[0]
            keep = []
            for line in block.splitlines():
                m = _TURN_LINE_RE.match(line)
                if m and _words(m.group(3)) & _words(question):
                    keep.append(int(m.group(1)))
            return json.dumps(keep)
        return re.search(r"Question: (.*)", prompt).group(1)

    def _analyse(self, prompt: str) -> str:
        events = {}
        block = prompt.split("<events>\n")[1].split("\n</events>")[0]
        for line in block.splitlines():
            m = _EVENT_LINE_RE.match(line)
            if m:
                events[m.group(1)] = (int(m.group(2)), m.group(3))
        turns = prompt.split("<turns>\n")[1].split("\n</turns>")[0]
        lines, touched = [], {}
        for line in turns.splitlines():
            m = _TURN_LINE_RE.match(line)
            if not m:
                continue
            n, speaker, text = int(m.group(1)), m.group(2), m.group(3)
            caps = re.findall(r"\b[A-Z][a-z]+\b", text)
            target = next((e for e, (_, s) in events.items() if _words(s) & _words(text)), None)
            if target is None:  # an event opened earlier in this batch?
                target = next(
                    (
                        e
                        for e, items in touched.items()
                        if e.startswith("NEW")
                        and _words(" ".join(t for _, t in items)) & _words(text)
                    ),
                    None,
                )
            if target is None:
                target = f"NEW:{(caps or ['misc'])[0].lower()}"
            lines.append(
                json.dumps(
                    {
                        "turn": n,
                        "keywords": sorted(_words(text))[:5],
                        "tags": ["chat"],
                        "context": f"{speaker} talks about {', '.join(sorted(_words(text))[:3])}.",
                        "entities": caps,
                        "events": [target],
                    }
                )
            )
            touched.setdefault(target, []).append((n, text))
        for target, items in touched.items():
            if target in events and events[target][0] >= 10:
                continue
            old = events.get(target, (0, ""))[1]
            summary = (old + " " + " ".join(t for _, t in items)).strip()[-300:]
            facts = [{"fact": t, "time": "", "turn": n} for n, t in items if re.search(r"\d", t)]
            lines.append(
                json.dumps(
                    {
                        "event": target,
                        "summary": summary,
                        "keywords": sorted(_words(summary))[:6],
                        "tags": ["chat"],
                        "entities": [],
                        "facts": facts,
                    }
                )
            )
        return "<index>\n" + "\n".join(lines) + "\n</index>"

    def complete(self, prompt: str) -> str:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.delay:
                time.sleep(self.delay)
            return self._answer(prompt)
        finally:
            with self._lock:
                self.active -= 1

    async def acomplete(self, prompt: str) -> str:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            return self._answer(prompt)
        finally:
            with self._lock:
                self.active -= 1


# -- structured output (issue 14): LangChain chat models that do or do not offer it ---------

from typing import Any  # noqa: E402

from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.runnables import RunnableLambda  # noqa: E402

_USAGE = {"input_tokens": 200, "output_tokens": 40, "total_tokens": 240}


def _prompt_text(messages: Any) -> str:
    if isinstance(messages, str):
        return messages
    if isinstance(messages, list) and messages:
        last = messages[-1]
        return str(getattr(last, "content", last))
    return str(getattr(messages, "to_string", lambda: messages)())


def higmem_json(prompt: str) -> dict[str, Any]:
    """HiGMemModel's answer to a HiGMem prompt as the JSON object of its schema."""
    text = HiGMemModel()._answer(prompt)
    if prompt.startswith("You index a conversation"):
        lines = [json.loads(ln) for ln in text.splitlines() if ln.startswith("{")]
        return {
            "turns": [ln for ln in lines if "turn" in ln],
            "events": [ln for ln in lines if "event" in ln],
        }
    return {"turns": json.loads(text)}


class StructuredChatModel(BaseChatModel):
    """A chat model with its own ``with_structured_output`` (like ChatOpenAI's).

    Structured calls answer HiGMem's prompts as schema-shaped JSON (``higmem_json``) with
    the raw message's token usage; text calls answer like :class:`HiGMemModel`. ``asked``
    records ``(kind, method or schema title)`` of every call.
    """

    asked: list[tuple[str, str]] = []  # noqa: RUF012 - one list per instance (pydantic copies)

    @property
    def _llm_type(self) -> str:
        return "structured-fake"

    def _generate(
        self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        prompt = _prompt_text(messages)
        self.asked.append(("text", prompt[:30]))
        message = AIMessage(HiGMemModel()._answer(prompt), usage_metadata=_USAGE)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def with_structured_output(  # type: ignore[override]
        self, schema: Any, *, include_raw: bool = False, method: str | None = None, **kwargs: Any
    ) -> RunnableLambda:
        title = schema.get("title", "?") if isinstance(schema, dict) else "?"

        def answer(value: Any) -> Any:
            self.asked.append((f"structured:{method}", title))
            parsed = higmem_json(_prompt_text(value))
            raw = AIMessage(json.dumps(parsed), usage_metadata=_USAGE)
            return {"raw": raw, "parsed": parsed, "parsing_error": None} if include_raw else parsed

        return RunnableLambda(answer)


class ScriptedAnswers:
    """A TextModel that answers each prompt kind from its own list of scripted answers.

    ``script`` maps a prompt's start (``"You index"``, ``"A question and candidate"``...)
    to the answers to give, in turn (the last one repeats); other prompts get
    :class:`HiGMemModel`'s or :class:`FactModel`'s answers. ``prompts`` records every
    prompt.
    """

    def __init__(self, script: dict[str, list[str]]) -> None:
        self.script = {k: list(v) for k, v in script.items()}
        self.prompts: list[str] = []
        self._higmem = HiGMemModel()
        self._facts = FactModel()
        self._lock = threading.Lock()

    def complete(self, prompt: str) -> str:
        with self._lock:
            self.prompts.append(prompt)
            for start, answers in self.script.items():
                if prompt.startswith(start):
                    return answers.pop(0) if len(answers) > 1 else answers[0]
        if self._higmem._kind(prompt) != "rewrite":
            return self._higmem.complete(prompt)
        return self._facts.complete(prompt)

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)
