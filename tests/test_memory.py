"""The recursive summary engine, with scripted models against an embedded Chroma."""

from __future__ import annotations

import asyncio
import logging

import pytest
from conftest import same_requests
from fakes import FailingModel, KeywordSummarizer, VerboseModel

from langchain_recursive_memory.core import (
    ConfigurationError,
    InvalidInputError,
    MemoryStore,
    ModelError,
    RecursiveMemory,
    RetryPolicy,
    TokenCounter,
    ToolCall,
    Turn,
)
from langchain_recursive_memory.core.tokenizer import REPLY_PRIMING_TOKENS


def chat(i: int) -> list[Turn]:
    return [
        Turn(role="user", text=f"Question {i}: what about the Project Falcon budget item {i}?"),
        Turn(role="assistant", text=f"Answer {i}: the item {i} costs {i * 10} dollars, Ada said."),
    ]


def make(store: MemoryStore, fast_retry: RetryPolicy, **kw: object) -> RecursiveMemory:
    kw.setdefault("max_tokens", 600)
    kw.setdefault("max_summary_tokens", 120)
    return RecursiveMemory("s1", store=store, retry=fast_retry, **kw)  # type: ignore[arg-type]


def test_window_folds_into_summary_and_context_stays_in_budget(store, fast_retry):
    model = KeywordSummarizer()
    memory = make(store, fast_retry, model=model)
    counter = TokenCounter()
    for i in range(60):
        memory.add(chat(i))
        ctx = memory.context()
        assert ctx.tokens <= 600
        # The reported count is the real count of the messages handed out.
        assert counter.count_turns(ctx.turns) == ctx.tokens
    assert len(memory.turns()) == 120
    summary = memory.get_summary()
    assert summary is not None and summary.method == "llm"
    assert model.calls >= 1
    ctx = memory.context()
    assert ctx.summary_turn is not None and ctx.summary_turn.role == "user"
    assert ctx.summary_turn.text.startswith("Summary of the earlier conversation:")
    # The newest message is always in the window, verbatim.
    assert ctx.window[-1].text == chat(59)[1].text
    # Recursive: later summaries were built from earlier ones.
    assert "(empty" not in model.prompts[-1]


def test_fold_keeps_recent_messages_and_records_provenance(store, fast_retry):
    memory = make(store, fast_retry, model=KeywordSummarizer(), keep_tokens=200)
    for i in range(12):
        memory.add(chat(i), fold=False)
    result = memory.fold()
    assert result.versions >= 1 and result.folded > 0
    state = store.session("default", "s1").summaries.load()
    assert state.summary is not None
    kept_tokens = sum(t.tokens for t in state.turns)
    assert kept_tokens <= 200
    all_ids = [t.id for t in memory.turns()]
    folded = [t for t in memory.turns() if t.folded_in]
    # Provenance: the summary versions name exactly the folded turns, oldest first.
    named = [tid for s in store.summaries("default", "s1") for tid in s.turn_ids]
    assert named == [t.id for t in folded] == all_ids[: len(named)]
    assert state.summary.first_turn_id == all_ids[0]
    assert state.summary.last_turn_id == named[-1]
    assert state.summary.covered == len(named)


def test_message_count_trigger(store, fast_retry):
    memory = make(store, fast_retry, model=KeywordSummarizer(), max_tokens=5000, max_messages=10)
    for i in range(10):
        memory.add(chat(i))
        assert len(memory.context().window) <= 10
    assert memory.get_summary() is not None
    # keep_messages defaults to half of max_messages.
    assert len(store.session("default", "s1").summaries.load().turns) <= 10


