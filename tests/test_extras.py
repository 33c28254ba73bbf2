"""Each adapter names the extra to install when its framework is missing (issue 22, item 11).

A missing framework is simulated in a fresh interpreter with ``sys.modules[name] = None``,
which makes every ``import name`` fail as if the package were not installed.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import ROOT

CASES = [
    ("langchain", "from langchain_recursive_memory import RecursiveMemoryMiddleware", "agents"),
    ("langchain", "import langchain_recursive_memory.middleware", "agents"),
    ("langgraph", "import langchain_recursive_memory.middleware", "agents"),
    (
        "langchain_core",
        "from langchain_recursive_memory import RecursiveSummaryChatMessageHistory",
        "langchain",
    ),
    ("langchain_core", "import langchain_recursive_memory.chat_message_histories", "langchain"),
    ("langchain_core", "import langchain_recursive_memory.retrievers", "langchain"),
    ("langchain_core", "import langchain_recursive_memory.messages", "langchain"),
    ("langchain_core", "import langchain_recursive_memory.language_models", "langchain"),
    ("llama_index", "import llamaindex_higmem", "llamaindex"),
    ("llama_index", "from llamaindex_higmem import RecursiveSummaryMemory", "llamaindex"),
]


@pytest.mark.parametrize(("missing", "statement", "extra"), CASES)
def test_a_missing_framework_names_the_extra_to_install(missing, statement, extra):
    code = (
        "import sys\n"
        f"sys.modules[{missing!r}] = None\n"
        "from langchain_recursive_memory.core import RecursiveMemoryError\n"
        "try:\n"
        f"    {statement}\n"
        "except RecursiveMemoryError as exc:\n"
        "    assert isinstance(exc, ImportError), type(exc)\n"
        "    print(exc)\n"
        "else:\n"
        "    raise SystemExit('imported without the framework')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f'pip install "langchain-recursive-memory[{extra}]"' in out.stdout
    assert missing in out.stdout  # names what is missing


def test_the_core_still_imports_without_any_framework():
    code = (
        "import sys\n"
        "for name in ('langchain', 'langchain_core', 'langgraph', 'llama_index'):\n"
        "    sys.modules[name] = None\n"
        "import langchain_recursive_memory\n"
        "from langchain_recursive_memory.core import RecursiveMemory, MemoryStore\n"
        "from langchain_recursive_memory.cli import app\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def _extra(name: str) -> set[str]:
    text = (ROOT / "pyproject.toml").read_text()
    block = re.search(rf"^{name} = \[(.*?)^\]", text, re.M | re.S)
    assert block is not None, name
    return {re.split(r"[<>=\[]", dep)[0] for dep in re.findall(r'"([^"]+)"', block.group(1))}


def test_all_installs_every_adapters_framework():
    every = _extra("langchain") | _extra("llamaindex") | _extra("agents")
    assert every <= _extra("all"), every - _extra("all")
