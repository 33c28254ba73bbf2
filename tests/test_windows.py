"""Hybrid recall ranks archived turns like HiGMem: windows of neighbours, embedded at fold.

Issue 15, part 1: 0.1.0's hybrid recall embedded single turns, which made it worse with an
embedder than without (0.787 -> 0.704 on the LoCoMo dev split); a local branch embedded
windows lazily at recall (116 ms per question).
"""

from __future__ import annotations

from conftest import FAST, stored_vectors
from fakes import BagOfWordsEmbedder, KeywordSummarizer

from langchain_recursive_memory.core import (
    HiGMem,
    HybridMemory,
    MemoryStore,
    Turn,
)
from langchain_recursive_memory.core.retrieval.ranking import RankedTurn, RankerParams, TurnRanker
from langchain_recursive_memory.core.storage.keys import window_kind


class CountingEmbedder(BagOfWordsEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.documents = 0
        self.queries = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += len(texts)
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return super().embed_query(text)


def _conversation(memory: HybridMemory) -> None:
    memory.add(Turn(role="user", name="Ada", text="Where did you spend the holidays?"))
    memory.add(Turn(role="assistant", name="Bob", text="In Porto, at my aunt's small flat."))
    for i in range(30):
        memory.add(Turn(role="user", name="Ada", text=f"Unrelated chat {i} about gardening."))


def _memory(store: MemoryStore, embedder: CountingEmbedder) -> HybridMemory:
    return HybridMemory(
        "s",
        store=store,
        model=KeywordSummarizer(),
        embedder=embedder,
        retry=FAST,
        max_tokens=400,
        max_summary_tokens=60,
    )


def test_a_fold_embeds_the_windows_of_what_it_archives_and_recall_only_reads_them():
    store, embedder = MemoryStore.in_memory(), CountingEmbedder()
    memory = _memory(store, embedder)
    _conversation(memory)
    archived = [t for t in memory.turns() if t.folded_in]
    assert archived
    kinds = {window_kind(1), window_kind(2)}
    records = stored_vectors(store, memory.space, "default", "s", sorted(kinds))
    assert {r.ref for r in records} >= {t.id for t in archived}
    assert not stored_vectors(store, memory.space, "default", "s", ["turn"])  # no single turns
    before = embedder.documents
    memory.recall("Where did Ada's friend spend the holidays?")
    memory.context("Where did Bob spend the holidays?")
    assert embedder.documents == before  # recall embeds only the question
    assert embedder.queries == 2


def test_dense_windows_find_the_answer_next_to_the_question_it_answers():
    store = MemoryStore.in_memory()
    memory = _memory(store, CountingEmbedder())
    _conversation(memory)
    hits = memory.recall("Where were the holidays spent?", k=2, kinds=("turn",))
    assert "Porto" in " ".join(h.text for h in hits)
    assert all(h.dense_rank is not None for h in hits)


def test_hybrid_and_higmem_rank_with_one_code_path():
    store = MemoryStore.in_memory()
    hybrid = _memory(store, CountingEmbedder())
    _conversation(hybrid)
    higmem = HiGMem("h", store=store, embedder=CountingEmbedder(), retry=FAST)
    higmem.add([s.turn for s in hybrid.turns()])
    question = "Where did Bob spend the holidays?"
    got = [r.turn.text for r in higmem.retrieve(question, k=2)]
    assert any("Porto" in t for t in got)
    hits = hybrid.recall(question, k=2, kinds=("turn",))
    assert any("Porto" in h.text for h in hits)


def test_the_ranker_mixes_per_radius_similarities_and_treats_missing_as_lowest():
    import numpy as np

    turns = [RankedTurn(str(i), "Ada", f"turn {i}", "s1") for i in range(4)]
    ranker = TurnRanker(turns)
    dense = {1: np.array([0.1, 0.9, np.nan, 0.2]), 2: np.array([0.2, 0.8, np.nan, 0.1])}
    scores = ranker.scores("nothing lexical here", dense)
    assert int(np.argmax(scores)) == 1
    assert scores[2] == min(scores)
    assert np.allclose(ranker.scores("nothing lexical here", None), 0.0)


def test_higmem_embeds_settled_windows_when_it_indexes_not_at_retrieval():
    store, embedder = MemoryStore.in_memory(), CountingEmbedder()
    higmem = HiGMem("h", store=store, embedder=embedder, retry=FAST)
    for i in range(32):  # two batches of HEURISTIC_BATCH turns are indexed
        higmem.add(Turn(role="user", name="Ada", text=f"Line {i} about the garden."))
    kinds = [window_kind(1), window_kind(2)]
    stored = {r.ref for r in stored_vectors(store, higmem.space, "default", "h", kinds)}
    ids = [t.id for t in higmem.turns()]
    assert set(ids[:-2]) <= stored  # settled windows are embedded as turns are indexed
    before = embedder.documents
    higmem.retrieve("garden line 3")
    radii = len(RankerParams().dense_radii)
    assert embedder.documents - before <= 2 * radii  # only the newest turns' windows