def test_tool_call_pairs_are_never_split(store, fast_retry):
    memory = make(store, fast_retry, model=KeywordSummarizer(), max_tokens=500)
    for i in range(40):
        call = ToolCall("lookup", {"query": f"weather in city {i}", "units": "metric"}, f"c{i}")
        other = ToolCall("clock", {"tz": "UTC"}, f"d{i}")
        memory.add(
            [
                Turn(role="user", text=f"What is the weather in city {i}?"),
                Turn(role="assistant", tool_calls=(call, other)),
                Turn(role="tool", text=f"{i} degrees and sunny " * 3, tool_call_id=f"c{i}"),
                Turn(role="tool", text="12:00", tool_call_id=f"d{i}"),
                Turn(role="assistant", text=f"It is {i} degrees in city {i}."),
            ]
        )
        ctx = memory.context()
        assert ctx.tokens <= 500
        window = list(ctx.window)
        assert window[0].role != "tool", "the window starts with a tool result"
        for pos, turn in enumerate(window):
            if turn.tool_calls:
                answered = {t.tool_call_id for t in window[pos + 1 : pos + 3]}
                assert answered == {c.id for c in turn.tool_calls}
    # Every fold step folded whole units.
    for summary in store.summaries("default", "s1"):
        folded = store.session("default", "s1").turns.by_ids(summary.turn_ids)
        assert folded[0].turn.role != "tool"
        calls = {c.id for t in folded for c in t.turn.tool_calls}
        results = {t.turn.tool_call_id for t in folded if t.turn.role == "tool"}
        assert calls == results


def test_llm_failure_loses_nothing_and_is_retried_on_a_later_add(store, fast_retry, caplog):
    model = FailingModel("raise")
    memory = make(store, fast_retry, model=model)
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        for i in range(30):
            memory.add(chat(i))  # never raises
            ctx = memory.context()
            assert ctx.tokens <= 600  # budget kept while the LLM is down
    assert model.failed_calls >= 2  # retried within the policy
    assert "fold failed" in caplog.text
    assert memory.get_summary() is None  # nothing written in as a summary
    assert isinstance(memory.last_fold_error, ModelError)
    assert len(memory.turns()) == 60
    ctx = memory.context()
    assert ctx.hidden > 0 and ctx.summary is None
    # The provider recovers: the next add folds everything that waited.
    model.failing = False
    memory.add(chat(30))
    summary = memory.get_summary()
    assert summary is not None and summary.method == "llm"
    assert memory.last_fold_error is None
    state = store.session("default", "s1").summaries.load()
    folded_ids = {t.id for t in memory.turns() if t.folded_in}
    assert len(folded_ids) + len(state.turns) == 62
    assert memory.context().hidden == 0


@pytest.mark.parametrize("mode", ["empty", "hang"])
def test_garbage_or_timeout_is_not_written_as_summary(store, mode):
    model = FailingModel(mode, hang_seconds=1.0)
    retry = RetryPolicy(attempts=2, initial_delay=0.0, timeout=0.2, cooldown=0.0)
    memory = RecursiveMemory("s1", store=store, model=model, retry=retry, max_tokens=400)
    for i in range(12):
        memory.add(chat(i))
    assert memory.get_summary() is None
    assert len(memory.turns()) == 24
    assert memory.context().tokens <= 400
    with pytest.raises(ModelError):
        memory.fold()


def test_failed_fold_waits_for_the_cooldown(store):
    model = FailingModel("raise")
    retry = RetryPolicy(attempts=1, timeout=5.0, cooldown=3600.0)
    memory = RecursiveMemory("s1", store=store, model=model, retry=retry, max_tokens=400)
    for i in range(12):
        memory.add(chat(i))
    assert model.failed_calls == 1  # later adds skipped the fold during the cool-down
    model.failing = False
    memory.add(chat(12))
    assert memory.get_summary() is None  # still cooling down
    assert memory.fold().versions >= 1  # an explicit fold ignores the cool-down


def test_summary_cap_holds_when_the_model_ignores_the_length(store, fast_retry):
    model = VerboseModel(words=3000)
    memory = make(store, fast_retry, model=model, max_summary_tokens=100)
    counter = TokenCounter()
    for i in range(20):
        memory.add(chat(i))
    summary = memory.get_summary()
    assert summary is not None
    assert summary.tokens <= 100
    assert counter.count_text(summary.text) <= 100
    assert summary.text.endswith(".")  # cut at a sentence boundary
    assert memory.context().tokens <= 600


