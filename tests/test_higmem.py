"""HiGMem engine: construction with and without an LLM, guided and no-LLM retrieval."""

from __future__ import annotations

import logging
import time

import pytest
from conftest import FAST_RETRY, same_requests
from fakes import BagOfWordsEmbedder, HiGMemModel

from langchain_recursive_memory.cli.loaders import ingest, locomo_turns
from langchain_recursive_memory.core import (
    ConfigurationError,
    HiGMem,
    InvalidInputError,
    Turn,
)
from langchain_recursive_memory.core.ingest import turns_from_dicts

STORY = [
    ("Ada", "I adopted a cat called Miso last week."),
    ("Bob", "Congratulations! How old is Miso?"),
    ("Ada", "Miso is 2 years old and loves tuna."),
    ("Bob", "My sister moved to Porto in March."),
    ("Ada", "Porto is lovely, is she working there?"),
    ("Bob", "Yes, she teaches math at a school in Porto."),
    ("Ada", "I started learning the violin yesterday."),
    ("Bob", "Violin is hard, good luck with the violin lessons!"),
]


def story_turns(session: str = "1", start: float = 1_700_000_000.0) -> list[Turn]:
    return [
        Turn(
            role="user" if who == "Ada" else "assistant",
            name=who,
            text=text,
            id=f"{session}-{i}",
            created_at=start + i * 60,
            extra={"session": session},
        )
        for i, (who, text) in enumerate(STORY)
    ]


def test_llm_construction_batches_and_links_both_ways(store):
    model = HiGMemModel()
    memory = HiGMem("s", store=store, model=model, retry=FAST_RETRY, batch_size=4)
    memory.add(story_turns())
    assert model.calls["analyse"] == 2  # 8 turns, batches of 4: one call per batch
    notes = {n.turn_id: n for n in memory.turn_nodes()}
    assert set(notes) == {f"1-{i}" for i in range(8)}
    assert all(n.method == "llm" and n.keywords and n.context for n in notes.values())
    events = {e.id: e for e in memory.events()}
    assert events
    for note in notes.values():  # turn -> event and event -> turn
        for eid in note.event_ids:
            assert note.turn_id in events[eid].turn_ids
    for event in events.values():
        for tid in event.turn_ids:
            assert event.id in notes[tid].event_ids
    miso = next(e for e in events.values() if "Miso" in e.summary)
    assert {"1-0", "1-1", "1-2"} <= set(miso.turn_ids)
    assert any(f.turn_id == "1-2" and "2 years" in f.fact for f in miso.facts)


def test_an_incomplete_batch_waits_for_flush(store):
    model = HiGMemModel()
    memory = HiGMem("s", store=store, model=model, retry=FAST_RETRY, batch_size=4)
    memory.add(story_turns()[:3])
    assert model.calls["analyse"] == 0 and memory.turn_nodes() == []
    assert memory.flush() == 3
    assert model.calls["analyse"] == 1 and len(memory.turn_nodes()) == 3


def test_events_freeze_after_the_rewrite_limit(store):
    model = HiGMemModel()
    memory = HiGMem("s", store=store, model=model, retry=FAST_RETRY, batch_size=1, rewrite_limit=3)
    turns = [
        Turn(
            role="user",
            name="Ada",
            text=f"Garden update {i}: planted {i} tomato plants.",
            id=f"g{i}",
            created_at=1_700_000_000.0 + i,
        )
        for i in range(6)
    ]
    memory.add(turns)
    garden = max(memory.events(), key=lambda e: len(e.turn_ids))
    assert len(garden.turn_ids) == 6
    # Rewritten while it had fewer than 3 turns; frozen after: later turns do not appear.
    assert "planted 2 tomato" in garden.summary and "planted 5" not in garden.summary
    assert model.calls["analyse"] == 6  # batch_size=1: one call per turn (official: ~3)


def test_malformed_answers_fall_back_without_losing_turns(store, caplog):
    model = HiGMemModel(broken=10)
    memory = HiGMem("s", store=store, model=model, retry=FAST_RETRY, batch_size=4)
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        memory.add(story_turns())
    assert "indexed without the LLM" in caplog.text
    notes = memory.turn_nodes()
    assert len(notes) == 8 and {n.method for n in notes} == {"heuristic"}
    assert len(memory.turns()) == 8
    assert all(e.method == "segment" for e in memory.events())


