"""LlamaIndex LLMs as the core's :class:`~langchain_recursive_memory.core.TextModel`.

The provider's token usage is read from the response (``raw.usage`` in OpenAI's
``prompt_tokens``/``completion_tokens`` and Anthropic's ``input_tokens``/``output_tokens``
naming, object or dict, or the token counts in ``additional_kwargs``), so the upkeep
accounting uses the provider's numbers. For the answers the memory parses as JSON, a
function-calling LLM is asked with ``structured_predict`` (the schema as a pydantic
model); any other LLM gets the text prompt, and the same parser reads both.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import PromptTemplate
from pydantic import BaseModel, create_model

from langchain_recursive_memory.core.errors import ConfigurationError, ModelOutputError
from langchain_recursive_memory.core.models import TextModel, resolve_model
from langchain_recursive_memory.core.usage import ModelText

__all__ = ["LlamaIndexTextModel", "resolve_llm", "response_usage", "schema_model"]

logger = logging.getLogger("langchain_recursive_memory")

_INPUT_NAMES = ("prompt_tokens", "input_tokens")
_OUTPUT_NAMES = ("completion_tokens", "output_tokens")
_SCALARS: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}


def _field(usage: Any, names: tuple[str, ...]) -> int | None:
    for name in names:
        value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def response_usage(response: Any) -> tuple[int | None, int | None]:
    """The ``(input, output)`` tokens a LlamaIndex response reports, or Nones.

    Example:
        >>> from llama_index.core.llms import CompletionResponse
        >>> response_usage(CompletionResponse(text="x", raw={"usage": {"input_tokens": 9,
        ...     "output_tokens": 2}}))
        (9, 2)
    """
    raw = getattr(response, "raw", None)
    usage = raw.get("usage") if isinstance(raw, Mapping) else getattr(raw, "usage", None)
    for source in (usage, getattr(response, "additional_kwargs", None)):
        if source is None:
            continue
        found = _field(source, _INPUT_NAMES), _field(source, _OUTPUT_NAMES)
        if found[0] is not None and found[1] is not None:
            return found
    return None, None


def _answer_text(answer: Any) -> str:
    text = getattr(answer, "text", None)
    if isinstance(text, str):
        return ModelText(text, *response_usage(answer))
    raise ModelOutputError(
        f"the LlamaIndex LLM returned {type(answer).__name__}, not a CompletionResponse"
    )


def _annotation(schema: Mapping[str, Any], name: str) -> Any:
    kind = schema.get("type")
    if kind == "array":
        return list[_annotation(schema.get("items", {}), f"{name}Item")]  # type: ignore[misc]
    if kind == "object":
        return schema_model(schema, name)
    return _SCALARS.get(str(kind), Any)


def schema_model(schema: Mapping[str, Any], name: str = "Answer") -> type[BaseModel]:
    """A pydantic model of a JSON schema (objects, arrays and scalars; what the core asks).

    Example:
        >>> model = schema_model({"type": "object", "properties": {"turns": {"type": "array",
        ...     "items": {"type": "integer"}}}, "required": ["turns"]}, "TurnList")
        >>> model(turns=[2, 5]).model_dump()
        {'turns': [2, 5]}
    """
    required = set(schema.get("required", ()))
    fields: dict[str, Any] = {}
    for key, sub in schema.get("properties", {}).items():
        annotation = _annotation(sub, f"{name}{key.title().replace('_', '')}")
        fields[key] = (annotation, ...) if key in required else (annotation | None, None)
    return create_model(str(schema.get("title", name)).title().replace("_", ""), **fields)


class LlamaIndexTextModel:
    """A core :class:`~langchain_recursive_memory.core.TextModel` over any LlamaIndex LLM.

    ``complete(prompt)`` is ``llm.complete(prompt).text`` and ``acomplete(prompt)`` is
    ``(await llm.acomplete(prompt)).text`` (chat models answer through their own
    completion-to-chat wrapper), with the provider's token usage attached
    (:func:`response_usage`). ``complete_json(prompt, schema)`` uses ``structured_predict``
    when the LLM is a function-calling model, the text prompt otherwise.

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
        self._models: dict[str, type[BaseModel]] = {}

    def __repr__(self) -> str:
        return f"LlamaIndexTextModel({type(self.llm).__name__})"

    @property
    def supports_json(self) -> bool:
        """Whether the LLM calls functions (and so answers ``structured_predict``)."""
        try:
            return bool(self.llm.metadata.is_function_calling_model)
        except Exception:  # a custom LLM whose metadata needs more than it has
            return False

    def complete(self, prompt: str) -> str:
        """Return the LLM's completion of ``prompt``."""
        return _answer_text(self.llm.complete(prompt))

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        return _answer_text(await self.llm.acomplete(prompt))

    def _model(self, schema: Mapping[str, Any]) -> type[BaseModel]:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._models:
            self._models[key] = schema_model(schema)
        return self._models[key]

    def complete_json(self, prompt: str, schema: Mapping[str, Any]) -> str:
        """The answer to ``prompt`` as JSON text shaped by ``schema`` (text when not offered)."""
        if not self.supports_json:
            return self.complete(prompt)
        answer = self.llm.structured_predict(
            self._model(schema), PromptTemplate("{text}"), text=prompt
        )
        return str(answer.model_dump_json())

    async def acomplete_json(self, prompt: str, schema: Mapping[str, Any]) -> str:
        """Async twin of :meth:`complete_json`."""
        if not self.supports_json:
            return await self.acomplete(prompt)
        answer = await self.llm.astructured_predict(
            self._model(schema), PromptTemplate("{text}"), text=prompt
        )
        return str(answer.model_dump_json())


def resolve_llm(llm: Any) -> TextModel | None:
    """Return ``llm`` (None, a LlamaIndex LLM or a core ``TextModel``) as a ``TextModel``."""
    return resolve_model(
        llm, LLM, LlamaIndexTextModel, accepted="a LlamaIndex LLM or a core TextModel"
    )
