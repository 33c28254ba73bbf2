"""Hybrid memory: facts at folds, recall per question, context within one budget."""

from __future__ import annotations

import logging
from typing import ClassVar

import pytest
from conftest import FAST_RETRY, filler, hybrid
from fakes import BagOfWordsEmbedder, FactModel, FailingModel, KeywordSummarizer

from langchain_recursive_memory.core import (
    ConfigurationError,
    HybridMemory,
    InvalidInputError,
    MemoryStore,
    RecursiveMemory,
    TokenCounter,
    Turn,
)


def test_facts_come_from_the_summary_call_with_provenance(store):
    model = FactModel()
    memory = hybrid(store, model=model)
    memory.add(Turn(role="user", text="Hi! My name is Ada Quist.", id="t-name"))
    memory.add(Turn(role="user", text="My locker code is 4471.", id="t-code"))
    for i in range(30):
        memory.add(filler(i))
    facts = {f.key: f for f in memory.facts()}
    assert facts["user/name"].text == "The user's name is Ada Quist."
    assert facts["user/name"].source_turn_ids == ("t-name",)
    assert facts["user/locker_code"].source_turn_ids == ("t-code",)
    folds = len(store.summaries("default", "s"))
    assert model.calls == folds  # combined: one call per fold, facts included


def test_a_correction_updates_the_fact_instead_of_piling_up(store):
    memory = hybrid(store, model=FactModel())
    memory.add(Turn(role="user", text="My home city is Oslo.", id="a"))
    for i in range(15):
        memory.add(filler(i))
    memory.add(Turn(role="user", text="Update: my home city is Berlin now.", id="b"))
    for i in range(15, 40):
        memory.add(filler(i))
    city = [f for f in memory.facts() if f.key == "user/home_city"]
    assert len(city) == 1
    assert city[0].text == "The user's home city is Berlin now."
    assert city[0].previous == ("The user's home city is Oslo.",)
    assert city[0].source_turn_ids == ("a", "b")
    assert city[0].revisions == 2
    # The fold that saw the correction was shown the known fact, so it could reuse the key.
    assert any("user/home_city: The user's home city is Oslo." in p for p in memory.model.prompts)


def test_malformed_facts_are_retried_then_skipped_without_losing_anything(store, caplog):
    model = FactModel(malformed=1)
    memory = hybrid(store, model=model)
    memory.add(Turn(role="user", text="My locker code is 4471."))
    for i in range(20):
        memory.add(filler(i))
    assert any(f.key == "user/locker_code" for f in memory.facts())  # retried once
    model.malformed = 100
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        memory.add(Turn(role="user", text="My bike color is red."))
        for i in range(20, 40):
            memory.add(filler(i))  # never raises
    assert "facts of this fold skipped" in caplog.text
    assert memory.get_summary() is not None  # the summary part was still used
    assert len(memory.turns()) == 82
    assert not any(f.key == "user/bike_color" for f in memory.facts())


def test_separate_mode_uses_a_second_call(store):
    model = FactModel()
    memory = hybrid(store, model=model, fact_mode="separate")
    memory.add(Turn(role="user", text="My locker code is 4471."))
    for i in range(30):
        memory.add(filler(i))
    folds = len(store.summaries("default", "s"))
    assert model.calls == 2 * folds
    assert any(f.key == "user/locker_code" for f in memory.facts())


def test_no_model_means_no_facts_but_recall_still_works(store):
    memory = hybrid(store)  # extractive summary, no LLM, no facts
    memory.add(Turn(role="user", text="The wifi password is tangerine-42."))
    for i in range(40):
        memory.add(filler(i))
    assert memory.facts() == []
    hits = memory.recall("what was the wifi password?", k=3)
    assert hits[0].text == "The wifi password is tangerine-42."
    assert hits[0].kind == "turn" and hits[0].lexical_rank == 1 and hits[0].dense_rank is None


