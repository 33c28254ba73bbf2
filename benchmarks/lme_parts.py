"""Join the per-question records of LongMemEval runs made in parts (``longmemeval.py --skip``).

A run with an embedder on a loaded machine may not fit in one sitting: run it in parts
(``--stratified N --skip S --limit L --details``), then join them here: the metrics of each
system over all the parts' questions, and each system minus ``--base`` paired by question
(95% bootstrap, :func:`longmemeval.paired_bootstrap`, seed 0).

    python benchmarks/lme_parts.py --base ranking:bm25only --out NAME part1.json part2.json ...
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import longmemeval as lme
from _common import console, print_table, write_results

METRICS = ("recall_any@5", "recall_all@5", "recall_all@10")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("parts", nargs="+")
    parser.add_argument("--base", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    questions: dict[str, dict] = {}
    for part in args.parts:
        for q in json.loads(Path(part).read_text())["questions"]:
            questions.setdefault(str(q["question_id"]), q)
    records = list(questions.values())
    systems = list(records[0]["systems"])
    out: dict = {"parts": [Path(p).name for p in args.parts], "questions": len(records)}
    out["per_type"] = dict(sorted(Counter(q["question_type"] for q in records).items()))
    rows = []
    for name in systems:
        block: dict = {}
        for metric in (*METRICS, "session recall_all@5"):
            level, _, m = metric.rpartition(" ")
            level = level or "turn"
            mine = [q["systems"][name]["metrics"][level][m] for q in records]
            base = [q["systems"][args.base]["metrics"][level][m] for q in records]
            block[metric] = {"mean": statistics.mean(mine)}
            if name != args.base:
                block[metric]["minus_base"] = lme.paired_bootstrap(mine, base)
        out.setdefault("systems", {})[name] = block
        cells = []
        for m in (*METRICS, "session recall_all@5"):
            cell = f"{block[m]['mean']:.3f}"
            vs = block[m].get("minus_base")
            if vs:
                cell += f" ({vs['diff']:+.3f} [{vs['ci95_low']:+.3f}, {vs['ci95_high']:+.3f}])"
            cells.append(cell)
        rows.append([name, *cells])
    out["base"] = args.base
    print_table(
        f"LongMemEval, {len(records)} questions from {len(args.parts)} parts (minus {args.base})",
        ["system", *METRICS, "sessions all@5"],
        rows,
    )
    path = write_results(args.out, out)
    console.print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
