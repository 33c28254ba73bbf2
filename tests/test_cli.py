"""The command line (`lrm`): every command, offline, on a temporary embedded store."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli_runner, lrm

from langchain_recursive_memory.cli import app, demo_turns, parse_duration
from langchain_recursive_memory.core import MemoryStore
from langchain_recursive_memory.core.storage import turns as store_module

LOCKER = "My locker code is 4471 and my dog is called Pixel."


def write_chat(path: Path, exchanges: int = 30) -> Path:
    lines = [
        {"role": "user", "content": LOCKER},
        {"role": "assistant", "content": "Noted!"},
    ]
    for i in range(exchanges):
        lines.append({"role": "human", "content": f"Small talk number {i} about the spring."})
        lines.append({"role": "ai", "content": f"Reply {i}: indeed, a nice season."})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n", encoding="utf-8")
    return path


def locomo_sample(sample_id: str, speaker_b: str) -> dict:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Nadia",
            "speaker_b": speaker_b,
            "session_1_date_time": "10:15 am on 3 March, 2024",
            "session_1": [
                {"speaker": "Nadia", "dia_id": "D1:1", "text": "I signed up for pottery."},
                {"speaker": speaker_b, "dia_id": "D1:2", "text": "Which day is the class?"},
                {
                    "speaker": "Nadia",
                    "dia_id": "D1:3",
                    "text": "Thursday. Look at my first bowl!",
                    "blip_caption": "a photo of a lopsided blue bowl",
                },
            ],
            "session_2_date_time": "7:30 pm on 20 March, 2024",
            "session_2": [
                {"speaker": speaker_b, "dia_id": "D2:1", "text": "My race is on 14 April."},
                {"speaker": "Nadia", "dia_id": "D2:2", "text": "Good luck in Lisbon!"},
            ],
        },
        "qa": [],
    }


def context_tokens(output: str) -> tuple[int, int]:
    match = re.search(r"context handed to the model\s*│\s*\d+\s*│\s*([\d,]+) / ([\d,]+)", output)
    assert match, output
    return int(match.group(1).replace(",", "")), int(match.group(2).replace(",", ""))


def count(path: Path, session: str, namespace: str = "default") -> int:
    return MemoryStore.persistent(path).count_turns(namespace, session)


@pytest.fixture(scope="module")
def chat_store(tmp_path_factory) -> Path:
    """A store holding session `s1`: an early fact, then 30 exchanges (budget 600 tokens)."""
    root = tmp_path_factory.mktemp("cli")
    chat = write_chat(root / "chat.jsonl")
    store = root / "store"
    result = lrm(store, "ingest", str(chat), "--session", "s1", "--max-tokens", "600")
    assert result.exit_code == 0, result.output
    return store


# -- ingest ---------------------------------------------------------------------------------


def test_ingest_jsonl_then_a_rerun_resumes_with_no_new_turn(tmp_path):
    chat = write_chat(tmp_path / "chat.jsonl", exchanges=10)
    store = tmp_path / "store"
    first = lrm(store, "ingest", str(chat), "-s", "s1", "--max-tokens", "600", "--no-progress")
    assert first.exit_code == 0, first.output
    assert re.search(r"│ s1\s+│\s+22 │\s+0 │\s+22 │", first.stdout), first.stdout
    assert "no-LLM extractive" in first.stdout
    assert count(store, "s1") == 22

    again = lrm(store, "ingest", str(chat), "-s", "s1", "--max-tokens", "600")
    assert again.exit_code == 0, again.output
    assert re.search(r"│ s1\s+│\s+0 │\s+22 │\s+22 │", again.stdout), again.stdout
    assert "22/22" in again.output  # the progress bar, resumed at the end
    assert count(store, "s1") == 22

    # A longer transcript (the same file, appended to) adds only the new turns.
    write_chat(chat, exchanges=12)
    more = lrm(store, "ingest", str(chat), "-s", "s1", "--max-tokens", "600", "--no-progress")
    assert re.search(r"│ s1\s+│\s+4 │\s+22 │\s+26 │", more.stdout), more.stdout
    assert count(store, "s1") == 26


def test_ingest_locomo_makes_one_session_per_conversation(tmp_path):
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([locomo_sample("c1", "Tomas"), locomo_sample("c2", "Rui")]))
    store = tmp_path / "store"

    named = lrm(store, "ingest", str(data), "--session", "lc", "--no-progress")
    assert named.exit_code == 0, named.output
    assert count(store, "lc-c1") == 5 and count(store, "lc-c2") == 5

    plain = lrm(store, "ingest", str(data), "--memory", "higmem", "--no-progress")
    assert plain.exit_code == 0, plain.output
    assert count(store, "c1") == 5 and count(store, "c2") == 5
    assert "2 events" in plain.stdout  # one event per LoCoMo session, no LLM

    again = lrm(store, "ingest", str(data), "--format", "locomo", "--no-progress")
    assert re.search(r"│ c1\s+│\s+0 │\s+5 │", again.stdout), again.stdout

    shown = lrm(store, "show", "c1", "--memory", "higmem")
    assert shown.exit_code == 0, shown.output
    assert "HiGMem events (2)" in shown.stdout
    # Stored text is printed as text, never as rich markup.
    assert "[image: a photo of a lopsided blue bowl]" in shown.stdout
    assert "Nadia" in shown.stdout


def test_ingest_with_a_model_needs_langchain_and_says_so(tmp_path, monkeypatch):
    chat = write_chat(tmp_path / "chat.jsonl", exchanges=2)
    monkeypatch.setitem(sys.modules, "langchain_recursive_memory.language_models", None)
    result = lrm(tmp_path / "store", "ingest", str(chat), "-s", "s", "--model", "openai:gpt-x")
    assert result.exit_code == 1
    assert result.output.startswith("error: --model='openai:gpt-x': a 'provider:model' needs")
    assert "langchain-recursive-memory[agents]" in result.output
    assert "Traceback" not in result.output


def test_ingest_with_an_unknown_provider_is_one_clear_error(tmp_path):
    pytest.importorskip("langchain")
    chat = write_chat(tmp_path / "chat.jsonl", exchanges=2)
    result = lrm(tmp_path / "store", "ingest", str(chat), "-s", "s", "--model", "nosuch:model")
    assert result.exit_code == 1
    assert result.output.startswith("error: llm='nosuch:model'")
    assert count(tmp_path / "store", "s") == 0


# -- show and recall ------------------------------------------------------------------------


def test_show_prints_summary_window_facts_and_tokens(chat_store):
    result = lrm(chat_store, "show", "s1", "--max-tokens", "600")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert re.search(r"Summary v\d+ \(extractive, no LLM\) · covers \d+ turns", out), out
    assert "Window:" in out and "Reply 29: indeed, a nice season." in out  # the newest turn
    assert "Facts: none stored" in out
    used, budget = context_tokens(out)
    assert budget == 600 and 0 < used <= 600
    full = re.search(r"full log\s*│\s*62 │\s*([\d,]+)", out)
    assert full and int(full.group(1).replace(",", "")) > used
    assert "HiGMem events" not in out


def test_show_of_an_unknown_session_exits_1_with_one_line(chat_store):
    result = lrm(chat_store, "show", "nope")
    assert result.exit_code == 1
    assert result.output.strip() == (
        "error: no session 'nope' in namespace 'default' (list them with the `sessions` command)"
    )


def test_recall_finds_the_early_fact_that_left_the_window(chat_store):
    window = lrm(chat_store, "show", "s1", "--max-tokens", "600", "--rows", "100").stdout
    assert "4471" not in window.split("Window:")[1]  # folded out of the window
    result = lrm(chat_store, "recall", "s1", "What is my locker code?", "--max-tokens", "600")
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if line.startswith("│ 1 ")]
    assert rows and "4471" in rows[0] and "turn (user)" in rows[0], result.stdout
    assert re.search(r"│ j1-[0-9a-f]{8}\s+│", rows[0])  # its source turn id


def test_recall_with_higmem_and_k(chat_store):
    result = lrm(chat_store, "recall", "s1", "What is my dog called?", "--higmem", "-k", "2")
    assert result.exit_code == 0, result.output
    assert "Pixel" in result.stdout
    assert len(re.findall(r"^│ \d ", result.stdout, re.M)) == 2


def test_recall_that_matches_nothing_says_so(chat_store):
    result = lrm(chat_store, "recall", "s1", "xylophone quasar")
    assert result.exit_code == 0
    assert "No memory matched" in result.stdout


# -- sessions, clear, expire ----------------------------------------------------------------


def test_sessions_lists_namespace_id_turns_and_activity(tmp_path):
    chat = write_chat(tmp_path / "chat.jsonl", exchanges=2)
    store = tmp_path / "store"
    assert lrm(store, "sessions").exit_code == 1  # no store there yet: said, not "No sessions"
    lrm(store, "ingest", str(chat), "-s", "alpha", "--no-progress")
    lrm(store, "--namespace", "team-b", "ingest", str(chat), "-s", "beta", "--no-progress")

    every = lrm(store, "sessions")
    assert every.exit_code == 0, every.output
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert re.search(rf"│ default\s+│ alpha\s+│\s+6 │ {today} \d\d:\d\d", every.stdout)
    assert re.search(rf"│ team-b\s+│ beta\s+│\s+6 │ {today} \d\d:\d\d", every.stdout)

    scoped = lrm(store, "--namespace", "team-b", "sessions")
    assert "beta" in scoped.stdout and "alpha" not in scoped.stdout
    # Per-session commands default to the 'default' namespace.
    assert lrm(store, "show", "beta").exit_code == 1
    assert lrm(store, "--namespace", "team-b", "show", "beta").exit_code == 0


def test_clear_asks_for_confirmation_unless_yes(tmp_path):
    chat = write_chat(tmp_path / "chat.jsonl", exchanges=2)
    store = tmp_path / "store"
    lrm(store, "ingest", str(chat), "-s", "s1", "--no-progress")
    lrm(store, "ingest", str(chat), "-s", "s2", "--no-progress")

    refused = lrm(store, "clear", "s1", input="n\n")
    assert refused.exit_code == 1
    assert "Delete session 's1'" in refused.output and "(6 turns)" in refused.output
    assert count(store, "s1") == 6

    no_answer = lrm(store, "clear", "s1")  # no input at all: nothing is deleted
    assert no_answer.exit_code == 1 and count(store, "s1") == 6

    confirmed = lrm(store, "clear", "s1", input="y\n")
    assert confirmed.exit_code == 0, confirmed.output
    assert "Deleted session 's1' (6 turns)." in confirmed.output
    assert count(store, "s1") == 0 and count(store, "s2") == 6

    forced = lrm(store, "clear", "s2", "--yes")
    assert forced.exit_code == 0 and "Delete session" not in forced.output
    assert count(store, "s2") == 0

    gone = lrm(store, "clear", "s2", "--yes")
    assert gone.exit_code == 1 and gone.output.startswith("error: no session 's2'")


class _TwoDaysAgo:
    """The store module's clock, two days behind (so its turns look inactive)."""

    def __getattr__(self, name):
        return getattr(time, name)

    @staticmethod
    def time_ns() -> int:
        return time.time_ns() - 2 * 86_400 * 10**9

    @staticmethod
    def time() -> float:
        return time.time() - 2 * 86_400


