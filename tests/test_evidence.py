"""Adaptive evidence sets (issue 15, part 4): fewer turns when the ranking is confident."""

from __future__ import annotations

from langchain_recursive_memory.core import HiGMem, HiGMemConfig, MemoryStore, Turn
from langchain_recursive_memory.core.retrieval.ranking import (
    RankedTurn,
    RankerParams,
    TurnRanker,
    adaptive_cut,
)


def test_a_confident_ranking_hands_over_fewer_turns_a_flat_one_up_to_the_cap():
    assert adaptive_cut([3.0, 0.5, 0.4, 0.3], cap=8, ratio=0.5) == 1
    assert adaptive_cut([1.0, 0.95, 0.9, 0.85, 0.8], cap=3, ratio=0.5) == 3
    assert adaptive_cut([1.0, 0.2], cap=8, ratio=0.5, minimum=2) == 2
    assert adaptive_cut([0.0, 0.0], cap=8, ratio=0.5) == 0  # no signal, no padding
    assert adaptive_cut([], cap=8, ratio=0.5) == 0


def test_the_ranker_cuts_at_a_fixed_k_unless_a_ratio_is_set():
    turns = [RankedTurn(str(i), "Ada", f"turn {i}", "s1") for i in range(3)]
    assert TurnRanker(turns).cut([2.0, 0.1, 0.0], 8) == 2
    adaptive = TurnRanker(turns, RankerParams(evidence_ratio=0.5))
    assert adaptive.cut([2.0, 0.1, 0.0], 8) == 1


def test_higmem_returns_an_adaptive_set_capped_at_k():
    config = HiGMemConfig(ranker=RankerParams(evidence_ratio=0.6))
    memory = HiGMem("s", store=MemoryStore.in_memory(), config=config)
    memory.add(Turn(role="user", name="Ada", text="My violin teacher is called Ingrid Olsen."))
    for i in range(30):
        memory.add(Turn(role="user", name="Ada", text=f"We talked about the weather {i}."))
    confident = memory.retrieve("Who is the violin teacher Ingrid?", k=8)
    assert [r.turn.text for r in confident][:1] == ["My violin teacher is called Ingrid Olsen."]
    assert len(confident) < 8
    flat = memory.retrieve("What about the weather?", k=8)
    assert len(flat) == 8