def test_no_llm_events_are_sessions(store):
    memory = HiGMem("s", store=store)
    turns = story_turns("1") + story_turns("2", start=1_800_000_000.0)
    memory.add(turns)
    events = memory.events()
    assert [e.id for e in events] == ["seg:1", "seg:2"]
    assert events[0].turn_ids == tuple(f"1-{i}" for i in range(8))
    assert "Ada and Bob" in events[0].summary and "2023-11-14" in events[0].summary
    gap = HiGMem("gap", store=store, session_gap=600)
    gap.add([Turn(role="user", text=f"t{i}", created_at=t) for i, t in enumerate([0, 60, 5000])])
    assert [len(e.turn_ids) for e in gap.events()] == [2, 1]


def test_no_llm_retrieval_is_compact_and_best_first(store):
    memory = HiGMem("s", store=store, embedder=BagOfWordsEmbedder())
    memory.add(story_turns() + story_turns("2", start=1_800_000_000.0))
    hits = memory.retrieve("Where did Bob's sister move to?", k=4)
    assert len(hits) == 4
    assert "1-3" in {h.turn.id for h in hits} or "2-3" in {h.turn.id for h in hits}
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert [h.rank for h in hits] == [1, 2, 3, 4]
    assert all(h.found_by == ("ranking",) for h in hits)
    assert len(memory.retrieve("violin")) == 8  # no_llm_k by default


def test_guided_retrieval_uses_events_and_the_filter(store):
    model = HiGMemModel()
    memory = HiGMem("s", store=store, model=model, retry=FAST_RETRY, retrieval_turns=2)
    memory.add(story_turns(), flush=True)
    before = dict(model.calls)
    hits = memory.retrieve("How old is Miso the cat?")
    assert model.calls["predict"] - before["predict"] == len(memory.events())
    assert model.calls["filter"] - before["filter"] >= 1
    ids = [h.turn.id for h in hits]
    assert "1-2" in ids  # "Miso is 2 years old"
    assert all("miso" in h.turn.text.lower() or "cat" in h.turn.text.lower() for h in hits)
    assert any(f.startswith("event:") for h in hits for f in h.found_by)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    no_llm = memory.retrieve("How old is Miso the cat?", use_llm=False, k=3)
    assert len(no_llm) == 3 and model.calls["filter"] == before["filter"] + 1


async def test_guided_calls_run_concurrently_in_async(store):
    model = HiGMemModel()
    memory = HiGMem("s", store=store, model=model, retry=FAST_RETRY)
    await memory.aadd(story_turns() + story_turns("2", start=1_800_000_000.0))
    await memory.aflush()
    model.delay = 0.2
    start = time.perf_counter()
    hits = await memory.aretrieve("Miso the cat")
    elapsed = time.perf_counter() - start
    calls = model.calls["predict"] + model.calls["filter"]
    assert hits and model.max_active >= 2
    assert elapsed < 0.2 * calls  # not one after the other


def test_an_llm_failure_in_retrieval_falls_back_to_the_ranking(store, caplog):
    model = HiGMemModel()
    memory = HiGMem("s", store=store, model=model, retry=FAST_RETRY)
    memory.add(story_turns(), flush=True)
    model.broken = 1000
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        hits = memory.retrieve("How old is Miso?")
    # Unusable answers never fail the query: a failed filter chunk keeps its candidates.
    assert "relevance filter failed" in caplog.text
    assert hits and all(h.found_by == ("ranking",) for h in hits)


def test_sessions_never_mix(store):
    a = HiGMem("a", store=store)
    b = HiGMem("b", store=store)
    a.add(story_turns())
    b.add([Turn(role="user", text="Miso is the name of b's secret cat.", id="b1")])
    assert {h.turn.id for h in b.retrieve("Miso cat", k=8)} == {"b1"}
    assert "b1" not in {h.turn.id for h in a.retrieve("Miso cat secret", k=8)}
    assert {e.id for e in b.events()} == {"seg:s1"}
    a.clear()
    assert a.turns() == [] and a.events() == [] and a.turn_nodes() == []
    assert len(b.turns()) == 1


