"""Model configuration and calls (issue 14): settings passed through, structured output when
offered, one repair prompt quoting the error, failed calls counted, LlamaIndex usage read."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import FAST_TWO_RETRIES
from fakes import HiGMemModel, StructuredChatModel
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from llama_index.core.llms import ChatMessage, CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import ToolSelection
from typer.testing import CliRunner

from langchain_recursive_memory.core import FunctionTextModel, HiGMem, Turn
from langchain_recursive_memory.core.errors import ConfigurationError, ModelOutputError
from langchain_recursive_memory.core.models import ModelSettings, WithSchema, offers_json
from langchain_recursive_memory.core.prompts import INDEX_SCHEMA, TURN_LIST_SCHEMA
from langchain_recursive_memory.core.prompts.higmem import ANSWER_AS_LINES, ANSWER_AS_OBJECT
from langchain_recursive_memory.core.runtime import Runner, complete
from langchain_recursive_memory.core.usage import ModelText
from langchain_recursive_memory.language_models import (
    LangChainTextModel,
    init_kwargs,
    resolve_text_model,
)
from llamaindex_higmem.llms import LlamaIndexTextModel, response_usage

TURNS = [
    ("Ada", "I adopted a cat called Miso last week."),
    ("Bob", "How old is Miso?"),
    ("Ada", "Miso is 2 years old and loves tuna."),
    ("Bob", "My sister moved to Porto in March."),
]


def turns() -> list[Turn]:
    return [
        Turn(role="user", name=who, text=text, id=f"t{i}", created_at=1_700_000_000.0 + 60 * i)
        for i, (who, text) in enumerate(TURNS)
    ]


# -- item 5: settings reach the provider --------------------------------------------------


def test_settings_defaults_are_documented_values() -> None:
    settings = ModelSettings()
    assert (settings.temperature, settings.max_output_tokens) == (0.0, 4096)
    assert (settings.timeout, settings.max_retries) == (50.0, 0)
    with pytest.raises(ConfigurationError, match="temperature=-1"):
        ModelSettings(temperature=-1)
    with pytest.raises(ConfigurationError, match="max_output_tokens=0"):
        ModelSettings(max_output_tokens=0)


def test_provider_strings_are_built_with_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain.chat_models as chat_models

    seen: list[tuple[str, dict[str, Any]]] = []

    def fake_init(model: str, **kwargs: Any) -> GenericFakeChatModel:
        seen.append((model, kwargs))
        return GenericFakeChatModel(messages=iter(["ok"]))

    monkeypatch.setattr(chat_models, "init_chat_model", fake_init)
    model = resolve_text_model("openai:gpt-4o-mini")
    assert isinstance(model, LangChainTextModel)
    assert seen[-1] == (
        "openai:gpt-4o-mini",
        {"temperature": 0.0, "max_tokens": 4096, "timeout": 50.0, "max_retries": 0},
    )
    custom = ModelSettings(temperature=0.1, max_output_tokens=800, timeout=20, max_retries=1)
    LangChainTextModel("anthropic:claude-3-5-haiku-latest", settings=custom)
    assert seen[-1][1] == {"temperature": 0.1, "max_tokens": 800, "timeout": 20, "max_retries": 1}
    resolve_text_model("google_genai:gemini-2.0-flash", settings=custom)
    assert seen[-1][1]["max_output_tokens"] == 800
    assert init_kwargs("ollama:llama3.1", custom) == {"temperature": 0.1, "num_predict": 800}
    assert init_kwargs("some-local-model", ModelSettings(max_output_tokens=None)) == {
        "temperature": 0.0
    }


def test_cli_model_flags_reach_the_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    import langchain_recursive_memory.language_models as lm
    from langchain_recursive_memory.cli import app

    seen: list[ModelSettings | None] = []

    def fake_resolve(spec: str, *, settings: ModelSettings | None = None) -> Any:
        seen.append(settings)
        return FunctionTextModel(lambda p: "Ada adopted Miso.")

    monkeypatch.setattr(lm, "resolve_text_model", fake_resolve)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"role": "user", "content": "I adopted Miso."}\n')
    args = ["--path", str(tmp_path / "store"), "ingest", str(transcript), "-s", "s"]
    args += ["--model", "openai:gpt-4o-mini", "--model-temperature", "0.2"]
    args += ["--model-max-tokens", "700", "--model-timeout", "15", "--model-retries", "1"]
    result = CliRunner().invoke(app, [*args, "--no-progress"])
    assert result.exit_code == 0, result.output
    assert seen == [
        ModelSettings(temperature=0.2, max_output_tokens=700, timeout=15, max_retries=1)
    ]


# -- item 5: one repair prompt quoting the error; failed calls counted ----------------------


def _strict_list(answer: str) -> list[int]:
    value = json.loads(answer)
    if not isinstance(value, list):
        raise ModelOutputError(f"not a list: {answer!r}")
    return value


def test_an_unusable_answer_gets_one_repair_prompt_quoting_the_error() -> None:
    prompts: list[str] = []

    def model(prompt: str) -> str:
        prompts.append(prompt)
        return "[2, 5]" if "could not be used" in prompt else "Turns two and five."

    runner = Runner(model=FunctionTextModel(model), retry=FAST_TWO_RETRIES)
    assert runner.run(complete("Which turns?", _strict_list, "higmem-retrieve")) == [2, 5]
    assert len(prompts) == 2
    assert prompts[1].startswith("Which turns?")
    assert "Turns two and five." in prompts[1] and "Expecting value" in prompts[1]


def test_a_second_unusable_answer_is_final_and_every_attempt_is_counted() -> None:
    prompts: list[str] = []
    spent: list[Any] = []
    model = FunctionTextModel(lambda p: prompts.append(p) or ModelText("no list", 120, 3))
    runner = Runner(model=model, retry=FAST_TWO_RETRIES, on_usage=spent.append)
    with pytest.raises(ModelOutputError):
        runner.run(complete("Which turns?", _strict_list, "higmem-retrieve"))
    assert len(prompts) == 2  # the prompt, then its repair; never the identical prompt again
    usage = spent[0]["higmem-retrieve"]
    assert usage.calls == 0 and usage.failed_calls == 2
    assert (usage.input_tokens, usage.output_tokens) == (240, 6)  # failed calls' tokens count


def test_transport_errors_are_still_retried_with_the_same_prompt() -> None:
    prompts: list[str] = []

    def flaky(prompt: str) -> str:
        prompts.append(prompt)
        if len(prompts) < 3:
            raise ConnectionError("reset by peer")
        return "[1]"

    runner = Runner(model=FunctionTextModel(flaky), retry=FAST_TWO_RETRIES)
    assert runner.run(complete("Which turns?", _strict_list)) == [1]
    assert prompts == ["Which turns?"] * 3


# -- item 1: structured output when the model offers it -------------------------------------


def test_langchain_structured_output_is_used_for_the_index_when_offered(store: Any) -> None:
    chat = StructuredChatModel()
    model = LangChainTextModel(chat)
    assert offers_json(model) and model.supports_json
    memory = HiGMem("s", store=store, model=model, retry=FAST_TWO_RETRIES, batch_size=4)
    memory.add(turns())
    assert ("structured:json_schema", INDEX_SCHEMA["title"]) in chat.asked
    assert not [a for a in chat.asked if a[0] == "text"]  # the index is never asked as text
    assert {n.method for n in memory.turn_nodes()} == {"llm"}
    assert all(e.method == "llm" for e in memory.events())
    memory.retrieve("How old is Miso?")
    assert ("structured:json_schema", TURN_LIST_SCHEMA["title"]) in chat.asked
    usage = memory.usage_by_purpose()["higmem-index"]
    assert usage.calls == 1 and usage.reported_calls == 1 and usage.input_tokens == 200


class TextOnlyChat(GenericFakeChatModel):
    """GenericFakeChatModel (no structured output) answering like HiGMemModel."""

    prompts: list[str] = []  # noqa: RUF012

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
        prompt = str(messages[-1].content)
        self.prompts.append(prompt)
        self.messages = iter([AIMessage(HiGMemModel()._answer(prompt))])
        return super()._generate(messages, stop, run_manager, **kw)


def test_models_without_structured_output_get_the_text_prompt(store: Any) -> None:
    chat = TextOnlyChat(messages=iter([]))
    model = LangChainTextModel(chat)
    assert not model.supports_json and not offers_json(model)
    memory = HiGMem("s", store=store, model=model, retry=FAST_TWO_RETRIES, batch_size=4)
    memory.add(turns())
    assert len(chat.prompts) == 1
    assert ANSWER_AS_LINES.splitlines()[0] in chat.prompts[0]
    assert ANSWER_AS_OBJECT not in chat.prompts[0]
    assert {n.method for n in memory.turn_nodes()} == {"llm"}
    assert not offers_json(FunctionTextModel(str))  # a plain TextModel: the text path


def test_a_provider_that_rejects_the_schema_falls_back_to_text() -> None:
    class Rejected(Exception):
        status_code = 400

    class Rejecting(StructuredChatModel):
        def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            from langchain_core.runnables import RunnableLambda

            def fail(value: Any) -> Any:
                raise Rejected("response_format json_schema is not supported by this model")

            return RunnableLambda(fail)

    model = LangChainTextModel(Rejecting())
    parse = WithSchema(json.loads, TURN_LIST_SCHEMA)
    prompt = "A question and candidate turns\nQuestion: Miso?\n<turns>\n[1] Ada: Miso\n</turns>"
    assert json.loads(model.complete_json(prompt, parse.schema)) == [1]  # the text answer
    assert model._runnable(TURN_LIST_SCHEMA) is None  # not asked again


def test_llamaindex_function_calling_llms_answer_structured_predict() -> None:
    def generator(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        tools = kwargs.get("tools") or []
        assert tools, "structured_predict asks through a tool"
        name = tools[0].metadata.name
        call = ToolSelection(tool_id="c1", tool_name=name, tool_kwargs={"turns": [2, 5]})
        return ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": [call]})

    llm = MockFunctionCallingLLM(response_generator=generator)
    model = LlamaIndexTextModel(llm)
    assert model.supports_json
    try:
        answer = model.complete_json("Which turns?", TURN_LIST_SCHEMA)
    except Exception as exc:  # the mock's tool-call plumbing differs between versions
        pytest.skip(f"MockFunctionCallingLLM cannot answer structured_predict here: {exc}")
    assert json.loads(answer) == {"turns": [2, 5]}


# -- item 5: LlamaIndex usage in both naming styles ------------------------------------------


class _Usage:
    def __init__(self, **numbers: int) -> None:
        self.__dict__.update(numbers)


class UsageLLM(CustomLLM):
    """A LlamaIndex LLM whose responses carry a provider's raw usage."""

    raw: Any = None

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata()

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text="Ada adopted Miso.", raw=self.raw)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        yield self.complete(prompt)


@pytest.mark.parametrize(
    "raw",
    [
        {"usage": {"prompt_tokens": 77, "completion_tokens": 5}},  # OpenAI, dict
        {"usage": _Usage(input_tokens=77, output_tokens=5)},  # Anthropic, object
        _Usage(usage=_Usage(prompt_tokens=77, completion_tokens=5)),  # OpenAI, object
    ],
)
def test_llamaindex_usage_is_read_in_both_naming_styles(raw: Any) -> None:
    answer = LlamaIndexTextModel(UsageLLM(raw=raw)).complete("Summarize.")
    assert answer == "Ada adopted Miso."
    assert (answer.input_tokens, answer.output_tokens) == (77, 5)  # type: ignore[attr-defined]


def test_llamaindex_usage_from_additional_kwargs_and_none() -> None:
    response = CompletionResponse(
        text="x", additional_kwargs={"prompt_tokens": 11, "completion_tokens": 2}
    )
    assert response_usage(response) == (11, 2)
    assert response_usage(CompletionResponse(text="x")) == (None, None)
