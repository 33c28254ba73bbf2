"""Rebuilding derived state from the turn log (issue 16, part 4): facts, vectors, nodes."""

from __future__ import annotations

import json

import pytest
from conftest import FAST
from fakes import BagOfWordsEmbedder, FactModel, HiGMemModel

from langchain_recursive_memory.core import (
    ConfigurationError,
    HiGMem,
    HybridMemory,
    MemoryStore,
    ModelError,
    Turn,
)


class RenamedFacts(FactModel):
    """A new summarizer: the same facts under other keys and words ("Ada's diet: vegan.")."""

    def _facts(self, prompt: str) -> list[str]:
        out = []
        for line in super()._facts(prompt):
            item = json.loads(line)
            attr = item["key"].split("/", 1)[1]
            value = item["fact"].split(" is ", 1)[1].rstrip(".")
            item.update(key=f"ada/{attr}", fact=f"Ada's {attr.replace('_', ' ')}: {value}.")
            out.append(json.dumps(item))
        return out


class Crashing(RenamedFacts):
    """Fails every call after ``ok`` successful facts calls (a crash midway)."""

    def __init__(self, ok: int) -> None:
        super().__init__()
        self.ok = ok
        self.facts_calls = 0

    def _answer(self, prompt: str) -> str:
        if prompt.startswith("Extract the atomic facts"):
            self.facts_calls += 1
            if self.facts_calls > self.ok:
                raise ConnectionError("provider down (scripted)")
        return super()._answer(prompt)


class OtherEmbedder(BagOfWordsEmbedder):
    """Another embedder (another vector collection)."""


def memory(store, sid="s", user=None, **kw) -> HybridMemory:
    kw.setdefault("model", FactModel())
    return HybridMemory(
        sid, store=store, retry=FAST, max_tokens=500, max_summary_tokens=80, user_id=user, **kw
    )


def fill(mem, facts=("home city is Oslo", "diet is vegan", "bike is a Brompton")) -> None:
    for n, fact in enumerate(facts):
        mem.add(Turn(role="user", text=f"My {fact}."))
        for i in range(16):
            mem.add(Turn(role="user", text=f"Small talk {n}-{i} about the weather."))
    mem.fold(force=True, keep=False)


def test_rebuild_derives_the_facts_again_with_a_new_summarizer(store):
    fill(memory(store))
    summaries = [(s.version, s.text) for s in store.summaries("default", "s")]
    assert {f.key for f in memory(store).facts()} == {"user/home_city", "user/diet", "user/bike"}
    model = RenamedFacts()
    seen = []
    result = memory(store, model=model).rebuild(on_progress=seen.append)
    facts = {f.key: f.text for f in memory(store).facts()}
    assert facts == {
        "ada/home_city": "Ada's home city: Oslo.",
        "ada/diet": "Ada's diet: vegan.",
        "ada/bike": "Ada's bike: a Brompton.",
    }
    assert [(s.version, s.text) for s in store.summaries("default", "s")] == summaries
    assert result.versions == len(summaries) and result.facts == 3 and not result.resumed
    assert [p.done for p in seen] == list(range(1, len(seen) + 1))
    assert seen[-1].done == seen[-1].total
    assert store.session("default", "s").marker("facts") is None  # finished: no marker


def test_a_rebuild_that_stops_continues_where_it_stopped(store):
    fill(memory(store))
    versions = len(store.summaries("default", "s"))
    assert versions >= 3
    crashing = Crashing(ok=2)
    with pytest.raises(ModelError):
        memory(store, model=crashing).rebuild()
    assert store.session("default", "s").marker("facts") == 2  # two versions done
    model = RenamedFacts()
    result = memory(store, model=model).rebuild()
    assert result.resumed and result.versions == versions - 2
    assert sum(p.startswith("Extract the atomic facts") for p in model.prompts) == versions - 2
    fresh = MemoryStore.in_memory()
    fill(memory(fresh))
    memory(fresh, model=RenamedFacts()).rebuild()
    assert {(f.key, f.text) for f in memory(store).facts()} == {
        (f.key, f.text) for f in memory(fresh).facts()
    }


def test_rebuild_embeds_again_with_a_new_embedder(store):
    fill(memory(store, embedder=BagOfWordsEmbedder()))
    embedder = OtherEmbedder()
    mem = memory(store, embedder=embedder)
    result = mem.rebuild()
    assert result.vectors > 0 and mem.space in store.vector_spaces.spaces()
    before = embedder.calls
    hits = mem.recall("which bike do I ride", k=3)
    assert embedder.calls == before + 1  # only the question: everything else was stored
    assert any(h.dense_rank is not None for h in hits)
    assert mem.rebuild().vectors == len(mem.facts())  # facts are embedded again; windows kept


