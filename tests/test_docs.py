"""The docs cannot rot: every code block of README.md and docs/ runs in the tests.

A Python block must live in an example (``examples/``, each run offline below). A shell
command either runs here (the ``lrm`` blocks, in a scratch folder holding the files they
name), is one that ``.ci/run`` runs itself, or is listed in :data:`NOT_RUN` with the
reason and what covers it instead.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, lrm, write_jsonl

README = (ROOT / "README.md").read_text()
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
PAGES = {
    p.relative_to(ROOT).as_posix(): p.read_text()
    for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
}
CI = (ROOT / ".ci" / "run").read_text().splitlines()
PACKAGE_CHECK = (ROOT / ".ci" / "package-check").read_text()

#: the start of a shell command the docs show that no test runs -> why, and what covers it
NOT_RUN = {
    'pip install "langchain-recursive-memory': (
        "installs the published release from PyPI; .ci/package-check installs the wheel "
        "built from this checkout, with [all], in a clean venv"
    ),
    '.venv/bin/python -m pytest -m ""': (
        "every test in one command: .ci/run runs the same tests in two (the slow and server "
        "ones, then the rest)"
    ),
    "chroma run ": "a server that runs until stopped; .ci/run starts one the same way",
    "python benchmarks/": (
        "minutes to hours of measuring; tests/test_live_benchmark.py and the harness tests "
        "run each benchmark's tiny version"
    ),
}
#: a command .ci/package-check runs (the demo from the built wheel)
DEMO = 'python3 -m venv .venv && .venv/bin/pip install -e ".[all]" && .venv/bin/lrm demo'


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def _page_blocks(lang: str) -> list[tuple[str, str]]:
    return [
        (page, block)
        for page, text in PAGES.items()
        for block in re.findall(rf"```{lang}\n(.*?)```", text, re.S)
    ]


def _commands(block: str) -> list[str]:
    """A shell block's commands: its lines without their comments."""
    lines = (re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines())
    return [line for line in lines if line]


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


@pytest.mark.parametrize(
    ("page", "block"), _page_blocks("python"), ids=lambda v: v.split("\n")[0][:40]
)
def test_every_python_block_of_the_docs_lives_in_an_example(page, block):
    sources = [p.read_text() for p in EXAMPLES]
    assert any(block.strip() in src for src in sources), f"{page}:\n{block}"


def test_every_shell_command_of_the_docs_runs_somewhere_or_says_why_not():
    unaccounted = [
        f"{page}: {command}"
        for page, block in _page_blocks("bash")
        for command in _commands(block)
        # lrm: test_the_lrm_blocks_run_as_printed
        if not (
            command.startswith(("lrm ", *NOT_RUN))
            or command in CI
            or (command == DEMO and "lrm demo" in PACKAGE_CHECK)
        )
    ]
    assert unaccounted == []
    # The docs build CI runs is the one the development page shows.
    assert '.venv/bin/mkdocs build --strict --site-dir "$(mktemp -d)"' in CI


def _lrm_blocks() -> list[tuple[str, str]]:
    return [
        (page, block)
        for page, block in _page_blocks("bash")
        if all(c.startswith("lrm ") for c in _commands(block))
    ]


def _the_files_the_blocks_name(folder: Path) -> None:
    chat = [{"role": "user", "content": "My order number is 88-1209, and my name is Ada."}]
    for i in range(12):
        chat += [
            {"role": "user", "content": f"Question {i} about the delivery window."},
            {"role": "assistant", "content": f"Answer {i}: between nine and noon."},
        ]
    write_jsonl(folder / "chat.jsonl", chat)
    week2 = [
        {"role": "user", "content": "I live in Lisbon now, and I am vegetarian."},
        {"role": "assistant", "content": "Noted: Lisbon, vegetarian."},
    ]
    write_jsonl(folder / "week2.jsonl", week2)
    shutil.copy(ROOT / "tests" / "data" / "locomo_tiny.json", folder / "locomo10.json")
    # The upgrade guide's big store: the one 0.2.0 wrote for the upgrade tests.
    shutil.copytree(ROOT / "tests" / "data" / "store-0.2.0", folder / "srv-memory")


@pytest.mark.parametrize(("page", "block"), _lrm_blocks(), ids=lambda v: v.split("\n")[0][:40])
def test_the_lrm_blocks_run_as_printed(page, block, tmp_path, monkeypatch):
    """Each ``lrm`` block, line after line, in a folder holding the files it names."""
    _the_files_the_blocks_name(tmp_path)
    monkeypatch.chdir(tmp_path)
    for command in _commands(block):
        args = shlex.split(command.replace("/srv/memory", "./srv-memory"))[1:]
        path_at = args.index("--path")
        path = Path(args[path_at + 1])
        result = lrm(path, *args[:path_at], *args[path_at + 2 :])
        assert result.exit_code == 0, f"{page}: {command}\n{result.output}"


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