def test_expire_deletes_only_inactive_sessions(tmp_path, monkeypatch):
    chat = write_chat(tmp_path / "chat.jsonl", exchanges=2)
    store = tmp_path / "store"
    with monkeypatch.context() as patch:
        patch.setattr(store_module, "time", _TwoDaysAgo())
        lrm(store, "ingest", str(chat), "-s", "old", "--no-progress")
        lrm(store, "--namespace", "other", "ingest", str(chat), "-s", "old2", "--no-progress")
    lrm(store, "ingest", str(chat), "-s", "fresh", "--no-progress")

    dry = lrm(store, "expire", "--older-than", "1d", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "Would delete 2 session(s)" in dry.stdout and "all namespaces" in dry.stdout
    assert count(store, "old") == 6

    scoped = lrm(store, "--namespace", "other", "expire", "--older-than", "36h")
    assert "Deleted 1 session(s)" in scoped.stdout and "old2" in scoped.stdout
    assert count(store, "old2", "other") == 0 and count(store, "old") == 6

    result = lrm(store, "expire", "--older-than", "1d")
    assert result.exit_code == 0, result.output
    assert "Deleted 1 session(s)" in result.stdout and "│ old " in result.stdout
    assert count(store, "old") == 0 and count(store, "fresh") == 6

    assert "Deleted 0 session(s)" in lrm(store, "expire", "--older-than", "90s").stdout


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90.0), ("15m", 900.0), ("12h", 43200.0), ("30d", 2592000.0), ("2w", 1209600.0)],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5x", "d30", "0s", "-3d", "1.5.2h"])
def test_bad_durations_exit_2(tmp_path, text):
    result = lrm(tmp_path, "expire", "--older-than", text)
    assert result.exit_code == 2, result.output