def test_ingest_is_resumable_and_reads_locomo(store):
    sample = {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group."},
                {
                    "speaker": "Melanie",
                    "dia_id": "D1:2",
                    "text": "Look at this!",
                    "blip_caption": "a photo of a sunset over a lake",
                },
            ],
            "session_2_date_time": "7:00 pm on 20 May, 2023",
            "session_2": [
                {"speaker": "Melanie", "dia_id": "D2:1", "text": "I painted a sunrise in 2022."},
            ],
        },
    }
    turns = locomo_turns(sample)
    assert [t.id for t in turns] == ["D1:1", "D1:2", "D2:1"]
    assert turns[1].text.endswith("[image: a photo of a sunset over a lake]")
    assert turns[0].role == "user" and turns[1].role == "assistant"
    assert turns[2].extra["session"] == "2"
    memory = HiGMem("tiny", store=store)
    assert ingest(memory, turns[:2], progress=False) == 2  # interrupted here
    assert ingest(memory, turns, progress=False) == 1  # resumed
    assert [t.id for t in memory.turns()] == ["D1:1", "D1:2", "D2:1"]
    hits = memory.retrieve("When did Melanie paint a sunrise? In May 2023?", k=1)
    assert hits[0].turn.id == "D2:1"


def test_jsonl_records_become_turns():
    turns = turns_from_dicts(
        [
            {"role": "human", "content": "hi", "id": 1, "created_at": "2024-05-01T10:00:00Z"},
            {"role": "ai", "text": "hello", "name": "bot", "session": 3},
        ]
    )
    assert [t.role for t in turns] == ["user", "assistant"]
    assert turns[0].id == "1" and turns[0].created_at == 1714557600.0
    assert turns[1].extra == {"session": "3"}
    with pytest.raises(InvalidInputError, match="role"):
        turns_from_dicts([{"role": "narrator", "content": "x"}])


def test_bad_parameters(store):
    with pytest.raises(ConfigurationError, match="batch_size=0"):
        HiGMem("s", store=store, batch_size=0)
    with pytest.raises(ConfigurationError, match="use_llm"):
        HiGMem("s", store=store).retrieve("q", use_llm=True)
    with pytest.raises(InvalidInputError, match="k=0"):
        HiGMem("s", store=store).retrieve("q", k=0)


def test_event_anchors_are_the_exact_nearest_events(store):
    import numpy as np

    topics = [
        "violin", "pottery", "sailing", "chess", "baking", "hiking", "painting", "cycling",
        "knitting", "surfing", "gardening", "fishing", "camping", "archery",
    ]  # fmt: skip
    embedder = BagOfWordsEmbedder(dim=997)
    memory = HiGMem("s", store=store, embedder=embedder, retry=FAST_RETRY)
    turns = []
    for n, topic in enumerate(topics):
        for i in range(3):
            turns.append(
                Turn(
                    role="user",
                    name="Ada",
                    text=f"Session {n}: I talked about {topic} and more {topic} today ({i}).",
                    created_at=1_700_000_000.0 + n * 86_400 + i * 60,
                    extra={"session": str(n)},
                )
            )
    memory.add(turns)
    memory.flush()
    assert len(memory.events()) == len(topics) > memory.config.retrieval_events
    from langchain_recursive_memory.core.higmem.state import sync_steps

    state = memory.runner.run(sync_steps(memory.session, memory._indexer.state()))
    query = "the pottery and sailing afternoons"
    vector = embedder.embed_query(query)
    chosen = memory.runner.run(memory._retriever._top_events_steps(state, query, vector))
    q = np.asarray(vector)

    def similarity(event_id: str) -> float:
        v = np.asarray(embedder.embed_query(state.events[event_id].index_text))
        return float(q @ v / np.linalg.norm(v))

    expected = sorted((similarity(eid) for eid in state.events), reverse=True)
    k = memory.config.retrieval_events
    assert len(chosen) == k  # exact top-k: the same similarities (ties in any order)
    assert [similarity(e.id) for e in chosen] == pytest.approx(expected[:k])
    assert {e.id for e in chosen[:2]} == {"seg:1", "seg:2"}  # pottery, sailing


async def test_events_and_turn_nodes_have_async_twins_that_ask_the_store_the_same(
    store, requests_of
):
    memory = HiGMem("h", store=store, model=HiGMemModel(), retry=FAST_RETRY)
    memory.add(story_turns(), flush=True)
    requests = requests_of(store)
    events, aevents = await same_requests(requests, memory.events, memory.aevents)
    assert aevents == events != []
    nodes, anodes = await same_requests(requests, memory.turn_nodes, memory.aturn_nodes)
    assert anodes == nodes != []
