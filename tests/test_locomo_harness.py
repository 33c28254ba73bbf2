"""The LoCoMo harness (benchmarks/locomo.py) on a tiny conversation, offline and fast.

``tests/data/locomo_tiny.json`` is a LoCoMo-format conversation written for these tests (no
LoCoMo text): 40 turns in 3 dated sessions, one image caption, 11 questions over the five
categories, one with malformed evidence (``"D1:13; D2:8"``, ``"D"``) and one without.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fakes import FactModel, HiGMemModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import locomo

from langchain_recursive_memory.core import MemoryStore

DATA = Path(__file__).parent / "data" / "locomo_tiny.json"
MAX_TOKENS = 450
SUMMARY_TOKENS = 80
JUDGED = 9  # questions of categories 1-4 (the LLM judge's); 2 are adversarial

# question -> (the scripted answer, a phrase that must be in the memory to give it)
ANSWERS = {
    "What is the name of Nadia's kitten?": ("Pixel", "kitten called Pixel"),
    "When did Tomas run the Lisbon half marathon?": ("14 April 2024", "14th of April"),
    "Who has taken up running?": ("Lena, Rui, Tomas", "Lena started running"),
    "What new job did Tomas get?": ("a job at the bicycle repair shop", "bicycle repair"),
    "When is Nadia moving to Porto?": ("June 2024", "Porto in June"),
}


def _field(name: str, prompt: str) -> str:
    found = re.findall(rf"{name}: (.*)", prompt)  # the last: the judge prompt has an example
    assert found, name
    return found[-1].replace(locomo.DATE_HINT, "")


class ScriptedModel:
    """Answers every prompt the harness and the memories send, offline.

    Summaries and facts: FactModel; HiGMem construction and guided retrieval: HiGMemModel;
    QA: the scripted answer when its evidence phrase is in the memory it is shown, else
    "Not mentioned"; judge: CORRECT when the answer shares a word with the gold answer.
    """

    def __init__(self) -> None:
        self.higmem = HiGMemModel()
        self.summarizer = FactModel()
        self.calls: Counter[str] = Counter()

    def complete(self, prompt: str) -> str:
        if prompt.startswith(locomo.QA_PROMPT[:30]):
            self.calls["qa"] += 1
            memory = prompt.split("<memory>\n", 1)[1].split("\n</memory>", 1)[0]
            question = _field("Question", prompt)
            answer, needed = ANSWERS.get(question, (locomo.NOT_MENTIONED, ""))
            return answer if needed in memory else locomo.NOT_MENTIONED
        if prompt.startswith(locomo.JUDGE_PROMPT[:30]):
            self.calls["judge"] += 1
            gold = _field("Gold answer", prompt).lower()
            said = _field("Generated answer", prompt).lower()
            return (
                "CORRECT"
                if set(re.findall(r"\w+", gold)) & set(re.findall(r"\w+", said))
                else ("WRONG")
            )
        if self.higmem._kind(prompt) != "rewrite":
            self.calls["higmem"] += 1
            return str(self.higmem.complete(prompt))
        self.calls["summary"] += 1
        return str(self.summarizer.complete(prompt))

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


@pytest.fixture(scope="module")
def samples() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(DATA.read_text())
    return data


@pytest.fixture(scope="module")
def offline(samples: list[dict[str, Any]]) -> dict[str, Any]:
    return locomo.run(
        samples,
        locomo.OFFLINE_SYSTEMS,
        store=MemoryStore.in_memory(),
        k=4,
        max_tokens=MAX_TOKENS,
        max_summary_tokens=SUMMARY_TOKENS,
    )


@pytest.fixture(scope="module")
def with_model(samples: list[dict[str, Any]]) -> tuple[dict[str, Any], ScriptedModel]:
    model = ScriptedModel()
    result = locomo.run(
        samples,
        locomo.ALL_SYSTEMS,
        store=MemoryStore.in_memory(),
        model=model,
        model_name="scripted",
        k=4,
        max_tokens=MAX_TOKENS,
        max_summary_tokens=SUMMARY_TOKENS,
        concurrency=2,
    )
    return result, model


# -- the official F1, ported --------------------------------------------------------------


def test_f1_exact_answer_and_normalisation() -> None:
    assert locomo.locomo_f1("Pixel", {"category": 4, "answer": "Pixel"}) == 1.0
    assert locomo.locomo_f1("The painting!", {"category": 4, "answer": "painting"}) == 1.0
    assert locomo.normalize_answer("The cat, and a DOG.") == "cat dog"
    # Numbers in the data are ints; a partial answer gets the token F1.
    assert locomo.locomo_f1("2022", {"category": 2, "answer": 2022}) == 1.0
    assert locomo.f1_score("the kitten is called Pixel", "Pixel") == pytest.approx(0.4)
    assert locomo.f1_score("Porto", "Lisbon") == 0.0


def test_f1_stems_with_porter() -> None:
    assert locomo.f1_score("running shoes", "run shoe") == 1.0
    assert locomo.f1_score("she paints", "painting") == pytest.approx(2 / 3)


def test_f1_category_rules() -> None:
    multi = {"category": 1, "answer": "Tomas, Rui, Lena"}
    assert locomo.locomo_f1("Lena, Rui, Tomas", multi) == 1.0
    assert locomo.locomo_f1("Rui, Lena", multi) == pytest.approx(2 / 3)  # mean over gold parts
    # One prediction part "rui lena" against each gold part: (0 + 2/3 + 2/3) / 3.
    assert locomo.locomo_f1("Rui and Lena", multi) == pytest.approx(4 / 9)
    open_domain = {"category": 3, "answer": "Likely yes; she found a studio"}
    assert locomo.locomo_f1("likely yes", open_domain) == 1.0  # only the part before ';'
    adversarial = {"category": 5, "adversarial_answer": "a blue bowl"}
    assert locomo.locomo_f1("Not mentioned in the conversation.", adversarial) == 1.0
    assert locomo.locomo_f1("No information available", adversarial) == 1.0
    assert locomo.locomo_f1("a blue bowl", adversarial) == 0.0
    assert locomo.gold_answer(adversarial) == "a blue bowl"


def test_judge_verdicts() -> None:
    assert locomo.parse_verdict("CORRECT") == 1.0
    assert locomo.parse_verdict("The answer is correct.") == 1.0
    assert locomo.parse_verdict("INCORRECT") == 0.0
    assert locomo.parse_verdict("WRONG") == 0.0
    assert locomo.parse_verdict("no idea") == 0.0
    # mem0's judge wording, against the real gold (category 5 is scored by LoCoMo's rule).
    prompt = locomo.judge_prompt({"question": "q?", "category": 4, "answer": "x"}, "y")
    assert "Gold answer: x\nGenerated answer: y" in prompt and '"label"' in prompt


# -- retrieval metrics -------------------------------------------------------------------


def test_every_offline_system_is_measured(offline: dict[str, Any]) -> None:
    systems = offline["systems"]
    assert list(systems) == list(locomo.OFFLINE_SYSTEMS)
    for res in systems.values():
        overall = res["overall"]
        assert overall["with_evidence"] == 10  # the question without evidence is skipped
        assert set(res["categories"]) == {"1", "2", "3", "4", "5"}
        for block in [overall, *res["categories"].values()]:
            assert 0.0 <= block["recall"] <= 1.0
            assert 0.0 <= block["precision"] <= 1.0
            assert "f1" not in block  # no model, no answers
        assert res["timing"]["turns_added"] in (0, 40)


def test_full_has_all_evidence_and_the_most_tokens(offline: dict[str, Any]) -> None:
    systems = offline["systems"]
    full = systems["full"]
    assert full["overall"]["recall"] == 1.0
    assert all(c["recall"] == 1.0 for c in full["categories"].values())
    assert full["overall"]["turns"] == 40
    others = [res["overall"]["tokens"] for name, res in systems.items() if name != "full"]
    assert full["overall"]["tokens"] > max(others)


def test_budgets_and_k_are_respected(offline: dict[str, Any]) -> None:
    records = offline["questions"]
    for name in ("window", "recursive", "hybrid"):
        assert all(r["tokens"] <= MAX_TOKENS for r in records[name]), name
    for name in ("window", "recursive", "hybrid"):
        assert offline["systems"][name]["overall"]["tokens_max"] <= MAX_TOKENS
    window = offline["systems"]["window"]["overall"]
    assert window["turns"] < 40 and window["tokens"] <= MAX_TOKENS
    assert {len(r["returned"]) for r in records["higmem"]} == {4}
    # The recursive window is a suffix of the conversation: it ends with the last turn.
    assert all(r["returned"][-1] == "D3:12" for r in records["recursive"])
    # Hybrid recalls archived turns for the question: more evidence than the bare window.
    assert (
        offline["systems"]["hybrid"]["overall"]["recall"]
        > offline["systems"]["recursive"]["overall"]["recall"]
    )


def test_evidence_is_cleaned(offline: dict[str, Any]) -> None:
    mischief = next(
        r for r in offline["questions"]["full"] if r["question"] == "What mischief has Pixel done?"
    )
    assert mischief["gold"] == ["D1:13", "D2:8"]
    assert offline["unknown_evidence_ids"] == []


# -- answering, scoring and counting with a (scripted) model ------------------------------


def test_answers_are_scored_and_calls_counted(
    with_model: tuple[dict[str, Any], ScriptedModel],
) -> None:
    result, model = with_model
    systems = result["systems"]
    assert list(systems) == list(locomo.ALL_SYSTEMS)
    for name, res in systems.items():
        overall = res["overall"]
        assert overall["questions"] == 11 and overall["with_evidence"] == 10
        assert 0.0 <= overall["f1"] <= 1.0 and 0.0 <= overall["judge"] <= 1.0
        llm = res["llm"]
        assert llm["answering"]["calls"] == 11, name
        assert llm["judging"]["calls"] == JUDGED, name  # categories 1-4 only
        assert llm["answering"]["input_tokens"] > 0
        # Adversarial questions: the scripted model says "Not mentioned" -> F1 1.
        assert res["categories"]["5"]["f1"] == 1.0
    full = {r["question"]: r for r in result["questions"]["full"]}
    assert full["What is the name of Nadia's kitten?"]["f1"] == 1.0
    assert full["Who has taken up running?"]["f1"] == 1.0
    assert full["What is the name of Nadia's kitten?"]["judge"] == 1.0
    assert systems["full"]["overall"]["f1"] >= max(r["overall"]["f1"] for r in systems.values())
    # Upkeep: only the memories that use a model spend calls on it.
    assert "memory_construction" not in systems["full"]["llm"]
    assert systems["recursive"]["llm"]["memory_construction"]["calls"] > 0
    assert systems["hybrid"]["llm"]["memory_construction"]["calls"] > 0
    assert systems["higmem-llm"]["llm"]["memory_construction"]["calls"] >= 10  # 40 turns / 4
    assert systems["higmem-llm"]["llm"]["memory_retrieval"]["calls"] >= 11  # >= 1 per question
    assert "memory_construction" not in systems["higmem"]["llm"]  # no LLM in no-LLM HiGMem
    assert model.calls["qa"] == 11 * len(systems) and model.calls["judge"] == JUDGED * len(systems)


def test_results_files_are_written(
    with_model: tuple[dict[str, Any], ScriptedModel], tmp_path: Path
) -> None:
    result, _ = with_model
    json_path, png_path = locomo.write_outputs(
        result, "tiny", directory=tmp_path, command="python benchmarks/locomo.py --test"
    )
    data = json.loads(json_path.read_text())
    assert data["command"] == "python benchmarks/locomo.py --test"
    assert {"date", "python", "cpus"} <= set(data["machine"])
    assert data["settings"]["max_tokens"] == MAX_TOKENS and data["settings"]["k"] == 4
    assert data["systems"]["full"]["overall"]["recall"] == 1.0
    assert "questions" not in data
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_runs_and_reuses_a_persistent_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    args = [
        "--data",
        str(DATA),
        "--systems",
        "full,window,higmem",
        "--max-tokens",
        str(MAX_TOKENS),
        "--store",
        str(store),
        "--results-dir",
        str(tmp_path),
        "--out",
        "cli",
    ]
    assert locomo.main(args) == 0
    first = json.loads((tmp_path / "cli.json").read_text())
    assert (tmp_path / "cli.png").exists()
    assert first["systems"]["higmem"]["timing"]["turns_added"] == 40
    assert locomo.main(args) == 0
    again = json.loads((tmp_path / "cli.json").read_text())
    assert again["systems"]["higmem"]["timing"]["turns_added"] == 0  # ingestion reused
    assert again["systems"]["higmem"]["overall"] == first["systems"]["higmem"]["overall"]
    with pytest.raises(SystemExit):
        locomo.main(["--data", str(DATA), "--systems", "higmem-llm"])  # needs --model
