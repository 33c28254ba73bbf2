"""The turn ranking's parameters on both dev sets together (issues 21 and 30).

The library's ranking exactly as both memories run it (``shipped.ShippedRanking``:
the session's ``TurnIndex`` built as the engines build it, ranked by ``TurnPool.select``,
the selection of hybrid ``recall`` and HiGMem's no-LLM ``retrieve``) with each
``RankerParams`` variant, the turns indexed once per dataset and index parameters:

* **LoCoMo dev** (five conversations): each conversation's turns as ``locomo_turns`` gives
  them, the question ranked with the default ``now`` (LoCoMo questions carry no date), the
  first ``--locomo-k`` (8) turns, evidence recall as ``benchmarks/locomo.py`` computes
  it. The ``default`` row equals ``locomo.py``'s HiGMem row.
* **LongMemEval dev** (the 230 non-abstention questions): ``longmemeval.run`` with the
  variants (each haystack indexed once, questions in ``--workers`` processes), asked at
  each ``question_date``; turn-level recall_any / recall_all at 5 and 10, the sessions of
  the top 5, plain BM25 (``rank_bm25``) beside it.

With ``--embedder minilm`` (or ``static``) every variant ranks densely too (vectors cached
by text in ``--embed-cache``).

    python benchmarks/ranking_grid.py                           # the defaults alone
    python benchmarks/ranking_grid.py --b 0.3 0.75 --k1 1.2     # a grid
    python benchmarks/ranking_grid.py --variant flat:w_bm25_window=0 --variant ...
    python benchmarks/ranking_grid.py --lme-limit 60            # a quicker look
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

import longmemeval as lme
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
from shipped import ShippedRanking

from langchain_recursive_memory.cli.loaders import locomo_turns
from langchain_recursive_memory.core.retrieval.ranking import RankerParams

LME_COLUMNS = ("recall_any@5", "recall_all@5", "recall_any@10", "recall_all@10")
DEFAULT = "default"


def _index_key(params: RankerParams) -> tuple[Any, ...]:
    return (params.k1, params.b, params.bm25_radius, params.dense_radii)


def locomo_recall(
    samples: Sequence[Mapping[str, Any]],
    variants: Mapping[str, RankerParams],
    k: int,
    embedder: Any = None,
) -> dict[str, dict[str, Any]]:
    """Per variant: mean evidence recall at ``k`` turns, overall and per category."""
    per: dict[str, dict[str, list[float]]] = {name: {} for name in variants}
    for sample in samples:
        turns = locomo_turns(sample)
        indexed: dict[tuple[Any, ...], ShippedRanking] = {}
        questions = [
            (str(item["question"]), set(evidence_ids(item)), str(item.get("category")))
            for item in sample["qa"]
        ]
        for name, params in variants.items():
            key = _index_key(params)
            if key not in indexed:
                indexed[key] = ShippedRanking(turns, params, embedder)
            for question, gold, category in questions:
                if not gold:
                    continue
                got = set(indexed[key].top(question, k, params=params))
                per[name].setdefault(category, []).append(len(gold & got) / len(gold))
    out = {}
    for name, cats in per.items():
        allq = [r for rows in cats.values() for r in rows]
        out[name] = {
            "recall": statistics.mean(allq),
            "questions": len(allq),
            "per_category": {c: statistics.mean(v) for c, v in sorted(cats.items())},
        }
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
    parser.add_argument("--b", type=float, nargs="*", default=[])
    parser.add_argument("--k1", type=float, nargs="*", default=[])
    parser.add_argument("--locomo", default=str(DEFAULT_LOCOMO))
    parser.add_argument("--longmemeval", default=str(DEFAULT_LONGMEMEVAL))
    parser.add_argument("--locomo-k", type=int, default=8)
    parser.add_argument("--lme-limit", type=int, default=None, help="first N LME questions")
    parser.add_argument("--lme-stratified", type=int, default=None, help="N LME questions by type")
    parser.add_argument("--no-lme", action="store_true", help="LoCoMo only")
    parser.add_argument(
        "--set", action="append", default=[], help="a RankerParams field of the grid, name=value"
    )
    parser.add_argument(
        "--variant", action="append", default=[], help="NAME:field=value,... beside the grid"
    )
    parser.add_argument("--embedder", choices=("none", "minilm", "static"), default="none")
    parser.add_argument("--embed-cache", default=None, help="SQLite file of vectors by text")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="ranking-grid")
    args = parser.parse_args(argv)
    fixed = parse_set(args.set)
    variants: dict[str, dict[str, Any]] = {DEFAULT: dict(fixed)}
    if args.b or args.k1:
        variants = grid(args.b or [RankerParams.b], args.k1 or [RankerParams.k1], fixed)
    variants.update(lme.parse_variant(v) for v in args.variant)
    params = {name: RankerParams(**fields) for name, fields in variants.items()}
    say: Callable[[str], None] = console.print
    spec = None
    if args.embedder != "none":
        spec = lme.EmbedderSpec(args.embedder, args.embed_cache, threads=None)
    started = time.perf_counter()
    embedder = spec.build() if spec is not None else None
    result: dict[str, Any] = {"variants": variants, "systems": {n: {} for n in variants}}
    loc = locomo_recall(load_locomo(args.locomo), params, args.locomo_k, embedder)
    for name in variants:
        result["systems"][name]["locomo"] = loc[name]
    result["locomo_seconds"] = round(time.perf_counter() - started, 1)
    say(f"LoCoMo: {result['locomo_seconds']} s")
    lme_n = 0
    if not args.no_lme:
        items, _ = lme.select(
            load_longmemeval(args.longmemeval), stratified=args.lme_stratified, limit=args.lme_limit
        )
        lme_n = len(items)
        if spec is not None:
            spec = lme.EmbedderSpec(spec.kind, spec.cache, threads=1 if args.workers > 1 else None)
        started = time.perf_counter()
        run = lme.run(
            items,
            (),
            embedder=spec if args.workers > 1 else embedder,
            variants=variants,
            workers=args.workers,
        )
        result["lme_seconds"] = round(time.perf_counter() - started, 1)
        for name in [*variants, lme.BASELINE]:
            system = name if name == lme.BASELINE else f"{lme.RANKING}{lme.VARIANT_SEP}{name}"
            overall = run["systems"][system]["overall"]
            block = {c: overall["turn"][c] for c in LME_COLUMNS}
            block["session recall_all@5"] = overall["session"]["recall_all@5"]
            block["per_type_all@10"] = {
                t: b["turn"]["recall_all@10"] for t, b in run["systems"][system]["per_type"].items()
            }
            result["systems"].setdefault(name, {})["longmemeval"] = block
    result["settings"] = {
        "locomo": Path(args.locomo).name,
        "longmemeval": Path(args.longmemeval).name,
        "locomo_k": args.locomo_k,
        "lme_questions": lme_n,
        "lme_question_time": True,
        "embedder": args.embedder,
    }
    result["code"] = code_version()
    rows = []
    for name, block in result["systems"].items():
        locomo_block = block.get("locomo")
        lme_block = block.get("longmemeval")
        rows.append(
            [
                name,
                f"{locomo_block['recall']:.3f}" if locomo_block else "",
                *[f"{lme_block[c]:.3f}" if lme_block else "" for c in LME_COLUMNS],
                f"{lme_block['session recall_all@5']:.3f}" if lme_block else "",
                f"{lme_block['per_type_all@10'].get('multi-session', 0):.3f}" if lme_block else "",
            ]
        )
    print_table(
        f"The shipped ranking ({args.embedder}): LoCoMo recall@{args.locomo_k}, LongMemEval "
        f"turn level ({lme_n} questions)",
        ["variant", f"LoCoMo @{args.locomo_k}", *LME_COLUMNS, "sessions all@5", "multi all@10"],
        rows,
    )
    path = write_results(args.out, result)
    console.print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
