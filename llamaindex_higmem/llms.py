"""LlamaIndex LLMs as the core's :class:`~langchain_recursive_memory.core.TextModel`."""

from __future__ import annotations

from typing import Any

from llama_index.core.llms.llm import LLM

from langchain_recursive_memory.core.errors import ConfigurationError, ModelOutputError
from langchain_recursive_memory.core.models import TextModel, resolve_model

__all__ = ["LlamaIndexTextModel", "resolve_llm"]


def _answer_text(answer: Any) -> str:
    text = getattr(answer, "text", None)
    if isinstance(text, str):
        return text
    raise ModelOutputError(
        f"the LlamaIndex LLM returned {type(answer).__name__}, not a CompletionResponse"
    )


class LlamaIndexTextModel:
    """A core :class:`~langchain_recursive_memory.core.TextModel` over any LlamaIndex LLM.

    ``complete(prompt)`` is ``llm.complete(prompt).text`` and ``acomplete(prompt)`` is
    ``(await llm.acomplete(prompt)).text`` (chat models answer through their own
    completion-to-chat wrapper).

    Args:
        llm: Any ``llama_index.core.llms.LLM``.

    Raises:
        ConfigurationError: For anything that is not a LlamaIndex LLM.

    Example:
        >>> from llama_index.core.llms import MockLLM
        >>> LlamaIndexTextModel(MockLLM()).complete("echo me")
        'echo me'
    """

    def __init__(self, llm: LLM) -> None:
        if not isinstance(llm, LLM):
            raise ConfigurationError.for_value("llm", llm, "must be a LlamaIndex LLM")
        self.llm = llm

    def __repr__(self) -> str:
        return f"LlamaIndexTextModel({type(self.llm).__name__})"

    def complete(self, prompt: str) -> str:
        """Return the LLM's completion of ``prompt``."""
        return _answer_text(self.llm.complete(prompt))

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        return _answer_text(await self.llm.acomplete(prompt))


def resolve_llm(llm: Any) -> TextModel | None:
    """Return ``llm`` (None, a LlamaIndex LLM or a core ``TextModel``) as a ``TextModel``."""
    return resolve_model(
        llm, LLM, LlamaIndexTextModel, accepted="a LlamaIndex LLM or a core TextModel"
    )
