"""What memory upkeep costs: LLM calls and tokens, counted.

:class:`CountingTextModel` wraps any :class:`~.models.TextModel` and counts its calls and
the tokens of its prompts and answers (with tiktoken, so the counts are exact for OpenAI
models and close for others).

Example:
    >>> from langchain_recursive_memory.core import FunctionTextModel
    >>> from langchain_recursive_memory.core.usage import CountingTextModel
    >>> model = CountingTextModel(FunctionTextModel(lambda p: "short answer"))
    >>> _ = model.complete("a prompt of a few tokens")
    >>> model.usage.calls, model.usage.input_tokens, model.usage.output_tokens
    (1, 6, 2)
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ModelError
from .models import TextModel, offers_json
from .tokenizer import TokenCounter

__all__ = ["TOKENS_PER_PRICE_UNIT", "CountingTextModel", "ModelText", "Usage", "UsageRecord"]

TOKENS_PER_PRICE_UNIT = 1_000_000
"""Providers price tokens per million."""


class ModelText(str):
    """A model's answer, with the token usage the provider reported (when it did).

    Adapters return it from ``complete``/``acomplete`` so that upkeep accounting uses the
    provider's numbers; a plain ``str`` is counted with tiktoken instead.

    Example:
        >>> answer = ModelText("Ada likes tea.", input_tokens=120, output_tokens=5)
        >>> answer, answer.input_tokens
        ('Ada likes tea.', 120)
    """

    input_tokens: int | None
    output_tokens: int | None

    def __new__(
        cls, text: str, input_tokens: int | None = None, output_tokens: int | None = None
    ) -> ModelText:
        """Create the answer text with its reported token usage."""
        obj = super().__new__(cls, text)
        obj.input_tokens = input_tokens
        obj.output_tokens = output_tokens
        return obj


@dataclass
class Usage:
    """Calls and tokens spent.

    Attributes:
        calls: Successful calls.
        failed_calls: Calls that raised (or whose answer was unusable).
        input_tokens: Tokens of the prompts, failed calls included (an unusable answer's
            prompt, a timed-out call's prompt: the provider worked on them).
        output_tokens: Tokens of the answers, unusable ones included.
        reported_calls: Calls whose tokens the provider reported (the others are counted
            with tiktoken).
    """

    calls: int = 0
    failed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reported_calls: int = 0

    def add(self, other: Usage) -> None:
        """Add ``other``'s numbers to these."""
        self.calls += other.calls
        self.failed_calls += other.failed_calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.reported_calls += other.reported_calls

    def cost(self, input_per_million: float, output_per_million: float) -> float:
        """Return the cost at the given list prices (per million tokens)."""
        return (
            self.input_tokens * input_per_million + self.output_tokens * output_per_million
        ) / TOKENS_PER_PRICE_UNIT


@dataclass(frozen=True)
class UsageRecord:
    """What one operation of a memory (a fold, an indexing batch, a retrieval) spent.

    Attributes:
        namespace: The session's namespace.
        session_id: The session.
        purpose: ``"fold"``, ``"facts"``, ``"higmem-index"``, ``"higmem-retrieve"``...
        usage: The calls and tokens.
        created_at: Seconds since the epoch.
    """

    namespace: str
    session_id: str
    purpose: str
    usage: Usage
    created_at: float

    def to_dict(self) -> dict[str, object]:
        """A JSON-serializable dict (for callbacks and events)."""
        return {
            "namespace": self.namespace,
            "session_id": self.session_id,
            "purpose": self.purpose,
            "calls": self.usage.calls,
            "failed_calls": self.usage.failed_calls,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "reported_calls": self.usage.reported_calls,
            "created_at": self.created_at,
        }


class CountingTextModel:
    """A :class:`~.models.TextModel` that counts the calls and tokens of another.

    Args:
        model: The wrapped model.
        counter: Counts the tokens (default: ``TokenCounter()``, o200k_base).
    """

    def __init__(self, model: TextModel, counter: TokenCounter | None = None) -> None:
        self.model = model
        self.counter = counter or TokenCounter()
        self.usage = Usage()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CountingTextModel({self.model!r}, usage={self.usage})"

    def _record(self, prompt: str, answer: str | None) -> None:
        with self._lock:
            if answer is None:
                self.usage.failed_calls += 1
                return
            self.usage.calls += 1
            self.usage.input_tokens += self.counter.count_text(prompt)
            self.usage.output_tokens += self.counter.count_text(answer)

    def complete(self, prompt: str) -> str:
        """Call the wrapped model and count."""
        try:
            answer = self.model.complete(prompt)
        except Exception:
            self._record(prompt, None)
            raise
        self._record(prompt, answer if isinstance(answer, str) else str(answer))
        return answer

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        try:
            answer = await self.model.acomplete(prompt)
        except Exception:
            self._record(prompt, None)
            raise
        self._record(prompt, answer if isinstance(answer, str) else str(answer))
        return answer

    @property
    def supports_json(self) -> bool:
        """Whether the wrapped model offers JSON answers (see :func:`~.models.offers_json`)."""
        return offers_json(self.model)

    def complete_json(self, prompt: str, schema: Mapping[str, Any]) -> str:
        """Ask the wrapped model for schema-shaped JSON, and count.

        Raises:
            ModelError: When the wrapped model offers no JSON answers.
        """
        model = self.model
        if not offers_json(model):
            raise ModelError(f"{model!r} offers no JSON answers")
        try:
            answer = model.complete_json(prompt, schema)
        except Exception:
            self._record(prompt, None)
            raise
        self._record(prompt, answer if isinstance(answer, str) else str(answer))
        return answer

    async def acomplete_json(self, prompt: str, schema: Mapping[str, Any]) -> str:
        """Async twin of :meth:`complete_json`."""
        model = self.model
        if not offers_json(model):
            raise ModelError(f"{model!r} offers no JSON answers")
        try:
            answer = await model.acomplete_json(prompt, schema)
        except Exception:
            self._record(prompt, None)
            raise
        self._record(prompt, answer if isinstance(answer, str) else str(answer))
        return answer
