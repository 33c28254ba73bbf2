"""One rule for the summary cap, as the README states it (issue 22, item 6).

README: ``max_summary_tokens`` defaults to 300, or a quarter of a ``max_tokens`` under
1,200 (at least 16); an explicit value wins. Every engine and adapter follows it.
"""

from __future__ import annotations

import json
import re

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from typer.testing import CliRunner

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.cli import app
from langchain_recursive_memory.core import (
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
    chat.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    runner = CliRunner(env={"COLUMNS": "200"})
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
