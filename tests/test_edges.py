"""Edges a new user's trial of 0.2.0 found (issue 34): each one as the user met it.

1. ``ResourceWarning: unclosed file .../.lrm-process.lock`` at exit: the process lock is
   closed when the interpreter exits, and nothing else is left open.
2. A store folder deleted while a process uses it: a new store at the path starts empty
   (no cached client, engine or cache brings the deleted messages or facts back), and a
   store object whose folder vanished says so on its next write.
3. Read-only commands (``lrm sessions``, ``show``, ``recall``, ``users``) never write: on a
   store an earlier release wrote they change nothing and name ``lrm migrate``, whose dry
   run then still lists everything.
4. ``lrm show`` on a session whose budget was never recorded (0.1.0 recorded none) says it
   is unknown instead of printing a made-up default.
5. A tool result without its call is left out of the messages with one warning naming the
   call id, not one per read.
6. A store created by this release carries the marker that stops 0.2.0 (``{prefix}_turns``
   with ``lrm_schema=3``), also when it is created where a deleted store was.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from typer.testing import CliRunner

from langchain_recursive_memory import RecursiveSummaryChatMessageHistory
from langchain_recursive_memory.cli import app
from langchain_recursive_memory.core import MemoryStore, RecursiveMemory, StoreError, Turn
from langchain_recursive_memory.core.facts import Fact
from langchain_recursive_memory.core.storage.client import persistent_client

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]


def run_python(code: str, *args: str, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run ``code`` in a new interpreter (the package from this checkout)."""
    return subprocess.run(
        [sys.executable, *flags, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )


def lrm(*args: str):
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def files_of(folder: Path) -> dict[str, str]:
    """Every file under ``folder``: its relative path -> the sha1 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha1(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def copy_store(name: str, target: Path) -> tuple[Path, dict]:
    """A copy of ``tests/data/<name>`` (never written) and its ``expected.json``."""
    shutil.copytree(DATA / name, target)
    expected = json.loads((DATA / name / "expected.json").read_text(encoding="utf-8"))
    return target, expected


def log_marker(path: Path, prefix: str = "lrm") -> object:
    """``{prefix}_turns``'s metadata in the store at ``path``, as a fresh process reads it."""
    found = run_python(
        """
        import json, sys
        import chromadb
        from chromadb.config import Settings
        settings = Settings(anonymized_telemetry=False)
        client = chromadb.PersistentClient(sys.argv[1], settings=settings)
        names = [c if isinstance(c, str) else c.name for c in client.list_collections()]
        name = sys.argv[2] + "_turns"
        print(json.dumps(client.get_collection(name).metadata if name in names else None))
        """,
        str(path),
        prefix,
    )
    assert found.returncode == 0, found.stderr
    return json.loads(found.stdout.strip().splitlines()[-1])


# -- 1. the process lock is closed at exit ------------------------------------------------------


def test_nothing_is_left_open_at_exit(tmp_path):
    done = run_python(
        """
        import sys
        from langchain_recursive_memory.core import MemoryStore, RecursiveMemory, Turn
        store = MemoryStore.persistent(sys.argv[1])
        RecursiveMemory("s1", store=store).add([Turn(role="user", text="hello")])
        print(store.user_facts("default", "ada"), store.session("default", "s1").facts.get())
        """,
        str(tmp_path / "store"),
        flags=("-X", "dev", "-W", "default"),
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "store" / "chroma.sqlite3").exists()  # Chroma was opened
    assert "ResourceWarning" not in done.stderr, done.stderr
    assert ".lrm-process.lock" not in done.stderr


# -- 2. a store folder deleted while the process uses it ----------------------------------------


def fill(path: Path) -> tuple[MemoryStore, RecursiveMemory]:
    store = MemoryStore.persistent(path)
    memory = RecursiveMemory("s1", store=store)
    memory.add([Turn(role="user", text="My locker code is 4417.")])
    store.session("default", "s1").facts.upsert([Fact(key="locker", text="The code is 4417.")])
    history = RecursiveSummaryChatMessageHistory("h1", store=store)
    history.add_messages([HumanMessage("I live in Lyon.")])
    assert history.messages and store.session("default", "s1").facts.get()
    return store, memory


def test_a_new_store_where_a_deleted_one_was_starts_empty(tmp_path):
    path = tmp_path / "store"
    fill(path)
    shutil.rmtree(path)
    again = MemoryStore.persistent(path)
    assert again.sessions() == []
    assert again.turns("default", "s1") == []
    assert again.session("default", "s1").facts.get() == []
    assert RecursiveSummaryChatMessageHistory("h1", store=again).messages == []
    # and it is a store that works: its writes land in the new folder
    again.session("default", "s2").facts.upsert([Fact(key="city", text="Lyon.")])
    RecursiveMemory("s2", store=again).add([Turn(role="user", text="hi")])
    assert [f.key for f in again.session("default", "s2").facts.get()] == ["city"]
    assert [t.turn.text for t in MemoryStore.persistent(path).turns("default", "s2")] == ["hi"]


def test_a_store_whose_folder_vanished_says_so_on_write(tmp_path):
    path = tmp_path / "store"
    store, memory = fill(path)
    shutil.rmtree(path)
    with pytest.raises(StoreError) as log_write:
        memory.add([Turn(role="user", text="still there?")])
    with pytest.raises(StoreError) as fact_write:
        store.session("default", "s1").facts.upsert([Fact(key="more", text="More.")])
    for error in (log_write.value, fact_write.value):
        message = str(error)
        assert str(path) in message and "gone" in message, message
        assert "readonly" not in message
    MemoryStore.persistent(path)  # a new store in the same place does not revive the old one
    with pytest.raises(StoreError, match="gone"):
        memory.add([Turn(role="user", text="and now?")])


# -- 3. read-only commands never write ----------------------------------------------------------

READ_ONLY = [
    ["sessions"],
    ["show", "recursive"],
    ["recall", "recursive", "Where did we go?"],
    ["users"],
]


@pytest.mark.parametrize("args", READ_ONLY, ids=lambda a: a[0])
def test_a_read_only_command_changes_nothing_in_an_old_store_and_names_migrate(tmp_path, args):
    path, expected = copy_store("store-0.2.0", tmp_path / "store")
    before = files_of(path)
    result = lrm("--path", str(path), "--prefix", expected["prefix"], *args)
    assert result.exit_code == 1, result.output
    assert "lrm migrate" in result.output and "earlier release" in result.output
    assert files_of(path) == before  # byte for byte: no memory.sqlite3, Chroma untouched
    assert not (path / "memory.sqlite3").exists()


def chroma_state(path: Path) -> dict[str, tuple[dict, int]]:
    """Each Chroma collection of the store at ``path``: its metadata and record count."""
    client = persistent_client(path)
    names = sorted(c if isinstance(c, str) else c.name for c in client.list_collections())
    return {
        n: (dict(client.get_collection(n).metadata or {}), client.get_collection(n).count())
        for n in names
    }


def test_migrate_dry_run_lists_everything_whatever_ran_before(tmp_path):
    path, expected = copy_store("store-0.2.0", tmp_path / "store")
    where = ["--path", str(path), "--prefix", expected["prefix"]]
    before = chroma_state(path)
    for args in READ_ONLY:
        lrm(*where, *args)
    for _ in range(2):  # a dry run changes nothing either: the second lists the same
        dry = lrm(*where, "migrate", "--dry-run")
        assert dry.exit_code == 0, dry.output
        for key, entry in expected["sessions"].items():
            namespace, session_id = key.split("/", 1)
            line = f"Would move session {namespace}/{session_id} ({len(entry['turns'])} turns)"
            assert line in dry.output
    # (opening Chroma writes to its own file: the collections are compared)
    assert chroma_state(path) == before and not (path / "memory.sqlite3").exists()
    done = lrm(*where, "migrate")
    assert done.exit_code == 0 and "Moved session default/recursive" in done.output
    listed = lrm(*where, "sessions")  # a moved store reads as ever
    assert listed.exit_code == 0 and "tools-会話" in listed.output


# -- 4. a budget never recorded -----------------------------------------------------------------


def test_show_says_an_unrecorded_budget_is_unknown(tmp_path):
    path, expected = copy_store("store-0.1.0", tmp_path / "store")
    MemoryStore.persistent(path, prefix=expected["prefix"])  # moved, as any open does
    assert MemoryStore.persistent(path).session_settings("default", "recursive") == {}
    shown = lrm("--path", str(path), "--prefix", expected["prefix"], "show", "recursive")
    assert shown.exit_code == 0, shown.output
    assert "/ 2,000" not in shown.output
    assert "budget unknown" in shown.output and "--max-tokens" in shown.output
    given = lrm("--path", str(path), "show", "recursive", "--max-tokens", "1500")
    assert given.exit_code == 0 and "/ 1,500" in given.output
    assert "budget unknown" not in given.output


def test_show_gives_a_recorded_budget(tmp_path):
    path = tmp_path / "store"
    chat = tmp_path / "chat.jsonl"
    chat.write_text(
        "\n".join(json.dumps({"role": "user", "content": f"Note {i}."}) for i in range(6)) + "\n"
    )
    ingest = lrm("--path", str(path), "ingest", str(chat), "-s", "s1", "--max-tokens", "900")
    assert ingest.exit_code == 0, ingest.output
    shown = lrm("--path", str(path), "show", "s1")
    assert shown.exit_code == 0 and "/ 900" in shown.output and "unknown" not in shown.output


# -- 5. an orphan tool result -------------------------------------------------------------------


def test_an_orphan_tool_result_is_logged_once(caplog):
    store = MemoryStore.in_memory()
    history = RecursiveSummaryChatMessageHistory("t1", store=store)
    history.add_messages(
        [
            HumanMessage("What is the weather?"),
            ToolMessage("sunny", tool_call_id="call-orphan-1"),
            AIMessage("It is sunny."),
        ]
    )
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        first = history.messages
        again = history.messages
        fresh = RecursiveSummaryChatMessageHistory("t1", store=store).messages
        history.add_messages([HumanMessage("Thanks.")])  # the window moves: read again
        moved = history.messages
    for messages in (first, again, fresh, moved):
        assert not any(isinstance(m, ToolMessage) for m in messages)
    warned = [r for r in caplog.records if "call-orphan-1" in r.getMessage()]
    assert len(warned) == 1, [r.getMessage() for r in caplog.records]
    assert warned[0].levelno == logging.WARNING
    assert warned[0].name == "langchain_recursive_memory"


# -- 6. the marker that stops 0.2.0 -------------------------------------------------------------


def test_a_new_store_carries_the_marker(tmp_path):
    path = tmp_path / "store"
    made = run_python(
        """
        import sys
        from langchain_recursive_memory.core import MemoryStore, RecursiveMemory, Turn
        store = MemoryStore.persistent(sys.argv[1])
        RecursiveMemory("s1", store=store).add([Turn(role="user", text="hi")])
        """,
        str(path),
    )
    assert made.returncode == 0, made.stderr
    assert log_marker(path) == {"lrm_schema": 3}


def test_a_new_store_where_a_deleted_one_was_carries_the_marker(tmp_path):
    path = tmp_path / "store"
    made = run_python(
        """
        import shutil, sys
        from langchain_recursive_memory.core import MemoryStore, RecursiveMemory, Turn
        MemoryStore.persistent(sys.argv[1]).user_facts("default", "ada")
        shutil.rmtree(sys.argv[1])
        store = MemoryStore.persistent(sys.argv[1])
        RecursiveMemory("s1", store=store).add([Turn(role="user", text="hi")])
        """,
        str(path),
    )
    assert made.returncode == 0, made.stderr
    assert log_marker(path) == {"lrm_schema": 3}
