"""What people meet at the command line's edges (issue 22, items 5, 10, 12, 13, 14)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_runner, lrm, write_jsonl
from typer.testing import CliRunner

from langchain_recursive_memory.cli import app


def chat(path: Path, n: int = 4) -> Path:
    records = []
    for i in range(n):
        records.append({"role": "user", "content": f"Question {i} about the harbour."})
        records.append({"role": "assistant", "content": f"Answer {i}: the boats are out."})
    return write_jsonl(path, records)


# -- item 10: a mistyped --path --------------------------------------------------------------

READ_ONLY = [
    ["show", "good"],
    ["recall", "good", "q"],
    ["sessions"],
    ["users"],
    ["clear", "good", "-y"],
    ["expire", "--older-than", "1d"],
    ["show", "--user", "ada"],
    ["rebuild", "good", "--no-progress"],
]


@pytest.mark.parametrize("args", READ_ONLY, ids=lambda a: a[0])
def test_a_path_that_does_not_exist_is_said_to_not_exist(tmp_path, args):
    store = tmp_path / "store"
    lrm(store, "ingest", str(chat(tmp_path / "chat.jsonl")), "-s", "good", "--no-progress")
    typo = tmp_path / "stroe"
    result = lrm(typo, *args)
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"error: no memory store at {typo}: the folder does not exist")
    assert "no session" not in result.output and "No sessions" not in result.output
    assert not typo.exists()


def test_a_folder_without_a_store_is_said_to_hold_none(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = lrm(empty, "sessions")
    assert result.exit_code == 1, result.output
    assert f"no memory store at {empty}: the folder holds none" in result.output
    assert list(empty.iterdir()) == []


# -- item 12: one style for input errors ------------------------------------------------------

CLASS_NAME = re.compile(r"error: \w+Error:")


def test_a_line_that_is_not_json_is_named_by_file_and_line(tmp_path):
    bad = tmp_path / "chat.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\nnot json\n', encoding="utf-8")
    result = lrm(tmp_path / "store", "ingest", str(bad), "-s", "s", "--no-progress")
    assert result.exit_code == 1
    assert result.output == (
        f"error: {bad}:2: not JSON (Expecting value: line 1 column 1 (char 0))\n"
    )


def test_an_unknown_role_is_named_by_file_and_line(tmp_path):
    bad = tmp_path / "chat.jsonl"
    bad.write_text(
        '{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "a"}\n\n\n'
        '{"role": "wizard", "content": "x"}\n',
        encoding="utf-8",
    )
    result = lrm(tmp_path / "store", "ingest", str(bad), "-s", "s", "--no-progress")
    assert result.exit_code == 1
    assert result.output.startswith(f"error: {bad}:5: unknown role 'wizard' (use ")
    assert not CLASS_NAME.search(result.output)


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ({"role": "user", "content": 5}, "content must be a string, null or a list of parts"),
        ({"role": "user", "content": "x", "created_at": "yesterday"}, "created_at 'yesterday'"),
        ([1, 2], "not a message object"),
    ],
)
def test_every_record_error_names_file_and_line(tmp_path, record, problem):
    bad = write_jsonl(tmp_path / "chat.jsonl", [{"role": "user", "content": "hi"}, record])
    result = lrm(tmp_path / "store", "ingest", str(bad), "-s", "s", "--no-progress")
    assert result.exit_code == 1
    assert result.output.startswith(f"error: {bad}:2: "), result.output
    assert problem in result.output and not CLASS_NAME.search(result.output)


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_an_empty_transcript_is_reported_not_ingested(tmp_path, text):
    empty = tmp_path / "chat.jsonl"
    empty.write_text(text, encoding="utf-8")
    result = lrm(tmp_path / "store", "ingest", str(empty), "-s", "s", "--no-progress")
    assert result.exit_code == 1
    assert result.output == f"error: {empty}: no messages to ingest (the file is empty)\n"
    assert "Ingested" not in result.output


def test_errors_carry_no_class_names(tmp_path):
    result = CliRunner().invoke(
        app, ["--host", "127.0.0.1", "--port", "1", "--database", "sqlite://", "sessions"]
    )
    assert result.exit_code == 1
    assert result.output.startswith("error: the Chroma server at 127.0.0.1:1")


@pytest.mark.parametrize(
    "args",
    [
        ["sessions", "--path", "/tmp/x"],
        ["show", "s", "--namespace", "team"],
        ["ingest", "chat.jsonl", "-s", "s", "--prefix", "p"],
    ],
)
def test_a_global_option_after_the_command_gets_a_hint(args):
    result = cli_runner().invoke(app, args)
    assert result.exit_code == 2
    option = next(a for a in args if a.startswith("--") and a not in ("--no-progress",))
    flat = " ".join(result.output.replace("│", " ").split())
    assert f"No such option: {option}" in flat
    assert f"{option} is a global option: give it before the command" in flat
    assert f"lrm {option} {args[args.index(option) + 1]} {args[0]}" in flat


# -- item 13: expire by write time, or by the turns' own times when asked -----------------------


def test_expire_goes_by_write_time_unless_asked_for_the_turns_own_times(tmp_path):
    old = write_jsonl(
        tmp_path / "old.jsonl",
        [
            {"role": "user", "content": "Booked the ferry.", "created_at": "2024-03-01T10:00:00Z"},
            {"role": "assistant", "content": "Noted.", "created_at": "2024-03-01T10:01:00Z"},
        ],
    )
    store = tmp_path / "store"
    lrm(store, "ingest", str(old), "-s", "imported", "--no-progress")
    lrm(store, "ingest", str(chat(tmp_path / "live.jsonl")), "-s", "live", "--no-progress")

    # Ingested today: written today, so not expired by the default (write time).
    kept = lrm(store, "expire", "--older-than", "1d")
    assert kept.exit_code == 0 and "Deleted 0 session(s)" in kept.output

    dry = lrm(store, "expire", "--older-than", "1d", "--by", "created", "--dry-run")
    assert "Would delete 1 session(s)" in dry.output and "imported" in dry.output
    assert "2024-03-01 10:01" in dry.output  # the newest turn's own time

    gone = lrm(store, "expire", "--older-than", "1d", "--by", "created")
    assert gone.exit_code == 0, gone.output
    assert "Deleted 1 session(s)" in gone.output and "imported" in gone.output
    listed = lrm(store, "sessions").output
    assert "live" in listed and "imported" not in listed


def test_the_store_expires_by_created_at_when_asked(tmp_path):
    from langchain_recursive_memory.core import (
        ConfigurationError,
        MemoryStore,
        RecursiveMemory,
        Turn,
    )

    store = MemoryStore.in_memory()
    RecursiveMemory("imported", store=store).add(
        Turn(role="user", text="An old note.", created_at=1_700_000_000.0)
    )
    RecursiveMemory("live", store=store).add(Turn(role="user", text="A new note."))
    assert store.expire(86_400) == []
    assert store.activity(by="created")[("default", "imported")] == 1_700_000_000.0
    assert store.expire(86_400, by="created") == [("default", "imported")]
    assert [s.session_id for s in store.sessions()] == ["live"]
    with pytest.raises(ConfigurationError, match="by='age'"):
        store.expire(86_400, by="age")


# -- item 14: the demo's progress bar and suggested commands ----------------------------------


def test_the_demo_bar_counts_what_it_says_and_its_commands_run_as_printed(tmp_path):
    script = Path(sys.executable).parent / "lrm"
    if not script.exists():
        pytest.skip("no lrm script beside the interpreter")
    venv_lrm = os.path.relpath(script, ROOT)  # as the README's first command runs it
    env = {
        "PATH": "/usr/bin:/bin",  # the venv is not activated
        "TMPDIR": str(tmp_path),
        "HOME": str(tmp_path),
        "COLUMNS": "160",
        "LANGCHAIN_RECURSIVE_MEMORY_PATH": str(tmp_path / "default"),
    }
    run = subprocess.run(
        [venv_lrm, "demo", "--exchanges", "12"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    bars = re.findall(r"(\w+): 100%\|.*?\| (\d+)/(\d+)", run.stderr)
    assert bars, run.stderr
    label, done, total = bars[-1]
    expected = {"exchanges": 12, "turns": 24, "messages": 24}
    assert label in expected and int(total) == int(done) == expected[label], bars[-1]

    commands = [line.strip() for line in run.stdout.split("Explore the store:")[1].splitlines()]
    commands = [c for c in commands if c]
    assert len(commands) == 2, run.stdout
    for command in commands:
        out = subprocess.run(
            command, shell=True, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert out.returncode == 0, (command, out.stdout + out.stderr)
        assert shlex.split(command)[0] == venv_lrm


# -- items 4 and 5: show shows structure, reasoning collapsed ---------------------------------

THOUGHT = "The user wants the weather in Lima; the photo is of the coast."


def structured_chat(path: Path) -> Path:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    return write_jsonl(
        path,
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "Weather in Lima? Look:"}, image],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": THOUGHT, "signature": "c2ln"},
                    {"type": "text", "text": "Let me check."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "weather",
                        "input": {"city": "Lima"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "19 C"}],
            },
            {"role": "assistant", "content": "It is 19 C and sunny."},
        ],
    )


def window_rows(output: str) -> list[str]:
    table = output.split("Window:")[1].split("Facts")[0]
    return [" ".join(line.replace("│", " ").split()) for line in table.splitlines() if "│" in line]


def test_show_shows_calls_results_media_and_collapsed_reasoning(tmp_path):
    store = tmp_path / "store"
    lrm(store, "ingest", str(structured_chat(tmp_path / "chat.jsonl")), "-s", "s", "--no-progress")
    result = lrm(store, "show", "s")
    assert result.exit_code == 0, result.output
    rows = window_rows(result.output)
    user, call, answer, final = (
        next(r for r in rows if key in r)
        for key in ("Weather in Lima", "Let me check", "19 C", "sunny")
    )
    assert "[image, ~765 tokens]" in user
    assert re.search(r"\[reasoning, \d+ tokens\]", call)
    assert "-> weather(city='Lima')" in call
    assert "[result of toolu_1] 19 C" in answer
    assert final.endswith("It is 19 C and sunny.")  # plain text stays plain
    assert THOUGHT not in result.output and "coast" not in result.output

    shown = lrm(store, "show", "s", "--reasoning")
    assert "coast" in " ".join(window_rows(shown.output))


def test_recall_never_returns_reasoning(tmp_path):
    store = tmp_path / "store"
    lrm(
        store,
        "ingest",
        str(structured_chat(tmp_path / "chat.jsonl")),
        "-s",
        "s",
        "--no-progress",
        "--max-tokens",
        "200",
    )
    result = lrm(store, "recall", "s", "the photo the weather in Lima", "--max-tokens", "200")
    assert result.exit_code == 0, result.output
    assert "coast" not in result.output


def test_the_read_only_commands_take_a_relative_path(tmp_path, monkeypatch):
    # `lrm --path ./memory show s` raised "relative path can't be expressed as a file URI"
    # (the check for a log still to move opened Chroma's file by URI).
    monkeypatch.chdir(tmp_path)
    chat = write_jsonl(tmp_path / "chat.jsonl", [{"role": "user", "content": "hello there"}])
    assert lrm(Path("memory"), "ingest", str(chat), "--session", "s").exit_code == 0
    for args in (["show", "s"], ["sessions"], ["recall", "s", "hello"], ["users"]):
        result = lrm(Path("./memory"), *args)
        assert result.exit_code == 0, result.output
    assert "hello there" in lrm(Path("./memory"), "show", "s").output


def test_show_with_a_smaller_budget_derives_the_summary_cap_from_it(tmp_path):
    # `lrm show s --max-tokens 400` on a session recorded with the default budget failed
    # with "max_summary_tokens=300: too large", a value the user never gave: the recorded
    # cap belongs to the recorded budget.
    chat = write_jsonl(
        tmp_path / "chat.jsonl",
        [{"role": "user", "content": f"message {i} about the garden"} for i in range(8)],
    )
    store = tmp_path / "store"
    assert lrm(store, "ingest", str(chat), "--session", "s").exit_code == 0
    result = lrm(store, "show", "s", "--max-tokens", "400")
    assert result.exit_code == 0, result.output
    assert "/ 400" in result.output
    given = lrm(store, "show", "s", "--max-tokens", "400", "--summary-tokens", "300")
    assert given.exit_code != 0 and "300" in given.output
