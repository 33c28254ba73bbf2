"""What people meet at the command line's edges (issue 22, items 5, 10, 12, 13, 14)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from langchain_recursive_memory.cli import app

ROOT = Path(__file__).resolve().parents[1]


def lrm(path: Path, *args: str):
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["--path", str(path), *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


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
