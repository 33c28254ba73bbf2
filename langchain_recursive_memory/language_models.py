"""LangChain models as the core's :class:`~.core.TextModel` (structured output included).

Any LangChain chat model or LLM can be the summarizer. ``resolve_text_model`` also accepts
a ``"provider:model"`` string (for example ``"openai:gpt-4o-mini"``), resolved with
``langchain.chat_models.init_chat_model`` (needs the ``langchain`` package and the
provider's integration package and API key) with the memory's call settings
(:class:`~.core.models.ModelSettings`: temperature 0, a 4,096-token output limit, the
provider client's own timeout of 50 s, no provider retries under the memory's), or a ready
``TextModel``.

Structured output: for the answers the memory parses as JSON (HiGMem's index answer and
turn lists), :meth:`LangChainTextModel.complete_json` asks the model with
``with_structured_output(schema, method="json_schema")`` (the provider's own method when
it has no ``json_schema`` one); a model that offers no structured output gets the text
prompt, and the same parser reads both.

Example:
    >>> from langchain_core.language_models import FakeListChatModel
    >>> from langchain_recursive_memory.language_models import LangChainTextModel
    >>> LangChainTextModel(FakeListChatModel(responses=["Ada likes tea."])).complete("...")
    'Ada likes tea.'
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from .core.errors import MissingDependencyError

try:  # the framework first: without it, name the extra that installs it
    import langchain_core  # noqa: F401
except ImportError as exc:
    raise MissingDependencyError.for_import(exc, __name__) from exc

from langchain_core.language_models import BaseChatModel, BaseLanguageModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from .core.errors import ConfigurationError, ModelOutputError
from .core.models import ModelSettings, TextModel, resolve_model
from .core.usage import ModelText

__all__ = [
    "PROVIDER_ARGUMENTS",
    "REJECTED_STATUS",
    "LangChainTextModel",
    "init_kwargs",
    "resolve_text_model",
]

logger = logging.getLogger("langchain_recursive_memory")

REJECTED_STATUS = (400, 422)
"""HTTP statuses of a provider that rejects the structured-output request itself (a model
without ``json_schema`` support): the schema is then asked for as text."""

_OPENAI_STYLE = {
    "temperature": "temperature",
    "max_output_tokens": "max_tokens",
    "timeout": "timeout",
    "max_retries": "max_retries",
}
PROVIDER_ARGUMENTS: dict[str, dict[str, str]] = {
    **dict.fromkeys(
        (
            "openai",
            "azure_openai",
            "anthropic",
            "deepseek",
            "xai",
            "groq",
            "mistralai",
            "fireworks",
            "together",
            "perplexity",
            "openrouter",
        ),
        _OPENAI_STYLE,
    ),
    "google_genai": {**_OPENAI_STYLE, "max_output_tokens": "max_output_tokens"},
    "google_vertexai": {
        "temperature": "temperature",
        "max_output_tokens": "max_output_tokens",
        "max_retries": "max_retries",
    },
    "ollama": {"temperature": "temperature", "max_output_tokens": "num_predict"},
    "bedrock_converse": {"temperature": "temperature", "max_output_tokens": "max_tokens"},
}
"""Per ``init_chat_model`` provider, the keyword of each :class:`ModelSettings` field it
takes (a provider not listed gets ``temperature`` and ``max_tokens`` only)."""
_DEFAULT_ARGUMENTS = {"temperature": "temperature", "max_output_tokens": "max_tokens"}
_PREFIXES = (
    (("gpt-", "o1", "o3", "o4", "chatgpt"), "openai"),
    (("claude",), "anthropic"),
    (("gemini",), "google_vertexai"),
    (("mistral", "mixtral"), "mistralai"),
    (("deepseek",), "deepseek"),
    (("grok",), "xai"),
)


def _provider(model: str) -> str | None:
    """The ``init_chat_model`` provider of ``"provider:model"`` (or inferred from the name)."""
    head, sep, _ = model.partition(":")
    if sep and head in PROVIDER_ARGUMENTS:
        return head
    low = model.lower()
    return next((p for prefixes, p in _PREFIXES if low.startswith(prefixes)), None)


def init_kwargs(model: str, settings: ModelSettings) -> dict[str, Any]:
    """The ``init_chat_model`` keywords that apply ``settings`` to ``model``'s provider.

    Example:
        >>> init_kwargs("openai:gpt-4o-mini", ModelSettings())
        {'temperature': 0.0, 'max_tokens': 4096, 'timeout': 50.0, 'max_retries': 0}
        >>> init_kwargs("ollama:llama3.1", ModelSettings(max_output_tokens=512))
        {'temperature': 0.0, 'num_predict': 512}
    """
    names = PROVIDER_ARGUMENTS.get(_provider(model) or "", _DEFAULT_ARGUMENTS)
    values = {
        "temperature": settings.temperature,
        "max_output_tokens": settings.max_output_tokens,
        "timeout": settings.timeout,
        "max_retries": settings.max_retries,
    }
    return {names[k]: v for k, v in values.items() if k in names and v is not None}


def _usage(message: Any) -> tuple[int | None, int | None]:
    usage = getattr(message, "usage_metadata", None) or {}
    return usage.get("input_tokens"), usage.get("output_tokens")


def _answer_text(answer: Any) -> str:
    """The answer's text, carrying the provider's token usage when it reported it."""
    if isinstance(answer, str):
        return answer
    if isinstance(answer, BaseMessage):
        return ModelText(answer.text, *_usage(answer))
    raise ModelOutputError(f"the model returned {type(answer).__name__}, not a message or str")


def _offers_structured_output(model: BaseLanguageModel[Any]) -> bool:
    """Whether a chat model implements structured output (its own, or through its tools)."""
    if not isinstance(model, BaseChatModel):
        return False
    cls = type(model)
    own = cls.with_structured_output is not BaseChatModel.with_structured_output
    return own or cls.bind_tools is not BaseChatModel.bind_tools


def _structured_text(result: Any) -> str:
    """The JSON text of a ``with_structured_output(..., include_raw=True)`` result."""
    if not isinstance(result, Mapping):  # a model that ignores include_raw
        return json.dumps(result, ensure_ascii=False, default=str)
    raw, parsed = result.get("raw"), result.get("parsed")
    if parsed is not None:
        dumped = parsed.model_dump() if hasattr(parsed, "model_dump") else parsed
        text = json.dumps(dumped, ensure_ascii=False, default=str)
    else:  # the structured parse failed: the memory's own parser reads the raw answer
        calls = getattr(raw, "tool_calls", None) or []
        text = json.dumps(calls[0]["args"]) if calls else str(getattr(raw, "text", "") or "")
    return ModelText(text, *_usage(raw))


class LangChainTextModel:
    """A :class:`~.core.TextModel` over any LangChain chat model or LLM.

    The prompt is sent as one user message; the answer's text is returned (content blocks
    other than text, such as reasoning, are ignored), with the provider's token usage
    (``usage_metadata``) attached for the upkeep accounting. ``config`` reaches every call,
    so LangChain callbacks and tracing (LangSmith) see the memory's model calls, tagged
    ``langchain-recursive-memory`` when the history builds it.

    A model given as an object keeps its own settings (temperature, output limit, timeout,
    retries); a ``"provider:model"`` name is built with ``settings``.

    Args:
        model: A ``BaseChatModel`` or ``BaseLLM``, or a ``"provider:model"`` name.
        config: An optional ``RunnableConfig`` (callbacks, tags, metadata) for every call.
        settings: The call settings of a model built from a name (default:
            :class:`~.core.models.ModelSettings`).

    Raises:
        ConfigurationError: For anything else, or a name that cannot be loaded.
    """

    def __init__(
        self,
        model: BaseLanguageModel[Any] | str,
        *,
        config: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ):
        if isinstance(model, str):
            model = _init_chat_model(model, settings or ModelSettings())
        if not isinstance(model, BaseLanguageModel):
            raise ConfigurationError.for_value(
                "model", model, "must be a LangChain chat model or LLM"
            )
        self.model = model
        self.config = config
        self.supports_json = _offers_structured_output(model)
        self._structured: dict[str, Runnable[Any, Any] | None] = {}

    def __repr__(self) -> str:
        return f"LangChainTextModel({type(self.model).__name__})"

    def complete(self, prompt: str) -> str:
        """Invoke the model on ``prompt`` and return the answer's text."""
        return _answer_text(self.model.invoke(prompt, config=self.config))  # type: ignore[arg-type]

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        answer = await self.model.ainvoke(prompt, config=self.config)  # type: ignore[arg-type]
        return _answer_text(answer)

    def _runnable(self, schema: Mapping[str, Any]) -> Runnable[Any, Any] | None:
        """The model bound to ``schema`` (None: it offers no structured output)."""
        key = json.dumps(schema, sort_keys=True)
        if key not in self._structured:
            self._structured[key] = None
            if self.supports_json:
                assert isinstance(self.model, BaseChatModel)
                for kwargs in ({"method": "json_schema"}, {}):
                    try:
                        self._structured[key] = self.model.with_structured_output(
                            dict(schema), include_raw=True, **kwargs
                        )
                        break
                    except (NotImplementedError, ValueError, TypeError) as exc:
                        logger.debug("structured output %s not offered: %s", kwargs, exc)
        return self._structured[key]

    def _declined(self, schema: Mapping[str, Any], exc: Exception) -> bool:
        """Whether the provider rejected the structured request itself (then: text from now)."""
        status = getattr(exc, "status_code", None) or getattr(
            getattr(exc, "response", None), "status_code", None
        )
        if status not in REJECTED_STATUS and "BadRequest" not in type(exc).__name__:
            return False
        logger.warning("structured output rejected by the provider (%s); asking for text", exc)
        self._structured[json.dumps(schema, sort_keys=True)] = None
        return True

    def complete_json(self, prompt: str, schema: Mapping[str, Any]) -> str:
        """The answer to ``prompt`` as JSON text shaped by ``schema`` (text when not offered)."""
        runnable = self._runnable(schema)
        if runnable is not None:
            try:
                return _structured_text(runnable.invoke(prompt, config=self.config))  # type: ignore[arg-type]
            except Exception as exc:
                if not self._declined(schema, exc):
                    raise
        return self.complete(prompt)

    async def acomplete_json(self, prompt: str, schema: Mapping[str, Any]) -> str:
        """Async twin of :meth:`complete_json`."""
        runnable = self._runnable(schema)
        if runnable is not None:
            try:
                return _structured_text(await runnable.ainvoke(prompt, config=self.config))  # type: ignore[arg-type]
            except Exception as exc:
                if not self._declined(schema, exc):
                    raise
        return await self.acomplete(prompt)


