"""The docs cannot rot: README commands, README snippets and every example are checked."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

README = (ROOT / "README.md").read_text()
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def test_readme_opens_with_the_two_commands_and_ci_runs_the_test_one():
    commands = [b.strip() for b in _blocks("bash")[:2]]
    assert "lrm demo" in commands[0]
    assert "pytest" in commands[1]
    assert README.index(commands[0]) < README.index("## ")  # before any section
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci.splitlines()
    # It skips the slow and server tests; README names the command for them, CI runs it.
    rest = '.venv/bin/python -m pytest -m "slow or server"'
    assert rest in README and rest in ci.splitlines()


def test_changelog_has_an_unreleased_section():
    assert "## [Unreleased]" in (ROOT / "CHANGELOG.md").read_text()


@pytest.mark.parametrize("block", _blocks("python"), ids=lambda b: b.split("\n")[0][:40])
def test_every_readme_snippet_lives_in_an_example(block):
    sources = [p.read_text() for p in EXAMPLES]
    assert any(block.strip() in src for src in sources), block


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_every_example_runs_offline(script, tmp_path):
    """Each example runs once, offline, as ``python examples/X.py``, without warnings.

    Warnings are logged to stderr (``logging.basicConfig``) so that a "fold failed" or any
    other warning of the library fails the run (issue 22, item 8; the stand-in
    summarizers must behave like the models they stand in for).
    """
    env = {**os.environ, "LANGCHAIN_RECURSIVE_MEMORY_PATH": str(tmp_path / "store")}
    env.pop("LRM_MODEL", None)
    # The checkout under test, not whichever copy of the package is installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    # `python X.py`, with the library's warnings logged: the script's directory first on
    # sys.path, __main__, its own argv.
    code = (
        "import logging, runpy, sys\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        f"sys.path[0] = {str(script.parent)!r}\n"
        f"sys.argv = [{str(script)!r}]\n"
        f"runpy.run_path({str(script)!r}, run_name='__main__')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert out.stdout.strip()
    assert "fold failed" not in out.stderr, out.stderr[-3000:]
    assert "WARNING:langchain_recursive_memory" not in out.stderr, out.stderr[-3000:]
    if script.name == "lcel_recall.py":
        assert "4471" in out.stdout
    if script.name == "user_memory.py":
        assert all(word in out.stdout for word in ("Ada", "Lisbon", "vegetarian"))


def test_quickstart_keeps_the_budget_and_says_what_is_a_stand_in(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "quickstart.py"),
            "--exchanges",
            "60",
            "--max-tokens",
            "900",
            "--path",
            str(tmp_path),
        ],
        env={k: v for k, v in os.environ.items() if k != "LRM_MODEL"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "Offline run" in out.stdout and "stand-in" in out.stdout
    rows = re.findall(r"│\s+(\d+) │\s+([\d,]+) │\s+([\d,]+) / ([\d,]+) │", out.stdout)
    assert [int(r[0]) for r in rows] == [25, 50, 60]
    for _, _full, used, budget in rows:
        assert int(used.replace(",", "")) <= int(budget.replace(",", "")) == 900
    assert int(rows[-1][1].replace(",", "")) > 3 * 900  # the full history is far larger
    assert "extractive" in out.stdout
