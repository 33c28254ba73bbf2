"""How many turns to hand over: fixed ``k`` against adaptive evidence sets (no LLM).

For every question of the LoCoMo split, ranks the conversation's turns with HiGMem's
no-LLM ranking (the one ``HybridMemory`` recall shares) once, keeping the top 40 with their
scores, then scores selection rules on that ranking:

* ``fixed k``: the best ``k`` turns, ``k`` = 1..12;
* ``ratio r cap c min m``: the turns scoring at least ``r`` times the best score, at most
  ``c`` and at least ``m`` (the library's
  :func:`~langchain_recursive_memory.core.retrieval.ranking.adaptive_cut`).

Prints evidence recall, precision and turns per question for each rule, writes
``benchmarks/results/adaptive-<embedder>.json`` and a recall/turns curve plot.

    python benchmarks/adaptive.py [--embedder none|minilm] [--caps 8 12] [--rankings FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    DEFAULT_LOCOMO,
    RESULTS,
    evidence_ids,
    load_locomo,
    print_table,
    pyplot,
    save_figure,
    write_results,
)

from langchain_recursive_memory.cli.loaders import ingest, locomo_turns
from langchain_recursive_memory.core import HiGMem, HiGMemConfig, MemoryStore
from langchain_recursive_memory.core.retrieval.ranking import RankerParams, adaptive_cut

POOL = 40
"""Turns kept per question from the ranking (every rule selects among them)."""
RATIOS = (0.4, 0.5, 0.55, 0.6, 0.7, 0.8)
CAPS = (8, 12)
MINIMUMS = (1, 3)

Ranked = list[tuple[str, float]]


def rankings(
    samples: Sequence[Mapping[str, Any]], embedder: Any, params: RankerParams
) -> list[tuple[Ranked, set[str]]]:
    """Each question's ranked ``(turn id, score)`` pool and its gold evidence ids."""
    store = MemoryStore.in_memory()
    config = HiGMemConfig(ranker=params)
    out: list[tuple[Ranked, set[str]]] = []
    for sample in samples:
        memory = HiGMem(str(sample["sample_id"]), store=store, embedder=embedder, config=config)
        ingest(memory, locomo_turns(sample), batch_size=64, progress=False)
        for item in sample["qa"]:
            gold = set(evidence_ids(item))
            if not gold:
                continue
            hits = memory.retrieve(str(item["question"]), k=POOL)
            ranked = sorted(((h.turn.id or "", h.score) for h in hits), key=lambda p: -p[1])
            out.append((ranked, gold))
    return out


def evaluate(
    questions: Sequence[tuple[Ranked, set[str]]], select: Callable[[Ranked], list[str]]
) -> dict[str, float]:
    """Mean evidence recall, precision and turns of a selection rule."""
    recall, precision, turns = [], [], []
    for ranked, gold in questions:
        chosen = select(ranked)
        hit = len(gold & set(chosen))
        recall.append(hit / len(gold))
        precision.append(hit / len(chosen) if chosen else 0.0)
        turns.append(len(chosen))
    return {
        "recall": statistics.mean(recall),
        "precision": statistics.mean(precision),
        "turns": statistics.mean(turns),
    }


def rules(caps: Sequence[int]) -> dict[str, Callable[[Ranked], list[str]]]:
    """Every rule compared, by name."""
    out: dict[str, Callable[[Ranked], list[str]]] = {}
    for k in range(1, 13):
        out[f"fixed k={k}"] = lambda r, k=k: [t for t, _ in r[:k]]
    for cap in caps:
        for minimum in MINIMUMS:
            for ratio in RATIOS:

                def cut(
                    r: Ranked, ratio: float = ratio, cap: int = cap, low: int = minimum
                ) -> list[str]:
                    keep = adaptive_cut([s for _, s in r], cap, ratio, low)
                    return [t for t, _ in r[:keep]]

                out[f"ratio {ratio:g} cap {cap} min {minimum}"] = cut
    return out


def plot(results: Mapping[str, Mapping[str, float]], path: Path, title: str) -> None:
    """Recall against turns: the fixed-k curve and the adaptive points."""
    plt = pyplot()
    fixed = [v for name, v in results.items() if name.startswith("fixed")]
    ratio = [(name, v) for name, v in results.items() if name.startswith("ratio")]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot([v["turns"] for v in fixed], [v["recall"] for v in fixed], marker="o", label="fixed k")
    ax.scatter([v["turns"] for _, v in ratio], [v["recall"] for _, v in ratio], color="tab:red")
    ax.set(xlabel="turns handed over (mean)", ylabel="evidence recall", title=title)
    ax.legend(["fixed k", "adaptive (ratio)"])
    save_figure(fig, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_LOCOMO))
    parser.add_argument("--embedder", choices=("none", "minilm"), default="none")
    parser.add_argument("--caps", type=int, nargs="+", default=list(CAPS))
    parser.add_argument("--radii", type=int, nargs="+", default=list(RankerParams().dense_radii))
    parser.add_argument("--w-dense", type=float, default=RankerParams().w_dense)
    parser.add_argument(
        "--rankings", default=None, help="a JSON file: saved rankings are reused, else written"
    )
    args = parser.parse_args()
    saved = Path(args.rankings) if args.rankings else None
    if saved is not None and saved.exists():
        questions = [
            ([(t, float(s)) for t, s in ranked], set(gold))
            for ranked, gold in json.loads(saved.read_text())
        ]
    else:
        embedder = None
        if args.embedder == "minilm":
            from locomo import MiniLMEmbedder

            embedder = MiniLMEmbedder()
        params = RankerParams(dense_radii=tuple(args.radii), w_dense=args.w_dense)
        questions = rankings(load_locomo(args.data), embedder, params)
        if saved is not None:
            saved.write_text(json.dumps([(r, sorted(g)) for r, g in questions]))
    results = {name: evaluate(questions, select) for name, select in rules(args.caps).items()}
    print_table(
        f"Evidence sets, HiGMem no-LLM ranking, embedder {args.embedder} "
        f"({len(questions)} questions with evidence)",
        ["rule", "recall", "precision", "turns"],
        [[name, v["recall"], v["precision"], v["turns"]] for name, v in results.items()],
    )
    name = f"adaptive-{args.embedder}"
    path = write_results(name, {"settings": vars(args), "results": results})
    plot(results, RESULTS / f"{name}.png", f"Fixed k against adaptive sets ({args.embedder})")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
