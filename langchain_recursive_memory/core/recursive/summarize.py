"""Summarize steps (``S_k = LLM(S_{k-1} + messages)``, facts too) and the no-LLM summarizer.

The answer is cleaned of what models wrap around a summary (reasoning, prefaces, fences,
chatter: :func:`~..prompts.clean_summary`); a refusal, an answer that shares nothing with
what it folds, or one that lost the previous summary (:func:`~..prompts.parse_summary`) is
unusable: it is asked again once with the problem quoted, then the fold fails and the
previous summary is kept. The summary-loss guard (:func:`~..prompts.answers.check_kept`)
judges only a previous summary with at least ``MIN_JUDGED_TERMS`` (8) distinct names and
numbers, and refuses a new one that keeps fewer than ``MIN_KEPT_SHARE`` (30%) of them.

The cap is *enforced*: an answer over it is sent back ``shorten_attempts`` times with a
"shorten" prompt, and whatever is still over is truncated at a sentence boundary. With
facts on (:class:`~..memory.HybridMemory`), the same call also answers the new messages'
atomic facts (``fact_mode="combined"``, the default) or a second call does
(``"separate"``); a malformed facts answer is asked again ``fact_attempts - 1`` times with
the problem quoted, then the fold's facts are skipped with a warning (the summary and
every message are kept). ``"No new facts."`` is no facts, not a malformed answer.

With no LLM configured, :class:`ExtractiveSummarizer` folds instead: the summary becomes a
rolling extract of the most recently folded messages (each cut to a few dozen tokens),
oldest lines dropped first to stay under the cap. Nothing is lost: every folded message
stays in the turn log.

Example:
    >>> from langchain_recursive_memory.core import ExtractiveSummarizer, TokenCounter, Turn
    >>> s = ExtractiveSummarizer(TokenCounter())
    >>> print(s.summarize(None, [Turn(role="user", text="I live in Oslo.")], cap=50))
    user: I live in Oslo.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from ..config import MemoryConfig
from ..errors import ModelError
from ..facts import Fact
from ..prompts import (
    check_grounded,
    check_kept,
    clean_summary,
    facts_prompt,
    parse_combined,
    parse_facts,
    parse_summary,
    render_known_facts,
    render_transcript,
    shorten_prompt,
    summary_prompt,
)
from ..retrieval.lexical import LexicalIndex
from ..runtime.effects import Steps, complete, store_call
from ..runtime.repair import repair_prompt
from ..session import Models, SessionRef
from ..storage import StoredTurn, Summary
from ..tokenizer import TokenCounter
from ..turn import Turn

__all__ = [
    "EXTRACT_LINE_TOKENS",
    "FACT_MODES",
    "KNOWN_FACTS_IN_PROMPT",
    "ExtractiveSummarizer",
    "Summarized",
    "Summarizer",
]

logger = logging.getLogger("langchain_recursive_memory")

FACT_MODES = ("combined", "separate")
KNOWN_FACTS_IN_PROMPT = 20
"""Stored facts shown to the summarizer (the most related to the folded messages), so it
reuses their keys to update them."""
EXTRACT_LINE_TOKENS = 40
"""Longest line per message of the extractive summary."""
MIN_EXTRACT_LINE_TOKENS = 4


@dataclass(frozen=True, slots=True)
class Summarized:
    """The result of summarizing one chunk: the new text, how, and its facts (if any)."""

    text: str
    method: str
    facts: list[Fact] | None = None


@dataclass(frozen=True, slots=True)
class FactSettings:
    """How facts are extracted: ``enabled``, ``mode`` and ``attempts`` (see the module doc)."""

    enabled: bool = False
    mode: str = "combined"
    attempts: int = 2


class Summarizer:
    """Summarizes chunks of a session's messages (see the module doc).

    Args:
        session: The session (its facts are read to be updated).
        config: The budgets (summary cap, longest message in a prompt).
        counter: Counts tokens.
        models: Whose model summarizes (None: the extractive summarizer).
        facts: How facts are extracted.
        shorten_attempts: Times an over-long summary is sent back to be shortened.
    """

    def __init__(
        self,
        session: SessionRef,
        config: MemoryConfig,
        counter: TokenCounter,
        models: Models,
        *,
        facts: FactSettings,
        shorten_attempts: int,
    ) -> None:
        self.session = session
        self.config = config
        self.counter = counter
        self.models = models
        self.facts = facts
        self.shorten_attempts = shorten_attempts
        self.extractive = ExtractiveSummarizer(counter)

    def summarize_steps(
        self, previous: Summary | None, chunk: Sequence[StoredTurn]
    ) -> Steps[Summarized]:
        """Fold ``chunk`` into ``previous``: the new summary text (and facts)."""
        cap = self.config.max_summary_tokens
        turns = [s.turn for s in chunk]
        prev_text = previous.text if previous else None
        if self.models.model is None:
            return Summarized(self.extractive.summarize(prev_text, turns, cap=cap), "extractive")
        ids = [t.id for t in chunk]
        related: list[Fact] = []
        if self.facts.enabled:
            related = yield from self._related_facts_steps(turns)
        combined = self.facts.enabled and self.facts.mode == "combined"
        prompt = summary_prompt(
            prev_text,
            turns,
            cap=cap,
            counter=self.counter,
            max_message_tokens=self.config.max_prompt_message_tokens,
            known_facts=render_known_facts(related) if combined else None,
        )
        facts: list[Fact] | None = None
        sources = "\n".join([prev_text or "", *(t.text for t in turns)])
        if combined:
            text, facts = yield from self._combined_steps(prompt, ids, sources, prev_text)
        else:
            text = yield from complete(
                prompt, partial(parse_summary, previous=prev_text, sources=sources)
            )
        text = yield from self._capped_steps(text)
        if self.facts.enabled and not combined:
            facts = yield from self._separate_facts_steps(turns, ids, related)
        return Summarized(text, "llm", facts)

    def _related_facts_steps(self, turns: Sequence[Turn]) -> Steps[list[Fact]]:
        """The stored facts most related to ``turns`` (shown to the model to update them)."""
        session = self.session
        stored = yield from store_call(session.records.facts.get)
        if len(stored) <= KNOWN_FACTS_IN_PROMPT:
            return stored
        index = LexicalIndex([f"{f.key} {f.text}" for f in stored])
        query = " ".join(t.text for t in turns)
        best = [i for i, _ in index.search(query, KNOWN_FACTS_IN_PROMPT)]
        return [stored[i] for i in sorted(best)]

    def _combined_steps(
        self, prompt: str, ids: list[str], sources: str, previous: str | None
    ) -> Steps[tuple[str, list[Fact] | None]]:
        """The summary and facts of one call; a malformed facts answer is asked again."""

        def parse(answer: str) -> tuple[str, list[Fact] | None, str, str]:
            summary, facts, problem = parse_combined(answer, ids)
            return check_kept(check_grounded(summary, sources), previous), facts, problem, answer

        text, facts, problem, answer = yield from complete(prompt, parse)
        for _ in range(self.facts.attempts - 1):
            if facts is not None:
                break
            try:  # the same request, with what was wrong with the facts quoted
                again = repair_prompt(prompt, answer, f"its facts are unusable: {problem}")
                _, facts, problem, answer = yield from complete(again, parse)
            except ModelError as exc:  # keep the summary we already have
                problem = str(exc)
                break
        if facts is None:
            logger.warning(
                "session %r: facts of this fold skipped after %d malformed answers (%s); "
                "the summary and every message are kept",
                self.session.session_id,
                self.facts.attempts,
                problem,
            )
        return text, facts

    def _capped_steps(self, text: str) -> Steps[str]:
        """``text`` within the summary cap: sent back to be shortened, then truncated."""
        cap = self.config.max_summary_tokens
        for _ in range(self.shorten_attempts):
            if self.counter.count_text(text) <= cap:
                break
            try:
                text = yield from complete(shorten_prompt(text, cap=cap), clean_summary, "shorten")
            except ModelError:
                break  # keep the long answer; it is truncated below
        if self.counter.count_text(text) > cap:
            text = self.counter.truncate(text, cap)
        return text

    def _separate_facts_steps(
        self, turns: Sequence[Turn], ids: list[str], related: list[Fact]
    ) -> Steps[list[Fact] | None]:
        try:
            return (yield from self._extract_steps(turns, ids, related))
        except ModelError as exc:
            logger.warning(
                "session %r: facts of this fold skipped (%s); the summary and every "
                "message are kept",
                self.session.session_id,
                exc,
            )
            return None

    def _extract_steps(
        self, turns: Sequence[Turn], ids: list[str], related: list[Fact]
    ) -> Steps[list[Fact]]:
        """The facts of ``turns`` from one facts call (raises ``ModelError``)."""
        transcript = render_transcript(
            turns, self.counter, self.config.max_prompt_message_tokens, numbered=True
        )
        return (
            yield from complete(
                facts_prompt(transcript, related), partial(parse_facts, turn_ids=ids), "facts"
            )
        )

    def facts_steps(self, chunk: Sequence[StoredTurn]) -> Steps[list[Fact]]:
        """The facts of a folded ``chunk``, extracted again (a rebuild; the summary stays).

        One facts call, shown the stored facts most related to the chunk (so it reuses
        their keys), as ``fact_mode="separate"`` asks.

        Raises:
            ModelError: When the model failed or answered no usable facts.
        """
        turns = [s.turn for s in chunk]
        related = yield from self._related_facts_steps(turns)
        return (yield from self._extract_steps(turns, [t.id for t in chunk], related))


class ExtractiveSummarizer:
    """The summarizer used when no LLM is configured (no model calls, deterministic).

    The summary is a rolling extract: one ``role: text`` line per folded message, each cut
    to ``line_tokens`` tokens; when the extract exceeds the cap, its oldest lines are
    dropped. It shows the most recent folded context; older messages stay in the turn log
    (and are found by recall).

    Args:
        counter: Counts tokens for the cap.
        line_tokens: Longest line per message (default 40 tokens).
    """

    method = "extractive"

    def __init__(self, counter: TokenCounter, *, line_tokens: int = EXTRACT_LINE_TOKENS) -> None:
        self.counter = counter
        self.line_tokens = line_tokens

    def summarize(self, previous: str | None, turns: Sequence[Turn], *, cap: int) -> str:
        """Return the extract of ``previous`` plus ``turns`` within ``cap`` tokens."""
        lines = [ln for ln in (previous or "").splitlines() if ln.strip()]
        for turn in turns:
            text = " ".join(turn.text.split())
            if not text and turn.tool_calls:
                text = "; ".join(f"called {c.name}" for c in turn.tool_calls)
            if not text:
                continue
            cut = self.counter.truncate(
                text, max(MIN_EXTRACT_LINE_TOKENS, min(self.line_tokens, cap // 2))
            )
            if cut != text:
                cut += " ..."
            lines.append(f"{turn.role}: {cut}")
        while lines and self.counter.count_text("\n".join(lines)) > cap:
            lines.pop(0)
        if not lines:
            return ""
        return "\n".join(lines)
