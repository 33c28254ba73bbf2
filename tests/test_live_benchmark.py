"""The live benchmark (benchmarks/live.py) runs end to end at a tiny size and reports sanely."""

from __future__ import annotations

import itertools
import json
import random
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import live  # noqa: E402


def _positive_stats(row: dict, kinds=("add", "read", "total")) -> None:
    for kind in kinds:
        assert row[f"{kind}_p50_ms"] > 0, (kind, row)
        assert row[f"{kind}_p95_ms"] >= row[f"{kind}_p50_ms"], (kind, row)


def test_talk_is_varied_dated_and_asks_about_what_was_said():
    talk = live.Talk(variant=0)
    turns = talk.turns(0, 60)
    assert [t.role for t in turns[:4]] == ["user", "assistant", "user", "assistant"]
    assert all(b.created_at > a.created_at for a, b in itertools.pairwise(turns))
    day = 86400
    assert turns[live.TURNS_PER_DAY].created_at - turns[0].created_at >= day
    # A later cycle of the corpus is a variation, not a copy.
    cycle = len(talk.lines)
    assert talk.text(cycle)[1] != talk.text(0)[1] or talk.text(cycle)[0] != talk.text(0)[0]
    # Two sessions of a user start at different places.
    assert live.Talk(variant=1).text(0) != talk.text(0)
    rng = random.Random(0)
    questions = [talk.question(rng, 60) for _ in range(20)]
    assert all(q.endswith("?") for q in questions)
    assert any(" on " in q for q in questions)  # date cues are asked about


def test_generated_text_when_locomo_is_missing(tmp_path):
    talk = live.Talk(tmp_path / "missing.json")
    assert len(talk.lines) > 100
    assert talk.turn(0).text


def test_run_tiny(tmp_path):
    got = live.run(
        sizes=(40, 80),
        samples=3,
        batch=40,
        embedders=("none", "fixed"),
        user_sessions=2,
        user_turns=30,
        out="live-test",
        results_dir=tmp_path,
    )
    saved = json.loads((tmp_path / "live-test.json").read_text())
    assert (tmp_path / "live-test.png").stat().st_size > 0
    assert saved["machine"]["cpus"] >= 1
    assert "commit" in saved["code"]
    assert saved["settings"]["sizes"] == [40, 80]
    assert set(saved["modes"]) == {"none", "fixed"}
    assert saved["modes"]["none"]["engines"] == ["recursive", "hybrid", "higmem"]
    assert saved["modes"]["fixed"]["engines"] == ["hybrid", "higmem"]  # recursive embeds nothing
    for mode, result in saved["modes"].items():
        sizes = result["sweep"]["sizes"]
        assert set(sizes) == {live.FLOOR, *result["engines"]}
        for by_size in sizes.values():
            assert set(by_size) == {"40", "80"}
            for row in by_size.values():
                _positive_stats(row)
                assert row["samples"] == 3
        floor = sizes[live.FLOOR]["80"]
        assert floor["total_with_embedding_p50_ms"] >= floor["total_p50_ms"] > 0
        # Every session grew to each size, then took 3 exchanges there.
        assert result["sweep"]["turns"] == 80 + 2 * 3
        ratios = result["ratios"]
        assert ratios["base_size"] == 40 and ratios["largest_size"] == 80
        for engine in result["engines"]:
            r = ratios[engine]
            top, base = sizes[engine]["80"], sizes[engine]["40"]
            assert r["growth"] == pytest.approx(top["total_p50_ms"] / base["total_p50_ms"])
            assert r["floor"] == pytest.approx(
                top["total_p50_ms"] / live.floor_total(sizes[live.FLOOR]["80"], mode)
            )
            first = result["first_read"][engine]
            assert 0 < first["first_read_s"] < 60
            assert first["open_s"] > 0 and first["second_read_s"] > 0
            assert r["first_read"] == first["first_read_s"]
            assert set(r["verdicts"]) == {"growth", "floor", "user", "first_read"}
            assert all(v in {"PASS", "FAIL", "-"} for v in r["verdicts"].values())
            if engine == "recursive":
                assert r["user"] is None and engine not in result["user"]
                continue
            user = result["user"][engine]
            _positive_stats(user["session"])
            _positive_stats(user["user"])
            assert user["first_user_read_ms"] > 0
            assert r["user"] == pytest.approx(
                user["user"]["read_p50_ms"] / user["session"]["read_p50_ms"]
            )
    assert got["json"] == str(tmp_path / "live-test.json")


def test_run_without_user_or_first_reads(tmp_path):
    got = live.run(
        sizes=(40,),
        samples=2,
        batch=20,
        engines=("recursive",),
        embedders=("none",),
        user_sessions=0,
        first_reads=False,
        out="live-small",
        results_dir=tmp_path,
        plot_it=False,
    )
    ratios = got["modes"]["none"]["ratios"]["recursive"]
    assert ratios["growth"] == pytest.approx(1.0)
    assert ratios["user"] is None and ratios["first_read"] is None
    assert ratios["verdicts"]["user"] == "-"


def test_worker_memory_tiny(tmp_path):
    got = live.worker_memory(
        2, turns=48, batch=16, out="live-worker-test", results_dir=tmp_path, plot_it=False
    )
    for kind in ("ours", "raw"):
        run = got["runs"][kind]
        last = run["points"][-1]
        assert last["sessions"] == 2 and last["rss_mb"] > 0
        assert run["rss_after_clear_gc_mb"] > 0
    assert got["runs"]["ours"]["points"][-1]["cache_entries"] >= 0
    assert json.loads((tmp_path / "live-worker-test.json").read_text())["settings"]["turns"] == 48


@pytest.mark.server
def test_concurrency_tiny(chroma_server, pg_url, tmp_path):
    host, port = chroma_server
    got = live.concurrency(
        host=host,
        port=port,
        database=pg_url,
        engines=("recursive", "higmem"),
        levels=(1, 3),
        procs=2,
        threads=2,
        seconds=1.0,
        prefill=20,
        out="live-concurrency-test",
        results_dir=tmp_path,
        plot_it=False,
    )
    cases = ["asyncio x 1", "asyncio x 3", "2 procs x 2 threads"]
    for system in (live.FLOOR, "recursive", "higmem"):
        assert list(got["cases"][system]) == cases
        for case in cases:
            row = got["cases"][system][case]
            assert row["exchanges"] > 0 and row["turns_per_s"] > 0, (system, case, row)
            # Failed exchanges are counted (a thread-safety bug of the stemmer can fail one).
            assert row["error_count"] >= len(row["errors"]) >= 0
    for engine in ("recursive", "higmem"):
        for case in cases:
            assert got["ratios"][engine][case] == pytest.approx(
                got["cases"][engine][case]["turns_per_s"]
                / got["cases"][live.FLOOR][case]["turns_per_s"]
            )
