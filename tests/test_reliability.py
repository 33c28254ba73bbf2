"""Races, faults and odd records: nothing lost, nothing leaked, no crash (issue 13).

Each scenario was reproduced against 0.1.0 before it was fixed; the comments say what
happened then.
"""

from __future__ import annotations

import itertools
import json
import logging
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import pytest
from fakes import FailingModel, KeywordSummarizer

from langchain_recursive_memory.core import (
    ConfigurationError,
    InvalidInputError,
    MemoryStore,
    ModelTimeoutError,
    RecursiveMemory,
    RetryPolicy,
    StoreError,
    Turn,
    WriteOutcomeUnknownError,
)
from langchain_recursive_memory.core.ingest import read_jsonl

FAST = RetryPolicy(attempts=1, timeout=5.0, cooldown=0.0)
AGE = 0.3  # seconds: what "old" means in the expiry tests


def _memory(store: MemoryStore, sid: str, namespace: str = "default") -> RecursiveMemory:
    return RecursiveMemory(
        sid,
        store=store,
        namespace=namespace,
        model=KeywordSummarizer(),
        retry=FAST,
        max_tokens=200,
        max_summary_tokens=60,
    )


def _old_session(store: MemoryStore, sid: str, turns: int = 20) -> None:
    memory = _memory(store, sid)
    for i in range(turns):
        memory.add(Turn(role="user", text=f"old message {i} about the garden"))
    assert store.summaries("default", sid)  # folded: there is derived state to delete


# -- 1. expire() never deletes a turn stored while it runs ----------------------------------


class _DeleteHook:
    """Wraps a chromadb collection; runs ``hook`` once before its first ``delete``."""

    def __init__(self, collection: Any, hook: Any) -> None:
        self._collection = collection
        self._hook = hook

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        hook, self._hook = self._hook, None
        if hook is not None:
            hook()
        return self._collection.delete(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)


def _inject(store: MemoryStore, phase: str, write: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    log = store.parts.repos.turn_log
    if phase == "after_scan":
        scan = log.activity
        monkeypatch.setattr(log, "activity", lambda ns=None, **kw: (scan(ns, **kw), write())[0])
    elif phase == "between_read_and_delete":
        monkeypatch.setattr(log, "collection", _DeleteHook(log.collection, write))
    elif phase == "after_delete":
        take = log.take_before
        monkeypatch.setattr(log, "take_before", lambda *a: (take(*a), write())[0])
    elif phase == "after_check":
        lifecycle = store.parts.lifecycle
        clear = lifecycle._clear_derived
        monkeypatch.setattr(lifecycle, "_clear_derived", lambda *a: (write(), clear(*a)))


@pytest.mark.parametrize(
    "phase", ["after_scan", "between_read_and_delete", "after_delete", "after_check"]
)
def test_expire_keeps_a_turn_stored_while_it_runs(phase, monkeypatch):
    # 0.1.0 read activity, then deleted whole sessions: the new turn went with them.
    store = MemoryStore.in_memory()
    _old_session(store, "busy")
    _old_session(store, "idle")
    time.sleep(AGE + 0.1)
    before = [t.id for t in store.turns("default", "busy")]
    _inject(
        store,
        phase,
        lambda: _memory(store, "busy").add(Turn(role="user", text="I am back!", id="late")),
        monkeypatch,
    )
    expired = store.expire(AGE)
    kept = [t.id for t in store.turns("default", "busy")]
    assert "late" in kept
    assert ("default", "idle") in expired
    assert store.turns("default", "idle") == []
    assert ("default", "busy") in {(s.namespace, s.session_id) for s in store.sessions()}
    if phase == "after_check":
        # The turn landed after the last check: the old history was expired, the turn kept.
        assert kept == ["late"]
        assert expired == [("default", "busy"), ("default", "idle")]
    else:
        assert kept == [*before, "late"]
        assert expired == [("default", "idle")]
        assert store.summaries("default", "busy")
        assert _memory(store, "busy").context().turns[-1].text == "I am back!"


def test_expire_rejects_bad_arguments():
    store = MemoryStore.in_memory()
    for bad in (0, -1.0, float("nan"), float("inf"), True, "10"):
        with pytest.raises(ConfigurationError, match="older_than"):
            store.expire(bad)
    with pytest.raises(ConfigurationError, match="now"):
        store.expire(10, now=float("nan"))


# -- 4. a tenant scope is never a query operator --------------------------------------------


@pytest.mark.parametrize("bad", [{"$ne": "x"}, {"$in": ["a", "b"]}, ["a"], 1, "", "  ", "\ud800"])
def test_store_methods_refuse_a_namespace_that_is_not_a_name(bad):
    # 0.1.0: expire(1.0, namespace={"$ne": "x"}) deleted both tenants' sessions.
    store = MemoryStore.in_memory()
    for ns in ("x", "y"):
        _memory(store, "s", namespace=ns).add(Turn(role="user", text="hello"))
    time.sleep(0.01)
    for call in (
        lambda: store.expire(0.001, namespace=bad),
        lambda: store.sessions(namespace=bad),
        lambda: store.activity(namespace=bad),
    ):
        with pytest.raises(InvalidInputError, match="namespace"):
            call()
    assert len(store.turns("x", "s")) == len(store.turns("y", "s")) == 1


# -- 2. a non-finite timestamp is refused; a damaged record never locks a session -----------


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), "yesterday", True])
def test_turn_refuses_a_timestamp_that_is_not_a_finite_number(bad):
    # 0.1.0 stored NaN; Chroma dropped the field and the session raised KeyError: 'created'.
    with pytest.raises(InvalidInputError, match="created_at"):
        Turn(role="user", text="hi", created_at=bad)


