"""LangChain models as the core's :class:`~.core.TextModel`.

Any LangChain chat model or LLM can be the summarizer. ``resolve_text_model`` also accepts
a ``"provider:model"`` string (for example ``"openai:gpt-4o-mini"``), resolved with
``langchain.chat_models.init_chat_model`` (needs the ``langchain`` package and the
provider's integration package and API key), or a ready ``TextModel``.

Example:
    >>> from langchain_core.language_models import FakeListChatModel
    >>> from langchain_recursive_memory.language_models import LangChainTextModel
    >>> LangChainTextModel(FakeListChatModel(responses=["Ada likes tea."])).complete("...")
    'Ada likes tea.'
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import BaseMessage

from .core.errors import ConfigurationError, ModelOutputError
from .core.models import TextModel, resolve_model
from .core.usage import ModelText

__all__ = ["LangChainTextModel", "resolve_text_model"]


def _answer_text(answer: Any) -> str:
    """The answer's text, carrying the provider's token usage when it reported it."""
    if isinstance(answer, str):
        return answer
    if isinstance(answer, BaseMessage):
        usage = getattr(answer, "usage_metadata", None) or {}
        return ModelText(answer.text, usage.get("input_tokens"), usage.get("output_tokens"))
    raise ModelOutputError(f"the model returned {type(answer).__name__}, not a message or str")


class LangChainTextModel:
    """A :class:`~.core.TextModel` over any LangChain chat model or LLM.

    The prompt is sent as one user message; the answer's text is returned (content blocks
    other than text, such as reasoning, are ignored), with the provider's token usage
    (``usage_metadata``) attached for the upkeep accounting. ``config`` reaches every call,
    so LangChain callbacks and tracing (LangSmith) see the memory's model calls, tagged
    ``langchain-recursive-memory`` when the history builds it.

    Args:
        model: A ``BaseChatModel`` or ``BaseLLM``.
        config: An optional ``RunnableConfig`` (callbacks, tags, metadata) for every call.
    """

    def __init__(self, model: BaseLanguageModel[Any], *, config: dict[str, Any] | None = None):
        if not isinstance(model, BaseLanguageModel):
            raise ConfigurationError.for_value(
                "model", model, "must be a LangChain chat model or LLM"
            )
        self.model = model
        self.config = config

    def __repr__(self) -> str:
        return f"LangChainTextModel({type(self.model).__name__})"

    def complete(self, prompt: str) -> str:
        """Invoke the model on ``prompt`` and return the answer's text."""
        return _answer_text(self.model.invoke(prompt, config=self.config))  # type: ignore[arg-type]

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        answer = await self.model.ainvoke(prompt, config=self.config)  # type: ignore[arg-type]
        return _answer_text(answer)


def resolve_text_model(model: Any) -> TextModel | None:
    """Turn what a user passes as ``llm`` into a :class:`~.core.TextModel`.

    Args:
        model: None, a ``TextModel``, a LangChain chat model or LLM, or a
            ``"provider:model"`` string.

    Raises:
        ConfigurationError: For anything else, or a string when ``langchain`` is missing.
    """
    if isinstance(model, str):
        try:
            from langchain.chat_models import init_chat_model
        except ImportError as exc:
            raise ConfigurationError.for_value(
                "llm",
                model,
                "a 'provider:model' string needs the langchain package "
                "(pip install 'langchain-recursive-memory[agents]') and the provider's package",
            ) from exc
        try:
            return LangChainTextModel(init_chat_model(model))
        except Exception as exc:
            raise ConfigurationError.for_value("llm", model, f"cannot be loaded: {exc}") from exc
    return resolve_model(
        model,
        BaseLanguageModel,
        LangChainTextModel,
        accepted="a LangChain model, a TextModel or a 'provider:model' string",
    )
