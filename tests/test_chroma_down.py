"""Chroma unreachable while the database is up: no message is lost, and nothing waits.

The log is in the database; Chroma holds derived state (facts, vectors). While every
Chroma call fails, ``add`` stores the turns, the fold that needs Chroma waits (its turns
stay in the window, the context stays within budget), reads recall the turns they can
(they are in the database), and once Chroma answers again the next fold writes the facts.
"""

from __future__ import annotations

from conftest import FAST
from fakes import BagOfWordsEmbedder, FactModel

from langchain_recursive_memory.core import HiGMem, HybridMemory, StoreError, Turn

LOCKER = "My locker code is 4471."


def chroma_down(store, monkeypatch) -> list[str]:
    """Make every Chroma call of the store fail (as a dead server would); what was asked."""
    asked: list[str] = []

    def down(what, fn):
        asked.append(what)
        raise StoreError(f"Chroma failed to {what}: ConnectError: [Errno 111] refused")

    monkeypatch.setattr(store.chroma, "call", down)
    return asked


def test_a_hybrid_memory_keeps_every_turn_and_catches_its_facts_up(store, monkeypatch):
    memory = HybridMemory(
        "s",
        store=store,
        model=FactModel(),
        embedder=BagOfWordsEmbedder(),
        retry=FAST,
        max_tokens=400,
        max_summary_tokens=80,
    )
    memory.add(Turn(role="user", text="Hello there."))
    asked = chroma_down(store, monkeypatch)
    memory.add(Turn(role="user", text=LOCKER))
    for i in range(30):
        memory.add(Turn(role="user", text=f"Small talk number {i} about the garden."))
    assert asked  # the folds tried Chroma, and failed
    assert store.count_turns("default", "s") == 32  # every turn is in the database
    context = memory.context("What is my locker code?")
    assert context.tokens <= 400
    shown = [t.text for t in context.window] + [h.text for h in context.recalled]
    assert any("4471" in text for text in shown), shown  # from the log, not from Chroma
    monkeypatch.undo()  # Chroma answers again
    memory.add(Turn(role="user", text="Back again."))
    memory.fold(force=True)
    facts = [f.text for f in memory.facts()]
    assert any("4471" in text for text in facts), facts
    assert store.count_turns("default", "s") == 33


def test_higmem_indexes_into_the_database_while_chroma_is_down(store, monkeypatch):
    memory = HiGMem("h", store=store, embedder=BagOfWordsEmbedder(), retry=FAST)
    chroma_down(store, monkeypatch)
    memory.add([Turn(role="user", text=LOCKER)])
    memory.add([Turn(role="user", text=f"More talk {i}.") for i in range(20)])
    assert len(memory.turn_nodes()) == 21  # the nodes are in the database
    found = [r.turn.text for r in memory.retrieve("locker code", k=3)]
    assert LOCKER in found  # ranked without the vectors it cannot read