def test_restart_resumes_with_zero_llm_calls(tmp_path, fast_retry):
    model = KeywordSummarizer()
    first = RecursiveMemory(
        "s1", path=tmp_path, model=model, retry=fast_retry, max_tokens=500, max_summary_tokens=100
    )
    for i in range(25):
        first.add(chat(i))
    before = first.context()
    assert before.summary is not None
    calls = model.calls
    del first

    second_model = KeywordSummarizer()
    second = RecursiveMemory(
        "s1",
        path=tmp_path,
        model=second_model,
        retry=fast_retry,
        max_tokens=500,
        max_summary_tokens=100,
    )
    after = second.context()
    assert second_model.calls == 0
    assert after.summary is not None and after.summary.version == before.summary.version
    assert [t.text for t in after.turns] == [t.text for t in before.turns]
    assert model.calls == calls


def test_no_llm_uses_the_extractive_summarizer(store):
    memory = RecursiveMemory("s1", store=store, max_tokens=400, max_summary_tokens=80)
    for i in range(30):
        memory.add(chat(i))
        assert memory.context().tokens <= 400
    summary = memory.get_summary()
    assert summary is not None and summary.method == "extractive"
    assert summary.tokens <= 80
    # The extract holds the latest folded messages verbatim (shortened).
    last_folded = store.session("default", "s1").turns.by_ids(summary.turn_ids)[-1]
    assert last_folded.turn.text[:30] in summary.text
    assert len(memory.turns()) == 60


def test_duplicate_turn_ids_are_stored_once(store, fast_retry):
    memory = make(store, fast_retry)
    memory.add([Turn(role="user", text="one", id="m1"), Turn(role="user", text="dup", id="m1")])
    memory.add(Turn(role="user", text="again", id="m1"))
    turns = memory.turns()
    assert [t.turn.text for t in turns] == ["one"]


def test_huge_message_still_keeps_the_budget(store, fast_retry):
    memory = make(store, fast_retry, model=KeywordSummarizer(), max_tokens=400)
    memory.add(Turn(role="user", text="word " * 5000))
    ctx = memory.context()
    assert ctx.tokens <= 400
    assert len(memory.turns()) == 1
    assert memory.turns()[0].turn.text == "word " * 5000  # the log keeps it whole


def test_sessions_and_namespaces_are_isolated(store, fast_retry):
    a = RecursiveMemory("same", store=store, namespace="app-a", retry=fast_retry)
    b = RecursiveMemory("same", store=store, namespace="app-b", retry=fast_retry)
    c = RecursiveMemory("other", store=store, namespace="app-a", retry=fast_retry)
    a.add(Turn(role="user", text="secret of A"))
    b.add(Turn(role="user", text="secret of B"))
    assert [t.text for t in a.context().window] == ["secret of A"]
    assert [t.text for t in b.context().window] == ["secret of B"]
    assert c.context().window == ()
    a.clear()
    assert a.turns() == [] and [t.turn.text for t in b.turns()] == ["secret of B"]


def test_bad_configuration_and_input_raise_clear_errors(store):
    with pytest.raises(ConfigurationError, match="max_tokens=0"):
        RecursiveMemory("s", store=store, max_tokens=0)
    with pytest.raises(ConfigurationError, match="max_summary_tokens=990"):
        RecursiveMemory("s", store=store, max_tokens=1000, max_summary_tokens=990)
    with pytest.raises(ConfigurationError, match="keep_tokens"):
        RecursiveMemory("s", store=store, max_tokens=1000, keep_tokens=5000)
    with pytest.raises(ConfigurationError, match="summary_role"):
        RecursiveMemory("s", store=store, summary_role="narrator")
    with pytest.raises(InvalidInputError, match="session_id=''"):
        RecursiveMemory("", store=store)
    with pytest.raises(InvalidInputError, match="role='robot'"):
        Turn(role="robot", text="beep")
    memory = RecursiveMemory("s", store=store)
    with pytest.raises(InvalidInputError):
        memory.add(["not a turn"])  # type: ignore[list-item]
    assert memory.turns() == []


