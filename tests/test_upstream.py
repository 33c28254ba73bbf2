"""The frameworks' own tests of the classes we replace, run against ours.

LangChain: langchain-core's ``tests/unit_tests/chat_history/test_chat_history.py`` and
``tests/unit_tests/runnables/test_history.py`` (``InMemoryChatMessageHistory`` and
``RunnableWithMessageHistory``), taken unchanged from the langchain-core sdist on PyPI of
the installed version (``.ci/run`` downloads and unpacks it; set ``LRM_UPSTREAM_DIR`` to
the unpacked ``tests`` folder's parent to run them locally) and pointed at
``RecursiveSummaryChatMessageHistory`` by ``tests/upstream/langchain_dropin.py``.

Documented differences (the deselected tests):

* ``test_chat_history_deprecated`` checks that LangChain's classes say in their
  docstrings that they are deprecated; ours is not.

LlamaIndex publishes no tests on PyPI; ``tests/test_llamaindex_memory.py`` checks the
``ChatMemoryBuffer`` contract our memory replaces.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

UPSTREAM = Path(os.environ.get("LRM_UPSTREAM_DIR", ROOT / ".ci" / "upstream" / "langchain-core"))
TESTS = [
    "tests/unit_tests/chat_history/test_chat_history.py",
    "tests/unit_tests/runnables/test_history.py",
]
DIFFERENCES = ["test_chat_history_deprecated"]


@pytest.mark.skipif(
    not all((UPSTREAM / t).exists() for t in TESTS),
    reason="langchain-core's own tests are not unpacked (.ci/run does it; see the module doc)",
)
def test_langchains_own_history_tests_pass_with_our_history() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "upstream"), str(UPSTREAM)]),
    }
    deselect = " and ".join(f"not {name}" for name in DIFFERENCES)
    out = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "langchain_dropin",
            "-p", "no:cacheprovider", "-c", os.devnull, "--rootdir", str(UPSTREAM),
            "-o", "asyncio_mode=auto", "--noconftest",
            "-k", deselect, *TESTS,
        ],
        cwd=UPSTREAM, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]
    assert " passed" in out.stdout and " failed" not in out.stdout
