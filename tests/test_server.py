"""Against a real `chroma run` server: server mode, concurrent writers, restarts, timeouts."""

from __future__ import annotations

import itertools
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx
import pytest
from fakes import KeywordSummarizer

from langchain_recursive_memory.core import (
    MemoryStore,
    RecursiveMemory,
    RetryPolicy,
    StoreError,
    Turn,
)
from langchain_recursive_memory.core.storage.server import LocalChromaServer, free_port

FAST = RetryPolicy(attempts=1, timeout=5.0, cooldown=0.0)
ROOT = Path(__file__).resolve().parents[1]


def check_consistent(store: MemoryStore, session: str, expected: int) -> None:
    """Every turn stored once, covered by exactly one summary version or still unfolded."""
    log = store.turns("default", session)
    assert len(log) == expected
    assert len({t.id for t in log}) == expected
    versions = store.summaries("default", session)
    assert [v.version for v in versions] == list(range(1, len(versions) + 1))
    named = [tid for v in versions for tid in v.turn_ids]
    assert len(named) == len(set(named)), "a turn was folded twice"
    window = {t.id for t in store.records.load("default", session).turns}
    assert window.isdisjoint(named)
    assert window | set(named) == {t.id for t in log}, "a turn is neither folded nor unfolded"
    if versions:
        assert versions[-1].covered == len(named)


@pytest.mark.server
def test_history_on_a_server_folds_persists_and_resumes(server_store):
    model = KeywordSummarizer()
    memory = RecursiveMemory(
        "s", store=server_store, model=model, retry=FAST, max_tokens=400, max_summary_tokens=80
    )
    for i in range(40):
        memory.add(Turn(role="user", text=f"Server message {i} about Oslo and {i} cats."))
        assert memory.context().tokens <= 400
    assert memory.get_summary() is not None
    again = RecursiveMemory(
        "s",
        store=MemoryStore(server_store.client, prefix=server_store.prefix),
        model=KeywordSummarizer(),
        retry=FAST,
        max_tokens=400,
        max_summary_tokens=80,
    )
    assert again.context().turns == memory.context().turns
    check_consistent(server_store, "s", 40)


@pytest.mark.server
def test_a_dead_or_stalled_server_fails_fast():
    port = free_port()  # nothing listens
    start = time.monotonic()
    with pytest.raises(StoreError, match="heartbeat"):
        MemoryStore.http("127.0.0.1", port, timeout=2)
    assert time.monotonic() - start < 5

    listener = socket.socket()  # accepts connections, never answers
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stalled = listener.getsockname()[1]
    try:
        start = time.monotonic()
        with pytest.raises(StoreError, match="heartbeat"):
            MemoryStore.http("127.0.0.1", stalled, timeout=1.5)
        assert time.monotonic() - start < 5
    finally:
        listener.close()


WRITER = textwrap.dedent(
    """
    import sys, time
    from langchain_recursive_memory.core import (
        FunctionTextModel, MemoryStore, RecursiveMemory, RetryPolicy, Turn)
    host, port, prefix, writer, count = sys.argv[1:6]

    def summarize(prompt):  # a summarizer that takes a while, as a real one does
        time.sleep(0.02)
        return "Writers talked about their messages " + prompt.split()[-3]

    store = MemoryStore.http(host, int(port), prefix=prefix)
    memory = RecursiveMemory("shared", store=store, max_tokens=600, max_summary_tokens=100,
                             model=FunctionTextModel(summarize),
                             retry=RetryPolicy(attempts=1, cooldown=0.0))
    for i in range(int(count)):
        memory.add(Turn(role="user", text=f"writer {writer} message {i} " + "word " * 8))
    """
)


