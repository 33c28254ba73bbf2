"""The engines on answers written like real models write them (issue 14, items 1-4).

``test_model_answers.py`` checks each parser on the corpus; these tests check what the
engines then do: a messy index answer still indexes the batch with the LLM in one call,
event references are normalised, one failed filter chunk keeps its candidates, and a
refusal or a lost summary never replaces the previous summary.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from conftest import FAST_TWO_RETRIES
from fakes import HiGMemModel, KeywordSummarizer, ScriptedAnswers

from langchain_recursive_memory.core import (
    FunctionTextModel,
    HiGMem,
    HybridMemory,
    RecursiveMemory,
    Turn,
)

STORY = [
    ("Ada", "I adopted a cat called Miso last week."),
    ("Bob", "Congratulations! How old is Miso?"),
    ("Ada", "Miso is 2 years old and loves tuna."),
    ("Bob", "My sister moved to Porto in March."),
]


def story() -> list[Turn]:
    return [
        Turn(role="user", name=who, text=text, id=f"t{i}", created_at=1_700_000_000.0 + 60 * i)
        for i, (who, text) in enumerate(STORY)
    ]


class IndexAnswers:
    """HiGMemModel's index answers, rewritten the way a real model might write them."""

    def __init__(self, rewrite: Any) -> None:
        self.rewrite = rewrite
        self.inner = HiGMemModel()
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        answer = self.inner.complete(prompt)
        if prompt.startswith("You index a conversation"):
            objects = [json.loads(ln) for ln in answer.splitlines() if ln.startswith("{")]
            return str(self.rewrite(objects))
        return str(answer)

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


def _indexed_with_the_llm(store: Any, rewrite: Any) -> tuple[HiGMem, IndexAnswers]:
    model = IndexAnswers(rewrite)
    memory = HiGMem("s", store=store, model=model, retry=FAST_TWO_RETRIES, batch_size=4)
    memory.add(story())
    return memory, model


# -- item 1: the index answer ----------------------------------------------------------


def test_a_pretty_printed_answer_cut_off_in_its_last_event_indexes_in_one_call(store):
    def rewrite(objects: list[dict[str, Any]]) -> str:
        text = "\n".join(json.dumps(o, indent=2) for o in objects)
        return "<index>\n" + text[: len(text) - 40]  # cut inside the last event update

    memory, model = _indexed_with_the_llm(store, rewrite)
    assert len(model.prompts) == 1  # no retry, no fallback
    assert {n.method for n in memory.turn_nodes()} == {"llm"}
    assert all(e.method == "llm" for e in memory.events())


def test_a_reasoning_block_that_mentions_the_tags_and_python_literals(store):
    def rewrite(objects: list[dict[str, Any]]) -> str:
        for o in objects:
            for fact in o.get("facts", []):
                fact["time"] = None
        body = "\n".join(repr(o) for o in objects)  # Python literals: quotes, None
        think = "<think>I answer inside <index></index>, e.g. <index>{}</index>.</think>"
        return f"{think}\n<index>\n{body}\n</index>"

    memory, model = _indexed_with_the_llm(store, rewrite)
    assert len(model.prompts) == 1
    assert {n.method for n in memory.turn_nodes()} == {"llm"}


def test_empty_event_lists_do_not_make_one_event_per_turn(store):
    def rewrite(objects: list[dict[str, Any]]) -> str:
        turns = [dict(o, events=[]) for o in objects if "turn" in o]
        return "<index>\n" + "\n".join(json.dumps(o) for o in turns) + "\n</index>"

    memory, _ = _indexed_with_the_llm(store, rewrite)
    events = memory.events()
    assert len(events) == 1 and len(events[0].turn_ids) == 4


def test_a_missing_turn_line_gets_a_no_llm_node_in_the_events_of_the_turn_before(store):
    def rewrite(objects: list[dict[str, Any]]) -> str:
        kept = [o for o in objects if o.get("turn") != 4]
        return "<index>\n" + "\n".join(json.dumps(o) for o in kept) + "\n</index>"

    memory, model = _indexed_with_the_llm(store, rewrite)
    notes = {n.turn_id: n for n in memory.turn_nodes()}
    assert len(model.prompts) == 1 and len(notes) == 4
    assert notes["t3"].method == "heuristic" and notes["t3"].event_ids == notes["t2"].event_ids
    assert {notes[t].method for t in ("t0", "t1", "t2")} == {"llm"}


def test_a_batch_with_no_usable_line_is_asked_again_with_the_error_then_falls_back(store, caplog):
    model = ScriptedAnswers(
        {"You index a conversation": ["I'm sorry, but I can't help with that."]}
    )
    memory = HiGMem("s", store=store, model=model, retry=FAST_TWO_RETRIES, batch_size=4)
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        memory.add(story())
    index_prompts = [p for p in model.prompts if p.startswith("You index")]
    assert len(index_prompts) == 2  # the prompt, then one repair prompt (not 3 identical)
    assert "could not be used" in index_prompts[1] and "I'm sorry" in index_prompts[1]
    assert "indexed without the LLM" in caplog.text and len(memory.turn_nodes()) == 4


# -- item 3: event references ------------------------------------------------------------


