"""Rank order: retrieve, recall and the retrievers hand over the best turn first (issue 21).

The question's best turn is *newer* than a weaker hit, so a list in time order would put
the weaker hit first and a caller taking the first few would lose the best one.
"""

from __future__ import annotations

from conftest import FAST
from fakes import HiGMemModel
from llama_index.core.base.llms.types import ChatMessage

from langchain_recursive_memory import HiGMemRetriever as LangChainHiGMemRetriever
from langchain_recursive_memory import RecursiveMemoryRetriever
from langchain_recursive_memory.core import HiGMem, HybridMemory, Turn
from llamaindex_higmem.memory_blocks import HiGMemMemoryBlock
from llamaindex_higmem.retrievers import HiGMemRetriever

QUESTION = "Who is my violin teacher?"
WEAK, BEST = "t0", "t8"
LINES = [
    ("Bob", "I heard a violin on the radio once."),  # t0: a weaker hit, older
    ("Ada", "The weather was grey all weekend."),
    ("Bob", "We cooked pasta with tomatoes."),
    ("Ada", "The train to Oslo was late again."),
    ("Bob", "My bike needs a new chain."),
    ("Ada", "We watched a film about bees."),
    ("Bob", "The garden is full of snails."),
    ("Ada", "I bought new running shoes."),
    ("Ada", "My violin teacher is Clara; violin teacher Clara is strict."),  # t8: the best
    ("Bob", "The cat slept on the sofa."),
    ("Ada", "Lunch was soup and bread."),
    ("Bob", "The museum opens at nine."),
]


def story() -> list[Turn]:
    return [
        Turn(
            role="user" if who == "Ada" else "assistant",
            name=who,
            text=text,
            id=f"t{i}",
            created_at=1_700_000_000.0 + 60 * i,
        )
        for i, (who, text) in enumerate(LINES)
    ]


def higmem(store, **kwargs) -> HiGMem:
    memory = HiGMem("s", store=store, retry=FAST, **kwargs)
    memory.add(story(), flush=True)
    return memory


def assert_best_first(ids, scores, ranks=None):
    assert ids[0] == BEST, ids
    assert WEAK in ids and ids.index(WEAK) > 0  # the older, weaker hit comes after
    assert list(scores) == sorted(scores, reverse=True)
    if ranks is not None:
        assert list(ranks) == list(range(1, len(ids) + 1))


def test_higmem_retrieve_returns_the_best_first(store):
    found = higmem(store).retrieve(QUESTION, k=8)
    assert_best_first([r.turn.id for r in found], [r.score for r in found], [r.rank for r in found])


async def test_higmem_aretrieve_returns_the_best_first(store):
    found = await higmem(store).aretrieve(QUESTION, k=8)
    assert_best_first([r.turn.id for r in found], [r.score for r in found], [r.rank for r in found])


def test_guided_retrieve_returns_the_best_first(store):
    memory = higmem(store, model=HiGMemModel())
    found = memory.retrieve("How old is the violin teacher Clara?", use_llm=True)
    assert found
    scores = [r.score for r in found]
    assert scores == sorted(scores, reverse=True)
    assert [r.rank for r in found] == list(range(1, len(found) + 1))


def test_hybrid_recall_returns_the_best_first(store):
    memory = HybridMemory("h", store=store, retry=FAST, max_tokens=2000)
    memory.add(story(), fold=True)
    memory.fold(force=True, keep=False)  # every turn archived: recall ranks them all
    hits = memory.recall(QUESTION, k=8, kinds=("turn",))
    assert_best_first([h.id for h in hits], [h.score for h in hits])


def test_langchain_retrievers_return_the_best_first_with_their_rank(store):
    docs = LangChainHiGMemRetriever(memory=higmem(store), k=8).invoke(QUESTION)
    assert_best_first(
        [d.metadata["id"] for d in docs],
        [d.metadata["score"] for d in docs],
        [d.metadata["rank"] for d in docs],
    )
    memory = HybridMemory("h", store=store, retry=FAST, max_tokens=2000)
    memory.add(story(), fold=True)
    memory.fold(force=True, keep=False)
    docs = RecursiveMemoryRetriever(memory=memory, k=8, kinds=("turn",)).invoke(QUESTION)
    assert_best_first(
        [d.metadata["id"] for d in docs],
        [d.metadata["score"] for d in docs],
        [d.metadata["rank"] for d in docs],
    )


async def test_llamaindex_retriever_returns_the_best_first_with_their_rank(store):
    retriever = HiGMemRetriever(higmem(store), k=8)
    for nodes in (retriever.retrieve(QUESTION), await retriever.aretrieve(QUESTION)):
        assert_best_first(
            [n.node.metadata["turn_id"] for n in nodes],
            [n.score for n in nodes],
            [n.node.metadata["rank"] for n in nodes],
        )
        assert "rank" in nodes[0].node.excluded_llm_metadata_keys  # bookkeeping


async def test_the_memory_block_reads_the_chosen_turns_in_time_order(store):
    block = HiGMemMemoryBlock.from_defaults(store=store, session_id="s", k=8)
    block.engine("s").add(story(), flush=True)
    text = await block.aget([ChatMessage(role="user", content=QUESTION)])
    lines = text.splitlines()
    assert any(LINES[8][1] in line for line in lines) and any(LINES[0][1] in line for line in lines)
    # the model reads a story: the chosen turns (the best k) in time order
    assert [line for line in lines if LINES[0][1] in line or LINES[8][1] in line] == [
        next(line for line in lines if LINES[0][1] in line),
        next(line for line in lines if LINES[8][1] in line),
    ]