def test_recall_excludes_the_window_and_reports_provenance(store):
    memory = hybrid(store, model=FactModel(), embedder=BagOfWordsEmbedder())
    memory.add(Turn(role="user", text="My locker code is 4471.", id="code"))
    for i in range(40):
        memory.add(filler(i))
    memory.add(Turn(role="user", text="The locker code question again: my locker code?"))
    window = {t.id for t in memory.context().window}
    hits = memory.recall("locker code", k=5)
    assert hits and all(h.id not in window for h in hits)
    kinds = {h.kind for h in hits}
    assert kinds == {"fact", "turn"}
    fact = next(h for h in hits if h.kind == "fact")
    assert fact.source_turn_ids == ("code",)
    turn = next(h for h in hits if h.kind == "turn")
    assert turn.id == "code" and turn.source_turn_ids == ("code",)
    assert turn.lexical_rank is not None and turn.dense_rank is not None
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    only_facts = memory.recall("locker code", k=5, kinds=["fact"])
    assert {h.kind for h in only_facts} == {"fact"}


def test_dense_recall_finds_what_shares_no_word_with_the_query(store):
    class Concepts(BagOfWordsEmbedder):
        """Maps synonyms to one concept before hashing: a stand-in for semantics."""

        SYNONYMS: ClassVar[dict[str, str]] = {"automobile": "car", "sedan": "car"}

        def _vec(self, text: str) -> list[float]:
            words = [self.SYNONYMS.get(w, w) for w in text.lower().split()]
            return super()._vec(" ".join(words))

    memory = hybrid(store, embedder=Concepts())
    memory.add(Turn(role="user", text="I parked the sedan on level minus two."))
    for i in range(40):
        memory.add(filler(i))
    lexical_only = hybrid(MemoryStore(store.client, prefix=store.prefix))
    assert lexical_only.recall("automobile", k=3) == []  # no shared token
    hits = memory.recall("automobile", k=3)
    assert hits[0].text == "I parked the sedan on level minus two."
    assert hits[0].lexical_rank is None and hits[0].dense_rank == 1


def test_context_for_a_question_stays_within_one_budget(store):
    memory = hybrid(store, model=FactModel(), max_tokens=800, recall_tokens=200)
    memory.add(Turn(role="user", text="My locker code is 4471."))
    memory.add(Turn(role="user", text="My sister's name is Nora."))
    for i in range(60):
        memory.add(filler(i))
    counter = TokenCounter()
    plain = memory.context()
    asked = memory.context("What is my locker code?")
    assert plain.tokens <= 800 and asked.tokens <= 800
    assert counter.count_turns(asked.turns) == asked.tokens
    first = asked.summary_turn
    assert first is not None
    assert "Memories recalled" in first.text and "4471" in first.text
    assert "<memories>" in first.text
    # Same window with or without the question: recall uses its own share.
    assert plain.window == asked.window
    recall_part = first.text.split("<memories>")[1]
    assert counter.count_text(recall_part) <= 200
    assert asked.recalled and asked.recalled[0].kind == "fact"


def test_budget_split_is_validated(store):
    with pytest.raises(ConfigurationError, match="recall_tokens"):
        HybridMemory("s", store=store, max_tokens=500, recall_tokens=400)
    memory = HybridMemory("s", store=store, max_tokens=2000)
    assert memory.config.recall_tokens == 500  # a quarter by default
    with pytest.raises(InvalidInputError, match="k=0"):
        memory.recall("x", k=0)
    with pytest.raises(InvalidInputError, match="kinds"):
        memory.recall("x", kinds=["events"])