# -- demo ------------------------------------------------------------------------------------


def test_demo_runs_offline_and_recalls_an_early_fact(tmp_path):
    store = tmp_path / "store"
    args = ("demo", "--exchanges", "40", "--max-tokens", "600", "--no-progress")
    started = time.monotonic()
    result = lrm(store, *args)
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 60
    out = result.stdout
    assert "No model is called" in out and "no-LLM extractive" in out
    assert re.search(r"Summary v\d+ \(extractive, no LLM\)", out)
    used, budget = context_tokens(out)
    assert budget == 600 and used <= 600
    recall = out.split("recall(")[1]
    assert "4471" in recall
    assert re.search(r"Recalled turn u4 \(exchange 5 of 40\), which left the window", out)
    line = re.search(
        r"Context for this question .*?: ([\d,]+) tokens of 600; the full history "
        r"is ([\d,]+) tokens \(80 messages\)",
        out,
    )
    assert line and int(line.group(1).replace(",", "")) < int(line.group(2).replace(",", ""))

    # The store stays for the other commands; a re-run starts the session over.
    assert count(store, "demo") == 80
    shorter = lrm(store, "demo", "--exchanges", "20", "--max-tokens", "600", "--no-progress")
    assert shorter.exit_code == 0, shorter.output
    assert count(store, "demo") == 40
    assert (
        "4471" in lrm(store, "recall", "demo", "luggage locker code", "--max-tokens", "600").stdout
    )


