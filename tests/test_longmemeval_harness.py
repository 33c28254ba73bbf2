"""The LongMemEval harness (benchmarks/longmemeval.py): metrics by hand, and a tiny run.

``tests/data/longmemeval_tiny.json`` is written for these tests in LongMemEval's format
(no LongMemEval text): four made-up haystacks; one with its dates out of list order and a
repeated session id, one whose evidence spans two sessions (one evidence turn is the
assistant's), one with an answer session but no ``has_answer`` turn, and one abstention
question (``_abs``).
"""

from __future__ import annotations

import json
import math
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import longmemeval as lme
from _common import load_longmemeval

DATA = Path(__file__).parent / "data" / "longmemeval_tiny.json"


@pytest.fixture(scope="module")
def items():
    return load_longmemeval(DATA)


def _hay(items, qid):
    return lme.build_haystack(next(q for q in items if q["question_id"] == qid))


# -- the metric functions ---------------------------------------------------------------------


def test_recall_any_and_all():
    ranked = ["a", "x", "b", "y"]
    assert lme.recall_any(ranked, ["b"], 2) == 0.0
    assert lme.recall_any(ranked, ["b"], 3) == 1.0
    assert lme.recall_any(ranked, ["a", "b"], 1) == 1.0
    assert lme.recall_all(ranked, ["a", "b"], 1) == 0.0
    assert lme.recall_all(ranked, ["a", "b"], 3) == 1.0
    assert lme.recall_all(ranked, ["a", "z"], 4) == 0.0


def test_ndcg_uses_the_official_dcg():
    # LongMemEval's dcg: rel_1 + sum_{i>=2} rel_i / log2(i) (ranks 1 and 2 both undiscounted)
    assert lme.dcg([1, 1, 1]) == pytest.approx(1 + 1 + 1 / math.log2(3))
    ranked = ["a", "x", "b"]
    assert lme.ndcg(ranked, ["a", "b"], 3) == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert lme.ndcg(ranked, ["a", "b"], 1) == pytest.approx(1.0)  # ideal at k=1 is one hit
    assert lme.ndcg(["x", "a"], ["a"], 2) == pytest.approx(1.0)  # rank 2 is not discounted
    assert lme.ndcg(["x", "y", "a"], ["a"], 3) == pytest.approx(1 / math.log2(3))
    assert lme.ndcg(["x"], ["a"], 5) == 0.0
    assert lme.ndcg(["x"], [], 5) == 0.0


def test_question_metrics_turn_and_session_levels(items):
    hay = _hay(items, "tiny_multi_2")
    b1, b2 = "tiny_multi_2/0/0", "tiny_multi_2/2/2"
    assert hay.evidence == (b1, b2, "tiny_multi_2/2/3")
    other = "tiny_multi_2/1/0"
    ranked = [b2, other, "tiny_multi_2/2/0", b1, "tiny_multi_2/2/3"]
    m = lme.question_metrics(ranked, hay, (2, 5))
    assert m["turn"]["recall_any@2"] == 1.0
    assert m["turn"]["recall_all@2"] == 0.0
    assert m["turn"]["recall_all@5"] == 1.0
    # sessions of the top 2 turns: bike_2, travel -> one of the two answer sessions
    assert m["session"]["recall_any@2"] == 1.0
    assert m["session"]["recall_all@2"] == 0.0
    assert m["session"]["ndcg@2"] == pytest.approx(1 / 2)
    # top 5 turns cover bike_2, travel, bike_1 (deduplicated in rank order)
    assert lme.sessions_of(ranked, hay.session_of) == [
        "answer_tiny_bike_2",
        "chat_travel",
        "answer_tiny_bike_1",
    ]
    assert m["session"]["recall_all@5"] == 1.0
    assert m["session"]["ndcg@5"] == pytest.approx((1 + 1 / math.log2(3)) / 2)


def test_no_evidence_turn_leaves_the_turn_level_out(items):
    hay = _hay(items, "tiny_temporal_3")
    assert hay.evidence == ()
    m = lme.question_metrics(["tiny_temporal_3/1/0"], hay, (5,))
    assert m["turn"] is None
    assert m["session"]["recall_all@5"] == 1.0


def test_bunching_and_sessions_covered():
    ranked = ["q/3/0", "q/3/2", "q/5/1", "q/3/9", "q/5/4"]
    # q/3/0 and q/3/2 are two apart; q/3/9, q/5/1 and q/5/4 have no neighbour within 2
    assert lme.near_share(ranked, 5) == (2, 5)
    assert lme.near_share(["q/1/1", "q/2/1"], 5) == (0, 2)  # other sessions never count
    assert lme.distinct_sessions(ranked, 10) == 2
    assert lme.distinct_sessions(ranked, 2) == 1


