"""What the benchmarks measure is what ships (issue 29 item 4, issue 30 item 5).

``benchmarks/shipped.py`` ranks a haystack's turns with the library's own index and
selection (``TurnIndex`` -> ``TurnPool.select``) without a store, so the LongMemEval and
LoCoMo harnesses can index each haystack once and rank many variants. These tests hold
it to what ``HybridMemory.recall`` and ``HiGMem.retrieve`` return on the same turns.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import longmemeval as lme
from _common import load_longmemeval
from shipped import ShippedRanking

from langchain_recursive_memory.core import HiGMem, HybridMemory, MemoryStore, Turn

DATA = Path(__file__).parent / "data" / "longmemeval_tiny.json"


@pytest.fixture(scope="module")
def items():
    return load_longmemeval(DATA)


def test_the_ranking_returns_what_both_memories_return(items):
    result = lme.run(items, ("ranking", "hybrid", "higmem"), ks=(2, 5), reps=10)
    for record in result["questions"]:
        got = record["systems"]
        assert got["ranking"]["ranked"], record["question_id"]
        for memory in ("hybrid", "higmem"):
            assert got[memory]["ranked"] == got["ranking"]["ranked"], (memory, record)
            assert got[memory]["scores"] == got["ranking"]["scores"], (memory, record)


def test_parallel_workers_give_the_same_records(items):
    one = lme.run(items, ("ranking",), ks=(2, 5), reps=10)
    two = lme.run(items, ("ranking",), ks=(2, 5), reps=10, workers=2)
    ranked = [[r["systems"][n]["ranked"] for n in ("ranking", "bm25")] for r in one["questions"]]
    assert ranked == [
        [r["systems"][n]["ranked"] for n in ("ranking", "bm25")] for r in two["questions"]
    ]


def _dialogue() -> list[Turn]:
    lines = [
        ("Ada", "Where did you go camping last weekend?"),
        ("Bob", "Up to Lake Tahoe, with my sister."),
        ("Ada", "Nice! I finished a painting of a lighthouse."),
        ("Bob", "You should show it at the fair."),
        ("Ada", "Maybe. Hi again, how are you?"),
        ("Bob", "Good, busy with work."),
        ("Ada", "Hi again, how are you?"),
        ("Bob", "The lake was freezing, by the way."),
    ]
    return [
        Turn(role="user" if who == "Ada" else "assistant", name=who, text=text, id=f"t{i}")
        for i, (who, text) in enumerate(lines)
    ]


@pytest.mark.parametrize(
    "question", ["Where did Bob go camping?", "How are you?", "What did Ada paint?"]
)
def test_a_dialogue_ranks_as_the_memories_rank_it(question):
    turns = _dialogue()
    store = MemoryStore.in_memory()
    higmem = HiGMem("d", store=store, namespace="h")
    higmem.add(turns)
    hybrid = HybridMemory("d", store=store, namespace="y", max_tokens=400)
    hybrid.add(turns)
    hybrid.fold(force=True, keep=False)
    shipped = ShippedRanking(turns).ranked(question, 4)
    got = higmem.retrieve(question, k=4, use_llm=False)
    assert [h.turn.id for h in got] == shipped[0]
    assert [h.score for h in got] == pytest.approx(shipped[1])
    hits = hybrid.recall(question, k=4, kinds=("turn",))
    assert [h.id for h in hits] == shipped[0]


def test_with_an_embedder_the_ranking_returns_what_both_memories_return(items):
    from langchain_core.embeddings import DeterministicFakeEmbedding

    embedder = lme.CachedEmbedder(DeterministicFakeEmbedding(size=16))
    result = lme.run(items, ("ranking", "hybrid", "higmem"), embedder=embedder, ks=(2, 5), reps=10)
    for record in result["questions"]:
        got = record["systems"]
        assert got["ranking"]["ranked"], record["question_id"]
        for memory in ("hybrid", "higmem"):
            assert got[memory]["ranked"] == got["ranking"]["ranked"], (memory, record)
