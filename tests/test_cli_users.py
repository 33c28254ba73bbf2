"""The command line's user scope (issue 16): --user, `lrm users`, `forget-user`, `rebuild`."""

from __future__ import annotations

from pathlib import Path

from conftest import lrm
from test_cli import write_chat

from langchain_recursive_memory.core import MemoryStore


def two_sessions(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    first = write_chat(tmp_path / "first.jsonl")
    second = tmp_path / "second.jsonl"
    second.write_text('{"role": "user", "content": "Hello again, it is me."}\n', encoding="utf-8")
    assert lrm(store, "ingest", str(first), "-s", "ada-1", "--user", "ada").exit_code == 0
    assert lrm(store, "ingest", str(second), "-s", "ada-2", "--user", "ada").exit_code == 0
    return store


def test_ingest_with_user_then_recall_across_the_users_sessions(tmp_path):
    store = two_sessions(tmp_path)
    alone = lrm(store, "recall", "ada-2", "locker code")
    assert "4471" not in alone.output
    found = lrm(store, "recall", "ada-2", "locker code", "--user", "ada")
    assert found.exit_code == 0 and "4471" in found.output
    other = lrm(store, "recall", "ada-2", "locker code", "--user", "bob")
    assert other.exit_code == 1 and "belongs to user 'ada'" in " ".join(other.output.split())


def test_users_lists_and_show_user_shows_its_sessions(tmp_path):
    store = two_sessions(tmp_path)
    listed = lrm(store, "users")
    assert listed.exit_code == 0 and "ada" in listed.output
    shown = lrm(store, "show", "--user", "ada")
    assert shown.exit_code == 0
    assert "ada-1" in shown.output and "ada-2" in shown.output
    assert "user 'ada'" in lrm(store, "show", "ada-1").output
    assert lrm(store, "show", "--user", "nobody").exit_code == 1
    assert lrm(store, "show").exit_code == 2


def test_rebuild_a_session_or_a_user_with_a_progress_bar(tmp_path):
    store = two_sessions(tmp_path)
    one = lrm(store, "rebuild", "ada-1")
    assert one.exit_code == 0 and "Rebuilt 1 session(s)" in one.output
    both = lrm(store, "rebuild", "--user", "ada", "--no-progress")
    assert both.exit_code == 0 and "Rebuilt 2 session(s)" in both.output
    assert lrm(store, "rebuild").exit_code == 2
    assert lrm(store, "rebuild", "--user", "nobody").exit_code == 1
    assert "4471" in lrm(store, "recall", "ada-2", "locker code", "--user", "ada").output


def test_forget_user_deletes_every_session_of_the_user(tmp_path):
    store = two_sessions(tmp_path)
    lrm(store, "ingest", str(write_chat(tmp_path / "bob.jsonl")), "-s", "bob-1", "--user", "bob")
    refused = lrm(store, "forget-user", "ada", input="n\n")
    assert refused.exit_code == 1
    gone = lrm(store, "forget-user", "ada", "--yes")
    assert gone.exit_code == 0 and "2 session(s)" in gone.output
    opened = MemoryStore.persistent(store)
    assert [u.user_id for u in opened.users("default")] == ["bob"]
    assert opened.count_turns("default", "ada-1") == 0
    for col in opened.client.list_collections():  # read back from Chroma directly
        metas = opened.client.get_collection(col.name).get(include=["metadatas"])["metadatas"]
        assert not any(
            m.get("uid") == "ada" or m.get("sid") in ("ada-1", "ada-2") for m in metas or []
        )
    assert opened.count_turns("default", "bob-1") > 0
    assert "ada" not in lrm(store, "users").output
