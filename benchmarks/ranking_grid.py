"""The turn ranking's BM25 parameters on both dev sets together (issue 21, BM25 only).

The library's ``TurnRanker`` (the ranking of hybrid ``recall`` and HiGMem's no-LLM
``retrieve``) with each ``RankerParams`` variant, called directly on the turns (no store,
no embedder), the same way on both datasets:

* **LoCoMo dev** (five conversations): each conversation's turns as ``locomo_turns`` gives
  them, the question ranked with the default ``now`` (LoCoMo questions carry no date), the
  first ``--locomo-k`` (8) turns with a positive score, evidence recall as
  ``benchmarks/locomo.py`` computes it. The ``default`` row equals ``locomo.py``'s HiGMem
  BM25 row.
* **LongMemEval dev** (the 230 non-abstention questions): each haystack as
  ``longmemeval.build_haystack`` builds it, asked at its ``question_date``; turn-level
  recall_any / recall_all at 5 and 10 (``longmemeval.question_metrics``), plain BM25
  (``rank_bm25``) beside it.

A diagnosis for choosing one default, not the application's path (the harnesses are):

    python benchmarks/ranking_grid.py                       # the grid below
    python benchmarks/ranking_grid.py --b 0.3 0.75 --k1 1.2 # other grids
    python benchmarks/ranking_grid.py --lme-limit 60        # a quicker look
    python benchmarks/ranking_grid.py --b 0.9 --k1 1.2 --set w_bm25_window=0.25
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    DEFAULT_LOCOMO,
    DEFAULT_LONGMEMEVAL,
    code_version,
    console,
    evidence_ids,
    load_locomo,
    load_longmemeval,
    print_table,
    write_results,
)
from longmemeval import (
    BM25System,
    Settings,
    build_haystack,
    is_abstention,
    question_metrics,
)

from langchain_recursive_memory.cli.loaders import locomo_turns
from langchain_recursive_memory.core.dates import utc_date
from langchain_recursive_memory.core.retrieval.ranking import (
    RankerParams,
    TurnRanker,
    best_first,
)
from langchain_recursive_memory.core.retrieval.turns import ranked_turns
from langchain_recursive_memory.core.storage import StoredTurn
from langchain_recursive_memory.core.turn import Turn

LME_COLUMNS = ("recall_any@5", "recall_all@5", "recall_any@10", "recall_all@10")


def _ranker(turns: Sequence[Turn], params: RankerParams) -> TurnRanker:
    stored = [StoredTurn(t, n, 0, "o200k_base") for n, t in enumerate(turns, start=1)]
    return TurnRanker(ranked_turns(stored), params)


def _top(ranker: TurnRanker, question: str, k: int, now: Any = None) -> list[str]:
    """The ``k`` best turns with a positive score, as HiGMem's no-LLM retrieve picks them."""
    scores = ranker.scores(question, None, now=now)
    return [ranker.turn_at(i).id for i in best_first(scores, k, scores > 0)]


def locomo_recall(
    samples: Sequence[Mapping[str, Any]], params: RankerParams, k: int
) -> dict[str, Any]:
    """Mean evidence recall at ``k`` turns, overall and per category."""
    per: dict[str, list[float]] = {}
    allq: list[float] = []
    for sample in samples:
        ranker = _ranker(locomo_turns(sample), params)
        for item in sample["qa"]:
            gold = set(evidence_ids(item))
            if not gold:
                continue
            got = set(_top(ranker, str(item["question"]), k))
            r = len(gold & got) / len(gold)
            allq.append(r)
            per.setdefault(str(item.get("category")), []).append(r)
    return {
        "recall": statistics.mean(allq),
        "questions": len(allq),
        "per_category": {c: statistics.mean(v) for c, v in sorted(per.items())},
    }