def test_fact_at_turn_3_of_300_is_recalled_after_the_summary_forgot_it(store):
    """A name and a number stated at turn 3 survive 300 turns of summary drift."""
    model = FactModel()
    memory = hybrid(store, model=model, max_tokens=700, max_summary_tokens=100)
    memory.add(Turn(role="user", text="Hello there."))
    memory.add(Turn(role="assistant", text="Hi! How can I help?"))
    memory.add(Turn(role="user", text="My name is Ada Quist and my locker code is 4471."))
    for i in range(297 // 2 + 1):
        memory.add(filler(i))
    log = memory.turns()
    assert len(log) >= 300
    ctx = memory.context()
    assert all("4471" not in t.text for t in ctx.window)  # left the window long ago
    summary = memory.get_summary()
    assert summary is not None and "4471" not in summary.text and "Quist" not in summary.text
    hits = memory.recall("What is my locker code?", k=3)
    assert any("4471" in h.text for h in hits)
    hits = memory.recall("What is my name?", k=3)
    assert any("Ada Quist" in h.text for h in hits)
    asked = memory.context("Remind me of my locker code and my name")
    assert "4471" in asked.summary_turn.text and "Ada Quist" in asked.summary_turn.text
    assert asked.tokens <= 700


def test_an_embedder_failure_never_fails_add(store, caplog):
    class Broken(BagOfWordsEmbedder):
        def embed_documents(self, texts):
            raise ConnectionError("embedding service down")

    memory = hybrid(store, model=KeywordSummarizer(), embedder=Broken())
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        for i in range(30):
            memory.add(filler(i))
    assert "vectors of a fold not written" in caplog.text
    assert len(memory.turns()) == 60
    assert memory.get_summary() is not None
    # Without the broken embedder, lexical recall still answers.
    memory.embedder = None
    assert memory.recall("football round 3", k=1)[0].text.endswith("round 3.")


def test_reindex_embeds_what_was_archived_before_an_embedder(store):
    plain = hybrid(store, model=FactModel())
    plain.add(Turn(role="user", text="My locker code is 4471."))
    for i in range(30):
        plain.add(filler(i))
    embedder = BagOfWordsEmbedder()
    later = hybrid(MemoryStore(store.client, prefix=store.prefix), embedder=embedder)
    written = later.reindex()
    assert written > 30
    assert later.reindex() == 0  # everything has a vector now
    hits = later.recall("locker code", k=2)
    assert any(h.dense_rank is not None for h in hits)


def test_pending_turns_stay_recallable_while_the_llm_is_down(store):
    model = FailingModel("raise")
    memory = hybrid(store, model=model, embedder=BagOfWordsEmbedder())
    memory.add(Turn(role="user", text="The garage door code is 9182."))
    for i in range(30):
        memory.add(filler(i))
    assert memory.get_summary() is None and memory.context().hidden > 0
    hits = memory.recall("garage door code", k=1)
    assert hits[0].text == "The garage door code is 9182."
    assert hits[0].dense_rank is not None  # embedded although never folded


async def test_async_twins(store):
    memory = hybrid(store, model=FactModel(), embedder=BagOfWordsEmbedder())
    await memory.aadd(Turn(role="user", text="My locker code is 4471."))
    for i in range(30):
        await memory.aadd(filler(i))
    hits = await memory.arecall("locker code", k=2)
    assert any("4471" in h.text for h in hits)
    ctx = await memory.acontext("locker code?")
    assert "4471" in ctx.summary_turn.text
    assert {f.key for f in await memory.afacts()} >= {"user/locker_code"}
    assert await memory.areindex() == 0  # all archived turns and facts have vectors
    other = HybridMemory("s2", store=store, embedder=BagOfWordsEmbedder(), max_tokens=800)
    await other.aadd([Turn(role="user", text=f"note {i}") for i in range(40)], fold=False)
    await other.afold(force=True)
    assert await other.areindex() == 0  # the fold embedded what it archived


def test_recursive_memory_can_recall_too(store):
    """Recall is a feature of the store and the engine, not only of HybridMemory."""
    memory = RecursiveMemory("s", store=store, max_tokens=500, retry=FAST_RETRY)
    memory.add(Turn(role="user", text="The boat is called Sea Otter."))
    for i in range(30):
        memory.add(filler(i))
    assert memory.recall("name of the boat", k=1)[0].text == "The boat is called Sea Otter."


def test_an_embedder_outage_falls_back_to_bm25(store, caplog):
    class Wrong(BagOfWordsEmbedder):
        def embed_query(self, text):
            return []  # a malformed answer: an EmbeddingError inside

    memory = hybrid(store, embedder=Wrong())
    memory.add(Turn(role="user", text="hello from the garden"))
    for i in range(30):
        memory.add(filler(i))
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        hits = memory.recall("hello garden", k=1)
        ctx = memory.context("hello garden")
    assert hits[0].text == "hello from the garden" and hits[0].dense_rank is None
    assert "dense recall unavailable" in caplog.text
    assert ctx.tokens <= 800
