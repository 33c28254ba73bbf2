"""Release check: the wheel builds, installs in a fresh venv and imports both packages."""

from __future__ import annotations

import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import langchain_recursive_memory

ROOT = Path(__file__).resolve().parents[1]


def test_changelog_top_release_matches_the_version():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\]", changelog, re.M)
    assert headings[0] == "Unreleased"
    releases = [h for h in headings if h != "Unreleased"]
    assert releases, "no released version in CHANGELOG.md"
    assert releases[0] == langchain_recursive_memory.__version__
    assert re.search(
        rf"^## \[{re.escape(releases[0])}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M
    )


@pytest.mark.slow
def test_the_wheel_installs_in_a_fresh_venv_and_imports_both_packages(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    wheels = list(dist.glob("langchain_recursive_memory-*.whl"))
    assert len(wheels) == 1
    assert langchain_recursive_memory.__version__ in wheels[0].name
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"{wheels[0]}[all]"],
        check=True,
        capture_output=True,
        timeout=1800,
    )
    code = (
        "import langchain_recursive_memory, llamaindex_higmem\n"
        "from langchain_recursive_memory import RecursiveSummaryChatMessageHistory, HiGMem\n"
        "from llamaindex_higmem import RecursiveSummaryMemory, HiGMemRetriever\n"
        "from langchain_recursive_memory.core import TokenCounter\n"
        "assert TokenCounter('gpt-4o').count_text('hello world') == 2\n"
        "print(langchain_recursive_memory.__version__)\n"
    )
    out = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == langchain_recursive_memory.__version__
    lrm = subprocess.run(
        [str(env / "bin" / "lrm"), "--help"], capture_output=True, text=True, timeout=300
    )
    assert lrm.returncode == 0 and "demo" in lrm.stdout
