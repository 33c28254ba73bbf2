"""The embedder comparison (``benchmarks/embedders.py``, issue 15 part 5): it never lets a
model download, pairs its comparisons by question, and decides the bundling rule as the
issue states it. Offline and fast: no model is loaded here."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from conftest import ROOT


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import embedders

    return embedders


def test_no_embedder_is_bm25_alone(bench):
    assert bench.make_embedder("none") is None
    assert bench._name(None) == "bm25"


def test_chroma_onnx_never_downloads_its_model(bench, tmp_path):
    where = bench.Where(onnx_dir=tmp_path / "onnx-models", static_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="never"):
        bench.make_embedder("chroma-onnx", where)
    assert list(tmp_path.iterdir()) == []  # nothing fetched, nothing created


def test_a_static_model_is_read_from_its_folder_only(bench, tmp_path):
    with pytest.raises(FileNotFoundError, match="never downloaded"):
        bench.make_embedder("static", bench.Where(static_dir=tmp_path))
    with pytest.raises(FileNotFoundError, match="distill"):
        bench.make_embedder(f"static@{tmp_path}")


def test_unknown_embedders_are_refused(bench):
    with pytest.raises(SystemExit, match="unknown embedder"):
        bench.make_embedder("openai")


def test_per_question_recall_keeps_order_and_conversations(bench):
    records = [
        {"sample_id": "a", "recall": 1.0},
        {"sample_id": "a", "recall": None},  # no evidence: not scored
        {"sample_id": "b", "recall": 0.5},
        {"sample_id": "a", "recall": 0.0},
    ]
    got = bench.per_question(records)
    assert got["question_recall"] == [1.0, 0.5, 0.0]
    assert got["per_conversation"] == {"a": 0.5, "b": 0.5}


def test_paired_gain_has_a_bootstrap_interval(bench):
    base = [0.0, 1.0] * 50
    same = bench.paired_gain(base, base)
    assert same == {"gain": 0.0, "ci95_low": 0.0, "ci95_high": 0.0}
    up = bench.paired_gain(base, [1.0, 1.0] * 50)
    assert up["gain"] == pytest.approx(0.5)
    assert 0.3 < up["ci95_low"] < 0.5 < up["ci95_high"] < 0.7


def _row(recalls: dict[str, list[float]]) -> dict:
    return {
        "systems": {
            name: {
                "recall": float(np.mean(r)),
                "turns": 8.0,
                "question_recall": r,
                "per_conversation": {"c1": float(np.mean(r[: len(r) // 2])), "c2": 0.5},
            }
            for name, r in recalls.items()
        },
        "load_seconds": 0.1,
        "docs_per_s": 100.0,
        "query_ms": 1.0,
    }


def test_the_static_model_ships_only_past_the_margin_and_under_the_size(bench):
    base = [0.0, 1.0, 1.0, 0.5] * 25
    rows = {
        "none": _row({"higmem": base, "hybrid": base}),
        "static": _row({"higmem": [1.0, 1.0, 1.0, 0.5] * 25, "hybrid": base}),
    }
    gained = bench.gains(rows)
    assert gained["static"]["higmem"]["gain"] == pytest.approx(0.25)
    assert gained["static"]["hybrid"]["gain"] == 0.0
    ok = bench.verdict(gained, wheel_mb=2.7, model_mb=14.3)
    assert ok["beats_bm25_by_margin"] == {"higmem": True, "hybrid": False}
    assert ok["wheel_with_model_mb"] == pytest.approx(17.0)
    assert ok["ship"]
    assert not bench.verdict(gained, wheel_mb=2.7, model_mb=23.0)["ship"]  # 25.7 MB
    flat = bench.gains({"none": rows["none"], "static": rows["none"]})
    assert not bench.verdict(flat, wheel_mb=2.7, model_mb=1.0)["ship"]
    assert not bench.verdict({}, None, None)["decided"]


def test_results_print_and_plot(bench, tmp_path):
    rows = {"none": _row({"higmem": [0.5] * 10}), "static": _row({"higmem": [1.0] * 10})}
    rows["none"].update(load_seconds=None, docs_per_s=None, query_ms=None)
    result = {
        "data": "dev.json",
        "questions_with_evidence": 10,
        "embedders": rows,
        "gains": bench.gains(rows),
        "verdict": bench.verdict(bench.gains(rows), None, 1.0),
        "machine": {"date": "today"},
    }
    bench.print_results(result)
    bench.plot(result, tmp_path / "embedders.png")
    assert (tmp_path / "embedders.png").stat().st_size > 0
    bench._finish(json.loads(json.dumps(result)), "out", tmp_path)
    assert json.loads((tmp_path / "out.json").read_text())["verdict"]["ship"]


def test_compressed_size_of_a_model_folder(bench, tmp_path):
    (tmp_path / "zeros.bin").write_bytes(bytes(1_000_000))
    (tmp_path / "noise.bin").write_bytes(np.random.default_rng(0).bytes(1_000_000))
    assert 1.0 < bench.compressed_mb(tmp_path) < 1.01
