"""Comparable LoCoMo numbers (issue 14, item 6): LoCoMo's QA prompts, a fixed judge with
mem0's wording over categories 1-4, every F1 named by its scorer, capped answers, and the
``--record`` switch that feeds real answers to the corpus of ``data/model_answers/``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _common
import locomo
from test_locomo_harness import DATA, MAX_TOKENS, SUMMARY_TOKENS, ScriptedModel

from langchain_recursive_memory.core import MemoryStore

SAMPLE = {"conversation": {"speaker_a": "Nadia", "speaker_b": "Tomas"}}


def test_not_mentioned_is_offered_only_to_adversarial_questions() -> None:
    single = locomo.qa_prompt(SAMPLE, "memory", {"question": "Kitten's name?", "category": 4})
    temporal = locomo.qa_prompt(SAMPLE, "memory", {"question": "When?", "category": 2})
    item = {"question": "What bowl did Nadia buy?", "category": 5, "adversarial_answer": "blue"}
    adversarial = locomo.qa_prompt(SAMPLE, "memory", item)
    assert locomo.NOT_MENTIONED not in single and locomo.NOT_MENTIONED not in temporal
    assert "short phrase" in single and "exact words from the context" in single
    assert "When?" + locomo.DATE_HINT in temporal
    assert "Select the correct answer: (a)" in adversarial and locomo.NOT_MENTIONED in adversarial
    choice = locomo.options(item)
    assert choice is not None and set(choice.values()) == {locomo.NOT_MENTIONED, "blue"}
    assert locomo.options(item) == choice  # a fixed order per question
    picked = next(k for k, v in choice.items() if v == locomo.NOT_MENTIONED)
    assert locomo.clean_prediction(f"({picked})", choice) == locomo.NOT_MENTIONED


def test_answers_are_cleaned_and_capped() -> None:
    assert locomo.clean_prediction("<think>hmm</think>\nShort answer: **Pixel**") == "Pixel"
    long = " ".join(f"word{i}" for i in range(200))
    capped = locomo.clean_prediction(long, max_tokens=8)
    assert len(capped.split()) < 10 and long.startswith(capped)


def test_every_f1_is_named_by_its_scorer() -> None:
    item = {"category": 4, "answer": "run shoe"}
    assert locomo.scores("running shoes", item) == {"f1": 1.0, "f1_set": 0.0}  # stemmed vs not
    assert locomo.set_f1("the cat, the dog", "cat dog") == pytest.approx(0.8)
    assert locomo.scores("Not mentioned", {"category": 5, "adversarial_answer": "x"}) == {
        "f1": 1.0,
        "f1_set": None,
    }
    assert {"f1", "f1_set"} == set(locomo.F1_SCORERS)


def test_verdicts_read_what_judges_write() -> None:
    assert locomo.parse_verdict('One sentence.\n{"label": "CORRECT"}') == 1.0
    assert locomo.parse_verdict("Not CORRECT") == 0.0
    assert locomo.parse_verdict("It isn't correct.") == 0.0
    assert locomo.parse_verdict('The year is not wrong.\n{"label": "CORRECT"}') == 1.0


class Judge:
    """A fixed judge: CORRECT when the generated answer shares a word with the gold one."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        model = ScriptedModel()
        verdict = model.complete(prompt)  # the scripted one-word judge
        return f'The answers are compared.\n{{"label": "{verdict}"}}'

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Any, Any]:
    samples = json.loads(DATA.read_text())
    model, judge = ScriptedModel(), Judge()
    recorder = locomo.Recorder("scripted-model", per_kind=3)
    result = locomo.run(
        samples,
        ["full", "higmem-llm"],
        store=MemoryStore.in_memory(),
        model=model,
        model_name="scripted",
        judge_model=judge,
        judge_name="fixed-judge",
        recorder=recorder,
        k=4,
        max_tokens=MAX_TOKENS,
        max_summary_tokens=SUMMARY_TOKENS,
        concurrency=2,
    )
    return result, model, (judge, recorder)


def test_a_fixed_judge_scores_categories_1_to_4(judged: tuple[dict[str, Any], Any, Any]) -> None:
    result, model, (judge, _) = judged
    assert model.calls["judge"] == 0  # the answering model never judges itself
    assert len(judge.prompts) == 9 * 2  # 9 questions of categories 1-4, two systems
    assert all("Gold answer:" in p and '"label"' in p for p in judge.prompts)
    settings = result["settings"]["judge"]
    assert settings["model"] == "fixed-judge" and settings["self_judged"] is False
    assert settings["llm_categories"] == [1, 2, 3, 4]
    for res in result["systems"].values():
        overall = res["overall"]
        assert 0.0 <= overall["judge"] <= 1.0 and 0.0 <= overall["judge_with_adversarial"] <= 1.0
        assert overall["f1_set"] is not None
        assert res["categories"]["5"]["judge"] is None  # not judged by the LLM...
        assert res["categories"]["5"]["judge_with_adversarial"] == 1.0  # ...but by the rule
    assert set(result["settings"]["f1_scorers"]) == {"f1", "f1_set"}


def test_recorded_answers_join_the_corpus_in_its_format(
    judged: tuple[dict[str, Any], Any, Any], tmp_path: Path
) -> None:
    _, _, (_, recorder) = judged
    added = recorder.write(tmp_path)
    assert {"higmem_index", "higmem_filter", "locomo_answer", "locomo_judge"} <= set(added)
    assert recorder.write(tmp_path) == dict.fromkeys(added, 0)  # the same answers: skipped
    entries = _common.load_corpus(tmp_path)
    assert entries
    for kind, entry in entries:
        assert entry["style"] == "scripted-model" and entry["label"] == "recorded"
        got = _common.ANSWER_KINDS[kind].describe(entry["answer"], entry["args"])
        assert _common.matches(entry["expect"], got), (kind, entry["id"])