def test_rebuild_without_a_model_keeps_the_facts_and_rebuilds_vectors(store):
    fill(memory(store))
    before = memory(store).facts()
    result = memory(store, model=None, embedder=BagOfWordsEmbedder()).rebuild()
    assert result.versions == 0 and result.vectors > 0
    assert memory(store).facts() == before


def test_rebuild_of_a_user_goes_through_every_session_and_resumes(store):
    for n, fact in enumerate(["home city is Oslo", "diet is vegan", "bike is a Brompton"]):
        fill(memory(store, f"s{n}", user="ada"), facts=(fact,))
    per_session = {
        s.session_id: len(store.summaries("default", s.session_id)) for s in store.sessions()
    }
    total = sum(per_session.values())
    crashing = Crashing(ok=per_session["s0"])  # stops at the second session's first version
    with pytest.raises(ModelError):
        memory(store, "s2", user="ada", model=crashing).rebuild(scope="user")
    assert store.user("default", "ada").marker("facts") == ["s0"]
    assert store.session("default", "s1").marker("facts") == 0  # started, nothing done
    model = RenamedFacts()
    result = memory(store, "s2", user="ada", model=model).rebuild(scope="user")
    assert result.resumed and result.sessions == ("s0", "s1", "s2")
    assert result.versions == total - per_session["s0"]
    facts = {f.key: f for f in store.user_facts("default", "ada")}
    assert set(facts) == {"ada/home_city", "ada/diet", "ada/bike"}
    assert facts["ada/diet"].session_ids == ("s1",)
    assert store.user("default", "ada").marker("facts") is None
    with pytest.raises(ConfigurationError, match="no user"):
        memory(store, "solo").rebuild(scope="user")


async def test_arebuild_is_the_async_twin(store):
    fill(memory(store))
    result = await memory(store, model=RenamedFacts()).arebuild()
    assert result.facts == 3
    assert {f.key for f in await memory(store).afacts()} == {
        "ada/home_city",
        "ada/diet",
        "ada/bike",
    }


def test_higmem_rebuild_indexes_every_turn_again_and_resumes(store):
    turns = [Turn(role="user", name="Ada", text=f"I planted tomato number {i}.") for i in range(40)]
    first = HiGMem("g", store=store, user_id="ada")
    first.add(turns, flush=True)
    assert {n.keywords for n in first.turn_nodes()} and not first.model
    model = HiGMemModel()
    guided = HiGMem("g", store=store, model=model, embedder=BagOfWordsEmbedder(), batch_size=4)
    seen = []
    result = guided.rebuild(on_progress=seen.append)
    assert result.nodes == 40 and model.calls["analyse"] == 10
    assert len(guided.turn_nodes()) == 40 and result.vectors > 0
    assert seen[-1].done == seen[-1].total
    # a rebuild that stopped after indexing 8 turns: its marker stays, 32 turns lack a node
    store.session("default", "g").set_marker("nodes", 0)
    store.session("default", "g").nodes.drop()
    partial = HiGMem("g", store=store, model=HiGMemModel(), batch_size=4)
    partial.runner.run(partial._indexer.index_steps(flush=True, limit=8))
    again = HiGMemModel()
    result = HiGMem("g", store=store, model=again, batch_size=4).rebuild()
    assert result.resumed and result.nodes == 32 and again.calls["analyse"] == 8
    assert store.session("default", "g").marker("nodes") is None


def test_higmem_rebuild_of_a_user(store):
    for sid in ("a", "b"):
        HiGMem(sid, store=store, user_id="ada").add(
            [Turn(role="user", text=f"{sid} line {i}") for i in range(5)], flush=True
        )
    result = HiGMem("a", store=store, user_id="ada").rebuild(scope="user")
    assert result.sessions == ("a", "b") and result.nodes == 10


def test_a_user_rebuild_after_a_stopped_session_rebuild_derives_every_version_again(store):
    fill(memory(store, user="ada"))
    versions = len(store.summaries("default", "s"))
    with pytest.raises(ModelError):
        memory(store, user="ada", model=Crashing(ok=1)).rebuild()  # the session's rebuild
    assert store.session("default", "s").marker("facts") == 1
    result = memory(store, user="ada", model=RenamedFacts()).rebuild("user")
    assert result.versions == versions and not result.resumed
    assert {f.key for f in store.user_facts("default", "ada")} == {
        "ada/home_city",
        "ada/diet",
        "ada/bike",
    }
