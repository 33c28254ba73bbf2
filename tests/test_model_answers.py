"""Every parser of model answers, on the corpus of realistic answers in data/model_answers/.

No model is reachable from the test machines, so the scripted fakes answer in exactly the
requested format. The corpus holds what models actually write instead: hand-written
answers in the styles of gpt-4o-mini-, Claude- and open-model-class models (prefaces,
fences, reasoning blocks, refusals, truncation, lenient JSON, paraphrased references),
each labelled with what the parser must extract, and answers recorded from real runs with
``benchmarks/locomo.py --record tests/data/model_answers``. The corpus format and the
per-prompt parsers are in ``benchmarks/_common.py`` (``AnswerKind``); issue 14 lists the
failures the ``"issue"`` entries reproduce.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _common
import locomo  # registers the harness's own prompts (answer, judge)

from langchain_recursive_memory.core import TokenCounter, Turn
from langchain_recursive_memory.core.prompts import (
    FACTS_PROMPT,
    FILTER_PROMPT,
    PREDICT_PROMPT,
    REWRITE_PROMPT,
    facts_prompt,
    shorten_prompt,
    summary_prompt,
)
from langchain_recursive_memory.core.prompts.higmem import ANALYSE_PROMPT, ANSWER_AS_LINES

ENTRIES = _common.load_corpus()
MIN_ANSWERS = 6
"""Fewest answers of any prompt in the corpus."""


def _id(item: tuple[str, dict[str, Any]]) -> str:
    return f"{item[0]}:{item[1]['id']}"


@pytest.mark.parametrize(("kind", "entry"), ENTRIES, ids=[_id(e) for e in ENTRIES])
def test_the_parser_extracts_what_the_answer_is_labelled_with(
    kind: str, entry: dict[str, Any]
) -> None:
    got = _common.ANSWER_KINDS[kind].describe(entry["answer"], entry.get("args", {}))
    assert _common.matches(entry["expect"], got), (entry["note"], entry["expect"], got)


def test_the_corpus_covers_every_prompt_and_is_well_formed() -> None:
    counts = Counter(kind for kind, _ in ENTRIES)
    assert set(counts) == set(_common.ANSWER_KINDS), "a prompt without answers, or a stray file"
    assert min(counts.values()) >= MIN_ANSWERS, counts
    for kind in counts:
        ids = [e["id"] for k, e in ENTRIES if k == kind]
        assert len(ids) == len(set(ids)), f"{kind}: repeated ids"
    for kind, entry in ENTRIES:
        assert {"id", "style", "note", "answer", "expect"} <= set(entry), (kind, entry.get("id"))
        assert isinstance(entry["answer"], str) and isinstance(entry["expect"], dict)
    # Every failure issue 14 lists has an answer that reproduces it.
    issues = Counter(e["issue"] for _, e in ENTRIES if "issue" in e)
    assert {"14.1", "14.2", "14.3", "14.4", "14.6"} <= set(issues), issues


def _turn(n: int, text: str) -> Turn:
    return Turn(role="user", name="Ada", text=text, id=f"t{n}", created_at=1_714_670_000.0 + n)


def test_real_prompts_are_recognised_and_their_args_read() -> None:
    """The recorder files each real prompt under its kind, with the args its parser needs."""
    counter = TokenCounter()
    turns = [_turn(1, "We booked the hotel in Alfama."), _turn(2, "Jonas feeds Miso.")]
    combined = summary_prompt(
        "Ada lives in Oslo.", turns, cap=80, counter=counter, max_message_tokens=50, known_facts=""
    )
    plain = summary_prompt(None, turns, cap=80, counter=counter, max_message_tokens=50)
    lines = "\n".join(f"[{n}] Ada: line {n}" for n in (1, 2, 3))
    index = ANALYSE_PROMPT.format(
        events="E1 (3 turns): Ada's trip to Lisbon.",
        last_event="E1",
        context="(start of conversation)",
        turns="[1] Ada: one\n[2] Bob: two",
        rewrite_limit=10,
        answer_format=ANSWER_AS_LINES,
    )
    prompts = {
        "combined": combined,
        "summary": plain,
        "shorten": shorten_prompt("Ada lives in Oslo.", cap=40),
        "facts": facts_prompt("[1] user: a\n[2] user: b", []),
        "higmem_index": index,
        "higmem_predict": PREDICT_PROMPT.format(summary="s", turns=lines, question="q?"),
        "higmem_filter": FILTER_PROMPT.format(question="q?", turns=lines),
        "higmem_rewrite": REWRITE_PROMPT.format(question="When did Ada fly?"),
        "locomo_answer": locomo.qa_prompt(
            {"conversation": {"speaker_a": "Ada", "speaker_b": "Bob"}},
            "[8 May 2023] Ada: hi",
            {"question": "Who?", "category": 4},
        ),
        "locomo_judge": locomo.judge_prompt({"question": "q?", "answer": "a"}, "b"),
    }
    assert set(prompts) == set(_common.ANSWER_KINDS)
    for name, prompt in prompts.items():
        kind = _common.kind_of(prompt)
        assert kind is not None and kind.name == name, name
    args = {name: _common.ANSWER_KINDS[name].args(p) for name, p in prompts.items()}
    assert args["combined"]["n_messages"] == 2 and args["combined"]["previous"] == (
        "Ada lives in Oslo."
    )
    assert args["summary"]["previous"] is None and "Alfama" in args["summary"]["messages"]
    assert args["facts"]["n_messages"] == 2
    assert args["higmem_index"] == {
        "n_turns": 2,
        "candidates": [{"summary": "Ada's trip to Lisbon.", "turns": 3}],
        "last": "E1",
    }
    assert args["higmem_predict"] == {"size": 3} == args["higmem_filter"]
    assert args["higmem_rewrite"] == {"question": "When did Ada fly?"}
    assert FACTS_PROMPT.startswith("Extract")  # the recogniser reads the template's start