def test_references_written_as_e2_event_e2_or_2_join_the_existing_event(store):
    memory = HiGMem("s", store=store, model=HiGMemModel(), retry=FAST_TWO_RETRIES, batch_size=4)
    memory.add(story())
    before = {e.id for e in memory.events()}
    forms = iter(["e1", "Event E1", "E1: the cat", 1])

    def rewrite(objects: list[dict[str, Any]]) -> str:
        turns = [dict(o, events=[next(forms)]) for o in objects if "turn" in o]
        return "<index>\n" + "\n".join(json.dumps(o) for o in turns) + "\n</index>"

    model = IndexAnswers(rewrite)
    memory.model = model
    memory.add(
        [
            Turn(role="user", name="Ada", text=f"Miso chased a {thing}.", id=f"n{i}")
            for i, thing in enumerate(["moth", "ball", "laser", "leaf"])
        ]
    )
    assert {e.id for e in memory.events()} == before  # no new event
    joined = {n.turn_id: n.event_ids for n in memory.turn_nodes() if n.turn_id.startswith("n")}
    assert len(set(joined.values())) == 1


# -- item 2: guided retrieval ------------------------------------------------------------


def test_a_failed_filter_chunk_keeps_its_candidates_and_the_query_stays_guided(store, caplog):
    model = ScriptedAnswers(
        {
            "An event from a conversation": ["[2]\n\nTurn [2] gives Miso's age; [1] is close."],
            "A question and candidate turns": ["I'm sorry, but I can't help with that."],
        }
    )
    memory = HiGMem(
        "s", store=store, model=model, retry=FAST_TWO_RETRIES, batch_size=4, retrieval_turns=1
    )
    memory.add(story(), flush=True)
    with caplog.at_level(logging.WARNING, logger="langchain_recursive_memory"):
        hits = memory.retrieve("How old is Miso?")
    assert "guided retrieval failed" not in caplog.text
    assert "relevance filter failed" in caplog.text
    found = {h.turn.id: h.found_by for h in hits}
    assert any(f.startswith("event:") for by in found.values() for f in by)
    filters = [p for p in model.prompts if p.startswith("A question and candidate")]
    assert len(filters) == 2  # one chunk: its prompt, then one repair prompt


# -- item 4: summaries -------------------------------------------------------------------


def _chat(memory: RecursiveMemory, start: int, n: int) -> None:
    for i in range(start, start + n):
        memory.add(Turn(role="user", text=f"Message {i}: Ada and Bob planned the Falcon trip {i}."))


def test_prefaces_fences_and_chatter_are_not_stored_in_the_summary(store):
    inner = KeywordSummarizer()

    def wrapped(prompt: str) -> str:
        text = inner.complete(prompt)
        return (
            f"Here is the updated summary:\n\n```\n{text}\n```\n\nLet me know if you need changes!"
        )

    memory = RecursiveMemory(
        "s",
        store=store,
        model=FunctionTextModel(wrapped),
        retry=FAST_TWO_RETRIES,
        max_tokens=400,
        max_summary_tokens=80,
    )
    _chat(memory, 0, 30)
    summary = memory.get_summary()
    assert summary is not None and summary.text.startswith("Mentioned:")
    assert "Here is" not in summary.text and "```" not in summary.text
    assert "Let me know" not in summary.text


def test_a_refusal_or_a_lost_summary_keeps_the_previous_summary(store):
    inner = KeywordSummarizer()
    mode = {"answer": "normal"}

    def model(prompt: str) -> str:
        if mode["answer"] == "refuse":
            return "I'm sorry, but I can't help with that."
        if mode["answer"] == "forget":
            return "The user wrote several more messages about a trip and some planning."
        return inner.complete(prompt)

    memory = RecursiveMemory(
        "s",
        store=store,
        model=FunctionTextModel(model),
        retry=FAST_TWO_RETRIES,
        max_tokens=400,
        max_summary_tokens=120,
    )
    _chat(memory, 0, 30)
    kept = memory.get_summary()
    assert kept is not None and "Falcon" in kept.text
    for answer in ("refuse", "forget"):
        mode["answer"] = answer
        _chat(memory, 100, 20)
        latest = memory.get_summary()
        assert latest is not None and latest.text == kept.text, answer
    assert not any(s.text.startswith("I'm sorry") for s in store.summaries("default", "s"))


def test_no_new_facts_is_not_asked_again_and_untagged_facts_are_read(store):
    calls: list[str] = []
    answers = iter(
        [
            "<summary>Ada and Bob plan the Falcon trip.</summary>\n"
            "<facts>\nNo new facts.\n</facts>",
            "Ada and Bob plan the Falcon trip; Ada's locker code is 4471.\n\nFacts:\n"
            '{"key": "ada/locker_code", "subject": "Ada", "fact": "Ada\'s locker code is 4471.", '
            '"time": None, "sources": "[1]"}',
        ]
    )
    last = {"answer": ""}

    def model(prompt: str) -> str:
        calls.append(prompt)
        last["answer"] = next(answers, last["answer"])
        return last["answer"]

    memory = HybridMemory(
        "s",
        store=store,
        model=FunctionTextModel(model),
        retry=FAST_TWO_RETRIES,
        max_tokens=800,
        max_summary_tokens=120,
    )
    for i in range(40):
        memory.add(Turn(role="user", text=f"Round {i}: Ada and Bob talk about the Falcon trip."))
    folds = len(store.summaries("default", "s"))
    assert folds >= 2 and len(calls) == folds  # "No new facts." was not asked again
    facts = {f.key: f for f in memory.facts()}
    assert facts["ada/locker_code"].text == "Ada's locker code is 4471."
    assert "Facts:" not in memory.get_summary().text
