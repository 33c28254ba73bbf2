"""One rule for the summary cap, as the docs state it (issue 22, item 6).

docs/how-it-works.md: ``max_summary_tokens`` defaults to 300, or a quarter of a
``max_tokens`` under 1,200 (at least 16); an explicit value wins. Every engine and adapter
follows it.
"""

from __future__ import annotations

import re

import pytest
from conftest import cli_runner, write_jsonl
from langchain.agents import create_agent
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.cli import app
from langchain_recursive_memory.core import (
    ConfigurationError,
    HybridMemory,
    MemoryConfig,
    MemoryStore,
    RecursiveMemory,
)
from langchain_recursive_memory.core.config import summary_cap
from langchain_recursive_memory.middleware import RecursiveMemoryMiddleware
from llamaindex_higmem import RecursiveSummaryMemory


@pytest.mark.parametrize(
    ("max_tokens", "cap"),
    [(100, 25), (500, 125), (1000, 250), (1199, 299), (1200, 300), (8000, 300)],
)
def test_the_rule(max_tokens, cap):
    assert summary_cap(max_tokens, None) == cap
    assert MemoryConfig(max_tokens=max_tokens).max_summary_tokens == cap
    assert MemoryConfig(max_tokens=max_tokens, max_summary_tokens=20).max_summary_tokens == 20


def _middleware_cap(store: MemoryStore) -> int:
    middleware = RecursiveMemoryMiddleware("s", store=store, max_tokens=500)
    agent = create_agent(
        GenericFakeChatModel(messages=iter([AIMessage("ok")])), middleware=[middleware]
    )
    agent.invoke({"messages": [("user", "hi")]})
    return middleware.get_memory("s").config.max_summary_tokens


ENGINES = {
    "RecursiveMemory": lambda s: RecursiveMemory("s", store=s, max_tokens=500).config,
    "HybridMemory": lambda s: HybridMemory("s", store=s, max_tokens=500).config,
    "chat history": lambda s: (
        RecursiveSummaryChatMessageHistory("s", store=s, max_tokens=500).memory.config
    ),
    "LlamaIndex": lambda s: (
        RecursiveSummaryMemory.from_defaults(store=s, token_limit=500).memory.config
    ),
}


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_engine_and_adapter_takes_a_quarter_of_a_small_budget(engine, store):
    assert ENGINES[engine](store).max_summary_tokens == 125


def test_the_middleware_takes_a_quarter_of_a_small_budget(store):
    assert _middleware_cap(store) == 125


def test_lrm_ingest_max_tokens_500_gives_a_summary_within_a_quarter(tmp_path):
    chat = tmp_path / "chat.jsonl"
    lines = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Line {i} of a long talk "
            f"about the harbour, the boats and the weather on day {i}.",
        }
        for i in range(120)
    ]
    write_jsonl(chat, lines)
    runner = cli_runner()
    base = ["--path", str(tmp_path / "db")]
    result = runner.invoke(
        app,
        [
            *base,
            "ingest",
            str(chat),
            "-s",
            "s",
            "--max-tokens",
            "500",
            "--memory",
            "recursive",
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    shown = runner.invoke(app, [*base, "show", "s"])
    assert shown.exit_code == 0, shown.output
    tokens = int(
        re.search(r"Summary v\d+ \(.*?\) · covers \d+ turns · (\d+) tokens", shown.output)[1]
    )
    assert 0 < tokens <= 125
    store = MemoryStore.persistent(tmp_path / "db")
    assert store.session_settings("default", "s")["max_summary_tokens"] == 125


# -- budget errors name what the user passed (issue 28, item 5) -------------------------------


def _error(**options) -> str:
    with pytest.raises(ConfigurationError) as error:
        RecursiveSummaryChatMessageHistory("s", store=MemoryStore.in_memory(), **options)
    return str(error.value)


def _suggested(message: str, name: str, op: str) -> int:
    return int(re.search(rf"\b{name} {op} (-?\d+)", message)[1])


def _fits(**options) -> bool:
    try:
        RecursiveSummaryChatMessageHistory("s", store=MemoryStore.in_memory(), **options)
    except ConfigurationError:
        return False
    return True


def test_only_max_tokens_given_names_it_and_says_the_cap_was_derived():
    message = _error(max_tokens=10)
    assert message.startswith("max_tokens=10: too small")
    assert "max_summary_tokens=16 (derived from max_tokens" in message
    assert "recall_tokens" not in message and "reserve_tokens" not in message
    smallest = _suggested(message, "max_tokens", ">=")
    assert smallest == 82 and _fits(max_tokens=smallest) and not _fits(max_tokens=smallest - 1)


def test_max_tokens_and_max_summary_tokens_given_name_both_and_nothing_derived():
    message = _error(max_tokens=100, max_summary_tokens=90)
    assert message.startswith("max_summary_tokens=90: too large")
    assert "max_tokens=100" in message and "derived" not in message
    assert "recall_tokens" not in message and "reserve_tokens" not in message
    cap = _suggested(message, "max_summary_tokens", "<=")
    assert _fits(max_tokens=100, max_summary_tokens=cap)
    assert not _fits(max_tokens=100, max_summary_tokens=cap + 1)
    budget = _suggested(message, "max_tokens", ">=")
    assert _fits(max_tokens=budget, max_summary_tokens=90)
    assert not _fits(max_tokens=budget - 1, max_summary_tokens=90)


def test_recall_tokens_given_is_named_with_the_derived_cap():
    message = _error(max_tokens=200, recall_tokens=150)
    assert message.startswith("recall_tokens=150: too large")
    assert "max_tokens=200" in message
    assert "max_summary_tokens=50 (derived from max_tokens" in message
    assert "reserve_tokens" not in message
    share = _suggested(message, "recall_tokens", "<=")
    assert _fits(max_tokens=200, recall_tokens=share)
    assert not _fits(max_tokens=200, recall_tokens=share + 1)
    budget = _suggested(message, "max_tokens", ">=")
    assert _fits(max_tokens=budget, recall_tokens=150)
    assert not _fits(max_tokens=budget - 1, recall_tokens=150)
    default = _error(recall_tokens=1900)  # max_tokens not given: its default, said so
    assert default.startswith("recall_tokens=1900:") and "max_tokens=2000 (the default)" in default


def test_a_derived_recall_share_is_said_to_be_derived():
    message = _error(max_tokens=90, extract_facts=True)
    assert message.startswith("max_tokens=90: too small")
    assert "recall_tokens=22 (derived from max_tokens" in message
    budget = _suggested(message, "max_tokens", ">=")
    assert _fits(max_tokens=budget, extract_facts=True)
    assert not _fits(max_tokens=budget - 1, extract_facts=True)
    with pytest.raises(ConfigurationError) as error:
        HybridMemory("s", store=MemoryStore.in_memory(), max_tokens=90)
    assert "recall_tokens=22 (derived from max_tokens" in str(error.value)
    reserve = _error(max_tokens=300, reserve_tokens=250)
    assert reserve.startswith("reserve_tokens=250: too large")
    assert "max_summary_tokens=75 (derived from max_tokens" in reserve


def test_llamaindex_budget_errors_name_token_limit_only():
    with pytest.raises(ConfigurationError) as error:
        RecursiveSummaryMemory.from_defaults(
            store=MemoryStore.in_memory(), token_limit=100, recall_tokens=60
        )
    message = str(error.value)
    assert message.startswith("recall_tokens=60: too large")
    assert "token_limit=100" in message and "derived from token_limit" in message
    assert "max_tokens" not in message