def lme_recall(
    haystacks: Sequence[Any], params: RankerParams | None, ks: Sequence[int] = (5, 10)
) -> dict[str, Any]:
    """Turn-level recall_any / recall_all (``params`` None: plain BM25), overall and by type."""
    bm25 = BM25System(Settings()) if params is None else None
    rows: list[tuple[str, dict[str, float]]] = []
    for hay in haystacks:
        if not hay.evidence:
            continue
        if bm25 is not None:
            ids = bm25.rank(hay, max(ks)).ids
        else:
            now = utc_date(hay.question_time.timestamp()) if hay.question_time else None
            ids = _top(_ranker(hay.turns, params), hay.question, max(ks), now)
        metrics = question_metrics(ids, hay, ks)["turn"]
        rows.append((hay.question_type, metrics))
    out: dict[str, Any] = {c: statistics.mean(m[c] for _, m in rows) for c in LME_COLUMNS}
    types = sorted({t for t, _ in rows})
    out["per_type_all@10"] = {
        t: statistics.mean(m["recall_all@10"] for tt, m in rows if tt == t) for t in types
    }
    out["questions"] = len(rows)
    return out


def grid(
    bs: Sequence[float], k1s: Sequence[float], fixed: Mapping[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    """``RankerParams`` fields of each variant, named ``k1=..., b=...`` (plus ``fixed``)."""
    extra = "".join(f", {k}={v}" for k, v in (fixed or {}).items())
    return {
        f"k1={k1:g}, b={b:g}{extra}": {"k1": k1, "b": b, **(fixed or {})} for k1 in k1s for b in bs
    }


def parse_set(pairs: Sequence[str]) -> dict[str, Any]:
    """``["w_date=0", "dense_radii=1,2"]`` as ``RankerParams`` fields (numbers, tuples)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, _, text = pair.partition("=")
        values = [float(v) if "." in v else int(v) for v in text.split(",") if v]
        out[name.strip()] = tuple(values) if "," in text else values[0]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--b", type=float, nargs="+", default=[0.3, 0.5, 0.75, 0.9])
    parser.add_argument("--k1", type=float, nargs="+", default=[1.2, 1.5])
    parser.add_argument("--locomo", default=str(DEFAULT_LOCOMO))
    parser.add_argument("--longmemeval", default=str(DEFAULT_LONGMEMEVAL))
    parser.add_argument("--locomo-k", type=int, default=8)
    parser.add_argument("--lme-limit", type=int, default=None, help="first N LME questions")
    parser.add_argument(
        "--set", action="append", default=[], help="another RankerParams field, name=value"
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip plain BM25")
    parser.add_argument("--out", default="ranking-grid")
    args = parser.parse_args(argv)
    variants = grid(args.b, args.k1, parse_set(args.set))
    samples = load_locomo(args.locomo)
    items = [i for i in load_longmemeval(args.longmemeval) if not is_abstention(i)]
    if args.lme_limit:
        items = items[: args.lme_limit]
    haystacks = [build_haystack(i) for i in items]
    say: Callable[[str], None] = console.print
    result: dict[str, Any] = {"variants": variants, "systems": {}}
    started = time.perf_counter()
    for name, fields in variants.items():
        params = RankerParams(**fields)
        loc = locomo_recall(samples, params, args.locomo_k)
        lme = lme_recall(haystacks, params)
        result["systems"][name] = {"locomo": loc, "longmemeval": lme}
        say(
            f"{name}: LoCoMo {loc['recall']:.3f}, LME "
            + ", ".join(f"{c} {lme[c]:.3f}" for c in LME_COLUMNS)
            + f" ({time.perf_counter() - started:.0f} s)"
        )
    if not args.no_baseline:
        result["systems"]["plain BM25"] = {"longmemeval": lme_recall(haystacks, None)}
    result["settings"] = {
        "locomo": Path(args.locomo).name,
        "longmemeval": Path(args.longmemeval).name,
        "locomo_k": args.locomo_k,
        "lme_questions": len(haystacks),
        "lme_question_time": True,
    }
    result["code"] = code_version()
    rows = []
    for name, block in result["systems"].items():
        loc = block.get("locomo")
        lme = block["longmemeval"]
        rows.append(
            [
                name,
                f"{loc['recall']:.3f}" if loc else "",
                *[f"{lme[c]:.3f}" for c in LME_COLUMNS],
            ]
        )
    print_table(
        f"TurnRanker, BM25 only: LoCoMo recall@{args.locomo_k}, LongMemEval turn level "
        f"({len(haystacks)} questions)",
        ["variant", f"LoCoMo @{args.locomo_k}", *LME_COLUMNS],
        rows,
    )
    path = write_results(args.out, result)
    console.print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