def test_paired_bootstrap_is_fixed_and_brackets_the_mean():
    mine, base = [1, 1, 0, 1, 0, 1], [0, 1, 0, 0, 0, 1]
    a = lme.paired_bootstrap(mine, base, reps=500)
    assert a == lme.paired_bootstrap(mine, base, reps=500)
    assert a["diff"] == pytest.approx(2 / 6)
    assert a["ci95_low"] <= a["diff"] <= a["ci95_high"]
    same = lme.paired_bootstrap([1, 0], [1, 0], reps=100)
    assert same["diff"] == same["ci95_low"] == same["ci95_high"] == 0.0


# -- the data -----------------------------------------------------------------------------------


def test_parse_date():
    got = lme.parse_date("2023/05/20 (Sat) 02:21")
    assert got == datetime(2023, 5, 20, 2, 21, tzinfo=timezone.utc)
    with pytest.raises(ValueError):
        lme.parse_date("20 May 2023")


def test_haystack_order_ids_and_times(items):
    hay = _hay(items, "tiny_user_1")
    # sessions by date (ties in list order): bread, dog, garden, garden again, python
    assert [lme.place(s[0].id)[0] for s in hay.sessions] == [1, 2, 0, 3, 4]
    assert hay.reordered
    ids = [t.id for t in hay.turns]
    assert len(ids) == len(set(ids)) == 20  # the repeated session id gets unique turn ids
    assert hay.session_of["tiny_user_1/0/0"] == hay.session_of["tiny_user_1/3/0"] == "chat_garden"
    assert hay.evidence == ("tiny_user_1/2/0",)
    dog = hay.sessions[1]
    start = datetime(2023, 6, 1, 8, 15, tzinfo=timezone.utc).timestamp()
    assert [t.created_at for t in dog] == [start + i * lme.TURN_SECONDS for i in range(4)]
    assert [t.role for t in dog] == ["user", "assistant", "user", "assistant"]
    assert {t.extra["session"] for t in dog} == {"2"}
    assert hay.question_time == datetime(2023, 6, 10, 9, 30, tzinfo=timezone.utc)
    bare = lme.build_haystack(items[0], session_labels=False)
    assert all(not t.extra for t in bare.turns)


def test_select_leaves_out_abstention_and_stratifies(items):
    chosen, info = lme.select(items)
    assert [q["question_id"] for q in chosen] == ["tiny_user_1", "tiny_multi_2", "tiny_temporal_3"]
    assert info["abstention_left_out"] == 1
    few, info = lme.select(items, stratified=2)
    assert len(few) == 2 and sum(info["stratified"]["per_type"].values()) == 2
    assert lme.select(items, types=["multi-session"])[0][0]["question_id"] == "tiny_multi_2"
    assert len(lme.select(items, limit=1)[0]) == 1
    with pytest.raises(ValueError):
        lme.select(items, types=["no-such-type"])


# -- a question time, once the API takes one --------------------------------------------------


class _Takes:
    def now_kw(self, query: str, k: int = 6, *, now: datetime | float | None = None) -> None: ...

    def ts_kw(self, query: str, *, asked_at: float | None = None) -> None: ...

    def none_kw(self, query: str, k: int = 6) -> None: ...


def test_question_time_is_passed_when_the_api_takes_it():
    when = datetime(2023, 6, 10, 9, 30, tzinfo=timezone.utc)
    takes = _Takes()
    assert lme.time_keyword(takes.now_kw) == "now"
    assert lme.time_argument(takes.now_kw, "now", when) == when
    assert lme.time_keyword(takes.ts_kw) == "asked_at"
    assert lme.time_argument(takes.ts_kw, "asked_at", when) == when.timestamp()
    assert lme.time_keyword(takes.none_kw) is None
    system = lme.HybridSystem(lme.Settings())
    hay = lme.Haystack("q", "multi-session", "?", when, (), {}, (), ())
    assert system._time_kwargs(takes.now_kw, hay) == {"now": when}
    assert system._time_kwargs(takes.none_kw, hay) == {}
    off = lme.HybridSystem(lme.Settings(pass_question_time=False))
    assert off._time_kwargs(takes.now_kw, hay) == {}


# -- the embedding cache ------------------------------------------------------------------------


class _CountingEmbedder:
    model_name = "counting"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_documents(self, texts):
        self.texts += texts
        return [[float(len(t)), 1.0] for t in texts]

    def embed_query(self, text):
        return self.embed_documents([text])[0]


