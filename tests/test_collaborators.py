"""The engines' collaborators get what they use, never the engine (issue 23, item 2).

That no collaborator module of ``core/recursive/`` or ``core/higmem/`` imports an engine,
not even under ``if TYPE_CHECKING:``, and that no import cycle runs through them, are
import-linter contracts (pyproject.toml; tests/test_architecture.py runs them). Here: a
model or embedder set on a memory after construction reaches its collaborators.
"""

from __future__ import annotations

from conftest import FAST_RETRY
from fakes import BagOfWordsEmbedder, HiGMemModel, KeywordSummarizer

from langchain_recursive_memory.core import HiGMem, HybridMemory, RecursiveMemory, Turn
from langchain_recursive_memory.core.embeddings import embedder_name


def chat(i: int) -> list[Turn]:
    return [
        Turn(role="user", text=f"Let's talk about Gardening round {i} and tomatoes."),
        Turn(role="assistant", text=f"Sure, round {i}: tomatoes like sun."),
    ]


def test_a_model_set_after_construction_folds(store):
    memory = RecursiveMemory("s", store=store, retry=FAST_RETRY, max_tokens=400)
    model = KeywordSummarizer()
    memory.model = model
    for i in range(20):
        memory.add(chat(i))
    summary = memory.get_summary()
    assert model.calls > 0 and summary is not None and summary.method != "extractive"


def test_an_embedder_set_after_construction_recalls_densely(store):
    memory = HybridMemory("s", store=store, retry=FAST_RETRY, max_tokens=500)
    memory.add(Turn(role="user", text="My locker code is 4471."))
    for i in range(20):
        memory.add(chat(i))
    assert all(h.dense_rank is None for h in memory.recall("locker code", k=3))
    embedder = BagOfWordsEmbedder()
    memory.embedder = embedder
    assert memory.space == embedder_name(embedder)
    assert memory.reindex() > 0  # the vectors go to the new embedder's space
    hits = memory.recall("locker code", k=3)
    assert any(h.dense_rank is not None for h in hits) and embedder.calls > 0
    memory.embedder = None
    assert memory.space is None
    assert all(h.dense_rank is None for h in memory.recall("locker code", k=3))


def test_a_model_and_embedder_set_after_construction_reach_higmem(store):
    memory = HiGMem("h", store=store, retry=FAST_RETRY, batch_size=4)
    model, embedder = HiGMemModel(), BagOfWordsEmbedder()
    memory.model, memory.embedder = model, embedder
    memory.add(
        [
            Turn(role="user", name="Ada", text="I adopted a cat called Miso."),
            Turn(role="assistant", name="Bot", text="Congratulations on Miso!"),
            Turn(role="user", name="Ada", text="My sister moved to Porto."),
            Turn(role="assistant", name="Bot", text="Porto is lovely."),
        ]
    )
    assert model.calls["analyse"] == 1 and all(n.method == "llm" for n in memory.turn_nodes())
    found = memory.retrieve("What is the cat called?", k=1)
    assert found and "Miso" in found[0].turn.text
    assert model.calls["predict"] + model.calls["filter"] > 0  # guided: the model is set
    assert embedder.calls > 0