@pytest.mark.server
@pytest.mark.slow
def test_eight_processes_write_one_session_through_the_server(server_store, chroma_server):
    host, port = chroma_server
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, host, str(port), server_store.prefix, str(w), "250"],
            stderr=subprocess.PIPE,
        )
        for w in range(8)
    ]
    for proc in writers:
        _, err = proc.communicate(timeout=1200)
        assert proc.returncode == 0, err.decode()[-3000:]
    log = server_store.turns("default", "shared")
    assert len(log) == 2000
    for w in range(8):
        mine = [
            t.turn.text.split(" word")[0] for t in log if t.turn.text.startswith(f"writer {w} ")
        ]
        assert mine == [f"writer {w} message {i}" for i in range(250)]  # each writer's order
    check_consistent(server_store, "shared", 2000)
    # Summary ranges in log order (0.1.0: 4-23 of ~250 versions out of order) and no
    # wasted summarizer calls (0.1.0: 525-585 calls for 245-262 versions).
    seq = {t.id: t.seq for t in log}
    versions = server_store.summaries("default", "shared")
    ranges = [(min(seq[t] for t in v.turn_ids), max(seq[t] for t in v.turn_ids)) for v in versions]
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges)), "a version out of order"
    fold = server_store.usage("default", "shared")["fold"]
    assert fold.calls + fold.failed_calls <= 1.1 * len(versions), (fold, len(versions))


@pytest.mark.slow
def test_eight_threads_write_one_session_in_an_embedded_store(tmp_path):
    store = MemoryStore.persistent(tmp_path)
    errors: list[BaseException] = []

    def work(w: int) -> None:
        try:
            memory = RecursiveMemory(
                "shared",
                store=MemoryStore.persistent(tmp_path),
                max_tokens=600,
                max_summary_tokens=100,
                retry=FAST,
            )
            for i in range(250):
                memory.add(Turn(role="user", text=f"writer {w} message {i} " + "word " * 8))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    log = store.turns("default", "shared")
    for w in range(8):
        mine = [
            t.turn.text.split(" word")[0] for t in log if t.turn.text.startswith(f"writer {w} ")
        ]
        assert mine == [f"writer {w} message {i}" for i in range(250)]
    check_consistent(store, "shared", 2000)


@pytest.mark.server
def test_the_server_restarts_mid_conversation(tmp_path):
    server = LocalChromaServer(tmp_path).start()
    try:
        store = MemoryStore.http(server.host, server.port, prefix="restart", timeout=3)
        memory = RecursiveMemory(
            "s",
            store=store,
            model=KeywordSummarizer(),
            retry=FAST,
            max_tokens=400,
            max_summary_tokens=80,
        )
        for i in range(20):
            memory.add(Turn(role="user", text=f"before restart {i} " * 4))
        server.stop()
        with pytest.raises(StoreError):
            memory.add(Turn(role="user", text="while the server is down"))
        server.start()  # same data directory, same port
        for i in range(20):
            memory.add(Turn(role="user", text=f"after restart {i} " * 4))
            assert memory.context().tokens <= 400
        texts = [t.turn.text for t in memory.turns()]
        assert "while the server is down" not in texts  # refused, and the caller was told
        assert len(texts) == 40
        assert memory.get_summary() is not None and memory.last_fold_error is None
        check_consistent(store, "s", 40)
    finally:
        server.stop()


KILLED_FOLD = textwrap.dedent(
    """
    import os, signal, sys, time
    from langchain_recursive_memory.core import (
        FunctionTextModel, MemoryStore, RecursiveMemory, RetryPolicy, Turn)
    path, marker, where = sys.argv[1:4]
    store = MemoryStore.persistent(path)
    if where == "after-version":
        original = store.records.repos.turn_log.collection.update
        def die(*args, **kwargs):  # the version is written; its turns are not flagged yet
            os.kill(os.getpid(), signal.SIGKILL)
        store.records.repos.turn_log.collection.update = die

    def slow(prompt):
        if where == "in-llm":
            open(marker, "w").close()
            time.sleep(60)
        return "A summary of the early messages."

    memory = RecursiveMemory("s", store=store, model=FunctionTextModel(slow),
                             retry=RetryPolicy(attempts=1, timeout=120, cooldown=0),
                             max_tokens=400, max_summary_tokens=80)
    for i in range(40):
        memory.add(Turn(role="user", text=f"message {i} " * 6), fold=False)
    open(marker + ".added", "w").close()
    memory.fold()
    """
)


