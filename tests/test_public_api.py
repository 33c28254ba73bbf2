"""The public surface is pinned: exports, sorting, typing marker, framework-free core; and
``get_summary()`` is the latest ``Summary`` on every engine and adapter (issue 23).
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from conftest import LIBRARY, ROOT

import langchain_recursive_memory
import langchain_recursive_memory.core as core
from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.core import HiGMem, RecursiveMemory, Turn, TurnNode
from langchain_recursive_memory.core.session import SessionRef
from llamaindex_higmem import RecursiveSummaryMemory

#: every package of the library with an ``__all__`` (ruff's RUF022 would sort them
#: isort-style; they keep sorted() order)
PACKAGES_WITH_ALL = [
    "langchain_recursive_memory",
    "langchain_recursive_memory.cli",
    "langchain_recursive_memory.core",
    "langchain_recursive_memory.core.higmem",
    "langchain_recursive_memory.core.prompts",
    "langchain_recursive_memory.core.recursive",
    "langchain_recursive_memory.core.runtime",
    "langchain_recursive_memory.core.storage",
    "langchain_recursive_memory.middleware",
    "langchain_recursive_memory.servers",
    "llamaindex_higmem",
]


def test_every_package_with_all_is_listed():
    packages = [
        ".".join(path.parent.relative_to(ROOT).parts)
        for package in LIBRARY
        for path in (ROOT / package).rglob("__init__.py")
    ]
    found = sorted(p for p in packages if hasattr(importlib.import_module(p), "__all__"))
    assert found == PACKAGES_WITH_ALL


@pytest.mark.parametrize("name", PACKAGES_WITH_ALL)
def test_all_is_sorted_unique_and_importable(name):
    module = importlib.import_module(name)
    names = list(module.__all__)
    assert names == sorted(names)
    assert len(set(names)) == len(names)
    for name in names:
        assert getattr(module, name) is not None


def test_top_level_exports():
    assert set(langchain_recursive_memory.__all__) == {
        "CacheLimits",
        "ConfigurationError",
        "Context",
        "EmbeddingError",
        "Fact",
        "FoldResult",
        "HiGMem",
        "HiGMemRetriever",
        "HybridMemory",
        "InvalidInputError",
        "LangChainTextModel",
        "MemoryConfig",
        "MemoryStore",
        "ModelError",
        "ModelOutputError",
        "ModelTimeoutError",
        "RecallHit",
        "RecursiveMemory",
        "RecursiveMemoryError",
        "RecursiveMemoryMiddleware",
        "RecursiveMemoryRetriever",
        "RecursiveSummaryChatMessageHistory",
        "RetryPolicy",
        "StoreError",
        "Summary",
        "TokenCounter",
        "TokenizerError",
        "Turn",
        "WriteOutcomeUnknownError",
        "__version__",
    }


def test_errors_form_one_hierarchy():
    base = core.RecursiveMemoryError
    for name in core.__all__:
        obj = getattr(core, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, base), name
    assert issubclass(core.ConfigurationError, ValueError)
    assert issubclass(core.ModelTimeoutError, TimeoutError)


def test_py_typed_markers_ship():
    for package in LIBRARY:
        assert (ROOT / package / "py.typed").is_file()


def test_core_imports_neither_framework():
    code = (
        "import sys\n"
        "import langchain_recursive_memory.core\n"
        "import langchain_recursive_memory\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'langchain', 'llama_index'))\n"
        "print(bad)\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_version_matches_pyproject():
    import re

    text = (ROOT / "pyproject.toml").read_text()  # tomllib is 3.11+; the package is 3.10+
    version = re.search(r'^version = "([^"]+)"', text, re.M)
    assert version is not None
    assert version.group(1) == langchain_recursive_memory.__version__


def test_the_engines_hand_out_their_documented_types(store):
    memory = RecursiveMemory("names", store=store, max_tokens=300)
    for i in range(30):
        memory.add([Turn(role="user", text=f"Message {i} about the orchard and its pears.")])
    assert memory.get_summary() is not None
    assert isinstance(memory.session, SessionRef)  # docs/how-it-works.md, Names
    graph = HiGMem("names-hg", store=store)
    graph.add([Turn(role="user", text="Ada booked the Lisbon trip.")])
    graph.flush()
    nodes = graph.turn_nodes()
    assert nodes != [] and all(isinstance(n, TurnNode) for n in nodes)


async def test_get_summary_is_the_record_everywhere_and_summary_its_text(store):
    from llama_index.core.llms import ChatMessage

    history = RecursiveSummaryChatMessageHistory("lc", store=store, max_tokens=300)
    llama = RecursiveSummaryMemory.from_defaults(session_id="li", store=store, token_limit=300)
    for i in range(30):
        text = f"Message {i} about the orchard and its pears."
        history.add_user_message(text)
        llama.put_messages([ChatMessage(role="user", content=text)])
    for adapter in (history, llama):
        record = adapter.get_summary()
        assert record is not None and adapter.summary == record.text
        assert await adapter.aget_summary() == record
    engine = history.memory
    assert await engine.aget_summary() == engine.get_summary() is not None
    assert not hasattr(engine, "asummary")