def test_cached_embedder_embeds_each_text_once(tmp_path):
    inner = _CountingEmbedder()
    cached = lme.CachedEmbedder(inner, tmp_path / "v.sqlite")
    assert cached.embed_documents(["ab", "abc", "ab"]) == [[2.0, 1.0], [3.0, 1.0], [2.0, 1.0]]
    assert cached.embed_query("abc") == [3.0, 1.0]
    assert inner.texts == ["ab", "abc"]
    cached.forget()
    assert cached.embed_documents(["abc"]) == [[3.0, 1.0]]  # from the SQLite file
    cached.close()
    again = lme.CachedEmbedder(inner, tmp_path / "v.sqlite")
    assert again.embed_documents(["ab", "abcd"]) == [[2.0, 1.0], [4.0, 1.0]]
    assert inner.texts == ["ab", "abc", "abcd"]
    again.close()


# -- the whole run, offline ---------------------------------------------------------------------


def test_run_on_the_tiny_fixture(items, tmp_path):
    result = lme.run(items, ("hybrid", "higmem"), ks=(2, 5), reps=200)
    assert result["data"] == {
        "abstention_skipped": 1,
        "questions": 3,
        "turns": 20 + 14 + 8,
        "reordered_haystacks": 1,
        "no_evidence_turn": 1,
        "no_answer_session": 0,
        "sessions_dated_after_question": 0,
    }
    assert result["settings"]["systems"] == ["hybrid", "higmem", "bm25"]
    assert result["library_warnings"] == {}
    for name in ("hybrid", "higmem", "bm25"):
        overall = result["systems"][name]["overall"]
        assert overall["turn"]["n"] == 2 and overall["session"]["n"] == 3
        for level in ("turn", "session"):
            for metric, value in overall[level].items():
                if metric != "n":
                    assert 0.0 <= value <= 1.0, (name, level, metric)
        assert set(result["systems"][name]["per_type"]) == {
            "single-session-user",
            "multi-session",
            "temporal-reasoning",
        }
    for record in result["questions"]:
        for name, got in record["systems"].items():
            assert 0 < len(got["ranked"]) <= 5
            assert all(t.startswith(record["question_id"] + "/") for t in got["ranked"]), name
            assert got["scores"] == sorted(got["scores"], reverse=True), name
        assert record["systems"]["hybrid"]["window_after_final_fold"] == 0
    # the puppy's name is found by every system, first or second
    first = result["questions"][0]
    for name in ("hybrid", "higmem", "bm25"):
        assert first["systems"][name]["metrics"]["turn"]["recall_all@2"] == 1.0, name
    diag = result["diagnostics"]
    assert diag["evidence"]["turns"] == 4 and diag["evidence"]["assistant_share"] == 0.25
    for name in ("hybrid", "higmem", "bm25"):
        assert 0.0 <= diag[name]["assistant_share_top10"] <= 1.0
        assert diag[name]["median_chars_top10"] > 0
    assert set(result["bootstrap"]) == {"hybrid", "higmem"}
    assert set(result["bootstrap"]["hybrid"]) == {
        "recall_all@2",
        "recall_all@5",
        "recall_any@2",
        "session recall_all@2",
    }
    assert result["settings"]["question_time"]["bm25"]["passed"] is False
    path = lme.write_outputs(result, "lme-tiny", details=False, directory=tmp_path)
    saved = json.loads(path.read_text())
    assert "questions" not in saved and saved["code"]["commit"]
    assert saved["machine"]["cpus"]
    assert (tmp_path / "lme-tiny.png").stat().st_size > 0
    json.dumps(result)  # everything is JSON


def test_main_runs_offline(monkeypatch):
    written = {}

    def capture(result, out, *, details, title=""):
        written.update(out=out, details=details, questions=len(result["questions"]))
        return Path(f"{out}.json")

    monkeypatch.setattr(lme, "write_outputs", capture)
    argv = ["--data", str(DATA), "--systems", "higmem", "--k", "3", "--out", "t", "--quiet"]
    argv += ["--workers", "1"]
    assert lme.main(argv) == 0
    assert written == {"out": "t", "details": False, "questions": 3}


def test_ranking_variants_on_the_tiny_fixture(items):
    variants = {"b=0.75": {"b": 0.75}, "flat": lme.parse_variant("flat:w_segment=0")[1]}
    result = lme.run(items, ("ranking",), variants=variants, ks=(2, 5), reps=50)
    assert result["settings"]["systems"] == ["ranking", "ranking:b=0.75", "ranking:flat", "bm25"]
    for block in result["systems"].values():
        assert block["overall"]["turn"]["n"] == 2
        assert 0.0 <= block["overall"]["turn"]["recall_all@5"] <= 1.0
    assert set(result["bootstrap"]) == {"ranking", "ranking:b=0.75", "ranking:flat"}


def test_parse_variant():
    assert lme.parse_variant("x:w_date=0,dense_radii=1;2,k1=1.5") == (
        "x",
        {"w_date": 0.0, "dense_radii": (1, 2), "k1": 1.5},
    )