def test_demo_without_path_uses_a_new_temporary_store(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = cli_runner().invoke(app, ["demo", "--exchanges", "12", "--no-progress"])
    assert result.exit_code == 0, result.output
    (made,) = tmp_path.glob("lrm-demo-*")
    assert f"lrm --path {made} show demo" in result.stdout
    assert count(made, "demo") == 24


def test_demo_script_states_facts_early():
    turns = demo_turns(150)
    assert len(turns) == 300
    assert any("4471" in t.text for t in turns[:12])
    assert len({t.id for t in turns}) == 300


# -- errors and the entry points -------------------------------------------------------------


def test_package_errors_are_one_line_and_exit_1(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "wizard", "content": "hi"}\n')
    cases = [
        ("ingest", str(bad), "-s", "s"),
        ("ingest", str(write_chat(tmp_path / "c.jsonl", 1)), "-s", "s", "--max-tokens", "100"),
        ("--prefix", "bad prefix!", "sessions"),
        ("recall", "missing", "query"),
    ]
    for args in cases:
        result = lrm(tmp_path / "store", *args)
        assert result.exit_code == 1, (args, result.output)
        assert result.output.startswith("error: "), (args, result.output)
        assert result.output.strip().count("\n") == 0, (args, result.output)


def test_an_unreachable_server_is_one_line_and_exit_1():
    result = cli_runner().invoke(
        app, ["--host", "127.0.0.1", "--port", "1", "--database", "sqlite://", "sessions"]
    )
    assert result.exit_code == 1, result.output
    assert result.output.startswith("error: the Chroma server at 127.0.0.1:1")


def test_a_server_without_a_database_is_one_line_naming_the_option():
    result = cli_runner().invoke(app, ["--host", "127.0.0.1", "--port", "1", "sessions"])
    assert result.exit_code == 1, result.output
    assert result.output.startswith("error: --host needs --database"), result.output
    assert result.output.strip().count("\n") == 0, result.output


def test_not_locomo_is_a_clear_error(tmp_path):
    data = tmp_path / "x.json"
    data.write_text(json.dumps([{"sample_id": "a"}]))
    result = lrm(tmp_path / "store", "ingest", str(data))
    assert result.exit_code == 1
    assert "has no 'conversation' object (not LoCoMo)" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["ingest", "{chat}"],  # JSONL needs --session
        ["ingest", "{missing}", "-s", "s"],
        ["ingest", "{chat}", "-s", "s", "--memory", "higmem", "--max-tokens", "900"],
        ["ingest", "{chat}", "-s", "s", "--format", "csv"],
        ["recall", "s", "q", "--k", "0"],
        ["expire"],
        ["no-such-command"],
        ["--host", "localhost", "sessions"],  # with --path: one store only
        ["--port", "8000", "sessions"],
    ],
)
def test_bad_arguments_exit_2(tmp_path, args):
    chat = write_chat(tmp_path / "chat.jsonl", exchanges=1)
    args = [a.format(chat=chat, missing=tmp_path / "missing.jsonl") for a in args]
    result = lrm(tmp_path / "store", *args)
    assert result.exit_code == 2, result.output
    assert count(tmp_path / "store", "s") == 0


