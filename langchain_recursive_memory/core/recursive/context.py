"""The one context builder: what every adapter hands to the model, within the budget.

``summary message + recalled memories + window``, counted exactly, within
``max_tokens`` minus what the caller reserves for what it adds itself (a system prompt,
tool schemas). Every adapter (chat history, agent middleware, LlamaIndex memories,
retrievers) takes its window, its budget, its cut-to-fit and its recall block from here;
none counts tokens to decide what to show. Pure: no I/O.

Rules, in order:

1. The first message holds the summary (re-counted and cut to ``max_summary_tokens``) and,
   for a question, the recalled memories (within ``recall_tokens``). ``recall_tokens``
   stays reserved even with no question, for a retriever's output, so the window is the
   same with or without recall.
2. The window is the newest whole units of unfolded messages that fit the rest, always
   with the current question and what the model has not seen yet: when they do not fit,
   the largest tool results, then other messages, are shown cut (:mod:`.window`).
3. The current question is the newest user message. Folds take it in its place, with
   the tool results that follow it (:mod:`.planner`); while it is current it is shown
   verbatim all the same, first in the window, counted in the budget.

Example:
    >>> from langchain_recursive_memory.core import MemoryConfig, TokenCounter, Turn
    >>> from langchain_recursive_memory.core.recursive.context import ContextBuilder
    >>> builder = ContextBuilder(MemoryConfig(max_tokens=500), TokenCounter())
    >>> ctx = builder.fit([Turn(role="user", text="hi"), Turn(role="assistant", text="hello")])
    >>> [t.text for t in ctx.window], ctx.tokens <= 500
    (['hi', 'hello'], True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..config import MemoryConfig
from ..dates import format_time
from ..retrieval.hits import RecallHit
from ..storage import SessionState, StoredTurn, Summary
from ..tokenizer import REPLY_PRIMING_TOKENS, TokenCounter
from ..turn import Turn
from .window import Window

__all__ = [
    "RECALL_BLOCK_OVERHEAD",
    "Context",
    "ContextBuilder",
]

RECALL_BLOCK_OVERHEAD = 8
"""Tokens of the ``<memories>`` tags and their newlines around the recalled lines."""
PART_SEPARATOR_TOKENS = 2
"""Tokens of the blank line between the summary and the recalled memories."""


@dataclass(frozen=True, slots=True)
class Context:
    """What the memory hands to the model: the summary (and recalled memories), then the window.

    Attributes:
        summary: The summary version shown, or None.
        summary_turn: The first message: the summary and, for a question, the recalled
            memories (role from the config); None when there is neither.
        window: The recent messages, verbatim (or cut, marked), oldest first.
        tokens: Tokens of the whole context (messages plus reply priming).
        max_tokens: The budget ``tokens`` stays within.
        hidden: Unfolded messages not shown because they do not fit (a fold is pending).
        recalled: The recalled memories included in the first message, in the order the
            model reads them (facts, then turns by time); each keeps its ``score``.
    """

    summary: Summary | None
    summary_turn: Turn | None
    window: tuple[Turn, ...]
    tokens: int
    max_tokens: int
    hidden: int = 0
    recalled: tuple[RecallHit, ...] = ()

    @property
    def turns(self) -> list[Turn]:
        """The first message (if any) followed by the window."""
        head = [self.summary_turn] if self.summary_turn is not None else []
        return head + list(self.window)

    @property
    def question(self) -> str | None:
        """The text of the newest user message the window shows, or None (none, or blank).

        The question an adapter recalls for when its framework reads the memory without
        one (``messages``, LlamaIndex's ``get()``): the message just added.
        """
        latest = next((t for t in reversed(self.window) if t.role == "user"), None)
        return latest.text if latest is not None and latest.text.strip() else None


class ContextBuilder:
    """Builds contexts for one configuration and token counter (see the module doc).

    Args:
        config: The budgets.
        counter: Counts tokens exactly.
    """

    def __init__(self, config: MemoryConfig, counter: TokenCounter) -> None:
        self.config = config
        self.counter = counter
        self.window = Window(counter)

    def build(
        self, state: SessionState, hits: Sequence[RecallHit] = (), *, reserve: int = 0
    ) -> Context:
        """Return the context of a loaded session state and recalled hits.

        Args:
            state: The latest summary and the unfolded turns.
            hits: Memories recalled for the current question, best first.
            reserve: Tokens of ``max_tokens`` left free for what the caller adds itself,
                beside the configured ``reserve_tokens``.
        """
        cfg = self.config
        first, recall_text, recalled = self._first_message(state.summary, hits)
        first_tokens = self.counter.count_turn(first) if first is not None else 0
        room = cfg.max_tokens - REPLY_PRIMING_TOKENS - cfg.reserve_tokens - reserve
        if first is not None and first_tokens > room:
            first, first_tokens, recalled = None, 0, ()  # not even the summary fits
        available = room - first_tokens - (0 if recall_text and first else cfg.recall_tokens)
        if recall_text and first is not None:
            # The window may not grow into the recall share: same window with or without it.
            summary_only = first_tokens - self.counter.count_text(recall_text)
            summary_only -= PART_SEPARATOR_TOKENS
            available = min(available, room - max(summary_only, 0) - cfg.recall_tokens)
        turns = _shown(state)
        window, costs = self.window.fit(turns, available)
        folded = turns[0].seq if turns is not state.turns else None  # the question, shown
        return Context(
            summary=state.summary,
            summary_turn=first,
            window=tuple(s.turn for s in window),
            tokens=REPLY_PRIMING_TOKENS + first_tokens + sum(costs),
            max_tokens=cfg.max_tokens,
            hidden=len(state.turns) - sum(1 for s in window if s.seq >= 0 and s.seq != folded),
            recalled=recalled,
        )

    def fit(self, turns: Sequence[Turn], *, reserve: int = 0) -> Context:
        """The context of ``turns`` alone (no summary, nothing stored): the newest that fit.

        For callers that hold the messages but cannot read the store (it failed).
        """
        stored = [
            StoredTurn(t, i, self.counter.count_turn(t), self.counter.encoding_name)
            for i, t in enumerate(turns)
        ]
        return self.build(SessionState(None, tuple(stored)), reserve=reserve)

    def pack(self, hits: Sequence[RecallHit], max_tokens: int | None) -> list[RecallHit]:
        """The hits, best first, whose texts together fit ``max_tokens`` (None: all)."""
        if max_tokens is None:
            return list(hits)
        out: list[RecallHit] = []
        used = 0
        for hit in hits:
            cost = self.counter.count_text(hit.text)
            if used + cost <= max_tokens:
                out.append(hit)
                used += cost
        return out

    # -- parts ------------------------------------------------------------------------------

    def _first_message(
        self, summary: Summary | None, hits: Sequence[RecallHit]
    ) -> tuple[Turn | None, str, tuple[RecallHit, ...]]:
        cfg = self.config
        parts: list[str] = []
        if summary is not None and summary.text:
            text = summary.text
            # Recounted: the stored count may come from another encoding or a larger cap.
            if self.counter.count_text(text) > cfg.max_summary_tokens:
                text = self.counter.truncate(text, cfg.max_summary_tokens)
            parts.append(f"{cfg.summary_prefix}\n{text}" if cfg.summary_prefix else text)
        recall_text, recalled = self.recall_block(hits) if hits else ("", ())
        if recall_text:
            parts.append(recall_text)
        if not parts:
            return None, "", ()
        first = Turn(
            role=cfg.summary_role,
            text="\n\n".join(parts),
            id=f"summary-v{summary.version}" if summary else "recalled",
            created_at=summary.created_at if summary else None,
            extra={"lrm_kind": "summary", "lrm_version": summary.version if summary else 0},
        )
        return first, recall_text, recalled

    def recall_block(self, hits: Sequence[RecallHit]) -> tuple[str, tuple[RecallHit, ...]]:
        """Render hits as quoted lines within ``recall_tokens``.

        The best hits that fit are chosen (``hits`` come best first); they are shown facts
        first, then turns in time order, for the model to read.
        """
        cfg = self.config
        budget = cfg.recall_tokens - self.counter.count_text(cfg.recall_prefix)
        budget -= RECALL_BLOCK_OVERHEAD
        chosen: list[tuple[RecallHit, str]] = []
        used = 0
        for hit in hits:
            line = self._recall_line(hit)
            cost = self.counter.count_text(line) + 1  # and its newline
            if used + cost > budget:
                continue
            chosen.append((hit, line))
            used += cost
        if not chosen:
            return "", ()
        chosen.sort(key=lambda p: (p[0].kind != "fact", p[0].time or 0.0))
        body = "\n".join(line for _, line in chosen)
        return f"{cfg.recall_prefix}\n<memories>\n{body}\n</memories>", tuple(h for h, _ in chosen)

    def _recall_line(self, hit: RecallHit) -> str:
        text = " ".join(hit.text.split())
        cut = self.counter.truncate(text, self.config.recall_item_tokens)
        if cut != text:
            cut += " ..."
        if hit.kind == "fact":
            stated = hit.metadata.get("stated_time")
            return f"- fact{f' ({stated})' if stated else ''}: {cut}"
        return f"- [{format_time(hit.time)}] {hit.role}: {cut}"


def _shown(state: SessionState) -> tuple[StoredTurn, ...]:
    """The unfolded turns, after the current question when it is folded already."""
    if state.question is None or any(s.turn.role == "user" for s in state.turns):
        return state.turns
    return (state.question, *state.turns)