def test_jsonl_line_with_an_overflowing_timestamp_names_the_line(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(
        json.dumps({"role": "user", "content": "hi"})
        + "\n"
        + '{"role": "user", "content": "later", "created_at": 1e999}\n'
    )
    with pytest.raises(InvalidInputError, match=r"chat\.jsonl:2: created_at"):
        read_jsonl(path)


def test_a_record_missing_a_field_is_skipped_with_a_warning(caplog):
    store = MemoryStore.in_memory()
    memory = _memory(store, "s")
    for i in range(12):
        memory.add(Turn(role="user", text=f"message {i}", id=f"t{i}"))
    # Damage one unfolded record the way Chroma dropped a NaN field.
    log = store.parts.repos.turn_log
    record = f"{memory.session.key}:t:t11"
    got = log.collection.get(ids=[record], include=["metadatas", "documents"])
    meta = {k: v for k, v in got["metadatas"][0].items() if k != "created"}
    log.collection.delete(ids=[record])
    log.collection.add(
        ids=[record], documents=got["documents"], metadatas=[meta], embeddings=[[0.0]]
    )
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        turns = store.turns("default", "s")
        context = memory.context()
        memory.recall("message 3")
        memory.add(Turn(role="user", text="still works"))
    assert [t.id for t in turns] == [f"t{i}" for i in range(11)]
    assert context.turns
    assert "t11" in caplog.text and "created" in caplog.text


# -- 5. an ambiguous write failure tells the truth ------------------------------------------


class _LostAnswers:
    """Wraps a chromadb collection: ``add`` may store and then lose its answer; ``get`` may fail.

    ``store_then_fail``: the server stores the records but the answer never arrives.
    ``fail_reads``: reading back fails too (the server is gone).
    """

    def __init__(self, collection: Any, *, store_then_fail: bool, fail_reads: bool) -> None:
        self._collection = collection
        self.store_then_fail = store_then_fail
        self.fail_reads = fail_reads
        self.adds = 0

    def add(self, *args: Any, **kwargs: Any) -> Any:
        self.adds += 1
        if self.store_then_fail:
            self._collection.add(*args, **kwargs)
        raise httpx.ReadTimeout("the answer was lost")

    def get(self, *args: Any, **kwargs: Any) -> Any:
        if self.fail_reads and kwargs.get("ids") is not None:
            raise httpx.ConnectError("the server is gone")
        return self._collection.get(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)


def _lossy(store: MemoryStore, monkeypatch, **faults: bool) -> _LostAnswers:
    log = store.parts.repos.turn_log
    lossy = _LostAnswers(log.collection, **faults)
    monkeypatch.setattr(log, "collection", lossy)
    store.retry = RetryPolicy(attempts=2, initial_delay=0.0, timeout=5.0)
    return lossy


def _texts(store: MemoryStore, sid: str = "s") -> list[str]:
    return [t.turn.text for t in store.turns("default", sid)]


def test_a_write_stored_but_unanswered_is_a_success(monkeypatch):
    # 0.1.0 raised "failed to append turns" although the turn was stored; the
    # application's retry stored a second copy.
    store = MemoryStore.in_memory()
    memory = _memory(store, "s")
    memory.add(Turn(role="user", text="before"))
    lossy = _lossy(store, monkeypatch, store_then_fail=True, fail_reads=False)
    stored = memory.add(Turn(role="user", text="stored, answer lost"))
    assert lossy.adds == 2  # the write was retried (insert-if-absent), then checked by id
    assert [s.turn.text for s in stored] == ["stored, answer lost"]
    assert _texts(store) == ["before", "stored, answer lost"]


def test_a_write_that_did_not_land_is_a_store_error_and_safe_to_retry(monkeypatch):
    store = MemoryStore.in_memory()
    memory = _memory(store, "s")
    lossy = _lossy(store, monkeypatch, store_then_fail=False, fail_reads=False)
    with pytest.raises(StoreError) as info:
        memory.add(Turn(role="user", text="never stored"))
    assert not isinstance(info.value, WriteOutcomeUnknownError)
    monkeypatch.setattr(store.parts.repos.turn_log, "collection", lossy._collection)
    memory.add(Turn(role="user", text="never stored"))  # the application's retry
    assert _texts(store) == ["never stored"]


def test_an_unknown_outcome_says_so_and_its_turns_store_once(monkeypatch):
    store = MemoryStore.in_memory()
    memory = _memory(store, "s")
    lossy = _lossy(store, monkeypatch, store_then_fail=True, fail_reads=True)
    with pytest.raises(WriteOutcomeUnknownError, match="unknown") as info:
        memory.add([Turn(role="user", text="one"), Turn(role="user", text="two")])
    assert [t.text for t in info.value.turns] == ["one", "two"]
    assert all(t.id for t in info.value.turns)
    monkeypatch.setattr(store.parts.repos.turn_log, "collection", lossy._collection)
    memory.add(list(info.value.turns))  # what the error tells the caller to do
    assert _texts(store) == ["one", "two"]  # stored once, not twice


def test_a_partly_stored_batch_writes_the_rest_once(monkeypatch):
    store = MemoryStore.in_memory()
    memory = _memory(store, "s")
    log = store.parts.repos.turn_log
    real = log.collection
    calls = {"n": 0}

    class FirstHalf(_LostAnswers):
        def add(self, *args: Any, **kwargs: Any) -> Any:
            calls["n"] += 1
            if calls["n"] <= 2:  # both attempts store only the first record, then time out
                half = {k: v[:1] for k, v in kwargs.items()}
                real.add(**half)
                raise httpx.ReadTimeout("lost")
            return real.add(*args, **kwargs)

    monkeypatch.setattr(log, "collection", FirstHalf(real, store_then_fail=False, fail_reads=False))
    store.retry = RetryPolicy(attempts=2, initial_delay=0.0, timeout=5.0)
    memory.add([Turn(role="user", text=f"part {i}") for i in range(3)])
    assert _texts(store) == ["part 0", "part 1", "part 2"]


# -- 6. concurrent writers keep summaries in log order --------------------------------------


def _two_writers(prefix: str) -> tuple[MemoryStore, MemoryStore]:
    """Two store objects over one in-memory database with separate clocks and fold locks,
    as two processes sharing a Chroma server would be."""
    from langchain_recursive_memory.core.storage.client import in_memory_client

    return (
        MemoryStore(in_memory_client(), prefix=prefix),
        MemoryStore(_OtherClient(in_memory_client()), prefix=prefix),
    )


class _OtherClient:
    """The same chromadb client under another identity (another process's view)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def _summary_ranges(store: MemoryStore, sid: str) -> list[tuple[int, int]]:
    seq = {t.id: t.seq for t in store.turns("default", sid)}
    return [
        (min(seq[t] for t in v.turn_ids), max(seq[t] for t in v.turn_ids))
        for v in store.summaries("default", sid)
    ]


def test_a_late_write_is_folded_in_log_order(monkeypatch):
    # 0.1.0: a turn stamped before another writer folded, landing after, sorted before
    # the turns already summarized and was folded later: out of order, ranges overlapped.
    prefix = f"late{time.time_ns()}"
    store_a, store_b = _two_writers(prefix)
    a, b = _memory(store_a, "s"), _memory(store_b, "s")
    for i in range(6):
        b.add(Turn(role="user", text=f"early message {i} " * 3))
    write = store_a.parts.repos.turn_log.write

    def late_write(scope: Any, stored: Any) -> None:
        for i in range(12):  # B writes and folds while A's write is in flight
            b.add(Turn(role="user", text=f"writer B message {i} " * 3))
        assert store_b.summaries("default", "s")
        write(scope, stored)

    monkeypatch.setattr(store_a.parts.repos.turn_log, "write", late_write)
    a.add(Turn(role="user", text="A's late message", id="late"))
    monkeypatch.setattr(store_a.parts.repos.turn_log, "write", write)
    for i in range(12):
        b.add(Turn(role="user", text=f"after message {i} " * 3))
    ranges = _summary_ranges(store_b, "s")
    assert len(ranges) >= 2
    assert all(lo <= hi for lo, hi in ranges)
    assert all(prev[1] < nxt[0] for prev, nxt in itertools.pairwise(ranges)), ranges
    by_version = {t: v.version for v in store_b.summaries("default", "s") for t in v.turn_ids}
    for t in store_b.turns("default", "s"):
        assert t.folded_in == by_version.get(t.id, 0)
    assert "late" in by_version  # folded, after the turns folded before it landed


# -- 7. no wasted summarizer calls under concurrency ----------------------------------------


class _SlowSummarizer(KeywordSummarizer):
    def __init__(self, delay: float) -> None:
        # Within the cap, keeping most of the previous summary: one call per version.
        super().__init__(max_words=60)
        self.delay = delay

    def _answer(self, prompt: str) -> str:
        time.sleep(self.delay)
        return super()._answer(prompt)


def test_a_fold_lease_keeps_concurrent_writers_from_wasting_calls():
    # 0.1.0: 8 writers made 525-585 summarizer calls for 245-262 committed versions.
    prefix = f"lease{time.time_ns()}"
    from langchain_recursive_memory.core.storage.client import in_memory_client

    model = _SlowSummarizer(delay=0.05)
    errors: list[BaseException] = []

    # One store object per writer, opened up front (chromadb's client creation is not
    # thread-safe); each has its own identity, clock and fold lock, like a process.
    stores = [MemoryStore(_OtherClient(in_memory_client()), prefix=prefix) for _ in range(4)]

    def writer(w: int) -> None:
        try:
            store = stores[w]
            memory = RecursiveMemory(
                "s", store=store, model=model, retry=FAST, max_tokens=400, max_summary_tokens=150
            )
            for i in range(40):
                memory.add(Turn(role="user", text=f"writer {w} message {i} " * 3))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    store = MemoryStore(in_memory_client(), prefix=prefix)
    versions = len(store.summaries("default", "s"))
    assert versions >= 5
    assert len(store.turns("default", "s")) == 160
    # Summarizer calls per committed version (a shortening call of an over-long answer is
    # part of one version's fold, whoever folds).
    fold_calls = sum(1 for prompt in model.prompts if not prompt.startswith("Shorten"))
    assert fold_calls <= 1.1 * versions, (fold_calls, versions)
    ranges = _summary_ranges(store, "s")
    assert all(prev[1] < nxt[0] for prev, nxt in itertools.pairwise(ranges))


def test_a_dead_lease_holder_blocks_folds_for_at_most_two_periods(monkeypatch):
    store = MemoryStore.in_memory()
    assert store.session("default", "s").summaries.claim_lease("dead holder", 10.0)
    assert not store.session("default", "s").summaries.claim_lease("me", 10.0)
    later = time.time() + 20.0  # two periods on: the dead holder's claims are over
    monkeypatch.setattr(
        "langchain_recursive_memory.core.storage.session_store.time.time", lambda: later
    )
    assert store.session("default", "s").summaries.claim_lease("me", 10.0)
    store.session("default", "s").summaries.release_lease("me", 10.0)
    assert store.session("default", "s").summaries.claim_lease("someone else", 10.0)


# -- 8. background folds never crash the process --------------------------------------------

EXIT_WHILE_FOLDING = """
import sys
from langchain_recursive_memory.core import MemoryStore, RecursiveMemory, RetryPolicy, Turn

class Quick:  # answers at once: the background folds spend their time inside Chroma
    def complete(self, prompt):
        return "A summary of the earlier messages about the garden."
    async def acomplete(self, prompt):
        return self.complete(prompt)

memory = RecursiveMemory("s", store=MemoryStore.persistent(sys.argv[1]), model=Quick(),
                         background_folds=True, max_tokens=300, max_summary_tokens=40,
                         retry=RetryPolicy(attempts=1, timeout=30))
for i in range(150):
    memory.add(Turn(role="user", text=f"message {i} about the garden and the weather " * 5))
print("added", flush=True)
"""


@pytest.mark.slow
def test_exit_while_a_background_fold_runs_is_clean(tmp_path):
    # 0.1.0: SIGSEGV (exit 139): the daemon fold thread was inside Chroma while the
    # interpreter finalized (3 of 12 runs of this script here, 6 of 6 in the runs).
    for run in range(4):
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", EXIT_WHILE_FOLDING, str(tmp_path / f"db{run}")],
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        assert b"added" in done.stdout
        assert time.monotonic() - start < 60
        store = MemoryStore.persistent(tmp_path / f"db{run}")
        assert len(store.turns("default", "s")) == 150  # nothing lost


def test_one_slow_fold_does_not_hold_up_other_sessions():
    store = MemoryStore.in_memory()
    slow = RecursiveMemory(
        "slow",
        store=store,
        model=_SlowSummarizer(delay=3.0),
        background_folds=True,
        retry=FAST,
        max_tokens=200,
        max_summary_tokens=40,
    )
    fast = RecursiveMemory(
        "fast",
        store=store,
        model=KeywordSummarizer(),
        background_folds=True,
        retry=FAST,
        max_tokens=200,
        max_summary_tokens=40,
    )
    for i in range(12):
        slow.add(Turn(role="user", text=f"slow session message {i} " * 3))
    start = time.monotonic()
    for i in range(12):
        fast.add(Turn(role="user", text=f"fast session message {i} " * 3))
    assert fast.wait_for_folds(2.5)
    assert time.monotonic() - start < 2.5
    assert store.summaries("default", "fast")
    assert slow.wait_for_folds(15)


def test_model_calls_reuse_worker_threads(monkeypatch):
    # 0.1.0 started a new thread for every model call.
    started: list[str] = []
    start = threading.Thread.start

    def counting_start(self: threading.Thread) -> None:
        started.append(self.name)
        start(self)

    model = KeywordSummarizer()
    memory = RecursiveMemory(
        "s",
        store=MemoryStore.in_memory(),
        model=model,
        retry=FAST,
        max_tokens=200,
        max_summary_tokens=40,
    )
    monkeypatch.setattr(threading.Thread, "start", counting_start)
    for i in range(60):
        memory.add(Turn(role="user", text=f"message {i} about Oslo " * 3))
    assert model.calls >= 10
    assert len(started) <= 1, started  # at most the pool's first worker


# -- 9. bounded blocking ---------------------------------------------------------------------


def test_a_hanging_summarizer_blocks_add_only_until_the_fold_deadline():
    # 0.1.0: one add waited timeout x attempts (3 minutes with the defaults).
    model = FailingModel(mode="hang", hang_seconds=30.0)
    memory = RecursiveMemory(
        "s",
        store=MemoryStore.in_memory(),
        model=model,
        retry=RetryPolicy(attempts=3, timeout=60.0, initial_delay=0.0, fold_deadline=1.0),
        max_tokens=200,
        max_summary_tokens=40,
    )
    took: list[float] = []
    for i in range(15):
        start = time.monotonic()
        memory.add(Turn(role="user", text=f"message {i} about the garden " * 2))
        took.append(time.monotonic() - start)
    assert max(took) < 3.0, took
    assert len(memory.turns()) == 15  # nothing lost
    assert isinstance(memory.last_fold_error, ModelTimeoutError)
    assert memory.context().tokens <= 200


def test_the_default_fold_deadline_is_short_enough_for_a_chat_turn():
    assert RetryPolicy().fold_deadline <= 30.0
    with pytest.raises(ConfigurationError, match="fold_deadline"):
        RetryPolicy(fold_deadline=0)


# -- 10. several processes on one embedded path ---------------------------------------------

HOLD_THE_STORE = """
import sys, time
from langchain_recursive_memory.core import MemoryStore
MemoryStore.persistent(sys.argv[1])
print("open", flush=True)
time.sleep(30)
"""


def test_a_second_process_on_an_embedded_path_is_warned(tmp_path, caplog):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_STORE, str(tmp_path)], stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == b"open"
        with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
            MemoryStore.persistent(tmp_path)
        assert "another process" in caplog.text and "chroma run" in caplog.text
    finally:
        holder.kill()
        holder.wait()


def test_one_process_alone_on_an_embedded_path_is_not_warned(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        MemoryStore.persistent(tmp_path)
        MemoryStore.persistent(tmp_path)  # a second store object in the same process
    assert "another process" not in caplog.text
