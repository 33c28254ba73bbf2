"""Regression tests for problems found in review (each failed before its fix)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from types import SimpleNamespace

import pytest
from conftest import FAST
from fakes import FailingModel, KeywordSummarizer
from sqlalchemy import event

from langchain_recursive_memory.core import (
    MemoryStore,
    RecursiveMemory,
    RetryPolicy,
    TokenCounter,
    ToolCall,
    Turn,
)
from langchain_recursive_memory.core.cache import StoreCaches
from langchain_recursive_memory.core.prompts import clean_summary, parse_combined, parse_facts


def test_a_tool_call_waiting_for_its_result_is_not_folded(store):
    memory = RecursiveMemory("s", store=store, model=KeywordSummarizer(), retry=FAST)
    memory.add(Turn(role="user", text="word " * 800))
    call = ToolCall("search", {"q": "x " * 900}, "c1")
    memory.add(Turn(role="assistant", tool_calls=(call,)))
    memory.add(Turn(role="tool", text="result", tool_call_id="c1"))
    window = memory.context().window
    assert not window or window[0].role != "tool"
    folded = {t.turn.role: t.folded_in for t in memory.turns()}
    # The call and its result were folded together, or both wait: never one without the other.
    assert folded["assistant"] == folded["tool"]


def test_the_window_never_shows_an_orphan_tool_result(store):
    memory = RecursiveMemory(
        "s", store=store, retry=FAST, max_tokens=300, max_summary_tokens=50, keep_messages=1
    )
    memory.add(Turn(role="assistant", tool_calls=(ToolCall("f", {}, "c9"),)), fold=False)
    memory.add(Turn(role="user", text="are you there?"), fold=False)
    memory.fold(force=True)  # the unanswered call is folded; the user message stays
    memory.add(Turn(role="tool", text="late result", tool_call_id="c9"), fold=False)
    memory.add(Turn(role="user", text="next question"), fold=False)
    assert [t.text for t in memory.context().window] == ["are you there?", "next question"]
    assert len(memory.turns()) == 4  # the late result is kept in the log


async def test_a_cancelled_async_fold_releases_its_lock(store):
    model = FailingModel("hang", hang_seconds=30)
    memory = RecursiveMemory(
        "s", store=store, model=model, retry=FAST, max_tokens=300, max_summary_tokens=50
    )
    for i in range(20):
        await memory.aadd(Turn(role="user", text=f"message {i} " * 5), fold=False)
    task = asyncio.create_task(memory.afold())
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    kept = task  # the exception stays referenced, as an error tracker would keep it
    model.failing = False
    result = await memory.afold()
    assert result.skipped is None and result.versions >= 1
    assert kept.cancelled()


def test_a_summary_counted_with_another_encoding_still_fits(tmp_path):
    writer = RecursiveMemory(
        "s",
        path=tmp_path,
        model=KeywordSummarizer(),
        retry=FAST,
        tokenizer_model="gpt-4o",
        max_tokens=420,
        max_summary_tokens=100,
    )
    for i in range(30):
        writer.add(Turn(role="user", text=f"東京タワー {i} 😀 naïve café " * 4))
    reader = RecursiveMemory(
        "s",
        path=tmp_path,
        retry=FAST,
        tokenizer_model="claude-3",
        max_tokens=420,
        max_summary_tokens=100,
    )
    ctx = reader.context()
    assert ctx.tokens <= 420
    assert TokenCounter("claude-3").count_turns(ctx.turns) == ctx.tokens


def test_a_writer_with_a_slow_clock_still_appends_after_what_it_read(store, monkeypatch):
    import time as real_time

    fast = MemoryStore(store.client, prefix=store.prefix)
    slow = MemoryStore(store.client, prefix=store.prefix)
    fast.session("default", "s").turns.append([Turn(role="user", text="Q1")], [5], "o200k_base")
    fast.session("default", "s").turns.append(
        [Turn(role="assistant", text="A1")], [5], "o200k_base"
    )
    slow.session("default", "s").summaries.load()  # the other server reads the history first
    skewed = real_time.time_ns() - 2_000_000_000  # its clock is 2 s behind
    monkeypatch.setattr(
        "langchain_recursive_memory.core.storage.turns.time.time_ns", lambda: skewed
    )
    slow.session("default", "s").turns.append([Turn(role="user", text="Q2")], [5], "o200k_base")
    assert [t.turn.text for t in store.turns("default", "s")] == ["Q1", "A1", "Q2"]


def test_another_store_object_notices_a_clear(store):
    a = RecursiveMemory(
        "s",
        store=store,
        model=KeywordSummarizer(),
        retry=FAST,
        max_tokens=300,
        max_summary_tokens=50,
    )
    b = RecursiveMemory(
        "s",
        store=MemoryStore(store.client, prefix=store.prefix),
        model=KeywordSummarizer(),
        retry=FAST,
        max_tokens=300,
        max_summary_tokens=50,
    )
    for i in range(30):
        a.add(Turn(role="user", text=f"first life {i} " * 3))
    b.context()  # b caches a summary hint
    a.clear()
    for i in range(30):
        a.add(Turn(role="user", text=f"second life {i} " * 3))
    assert b.context().summary is not None
    assert b.context().summary.version == a.context().summary.version
    assert [s.session_id for s in b.store.sessions()] == ["s"]


def test_the_log_order_is_commit_order_whatever_created_at_says(store, monkeypatch):
    # 0.1.0 ordered the log by a clock-based key: a writer whose clock was behind
    # appended before what it had read. Now the database numbers turns as their writes
    # commit; a turn's created_at (given, or from a skewed clock) and its id play no part.
    other = MemoryStore(store.client, prefix=store.prefix, cache=StoreCaches())
    writers = [_small_memory(store), _small_memory(other)]
    clock = {"ns": time.time_ns()}

    def backwards() -> int:  # every new id and default created_at earlier than the last
        clock["ns"] -= 1_000_000_000
        return clock["ns"]

    clocks = SimpleNamespace(time=time.time, time_ns=backwards)  # the log's clocks only
    monkeypatch.setattr("langchain_recursive_memory.core.storage.turns.time", clocks)
    texts = []
    for i in range(24):
        given = {0: None, 1: 1_000.0 + i, 2: time.time() + 86_400.0 - i}[i % 3]
        texts.append(f"message {i} about the harbour and the boats " * 3)
        writers[i % 2].add(Turn(role="user", text=texts[-1], created_at=given))
    log = store.turns("default", "s")
    assert [t.turn.text for t in log] == texts
    assert [t.seq for t in log] == list(range(1, 25))
    assert sorted(t.id for t in log) != [t.id for t in log]  # ids run backwards here
    versions = store.summaries("default", "s")
    assert versions  # and the folds took the oldest appended first
    marks = [t.folded_in for t in log]
    assert marks == sorted(marks, key=lambda m: (m == 0, m))
    window = [t.text for t in _small_memory(other).context().window]
    assert window == texts[len(texts) - len(window) :]


@pytest.mark.parametrize("caches", ["shared", "separate"])
def test_a_long_lived_object_does_not_serve_a_cleared_session(store, caches):
    # A memory object kept across requests caches what it has read (the turns' index,
    # the summary): after a clear through another object (or process) it must answer as
    # a fresh one does, not from what it kept, and the next write starts the session again.
    other = MemoryStore(
        store.client, prefix=store.prefix, cache=StoreCaches() if caches == "separate" else None
    )
    a, b = _small_memory(store, recall_tokens=100), _small_memory(other, recall_tokens=100)
    for i in range(30):
        a.add(Turn(role="user", text=f"first life {i} about zebras " * 3))
    before = b.context("zebras")
    assert before.summary is not None and before.window and b.recall("zebras")
    a.clear()
    after = b.context("zebras")
    assert after.summary is None and after.window == () and "zebras" not in str(after.turns)
    assert b.recall("zebras") == [] and b.turns() == []
    b.add(Turn(role="user", text="second life starts here"))
    assert [t.turn.text for t in a.turns()] == ["second life starts here"]
    assert [t.text for t in a.context().window] == ["second life starts here"]
    for i in range(30):
        a.add(Turn(role="user", text=f"second life {i} about lions " * 3))
    assert b.context().summary.version == a.context().summary.version
    assert b.recall("zebras") == []
    assert len(b.turns()) == 31


def _small_memory(store: MemoryStore, **options) -> RecursiveMemory:
    return RecursiveMemory(
        "s",
        store=store,
        model=KeywordSummarizer(),
        retry=FAST,
        max_tokens=300,
        max_summary_tokens=50,
        **options,
    )


def test_an_append_of_2000_turns_is_one_transaction_and_reads_back_whole(store):
    # 0.1.0 split appends into Chroma's batches (and a batch limit bit). Now one append is
    # one transaction, however many turns; its id lists are cut to stay under SQLite's
    # parameter limit, here lowered to 999 (SQLite's default before 3.32).
    with store.db.engine.connect() as conn:  # the in-memory database's one connection
        conn.connection.dbapi_connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    turns = [
        Turn(role="user" if i % 2 == 0 else "assistant", text=f"bulk line {i}", id=f"b{i}")
        for i in range(2000)
    ]
    session = store.session("default", "s")
    began: list[object] = []

    def begin(conn: object) -> None:
        began.append(conn)

    event.listen(store.db.engine, "begin", begin)
    try:
        stored = session.turns.append(turns, [5] * 2000, "o200k_base")
    finally:
        event.remove(store.db.engine, "begin", begin)
    assert len(began) == 1  # one transaction
    assert [s.seq for s in stored] == list(range(1, 2001))
    log = store.turns("default", "s")
    assert [t.turn.text for t in log] == [f"bulk line {i}" for i in range(2000)]
    assert [t.seq for t in log] == list(range(1, 2001))
    assert [t.id for t in session.turns.by_ids([t.id for t in reversed(turns)])] == [
        f"b{i}" for i in range(2000)
    ]
    again = session.turns.append(turns, [5] * 2000, "o200k_base")  # stored once: the
    assert [s.seq for s in again] == list(range(1, 2001))  # earlier records come back
    assert store.count_turns("default", "s") == 2000
    memory = RecursiveMemory("s", store=store, retry=FAST, max_tokens=300, max_summary_tokens=60)
    result = memory.fold()  # a version may fold hundreds of turns: marked in one go
    assert result.error is None and result.folded > 1000
    folded = sum(len(v.turn_ids) for v in store.summaries("default", "s"))
    assert folded == result.folded == sum(1 for t in store.turns("default", "s") if t.folded_in)
    assert memory.context().tokens <= 300


def test_the_cool_down_is_shared_by_every_object_of_a_session(store):
    model = FailingModel("raise")
    retry = RetryPolicy(attempts=1, timeout=5.0, cooldown=3600.0)
    for i in range(12):  # a new memory object per turn, like a history factory
        memory = RecursiveMemory(
            "s", store=store, model=model, retry=retry, max_tokens=300, max_summary_tokens=50
        )
        memory.add(Turn(role="user", text=f"turn {i} " * 10))
    assert model.failed_calls == 1


def test_facts_parser_accepts_what_models_write(caplog):
    ids = ["t1", "t2"]
    pretty = """<facts>
{
  "key": "ada/city",
  "fact": "Ada lives in Oslo.",
  "sources": [1]
}
{"facts": [{"key": "bob/job", "fact": "Bob is a pilot.", "sources": [2]}]}
{"key": "bad", "fact": "", "sources": [1]}
</facts>"""
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        facts = parse_facts(pretty, ids)
    assert {f.key for f in facts} == {"ada/city", "bob/job"}
    assert "skipped 1 unusable facts" in caplog.text
    answer = "<summary>Ada moved to İstanbul in May.</summary>\n<facts>\n" + (
        '{"key": "ada/city", "fact": "Ada moved to İstanbul.", "sources": [1]}\n</facts>'
    )
    summary, parsed, problem = parse_combined(answer, ids)
    assert summary == "Ada moved to İstanbul in May." and problem == ""
    assert parsed is not None and parsed[0].text == "Ada moved to İstanbul."


def test_reasoning_is_not_written_into_the_summary():
    answer = "<think>The user wants... <summary>draft</summary></think>\nAda owns 3 cats."
    assert clean_summary(answer) == "Ada owns 3 cats."


def test_embedding_calls_are_batched(store):
    from fakes import BagOfWordsEmbedder

    from langchain_recursive_memory.core import HiGMem

    class Counting(BagOfWordsEmbedder):
        sizes: list[int]

        def embed_documents(self, texts):
            self.sizes.append(len(texts))
            return super().embed_documents(texts)

    embedder = Counting()
    embedder.sizes = []
    memory = HiGMem("s", store=store, embedder=embedder)
    memory.embed_batch_size = 16
    memory.add([Turn(role="user", text=f"line {i} about topic {i % 7}") for i in range(100)])
    memory.retrieve("topic 3", k=2)
    assert embedder.sizes and max(embedder.sizes) <= 16
    assert sum(embedder.sizes) >= 200  # two window sizes per turn


def test_an_oversize_newest_message_is_shown_cut_not_dropped(store):
    memory = RecursiveMemory(
        "s",
        store=store,
        model=KeywordSummarizer(),
        retry=FAST,
        max_tokens=400,
        max_summary_tokens=80,
    )
    question = "Please review this: " + "lorem ipsum dolor " * 600 + " What do you think?"
    memory.add(Turn(role="user", text=question))
    ctx = memory.context()
    assert ctx.tokens <= 400
    assert ctx.window and ctx.window[-1].text.startswith("Please review this: lorem")
    assert "more tokens not shown" in ctx.window[-1].text
    assert memory.turns()[-1].turn.text == question  # the log keeps it whole


def test_no_llm_higmem_returns_no_zero_signal_padding(store):
    from langchain_recursive_memory.core import HiGMem

    memory = HiGMem("s", store=store)
    memory.add(
        [
            Turn(role="user", text=t, extra={"session": str(n)})
            for n, t in enumerate(["the violin lesson is on Tuesday", "weather is fine", "pizza"])
        ]
    )
    hits = memory.retrieve("violin lesson", k=8)
    assert [h.turn.text for h in hits] == ["the violin lesson is on Tuesday"]


def test_a_new_memory_object_reuses_the_stored_vectors(tmp_path):
    from fakes import BagOfWordsEmbedder

    from langchain_recursive_memory.core import HiGMem, HybridMemory

    class Counting(BagOfWordsEmbedder):
        texts = 0

        def embed_documents(self, texts):
            Counting.texts += len(texts)
            return super().embed_documents(texts)

    turns = [Turn(role="user", text=f"note {i} about topic {i % 5}", id=f"n{i}") for i in range(40)]
    first = HiGMem("s", store=MemoryStore.persistent(tmp_path), embedder=Counting())
    first.add(turns)
    first.retrieve("topic 3")
    assert Counting.texts > 0
    Counting.texts = 0
    again = HiGMem("s", store=MemoryStore.persistent(tmp_path), embedder=Counting())
    again.retrieve("topic 3")
    assert Counting.texts == 0  # after a restart, nothing is embedded twice

    hybrid = HybridMemory(
        "h",
        store=MemoryStore.persistent(tmp_path),
        embedder=Counting(),
        max_tokens=400,
        max_summary_tokens=60,
    )
    hybrid.add(turns)
    hybrid.reindex()
    Counting.texts = 0
    restarted = HybridMemory(
        "h",
        store=MemoryStore.persistent(tmp_path),
        embedder=Counting(),
        max_tokens=400,
        max_summary_tokens=60,
    )
    assert restarted.reindex() == 0 and Counting.texts == 0
