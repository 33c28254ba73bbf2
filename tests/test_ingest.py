"""Reading JSONL transcripts: `read_jsonl`, with and without the derived stable ids.

The command line's `ingest` reads JSONL with it too (`stable_ids=True`).
"""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from typer.testing import CliRunner

from langchain_recursive_memory.cli import app
from langchain_recursive_memory.core import InvalidInputError
from langchain_recursive_memory.core.ingest import read_jsonl

RECORDS = [
    {"role": "user", "content": "My locker code is 4471."},
    {"role": "assistant", "content": "Noted!", "id": "given-1"},
    {"role": "human", "content": "And my dog is called Pixel."},
]


def write(path, records, blank_lines: bool = True):
    sep = "\n\n" if blank_lines else "\n"
    path.write_text(sep.join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def test_by_default_turns_without_an_id_keep_none(tmp_path):
    turns = read_jsonl(write(tmp_path / "chat.jsonl", RECORDS))
    assert [t.id for t in turns] == [None, "given-1", None]
    assert [t.role for t in turns] == ["user", "assistant", "user"]


def test_stable_ids_are_position_and_hash_and_survive_a_longer_file(tmp_path):
    chat = write(tmp_path / "chat.jsonl", RECORDS)
    turns = read_jsonl(chat, stable_ids=True)
    digest = hashlib.blake2b(b"user\x00My locker code is 4471.", digest_size=4).hexdigest()
    # Positions count records, not lines: the blank lines between them are skipped.
    assert [t.id for t in turns] == [f"j1-{digest}", "given-1", turns[2].id]
    assert re.fullmatch(r"j3-[0-9a-f]{8}", turns[2].id or "")
    assert turns[0].text == "My locker code is 4471."

    write(chat, [*RECORDS, {"role": "ai", "content": "A fine name."}], blank_lines=False)
    longer = read_jsonl(chat, stable_ids=True)
    assert [t.id for t in longer[:3]] == [t.id for t in turns]
    assert len({t.id for t in longer}) == 4


@pytest.mark.parametrize("stable_ids", [False, True])
def test_unreadable_files_are_invalid_input_naming_the_file(tmp_path, stable_ids):
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(InvalidInputError, match=r"^.*missing\.jsonl: cannot be read \("):
        read_jsonl(missing, stable_ids=stable_ids)
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(InvalidInputError, match=r"cannot be read \('utf-8' codec"):
        read_jsonl(binary, stable_ids=stable_ids)


def test_a_line_that_is_not_json_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\n\nnot json\n', encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"bad\.jsonl:3: not JSON \(Expecting value"):
        read_jsonl(bad, stable_ids=True)


def test_the_cli_reports_an_unreadable_transcript_with_the_same_message(tmp_path):
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(InvalidInputError) as raised:
        read_jsonl(binary, stable_ids=True)
    store = str(tmp_path / "store")
    result = CliRunner().invoke(app, ["--path", store, "ingest", str(binary), "-s", "s"])
    assert result.exit_code == 1
    assert result.output == f"error: {raised.value}\n"
