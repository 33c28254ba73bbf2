"""The engines' collaborators get what they use, never the engine (issue 23, item 2).

1. no collaborator module of ``core/recursive/`` or ``core/higmem/`` imports an engine
   (``Engine``, ``RecursiveMemory``, ``HybridMemory``, ``HiGMem``), not even under
   ``if TYPE_CHECKING:``;
2. the import graph of ``core`` (``TYPE_CHECKING`` imports included) has no cycle through
   an engine module, a collaborator, or ``errors``/``turn``/``validation``;
3. a model or embedder set on a memory after construction reaches its collaborators.
"""

from __future__ import annotations

import ast
import re

from _architecture import Source, _from_base, check_import_cycles, import_graph, library_sources
from fakes import BagOfWordsEmbedder, HiGMemModel, KeywordSummarizer

from langchain_recursive_memory.core import HiGMem, HybridMemory, RecursiveMemory, Turn
from langchain_recursive_memory.core.embeddings import embedder_name
from langchain_recursive_memory.core.runtime.retry import RetryPolicy

CORE = "langchain_recursive_memory.core"
ENGINE_MODULES = frozenset({f"{CORE}.engine", f"{CORE}.recursive.memory", f"{CORE}.higmem.memory"})
ENGINE_NAMES = frozenset({"Engine", "RecursiveMemory", "HybridMemory", "HiGMem"})
NOT_COLLABORATORS = frozenset({"__init__", "memory", "facade"})  # facades, not parts
SHARED = frozenset({f"{CORE}.errors", f"{CORE}.turn", f"{CORE}.validation"})
FAST = RetryPolicy(attempts=2, initial_delay=0.0, timeout=5.0, cooldown=0.0)


def collaborators() -> list[Source]:
    """The engines' collaborators: the modules of ``core/recursive/`` and ``core/higmem/``
    but their facades (``memory.py``, ``facade.py``) and the packages' ``__init__``."""
    packages = (f"{CORE}.recursive", f"{CORE}.higmem")
    return [
        source
        for source in library_sources()
        if source.module.rpartition(".")[0] in packages
        and source.module.rpartition(".")[2] not in NOT_COLLABORATORS
    ]


def engine_imports(source: Source) -> list[str]:
    """Every import of an engine by ``source`` (under ``TYPE_CHECKING`` too), as text."""
    found = []
    for node in ast.walk(source.tree):
        if isinstance(node, ast.ImportFrom):
            base = _from_base(source, node)
            names = {a.name for a in node.names}
            if base in ENGINE_MODULES or (base.startswith(CORE) and names & ENGINE_NAMES):
                found.append(f"{source.rel}:{node.lineno} from {base} import {sorted(names)}")
        elif isinstance(node, ast.Import):
            found += [
                f"{source.rel}:{node.lineno} import {a.name}"
                for a in node.names
                if a.name in ENGINE_MODULES
            ]
    return found


def test_collaborators_are_found():
    names = {s.module.rsplit(".", 1)[1] for s in collaborators()}
    assert {"derived", "archive", "recall", "rebuild", "fold", "indexer", "retrieval"} <= names


def test_no_collaborator_imports_an_engine():
    found = [line for source in collaborators() for line in engine_imports(source)]
    assert not found, "collaborators importing an engine:\n" + "\n".join(found)


def test_no_cycle_through_engines_collaborators_or_errors_turn_validation():
    graph = import_graph(library_sources(), type_checking=True)
    core = {
        module: {t: w for t, w in edges.items() if t.startswith(CORE)}
        for module, edges in graph.items()
        if module.startswith(CORE)
    }
    watched = ENGINE_MODULES | SHARED | {s.module for s in collaborators()}
    found = [c for c in check_import_cycles(core) if watched & set(re.split(r"[\s,;]+", c))]
    assert not found, "cycles (TYPE_CHECKING imports included):\n" + "\n".join(found)


def test_the_cycle_check_sees_type_checking_imports():
    graph = import_graph(library_sources(), type_checking=True)
    plain = import_graph(library_sources())
    extra = sum(len(e) for e in graph.values()) - sum(len(e) for e in plain.values())
    assert extra > 0  # some module imports for its annotations only


# -- 3: a model or embedder set after construction ---------------------------------------


def chat(i: int) -> list[Turn]:
    return [
        Turn(role="user", text=f"Let's talk about Gardening round {i} and tomatoes."),
        Turn(role="assistant", text=f"Sure, round {i}: tomatoes like sun."),
    ]


def test_a_model_set_after_construction_folds(store):
    memory = RecursiveMemory("s", store=store, retry=FAST, max_tokens=400)
    model = KeywordSummarizer()
    memory.model = model
    for i in range(20):
        memory.add(chat(i))
    summary = memory.get_summary()
    assert model.calls > 0 and summary is not None and summary.method != "extractive"


def test_an_embedder_set_after_construction_recalls_densely(store):
    memory = HybridMemory("s", store=store, retry=FAST, max_tokens=500)
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
    memory = HiGMem("h", store=store, retry=FAST, batch_size=4)
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