async def test_async_twins_match_the_sync_path(store, fast_retry):
    model = KeywordSummarizer()
    memory = make(store, fast_retry, model=model)
    for i in range(40):
        await memory.aadd(chat(i))
        ctx = await memory.acontext()
        assert ctx.tokens <= 600
    assert (await memory.aget_summary()) is not None
    assert len(await memory.aturns()) == 80
    result = await memory.afold(force=True)
    assert result.versions >= 1
    await memory.aclear()
    assert await memory.aturns() == []


async def test_every_async_twin_answers_and_asks_the_store_as_its_sync_call(
    store, fast_retry, requests_of
):
    """summary, turns, usage, context, clear: each async twin runs its sync call's steps.

    From cold caches, each twin answers what its sync call answers and asks the database
    the same statements (``same_requests``). There is no second async pattern: ruff's
    banned-api keeps ``asyncio.to_thread`` out of the engines (pyproject.toml).
    """
    memory, other = (
        RecursiveMemory(
            sid,
            store=store,
            model=KeywordSummarizer(),
            retry=fast_retry,
            max_tokens=600,
            max_summary_tokens=120,
        )
        for sid in ("s1", "s2")
    )
    for twin in (memory, other):
        for i in range(30):
            twin.add(chat(i))
        twin.fold(force=True)
    requests = requests_of(store)
    summary, asummary = await same_requests(requests, memory.get_summary, memory.aget_summary)
    assert asummary == summary is not None
    turns, aturns = await same_requests(requests, memory.turns, memory.aturns)
    assert aturns == turns != []
    usage, ausage = await same_requests(requests, memory.usage, memory.ausage)
    assert ausage == usage and usage.calls >= 1
    question = "budget item 3?"
    context, acontext = await same_requests(
        requests, lambda: memory.context(question), lambda: memory.acontext(question)
    )
    assert acontext == context
    await same_requests(requests, memory.clear, other.aclear)  # two sessions alike
    for cleared in (memory, other):
        assert cleared.turns() == [] and cleared.get_summary() is None


async def test_async_timeout_is_enforced(store):
    model = FailingModel("hang", hang_seconds=30)
    retry = RetryPolicy(attempts=1, timeout=0.2, cooldown=0.0)
    memory = RecursiveMemory("s1", store=store, model=model, retry=retry, max_tokens=400)
    for i in range(6):
        await asyncio.wait_for(memory.aadd(chat(i)), 5)
    assert memory.get_summary() is None
    assert len(memory.turns()) == 12


def test_context_counts_reply_priming_and_summary(store, fast_retry):
    memory = make(store, fast_retry, model=KeywordSummarizer())
    memory.add(Turn(role="user", text="hello"))
    ctx = memory.context()
    assert ctx.tokens == REPLY_PRIMING_TOKENS + TokenCounter().count_turn(ctx.window[0])


def test_background_folds_keep_add_fast_and_reads_consistent(store):
    import threading

    gate = threading.Event()

    class Slow(KeywordSummarizer):
        def _answer(self, prompt: str) -> str:
            gate.wait(10)
            return super()._answer(prompt)

    memory = RecursiveMemory(
        "s",
        store=store,
        model=Slow(),
        retry=RetryPolicy(timeout=30),
        max_tokens=400,
        max_summary_tokens=80,
        background_folds=True,
    )
    import time as clock

    start = clock.perf_counter()
    for i in range(30):
        memory.add(Turn(role="user", text=f"message {i} about the garden " * 3))
        ctx = memory.context()  # reads while the fold waits on the model
        assert ctx.tokens <= 400
    assert clock.perf_counter() - start < 8  # no add waited for the blocked model
    assert memory.get_summary() is None
    gate.set()
    assert memory.wait_for_folds(30)
    assert memory.get_summary() is not None
    assert len(memory.turns()) == 30
    assert memory.context().tokens <= 400


async def test_background_folds_in_async(store):
    memory = RecursiveMemory(
        "s",
        store=store,
        model=KeywordSummarizer(),
        max_tokens=400,
        max_summary_tokens=80,
        background_folds=True,
        retry=RetryPolicy(timeout=30),
    )
    for i in range(30):
        await memory.aadd(Turn(role="user", text=f"async message {i} " * 5))
    await memory.await_folds()
    assert memory.get_summary() is not None
    assert (await memory.acontext()).tokens <= 400