def _python(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LANGCHAIN_RECURSIVE_MEMORY_PATH": str(tmp_path / "default-store")}
    return subprocess.run(
        [sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


def test_python_dash_m_help_works(tmp_path):
    out = _python("-m", "langchain_recursive_memory", "--help", tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "python -m langchain_recursive_memory" in out.stdout
    for command in ("ingest", "show", "recall", "sessions", "clear", "expire", "demo"):
        assert command in out.stdout


def test_python_dash_m_error_has_no_traceback_and_uses_the_default_path(tmp_path):
    out = _python("-m", "langchain_recursive_memory", "show", "nope", tmp_path=tmp_path)
    assert out.returncode == 1
    store = tmp_path / "default-store"
    assert out.stderr.strip().startswith(f"error: no memory store at {store}: the folder does not")
    # $LANGCHAIN_RECURSIVE_MEMORY_PATH was used, and a read-only command created nothing there.
    assert not (tmp_path / "default-store").exists()


def test_the_cli_imports_neither_langchain_nor_llamaindex(tmp_path):
    code = (
        "import sys, langchain_recursive_memory.cli\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'langchain_core', 'langchain',"
        " 'llama_index'}))"
    )
    out = _python("-c", code, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# -- the command line remembers how a session was made -----------------------------------------


def test_show_and_recall_use_the_budget_and_memory_the_session_was_made_with(tmp_path):
    chat = write_chat(tmp_path / "chat.jsonl", exchanges=40)
    store = tmp_path / "store"
    assert (
        lrm(
            store, "ingest", str(chat), "-s", "r", "--memory", "recursive", "--max-tokens", "1500"
        ).exit_code
        == 0
    )
    shown = lrm(store, "show", "r")
    assert shown.exit_code == 0, shown.output
    assert context_tokens(shown.output)[1] == 1500  # not the 2,000 default
    settings = MemoryStore.persistent(store).session_settings("default", "r")
    assert settings["memory"] == "recursive" and settings["max_tokens"] == 1500
    assert context_tokens(lrm(store, "show", "r", "--max-tokens", "900").output)[1] == 900


def test_recall_on_a_higmem_session_uses_higmem_retrieval(tmp_path):
    chat = write_chat(tmp_path / "chat.jsonl", exchanges=10)
    store = tmp_path / "store"
    assert lrm(store, "ingest", str(chat), "-s", "h", "--memory", "higmem").exit_code == 0
    found = lrm(store, "recall", "h", "What is my locker code?")
    assert found.exit_code == 0 and "HiGMem retrieval" in found.output and "4471" in found.output


def test_read_only_commands_never_create_a_store_at_a_mistyped_path(tmp_path):
    missing = tmp_path / "no-such-store"
    for args in (["show", "s"], ["recall", "s", "q"], ["sessions"], ["clear", "s", "-y"]):
        result = lrm(missing, *args)
        assert result.exit_code == 1, result.output  # "no memory store at ..."
    assert not missing.exists()


def test_bm25s_debug_lines_do_not_reach_an_application_logging_warnings():
    script = (
        "import logging; logging.basicConfig(level=logging.WARNING)\n"
        "from langchain_recursive_memory.core.retrieval.lexical import LexicalIndex\n"
        "LexicalIndex(['a b c', 'd e f']).search('a', 1)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert "Building index" not in out.stderr + out.stdout