def _init_chat_model(model: str, settings: ModelSettings) -> BaseLanguageModel[Any]:
    """``init_chat_model(model)`` with ``settings`` applied.

    Raises:
        ConfigurationError: When ``langchain`` is missing or the model cannot be loaded.
    """
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
        chat = init_chat_model(model, **init_kwargs(model, settings))
    except Exception as exc:
        raise ConfigurationError.for_value("llm", model, f"cannot be loaded: {exc}") from exc
    if not isinstance(chat, BaseLanguageModel):  # pragma: no cover - a configurable model
        raise ConfigurationError.for_value("llm", model, "is not a chat model")
    return chat


def resolve_text_model(model: Any, *, settings: ModelSettings | None = None) -> TextModel | None:
    """Turn what a user passes as ``llm`` into a :class:`~.core.TextModel`.

    Args:
        model: None, a ``TextModel``, a LangChain chat model or LLM, or a
            ``"provider:model"`` string.
        settings: The call settings of a model built from a string (default:
            :class:`~.core.models.ModelSettings`: temperature 0, 4,096 output tokens, a
            50 s provider timeout, no provider retries).

    Raises:
        ConfigurationError: For anything else, or a string when ``langchain`` is missing.
    """
    if isinstance(model, str):
        return LangChainTextModel(model, settings=settings)
    return resolve_model(
        model,
        BaseLanguageModel,
        LangChainTextModel,
        accepted="a LangChain model, a TextModel or a 'provider:model' string",
    )
