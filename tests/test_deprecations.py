"""0.1.0's public names keep working in 0.2.0, warning where they moved (issue 28).

``tests/data/api_0_1_0.json`` is the public surface of 0.1.0 (commit ``eadefe5``): every
module, its ``__all__``, the public members of the classes it lists and their parameters,
the parameters of its functions, the attributes set on instances. Each must still
resolve; the names that moved or were renamed (:data:`DEPRECATED`, and the methods of
:data:`DEPRECATED_MEMBERS`) warn with ``DeprecationWarning`` naming their replacement,
and work. 0.1.0's examples (``tests/data/examples_0_1_0/``, copied from that commit) run
against today's code, offline, deprecation warnings allowed.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.language_models import FakeListChatModel
from llama_index.core.llms import MockLLM

from langchain_recursive_memory import (
    RecursiveMemoryMiddleware,
    RecursiveSummaryChatMessageHistory,
)
from langchain_recursive_memory.core import (
    CountingTextModel,
    ExtractiveSummarizer,
    FunctionTextModel,
    HiGMem,
    HybridMemory,
    RecursiveMemory,
    RetryPolicy,
    TokenCounter,
    Turn,
    TurnNode,
)
from langchain_recursive_memory.core.options import OPTIONS
from llamaindex_higmem import RecursiveSummaryMemory

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
API = json.loads((DATA / "api_0_1_0.json").read_text())
EXAMPLES_0_1_0 = sorted((DATA / "examples_0_1_0").glob("*.py"))
PREFIX = "is deprecated since 0.2.0 and will be removed in 0.3.0; use "

CORE = "langchain_recursive_memory.core"
OWN_COPY = "your own copy: 0.2.0 no longer uses it"

#: 0.1.0 name -> what its warning says to use instead
DEPRECATED = {
    f"{CORE}.TurnNote": f"{CORE}.TurnNode",
    f"{CORE}.background.BackgroundFolds": f"{CORE}.runtime.background.BackgroundFolds",
    f"{CORE}.effects.EffectRunner": f"{CORE}.runtime.runner.Runner",
    f"{CORE}.effects.Effect": f"{CORE}.runtime.effects.Effect",
    f"{CORE}.effects.Steps": f"{CORE}.runtime.effects.Steps",
    f"{CORE}.events.TurnNote": f"{CORE}.TurnNode",
    f"{CORE}.events.segment_events": (
        f"{CORE}.higmem.heuristic.segment_events (its first parameter is now nodes)"
    ),
    f"{CORE}.facts.FACTS_INSTRUCTIONS": f"{CORE}.prompts.facts.FACTS_INSTRUCTIONS",
    f"{CORE}.facts.FACTS_PROMPT": f"{CORE}.prompts.facts.FACTS_PROMPT",
    f"{CORE}.facts.facts_prompt": f"{CORE}.prompts.facts.facts_prompt",
    f"{CORE}.facts.parse_combined": f"{CORE}.prompts.facts.parse_combined",
    f"{CORE}.facts.parse_facts": f"{CORE}.prompts.facts.parse_facts",
    f"{CORE}.facts.render_known_facts": f"{CORE}.prompts.facts.render_known_facts",
    f"{CORE}.ingest.ingest": "langchain_recursive_memory.cli.loaders.ingest",
    f"{CORE}.ingest.locomo_sessions": "langchain_recursive_memory.cli.loaders.locomo_sessions",
    f"{CORE}.ingest.locomo_turns": "langchain_recursive_memory.cli.loaders.locomo_turns",
    f"{CORE}.memory.Context": f"{CORE}.Context",
    f"{CORE}.memory.FoldResult": f"{CORE}.FoldResult",
    f"{CORE}.memory.HybridMemory": f"{CORE}.HybridMemory",
    f"{CORE}.memory.RecursiveMemory": f"{CORE}.RecursiveMemory",
    f"{CORE}.memory.FACT_MODES": f"{CORE}.recursive.summarize.FACT_MODES",
    f"{CORE}.memory.KNOWN_FACTS_IN_PROMPT": f"{CORE}.recursive.summarize.KNOWN_FACTS_IN_PROMPT",
    f"{CORE}.ranking.RankedTurn": f"{CORE}.retrieval.ranking.RankedTurn",
    f"{CORE}.ranking.RankerParams": f"{CORE}.retrieval.ranking.RankerParams",
    f"{CORE}.ranking.window_texts": f"{CORE}.retrieval.ranking.window_texts",
    f"{CORE}.ranking.TurnRanker": (
        f"{CORE}.retrieval.ranking.TurnRanker(turns, params), "
        "passing the question's window similarities to scores(question, dense)"
    ),
    f"{CORE}.recall.LexicalIndex": f"{CORE}.retrieval.lexical.LexicalIndex",
    f"{CORE}.recall.tokenize": f"{CORE}.retrieval.lexical.tokenize",
    f"{CORE}.recall.word_stems": f"{CORE}.retrieval.lexical.word_stems",
    f"{CORE}.recall.RRF_K": f"{OWN_COPY} (recall ranks with {CORE}.retrieval.ranking)",
    f"{CORE}.recall.rrf": f"{OWN_COPY} (recall ranks with {CORE}.retrieval.ranking)",
    f"{CORE}.recall.RecallHit": f"{CORE}.RecallHit",
    f"{CORE}.retry.RetryPolicy": f"{CORE}.RetryPolicy",
    f"{CORE}.retry.acall_with_timeout": f"{CORE}.runtime.retry.acall_with_timeout",
    f"{CORE}.retry.call_with_timeout": f"{CORE}.runtime.retry.call_with_timeout",
    f"{CORE}.store.DEFAULT_NAMESPACE": f"{CORE}.DEFAULT_NAMESPACE",
    f"{CORE}.store.MemoryStore": f"{CORE}.MemoryStore",
    f"{CORE}.store.SessionInfo": f"{CORE}.SessionInfo",
    f"{CORE}.store.SessionState": f"{CORE}.SessionState",
    f"{CORE}.store.StoredTurn": f"{CORE}.StoredTurn",
    f"{CORE}.store.Summary": f"{CORE}.Summary",
    f"{CORE}.store.default_path": f"{CORE}.default_path",
    f"{CORE}.store.VectorRecord": f"{CORE}.storage.VectorRecord",
    f"{CORE}.store.PATH_ENV": f"{CORE}.storage.client.PATH_ENV",
    f"{CORE}.store.MAX_ID_LENGTH": f"{CORE}.storage.keys.MAX_ID_LENGTH",
    f"{CORE}.store.SCHEMA": f"{CORE}.storage.keys.SCHEMA",
    f"{CORE}.store.session_key": f"{CORE}.storage.keys.session_key",
    f"{CORE}.store.validate_scope": f"{CORE}.storage.keys.validate_session",
    f"{CORE}.summarizer.ExtractiveSummarizer": f"{CORE}.ExtractiveSummarizer",
    f"{CORE}.summarizer.clean_summary": f"{CORE}.prompts.clean_summary",
    f"{CORE}.summarizer.render_transcript": f"{CORE}.prompts.render_transcript",
    f"{CORE}.summarizer.shorten_prompt": f"{CORE}.prompts.shorten_prompt",
    f"{CORE}.summarizer.summary_prompt": f"{CORE}.prompts.summary_prompt",
    f"{CORE}.summarizer.ANSWER_SUMMARY_ONLY": f"{CORE}.prompts.summary.ANSWER_SUMMARY_ONLY",
    f"{CORE}.summarizer.ANSWER_WITH_FACTS": f"{CORE}.prompts.summary.ANSWER_WITH_FACTS",
    f"{CORE}.summarizer.SHORTEN_PROMPT": f"{CORE}.prompts.summary.SHORTEN_PROMPT",
    f"{CORE}.summarizer.SUMMARY_PROMPT": f"{CORE}.prompts.summary.SUMMARY_PROMPT",
    f"{CORE}.window.FoldPlan": f"{CORE}.recursive.planner.FoldPlan",
    f"{CORE}.window.plan_fold": f"{CORE}.recursive.planner.plan_fold",
    f"{CORE}.window.drop_orphan_results": f"{CORE}.recursive.units.drop_orphan_results",
    f"{CORE}.window.turn_tokens": f"{CORE}.recursive.units.turn_tokens",
    f"{CORE}.window.window_units": f"{CORE}.recursive.units.window_units",
    f"{CORE}.window.select_suffix": f"{OWN_COPY} (see {CORE}.recursive.window)",
}

#: 0.1.0 methods and attributes that warn when used: class -> {member: replacement}
DEPRECATED_MEMBERS = {
    "MemoryStore": {
        "add_usage": "store.session(ns, sid).add_usage()",
        "add_vectors": "store.session(ns, sid).vectors.put()",
        "append": "store.session(ns, sid).turns.append()",
        "commit_summary": "store.session(ns, sid).summaries.commit()",
        "delete_events": "store.session(ns, sid).nodes.drop()",
        "fact_record_id": "langchain_recursive_memory.core.storage.keys.owned_fact_record_id()",
        "get_events": "store.session(ns, sid).nodes.events()",
        "get_facts": "store.session(ns, sid).facts.get()",
        "get_notes": "store.session(ns, sid).nodes.turn_nodes()",
        "get_turns": "store.session(ns, sid).turns.by_ids()",
        "get_vectors": "reading the vector collection with chromadb",
        "load": "store.session(ns, sid).summaries.load()",
        "put_events": "store.session(ns, sid).nodes.put_events()",
        "put_notes": "store.session(ns, sid).nodes.put_turn_nodes()",
        "query_vectors": "querying the vector collection with chromadb",
        "record_ids": "reading the collection with chromadb",
        "state_from_turns": "store.session(ns, sid).summaries.load()",
        "upsert_facts": "store.session(ns, sid).facts.upsert()",
        "vector_ids": "store.session(ns, sid).vectors.existing()",
    },
    "RecursiveMemory": {
        "summary": "RecursiveMemory.get_summary()",
        "asummary": "RecursiveMemory.aget_summary()",
        "build_context": "RecursiveMemory.context()",
        "shorten_attempts": "the shorten_attempts= argument you passed",
        "fact_attempts": "the fact_attempts= argument you passed",
    },
    "HybridMemory": {
        "summary": "HybridMemory.get_summary()",
        "asummary": "HybridMemory.aget_summary()",
        "build_context": "HybridMemory.context()",
        "shorten_attempts": "the shorten_attempts= argument you passed",
        "fact_attempts": "the fact_attempts= argument you passed",
    },
    "HiGMem": {"notes": "HiGMem.turn_nodes()"},
}

#: 0.1.0 members removed in 0.3.0, as announced: ``MemoryStore``'s methods of the engines'
#: protocol (0.2.0 moved them to ``store.session(ns, sid)``, and 0.3.0's log is in a
#: database they do not know)
REMOVED_MEMBERS = {"MemoryStore": set(DEPRECATED_MEMBERS.pop("MemoryStore"))}

#: 0.1.0 classes whose replacement does not offer every 0.1.0 member, and why
KNOWN_GAPS = {
    f"{CORE}.effects.EffectRunner": (
        "0.1.0's internal effect driver (no public method); 0.2.0's Runner drives other "
        "effects, so its attributes (model, embedder, retry, embed_batch_size) differ"
    ),
}

#: 0.1.0 parameters that 0.2.0 takes by another name (through the options' aliases)
PARAMETER_ALIASES = {"token_limit"}


def _resolve(path: str) -> tuple[Any, list[warnings.WarningMessage]]:
    """Import ``path`` as a user would (the longest importable module, then attributes)."""
    parts = path.split(".")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for cut in range(len(parts), 0, -1):
            try:
                obj: Any = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
            break
    ours = [w for w in caught if w.category is DeprecationWarning and PREFIX in str(w.message)]
    return obj, ours


def _names() -> list[str]:
    return sorted(f"{m}.{n}" for m, names in API["modules"].items() for n in names)


@pytest.mark.parametrize("module", sorted(API["modules"]))
def test_every_0_1_0_module_still_imports(module):
    assert importlib.import_module(module) is not None


@pytest.mark.parametrize("path", _names())
def test_every_0_1_0_name_resolves_and_warns_only_if_it_moved(path):
    obj, warned = _resolve(path)
    assert obj is not None
    if path in DEPRECATED:
        assert [str(w.message) for w in warned] == [f"{path} {PREFIX}{DEPRECATED[path]}"]
    else:
        assert warned == [], [str(w.message) for w in warned]


@pytest.mark.parametrize("path", sorted(DEPRECATED))
def test_every_deprecated_name_warns_naming_its_replacement(path):
    obj, warned = _resolve(path)
    assert [str(w.message) for w in warned] == [f"{path} {PREFIX}{DEPRECATED[path]}"]
    replacement = re.match(r"[\w.]+", DEPRECATED[path]).group()
    if replacement.startswith("langchain_recursive_memory"):
        new, again = _resolve(replacement)
        assert again == []
        assert obj is new or path.rsplit(".", 1)[1] in {"TurnRanker", "segment_events"}


def test_from_import_of_a_moved_name_warns_once_at_the_import_line():
    code = (
        "import warnings\n"
        "warnings.simplefilter('always')\n"
        "from langchain_recursive_memory.core import TurnNote\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stderr.splitlines() if "DeprecationWarning" in line]
    assert len(lines) == 1 and lines[0].startswith("<string>:3:"), out.stderr


def _accepted(fn: Any, name: str) -> bool:
    params = inspect.signature(fn).parameters
    if name in params:
        return True
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    return takes_kwargs and (name in set(OPTIONS) or name in PARAMETER_ALIASES)


@pytest.mark.parametrize("path", sorted(API["classes"]))
def test_every_0_1_0_member_and_its_parameters_resolve(path):
    cls, _ = _resolve(path)
    deprecated = DEPRECATED_MEMBERS.get(cls.__name__, {})
    fields = set(getattr(cls, "model_fields", {}) or {}) | set(
        getattr(cls, "__dataclass_fields__", {}) or {}
    )
    fields |= {name for klass in cls.__mro__ for name in getattr(klass, "__annotations__", {})}
    members = {} if path in KNOWN_GAPS else API["classes"][path]  # the class resolves, at least
    removed = REMOVED_MEMBERS.get(cls.__name__, set())
    for member, info in members.items():
        if member in removed:
            assert not hasattr(cls, member), f"{path}.{member} was to go in 0.3.0"
            continue
        assert hasattr(cls, member) or member in fields, f"{path}.{member}"
        if member in deprecated or member in fields or not info["params"]:
            continue
        fn = getattr(cls, member)
        for name in info["params"]:
            assert _accepted(fn, name), f"{path}.{member}({name}=...)"


@pytest.mark.parametrize("path", sorted(API["functions"]))
def test_every_0_1_0_function_keeps_its_parameters(path):
    fn, _ = _resolve(path)
    for name in API["functions"][path]:
        assert _accepted(fn, name), f"{path}({name}=...)"


@pytest.fixture
def instances(store):
    summarizer = FunctionTextModel(lambda prompt: "Ada likes pears.")
    history = RecursiveSummaryChatMessageHistory("i-history", store=store)
    graph = HiGMem("i-higmem", store=store)
    from langchain_recursive_memory import HiGMemRetriever, LangChainTextModel
    from llamaindex_higmem import HiGMemMemoryBlock, LlamaIndexTextModel
    from llamaindex_higmem import HiGMemRetriever as LlamaIndexHiGMemRetriever

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "langchain_recursive_memory.core.MemoryStore": store,
            "langchain_recursive_memory.core.RecursiveMemory": RecursiveMemory("i-r", store=store),
            "langchain_recursive_memory.core.HybridMemory": HybridMemory("i-h", store=store),
            "langchain_recursive_memory.core.HiGMem": graph,
            "langchain_recursive_memory.core.TokenCounter": TokenCounter("gpt-4o"),
            "langchain_recursive_memory.core.CountingTextModel": CountingTextModel(summarizer),
            "langchain_recursive_memory.core.ExtractiveSummarizer": ExtractiveSummarizer(
                TokenCounter("gpt-4o")
            ),
            "langchain_recursive_memory.RecursiveSummaryChatMessageHistory": history,
            "llamaindex_higmem.RecursiveSummaryMemory": RecursiveSummaryMemory.from_defaults(
                session_id="i-li", store=store
            ),
            "langchain_recursive_memory.RecursiveMemoryMiddleware": RecursiveMemoryMiddleware(
                store=store
            ),
            "langchain_recursive_memory.LangChainTextModel": LangChainTextModel(
                FakeListChatModel(responses=["x"])
            ),
            "llamaindex_higmem.LlamaIndexTextModel": LlamaIndexTextModel(MockLLM()),
            "langchain_recursive_memory.RecursiveMemoryRetriever": history.as_retriever(),
            "langchain_recursive_memory.HiGMemRetriever": HiGMemRetriever(memory=graph),
            "llamaindex_higmem.HiGMemRetriever": LlamaIndexHiGMemRetriever(graph),
            "llamaindex_higmem.HiGMemMemoryBlock": HiGMemMemoryBlock(store=store),
        }


def test_every_0_1_0_instance_attribute_is_still_there(instances):
    for path, names in API["instance_attributes"].items():
        obj = instances[path]
        deprecated = DEPRECATED_MEMBERS.get(type(obj).__name__, {})
        for name in names:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                getattr(obj, name)
            expected = []
            if name in deprecated:
                expected = [f"{type(obj).__name__}.{name} {PREFIX}{deprecated[name]}"]
            assert [str(w.message) for w in caught if PREFIX in str(w.message)] == expected, (
                f"{path}.{name}"
            )


# -- what the deprecated members do -------------------------------------------------------


def _warns(member: str, replacement: str) -> Any:
    return pytest.warns(DeprecationWarning, match=re.escape(f"{member} {PREFIX}{replacement}"))


def test_engine_0_1_0_methods_still_work(store):
    memory = RecursiveMemory("old-engine", store=store, max_tokens=300, shorten_attempts=3)
    for i in range(30):
        memory.add([Turn(role="user", text=f"Message {i} about the orchard and its pears.")])
    with _warns("RecursiveMemory.summary()", "RecursiveMemory.get_summary()"):
        assert memory.summary() == memory.get_summary() is not None
    with _warns("RecursiveMemory.build_context()", "RecursiveMemory.context()"):
        built = memory.build_context(store.session("default", "old-engine").summaries.load())
    assert built == memory.context()
    with _warns("RecursiveMemory.shorten_attempts", "the shorten_attempts= argument you passed"):
        assert memory.shorten_attempts == 3
    graph = HiGMem("old-graph", store=store)
    graph.add([Turn(role="user", text="Ada booked the Lisbon trip.")])
    graph.flush()
    with _warns("HiGMem.notes()", "HiGMem.turn_nodes()"):
        assert graph.notes() == graph.turn_nodes() != []


@pytest.mark.asyncio
async def test_asummary_still_works(store):
    memory = HybridMemory("old-async", store=store, max_tokens=300)
    for i in range(30):
        await memory.aadd([Turn(role="user", text=f"Message {i} about the orchard and pears.")])
    with _warns("HybridMemory.asummary()", "HybridMemory.aget_summary()"):
        assert await memory.asummary() == await memory.aget_summary() is not None


def test_hits_to_documents_still_takes_a_counter(store):
    from langchain_recursive_memory.retrievers import hits_to_documents

    memory = HybridMemory("old-docs", store=store)
    memory.add([Turn(role="user", text="The locker code is 4471.")])
    hits = memory.recall("locker code", k=2)
    with _warns("hits_to_documents(counter=...)", "no counter (the memory's is used)"):
        docs = hits_to_documents(hits, memory, max_tokens=100, counter=TokenCounter())
    assert docs == hits_to_documents(hits, memory, max_tokens=100)


def test_the_0_1_0_turn_ranker_ranks_as_0_2_0_does_with_the_same_similarities():
    from langchain_recursive_memory.core.legacy import TurnRanker as OldRanker
    from langchain_recursive_memory.core.retrieval.ranking import (
        RankedTurn,
        RankerParams,
        TurnRanker,
    )

    turns = [RankedTurn(f"t{i}", "Ada", f"turn {i} about pears {i % 3}") for i in range(6)]
    params = RankerParams(dense_radii=(1,), w_dense=0.5)
    vectors = np.eye(6, dtype=np.float32)
    query = np.arange(6, dtype=np.float32)
    old = OldRanker(turns, {1: vectors}, params)
    new = TurnRanker(turns, params)
    dense = {1: vectors @ (query / np.linalg.norm(query))}
    assert np.allclose(old.scores("pears 1", query), new.scores("pears 1", dense))
    assert old.top("pears 1", query, 3) == new.top("pears 1", dense, 3)


def test_segment_events_still_takes_notes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langchain_recursive_memory.core.events import segment_events
    from langchain_recursive_memory.core.higmem.heuristic import segment_events as new

    nodes = [
        TurnNode(turn_id="t1", speaker="user", timestamp=1.7e9, segment="s0", keywords=("pears",))
    ]
    old = segment_events(notes=nodes, texts={"t1": "pears"})
    assert [(e.id, e.summary) for e in old] == [
        (e.id, e.summary) for e in new(nodes, {"t1": "pears"})
    ]


def test_core_ingest_still_ingests(store):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langchain_recursive_memory.core.ingest import ingest
    memory = RecursiveMemory("old-ingest", store=store)
    turns = [Turn(role="user", text=f"m{i}", id=f"m{i}") for i in range(3)]
    assert ingest(memory, turns, progress=False) == 3
    assert ingest(memory, turns, progress=False) == 0  # resumable, as in 0.1.0


ADAPTER_KWARGS = {
    "max_tokens": 1000,
    "max_summary_tokens": 100,
    "max_messages": 40,
    "keep_tokens": 200,
    "keep_messages": 4,
    "summary_role": "user",
    "tokenizer_model": "gpt-4o",
    "retry": RetryPolicy(),
    "embedder": None,
    "extract_facts": True,
    "recall_tokens": 100,
    "background_folds": False,
    "config": None,
    "token_limit": 1000,
}


@pytest.mark.parametrize(
    ("adapter", "member"),
    [
        ("langchain_recursive_memory.RecursiveSummaryChatMessageHistory", "__init__"),
        ("langchain_recursive_memory.RecursiveMemoryMiddleware", "__init__"),
        ("llamaindex_higmem.RecursiveSummaryMemory", "from_defaults"),
    ],
)
def test_every_0_1_0_adapter_keyword_is_still_taken(store, adapter, member):
    cls, _ = _resolve(adapter)
    names = API["classes"][adapter][member]["params"]
    options = [n for n in names if n in ADAPTER_KWARGS]
    assert options, names
    for name in options:
        if member == "from_defaults":
            made = cls.from_defaults(session_id="kw", store=store, **{name: ADAPTER_KWARGS[name]})
        elif adapter.endswith("Middleware"):
            made = cls(store=store, **{name: ADAPTER_KWARGS[name]})
        else:
            made = cls("kw", store=store, **{name: ADAPTER_KWARGS[name]})
        assert made is not None, name


# -- 0.1.0's examples ---------------------------------------------------------------------


def test_the_0_1_0_examples_are_0_1_0s():
    assert [p.name for p in EXAMPLES_0_1_0] == [
        "agent_middleware.py",
        "chat_history.py",
        "core_memory.py",
        "higmem.py",
        "lcel_recall.py",
        "llamaindex_memory.py",
        "quickstart.py",
    ]


@pytest.mark.parametrize("script", EXAMPLES_0_1_0, ids=lambda p: p.name)
def test_every_0_1_0_example_still_runs(script, tmp_path):
    env = {**os.environ, "LANGCHAIN_RECURSIVE_MEMORY_PATH": str(tmp_path / "store")}
    env.pop("LRM_MODEL", None)
    # The checkout under test, not whichever copy of the package is installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, "-W", "default::DeprecationWarning", str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert out.stdout.strip()
    warned = re.findall(r"DeprecationWarning: (.*)", out.stderr)
    assert all(PREFIX in w for w in warned if "langchain_recursive_memory" in w or "()" in w)
    if script.name == "higmem.py":  # imports ingest from core.ingest
        assert any(w.startswith("langchain_recursive_memory.core.ingest.ingest ") for w in warned)
    if script.name == "agent_middleware.py":  # calls RecursiveMemory.summary()
        assert any(w.startswith("RecursiveMemory.summary() ") for w in warned)
    if script.name == "lcel_recall.py":
        assert "4471" in out.stdout


@pytest.mark.parametrize("path", sorted(API["classes"]))
def test_every_0_1_0_dataclass_keeps_its_positional_order(path):
    """Fields added since 0.1.0 come after 0.1.0's: ``Params(1.2, 0.3)`` means what it did."""
    cls, _ = _resolve(path)
    if not dataclasses.is_dataclass(cls):
        return
    old = API["classes"][path].get("__init__", {}).get("params", [])
    positional = [f.name for f in dataclasses.fields(cls) if f.init and not f.kw_only]
    assert positional[: len(old)] == old, f"{path}: 0.1.0 took {old} in this order"