@pytest.mark.parametrize("where", ["in-llm", "after-version"])
def test_sigkill_in_the_middle_of_a_fold_loses_nothing(tmp_path, where):
    marker = tmp_path / "marker"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_FOLD, str(tmp_path / "db"), str(marker), where],
        stderr=subprocess.PIPE,
    )
    if where == "in-llm":
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.kill()  # SIGKILL
    proc.wait(120)
    assert proc.returncode == -9
    assert Path(str(marker) + ".added").exists()
    store = MemoryStore.persistent(tmp_path / "db")
    check_consistent(store, "s", 40)
    memory = RecursiveMemory(
        "s",
        store=store,
        model=KeywordSummarizer(),
        retry=FAST,
        max_tokens=400,
        max_summary_tokens=80,
    )
    assert memory.context().tokens <= 400
    memory.fold()  # folding resumes
    memory.add(Turn(role="user", text="one more"))
    check_consistent(store, "s", 41)
    assert memory.get_summary() is not None


@pytest.mark.server
def test_an_append_stored_by_the_server_whose_answer_is_lost_is_not_repeated(
    server_store, monkeypatch
):
    # 0.1.0 raised "failed to append turns" although the server had stored the turn.
    memory = RecursiveMemory("s", store=server_store, retry=FAST)
    log = server_store.records.repos.turn_log
    real = log.collection

    class LostAnswer:
        def add(self, *args, **kwargs):
            real.add(*args, **kwargs)
            raise httpx.ReadTimeout("the server's answer was lost")

        def __getattr__(self, name):
            return getattr(real, name)

    monkeypatch.setattr(log, "collection", LostAnswer())
    server_store.retry = RetryPolicy(attempts=2, initial_delay=0.0, timeout=5.0)
    memory.add(Turn(role="user", text="stored once"))
    monkeypatch.setattr(log, "collection", real)
    assert [t.turn.text for t in memory.turns()] == ["stored once"]


USER_WRITER = textwrap.dedent(
    r"""
    import json, re, sys, time
    from langchain_recursive_memory.core import (
        FunctionTextModel, HybridMemory, MemoryStore, RetryPolicy, Turn)
    host, port, prefix, writer, start = sys.argv[1:6]
    line = re.compile(r"^\[(\d+)\] (?:\[[^\]]*\] )?user: (.*)$", re.M)
    statement = re.compile(r"\bMy (\w+) is (\w+)")

    def summarize(prompt):
        said = line.findall(prompt)
        facts = [{"key": f"user/{a}", "fact": f"The user's {a} is {v}.", "sources": [int(n)]}
                 for n, text in said for a, v in statement.findall(text)]
        body = "\n".join(json.dumps(f) for f in facts)
        return f"<summary>{' '.join(t for _, t in said)}</summary>\n<facts>\n{body}\n</facts>"

    store = MemoryStore.http(host, int(port), prefix=prefix)
    memory = HybridMemory(f"s{writer}", store=store, user_id="ada", max_tokens=2000,
                          model=FunctionTextModel(summarize),
                          retry=RetryPolicy(attempts=1, cooldown=0.0))
    said_at = 1_000_000_000 + 86400 * int(writer)  # a later writer said it later
    for i in range(12):
        memory.add(Turn(role="user", text=f"My k{i} is value{writer}.", created_at=said_at + i))
    time.sleep(max(0.0, float(start) - time.time()))  # every writer folds at once
    memory.fold(force=True, keep=False)
    """
)


@pytest.mark.server
@pytest.mark.slow
def test_processes_folding_one_users_sessions_at_once_keep_every_statement(
    server_store, chroma_server
):
    host, port = chroma_server
    start = str(time.time() + 8)
    args = [sys.executable, "-c", USER_WRITER, host, str(port), server_store.prefix]
    writers = [subprocess.Popen([*args, str(w), start], stderr=subprocess.PIPE) for w in range(4)]
    for proc in writers:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()[-3000:]
    facts = server_store.user_facts("default", "ada")
    assert len(facts) == 12
    for fact in facts:
        assert set(fact.session_ids) == {"s0", "s1", "s2", "s3"}, fact
        assert fact.text.endswith("is value3.")  # the newest statement wins
