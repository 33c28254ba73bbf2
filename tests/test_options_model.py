"""One options model: every memory option is a field of ``core.options.MemoryOptions``.

Each surface derives its options from the model: ``MemoryOptions`` itself (and so the
engines, the LangChain chat history and agent middleware), ``MemoryConfig``'s checks of the
budget, ``build_memory``, the LlamaIndex memory (its fields, names, descriptions and
defaults) and the CLI's ``--option``. What Python's static typing needs written out (the
``MemoryKwargs`` and ``LlamaIndexKwargs`` TypedDicts for ``Unpack``) is held equal to the
model here.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

import pytest
from fakes import BagOfWordsEmbedder
from typer.testing import CliRunner

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.cli import app
from langchain_recursive_memory.cli._app import _OPTION_HELP, parse_options
from langchain_recursive_memory.core import ConfigurationError, MemoryConfig, MemoryStore
from langchain_recursive_memory.core.builder import build_memory
from langchain_recursive_memory.core.options import (
    BUDGET,
    CLI,
    ENGINE,
    LLAMAINDEX,
    OPTIONS,
    PYTHON,
    RECALL_SCOPES,
    SURFACES,
    WHOLE,
    LlamaIndexKwargs,
    MemoryKwargs,
    MemoryOptions,
)
from langchain_recursive_memory.core.recursive import HybridMemory, RecursiveMemory
from langchain_recursive_memory.core.retrieval.pool import SCOPES
from langchain_recursive_memory.middleware import RecursiveMemoryMiddleware
from llamaindex_higmem import RecursiveSummaryMemory


def _hints(typed_dict: type) -> dict[str, Any]:
    return {k: v for k, v in typing.get_type_hints(typed_dict).items() if k != "model_config"}


def test_the_typed_declarations_equal_the_model():
    python, llama = OPTIONS.on(PYTHON), OPTIONS.on(LLAMAINDEX)
    assert list(MemoryOptions.model_fields) == list(OPTIONS)
    model = _hints(MemoryOptions)
    assert _hints(MemoryKwargs) == {n: model[n] for n in python}
    assert _hints(LlamaIndexKwargs) == {n: model[o.name] for n, o in llama.items()}
    assert {o.layer for o in OPTIONS.values()} == {BUDGET, ENGINE, WHOLE}
    assert all(o.surfaces <= SURFACES and PYTHON in o.surfaces for o in OPTIONS.values())
    assert all(o.doc for o in OPTIONS.values())
    assert RECALL_SCOPES == SCOPES
    assert next(iter(llama)) == "token_limit"


def test_the_llamaindex_fields_are_the_model_s_under_its_names():
    fields = RecursiveSummaryMemory.model_fields
    resolved = {"summary_role": "user", "recall_tokens": 0}  # the fields hold resolved values
    for name, option in OPTIONS.on(LLAMAINDEX).items():
        assert (fields[name].description or "").startswith(OPTIONS.doc_for(option.name, LLAMAINDEX))
        assert fields[name].default == resolved.get(option.name, option.default)
    memory = RecursiveSummaryMemory.from_defaults(
        session_id="s", store=MemoryStore.in_memory(), token_limit=900, keep_messages=3
    )
    assert (memory.token_limit, memory.keep_messages) == (900, 3)
    assert memory.memory.options.keep_messages == 3


def test_budget_options_are_memory_config_fields():
    config = MemoryOptions(max_tokens=900, keep_messages=3, max_messages=8).memory_config()
    for option in OPTIONS.layer(BUDGET):
        assert hasattr(config, option.name)
    assert (config.max_tokens, config.keep_messages, config.max_messages) == (900, 3, 8)


def test_every_adapter_documents_each_option_in_the_model_s_words():
    keep = OPTIONS.doc_for("keep_messages", PYTHON)
    for doc in (RecursiveSummaryChatMessageHistory.__doc__, RecursiveMemoryMiddleware.__doc__):
        assert doc is not None and "{OPTIONS}" not in doc
        assert f"keep_messages: {keep[:40]}" in doc
    llama = RecursiveSummaryMemory.from_defaults.__doc__ or ""
    assert "token_limit: Budget of the whole context" in llama
    assert "Tokens of token_limit reserved" in llama  # the model's words, LlamaIndex's names
    assert all(name in _OPTION_HELP for name in OPTIONS.on(CLI))


def test_the_recall_share_follows_one_rule_on_every_path():
    store = MemoryStore.in_memory()
    quarter = 2000 // 4
    assert RecursiveMemory("a", store=store).config.recall_tokens == 0
    dense = RecursiveMemory("b", store=store, embedder=BagOfWordsEmbedder())
    assert dense.config.recall_tokens == 0
    assert HybridMemory("c", store=store).config.recall_tokens == quarter
    assert HybridMemory("c2", store=store, recall_tokens=40).config.recall_tokens == 40
    user = RecursiveMemory("d", store=store, user_id="u", recall_scope="user")
    assert user.config.recall_tokens == quarter
    built = build_memory("e", MemoryOptions(embedder=BagOfWordsEmbedder()), store=store)
    assert isinstance(built, HybridMemory) and built.config.recall_tokens == quarter
    assert not built.extract_facts  # the options as given: HybridMemory's default is not forced
    assert MemoryOptions(extract_facts=True).memory_config().recall_tokens == quarter


def test_options_and_keyword_options_together_are_an_error():
    with pytest.raises(ConfigurationError, match="give either options or"):
        RecursiveMemory("s", store=MemoryStore.in_memory(), options=MemoryOptions(), max_tokens=900)


# -- an option added in one place -------------------------------------------------------------


def _history(**kwargs: Any) -> Any:
    return RecursiveSummaryChatMessageHistory("s", store=MemoryStore.in_memory(), **kwargs)


def _middleware(**kwargs: Any) -> Any:
    return RecursiveMemoryMiddleware(store=MemoryStore.in_memory(), **kwargs)


def _llamaindex(**kwargs: Any) -> Any:
    return RecursiveSummaryMemory.from_defaults(store=MemoryStore.in_memory(), **kwargs)


def _from_kwargs(**kwargs: Any) -> Any:
    return MemoryOptions.from_kwargs(kwargs)


def _cli(**kwargs: Any) -> Any:
    return parse_options([f"{k}={v}" for k, v in kwargs.items()])


def _engine(**kwargs: Any) -> Any:
    return RecursiveMemory("s", store=MemoryStore.in_memory(), **kwargs)


def _built(**kwargs: Any) -> Any:
    return build_memory("s", MemoryOptions(**kwargs), store=MemoryStore.in_memory())


ENFORCERS: dict[str, Callable[..., Any]] = {
    "MemoryConfig": MemoryConfig,
    "RecursiveMemory": _engine,
    "HybridMemory": lambda **kw: HybridMemory("s", store=MemoryStore.in_memory(), **kw),
    "build_memory": _built,
    "chat history": _history,
    "agent middleware": _middleware,
    "LlamaIndex from_defaults": _llamaindex,
    "CLI --option": _cli,
}


@pytest.mark.parametrize("surface", list(ENFORCERS))
def test_a_value_an_option_refuses_is_refused_by_every_surface(surface):
    build = ENFORCERS[surface]
    build(max_messages=4)
    with pytest.raises(ConfigurationError, match="max_messages=1: must be an integer >= 2"):
        build(max_messages=1)


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("keep_tokens", -1, "must be an integer >= 0"),
        ("summary_role", "tool", "must be one of"),
        ("recall_scope", "team", "must be one of"),
        ("extract_facts", "yes", "valid boolean"),
        ("retry", 3, "instance of RetryPolicy"),
        ("tokenizer_model", 4, "valid string"),
    ],
)
def test_a_bad_value_names_the_option_and_the_value(option, value, says):
    with pytest.raises(ConfigurationError) as caught:
        MemoryOptions(**{option: value})
    assert str(caught.value).startswith(f"{option}={value!r}:") and says in str(caught.value)


# -- unknown options ----------------------------------------------------------------------------


@pytest.mark.parametrize("surface", list(ENFORCERS))
def test_an_unknown_option_is_a_configuration_error_naming_it(surface):
    with pytest.raises(ConfigurationError) as caught:
        ENFORCERS[surface](keep_mesages=3)
    assert "keep_mesages" in str(caught.value)


def test_a_misspelt_option_gets_the_closest_one_and_the_table():
    with pytest.raises(ConfigurationError) as caught:
        MemoryOptions.from_kwargs({"keep_mesages": 3})
    message = str(caught.value)
    assert message.startswith("keep_mesages=3: is not an option; the options are [")
    assert message.endswith("did you mean 'keep_messages'?")
    assert all(name in message for name in OPTIONS.on(PYTHON))


def test_the_cli_takes_memory_options_and_reports_a_bad_one(tmp_path):
    chat = tmp_path / "chat.jsonl"
    chat.write_text('{"role": "user", "content": "hello"}\n', encoding="utf-8")
    runner = CliRunner(env={"COLUMNS": "200"})
    store = ["--path", str(tmp_path / "store")]
    ok = runner.invoke(
        app,
        [*store, "ingest", str(chat), "-s", "s1", "-o", "max_messages=6", "-o", "keep_messages=2"],
    )
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(
        app, [*store, "ingest", str(chat), "-s", "s1", "--option", "keep_mesages=2"]
    )
    assert bad.exit_code == 1
    assert "keep_mesages='2': is not an option" in bad.output
    shown = runner.invoke(app, [*store, "show", "s1", "-o", "recall_scope=everyone"])
    assert shown.exit_code == 1 and "recall_scope='everyone': must be one of" in shown.output


def test_a_role_alias_is_a_summary_role_on_every_surface(tmp_path):
    """The table says LangChain's "human" and "ai" are summary roles: every surface agrees."""
    assert MemoryConfig(summary_role="ai").summary_role == "assistant"
    assert MemoryOptions(summary_role="human").memory_config().summary_role == "user"
    chat = tmp_path / "chat.jsonl"
    chat.write_text('{"role": "user", "content": "hello"}\n', encoding="utf-8")
    runner = CliRunner(env={"COLUMNS": "200"})
    store = ["--path", str(tmp_path / "store")]
    ok = runner.invoke(app, [*store, "ingest", str(chat), "-s", "s1", "-o", "summary_role=human"])
    assert ok.exit_code == 0, ok.output
    with pytest.raises(ConfigurationError, match="summary_role='boss'"):
        MemoryConfig(summary_role="boss")


def test_the_llamaindex_fields_say_what_they_hold():
    fields = RecursiveSummaryMemory.model_fields
    assert fields["recall_tokens"].default == 0
    assert "(0: no recall)" in (fields["recall_tokens"].description or "")


def test_llamaindex_suggests_the_closest_setting():
    with pytest.raises(ConfigurationError, match="did you mean 'keep_messages'"):
        RecursiveSummaryMemory.from_defaults(
            session_id="s", store=MemoryStore.in_memory(), keep_mesages=3
        )
