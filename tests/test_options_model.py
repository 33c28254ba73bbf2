"""One options model: every memory option is defined once, in ``core.options.OPTIONS``.

Each surface reads that table: ``MemoryOptions.from_kwargs`` (and so the LangChain chat
history and agent middleware), ``MemoryConfig``'s checks, ``build_memory``, the LlamaIndex
memory (its settings, names, field descriptions and defaults) and the CLI's ``--option``.
Python's static typing forces some declarations to be written out (the ``MemoryOptions``
dataclass, the ``MemoryKwargs`` and ``MemorySettings`` TypedDicts that ``Unpack`` needs,
the pydantic fields, the engine's keywords): :func:`drift` compares each one with the
table, so an option added to the table alone names every declaration still to follow.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, ForwardRef

import pytest
from typer.testing import CliRunner

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.cli import app
from langchain_recursive_memory.cli._app import _OPTION_HELP, parse_options
from langchain_recursive_memory.core import ConfigurationError, MemoryConfig, MemoryStore
from langchain_recursive_memory.core.builder import MemoryKwargs, MemoryOptions, build_memory
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
    Option,
    OptionTable,
)
from langchain_recursive_memory.core.recursive import HybridMemory, RecursiveMemory
from langchain_recursive_memory.core.retrieval.pool import SCOPES
from langchain_recursive_memory.middleware import RecursiveMemoryMiddleware
from llamaindex_higmem import RecursiveSummaryMemory
from llamaindex_higmem.memory import MemorySettings

DUMMY = Option(
    "dummy_option",
    "int | None",
    None,
    "A made-up option of {max_tokens}, for this test only.",
    BUDGET,
    minimum=3,
    aliases={LLAMAINDEX: "dummy_setting"},
)

# What a surface spells otherwise, on purpose (each named and explained).
LLAMAINDEX_TYPES = {"summary_role": "str | MessageRole"}  # from_defaults takes the enum too
LLAMAINDEX_FIELD_DEFAULTS = {"summary_role": "user", "recall_tokens": 0}  # resolved values


def _annotation(value: Any) -> str:
    return value.__forward_arg__ if isinstance(value, ForwardRef) else str(value)


def drift(table: OptionTable) -> list[str]:
    """Every typed declaration that differs from ``table`` (one line each)."""
    found: list[str] = []
    python = table.on(PYTHON)
    declared = {f.name: f for f in dataclasses.fields(MemoryOptions)}
    if list(declared) != list(python):
        found.append(f"MemoryOptions fields {list(declared)} != the table's {list(python)}")
    for name, option in python.items():
        field = declared.get(name)
        if field is not None and (field.type, field.default) != (option.annotation, option.default):
            found.append(f"MemoryOptions.{name}: {field.type} = {field.default!r}")
    kwargs = {k: _annotation(v) for k, v in MemoryKwargs.__annotations__.items()}
    if kwargs != {n: o.annotation for n, o in python.items()}:
        found.append(f"MemoryKwargs {kwargs} != the table's python options")
    llama = table.on(LLAMAINDEX)
    settings = {k: _annotation(v) for k, v in MemorySettings.__annotations__.items()}
    if settings != {n: LLAMAINDEX_TYPES.get(o.name, o.annotation) for n, o in llama.items()}:
        found.append(f"MemorySettings {settings} != the table's llamaindex options")
    fields = RecursiveSummaryMemory.model_fields
    for name, option in llama.items():
        field = fields.get(name)
        default = LLAMAINDEX_FIELD_DEFAULTS.get(option.name, option.default)
        doc = table.doc_for(option.name, LLAMAINDEX)
        if field is None or not (field.description or "").startswith(doc):
            found.append(f"RecursiveSummaryMemory.{name}: no field or not the table's doc")
        elif field.default != default:
            found.append(f"RecursiveSummaryMemory.{name}: default {field.default!r}")
    config_fields = {f.name for f in dataclasses.fields(MemoryConfig)}
    found += [
        f"MemoryConfig has no field {o.name}"
        for o in table.layer(BUDGET)
        if o.name not in config_fields
    ]
    engine = inspect.signature(RecursiveMemory.__init__).parameters
    for option in table.layer(ENGINE) + table.layer(WHOLE):
        parameter = engine.get(option.name)
        if parameter is None or parameter.default != option.default:
            found.append(f"RecursiveMemory({option.name}=...) is not the table's")
    return found


def test_the_typed_declarations_equal_the_table():
    assert drift(OPTIONS) == []
    assert {o.layer for o in OPTIONS.values()} == {BUDGET, ENGINE, WHOLE}
    assert all(o.surfaces <= SURFACES and PYTHON in o.surfaces for o in OPTIONS.values())
    assert RECALL_SCOPES == SCOPES
    assert next(iter(OPTIONS.on(LLAMAINDEX))) == "token_limit"


def test_every_adapter_documents_each_option_in_the_table_s_words():
    keep = OPTIONS.doc_for("keep_messages", PYTHON)
    for doc in (RecursiveSummaryChatMessageHistory.__doc__, RecursiveMemoryMiddleware.__doc__):
        assert doc is not None and "{OPTIONS}" not in doc
        assert f"keep_messages: {keep[:40]}" in doc
    llama = RecursiveSummaryMemory.from_defaults.__doc__ or ""
    assert "token_limit: Budget of the whole context" in llama
    assert "Tokens of token_limit reserved" in llama  # the table's words, LlamaIndex's names
    assert all(name in _OPTION_HELP for name in OPTIONS.on(CLI))


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


GATES: dict[str, tuple[Callable[..., Any], str]] = {
    "MemoryOptions.from_kwargs": (_from_kwargs, "dummy_option"),
    "MemoryOptions(...)": (MemoryOptions, "dummy_option"),
    "chat history": (_history, "dummy_option"),
    "agent middleware": (_middleware, "dummy_option"),
    "LlamaIndex from_defaults": (_llamaindex, "dummy_setting"),
    "CLI --option": (_cli, "dummy_option"),
}


@pytest.mark.parametrize("gate", list(GATES))
def test_an_option_added_once_is_an_option_of_every_surface(gate):
    build, spelled = GATES[gate]
    with OPTIONS.registered(DUMMY):
        with pytest.raises(ConfigurationError) as caught:
            build(bogus_option=7)
        assert "bogus" in str(caught.value) and spelled in str(caught.value)
    with pytest.raises(ConfigurationError) as caught:
        build(bogus_option=7)
    assert "dummy" not in str(caught.value)


def test_an_option_added_once_is_parsed_checked_and_renamed_by_the_table():
    with OPTIONS.registered(DUMMY):
        assert parse_options(["dummy-option=5", "keep_messages=none"]) == {
            "dummy_option": 5,
            "keep_messages": None,
        }
        with pytest.raises(ConfigurationError, match="dummy_option=2: must be an integer >= 3"):
            parse_options(["dummy_option=2"])
        assert OPTIONS.to_core({"dummy_setting": 4, "token_limit": 900}, LLAMAINDEX) == {
            "dummy_option": 4,
            "max_tokens": 900,
        }
        assert OPTIONS.doc_for("dummy_option", LLAMAINDEX).endswith(
            "of token_limit, for this test only."
        )
        assert DUMMY in OPTIONS.layer(BUDGET)
    assert "dummy_option" not in OPTIONS


def test_an_option_added_once_names_every_typed_declaration_to_follow():
    """Full dynamism stops at Python's static declarations: the drift check names each."""
    with OPTIONS.registered(DUMMY, dataclasses.replace(DUMMY, name="dummy_engine", layer=ENGINE)):
        found = "\n".join(drift(OPTIONS))
    for declaration in (
        "MemoryOptions fields",
        "MemoryKwargs",
        "MemorySettings",
        "RecursiveSummaryMemory.dummy_setting",
        "MemoryConfig has no field dummy_option",
        "RecursiveMemory(dummy_engine=...)",
    ):
        assert declaration in found


# -- a check changed in one place --------------------------------------------------------------


STRICTER = dataclasses.replace(OPTIONS["max_messages"], minimum=5)


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
def test_a_check_changed_once_is_enforced_by_every_surface(surface):
    build = ENFORCERS[surface]
    build(max_messages=4)
    stricter = pytest.raises(ConfigurationError, match="max_messages=4: must be an integer >= 5")
    with OPTIONS.registered(STRICTER), stricter:
        build(max_messages=4)


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
