"""Context tokens per turn as a conversation grows: full history, window, recursive, hybrid.

Two conversations: a synthetic one of 10,000 messages and the LoCoMo dev conversations
(about 600 turns each). At every sample point it records the tokens of what each system
hands to the model (counted with tiktoken, o200k_base, with message overhead). The
recursive and hybrid memories use an offline stand-in summarizer that answers at the
requested length (``benchmarks/_standins.py``); their budget is ``--max-tokens``.

    python benchmarks/context_growth.py [--messages 10000] [--max-tokens 2000]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, console, load_locomo, print_table, pyplot, write_results
from _standins import summary_stand_in

from langchain_recursive_memory.cli.loaders import locomo_turns
from langchain_recursive_memory.core import (
    FunctionTextModel,
    HybridMemory,
    MemoryStore,
    RecursiveMemory,
    RetryPolicy,
    TokenCounter,
    Turn,
)

WORDS = [
    "garden",
    "train",
    "budget",
    "Oslo",
    "Lisbon",
    "violin",
    "cat",
    "recipe",
    "marathon",
    "museum",
    "ticket",
    "hotel",
    "doctor",
    "school",
    "invoice",
    "birthday",
    "concert",
    "weather",
    "football",
    "coffee",
    "project",
    "sister",
    "brother",
]


def synthetic(n: int) -> list[Turn]:
    rng = random.Random(7)
    out = []
    for i in range(n):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40)))
        role = "user" if i % 2 == 0 else "assistant"
        out.append(Turn(role=role, text=f"({i}) {words}."))
    return out


def trace(turns: list[Turn], max_tokens: int, every: int, store: MemoryStore, sid: str) -> dict:
    counter = TokenCounter()
    model = FunctionTextModel(summary_stand_in)
    retry = RetryPolicy(attempts=1, timeout=60)
    recursive = RecursiveMemory(
        f"{sid}-r",
        store=store,
        model=model,
        retry=retry,
        max_tokens=max_tokens,
        max_summary_tokens=300,
    )
    hybrid = HybridMemory(
        f"{sid}-h",
        store=store,
        model=model,
        retry=retry,
        max_tokens=max_tokens,
        max_summary_tokens=300,
    )
    points: dict[str, list[tuple[int, int]]] = {
        k: [] for k in ("full", "window", "recursive", "hybrid")
    }
    full = 3  # reply priming
    costs: list[int] = []
    for i, turn in enumerate(turns, start=1):
        cost = counter.count_turn(turn)
        costs.append(cost)
        full += cost
        recursive.add(turn)
        hybrid.add(turn)
        if i % every and i != len(turns):
            continue
        used = 3
        for c in reversed(costs):
            if used + c > max_tokens:
                break
            used += c
        points["full"].append((i, full))
        points["window"].append((i, used))
        points["recursive"].append((i, recursive.context().tokens))
        question = turns[min(i, len(turns) - 1)].text
        points["hybrid"].append((i, hybrid.context(question).tokens))
    return points


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--max-tokens", type=int, default=2000)
    parser.add_argument("--conversations", type=int, default=5)
    args = parser.parse_args()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore.persistent(tmp)
        console.print(f"[bold]synthetic[/] ({args.messages} messages) ...")
        results["synthetic"] = trace(
            synthetic(args.messages), args.max_tokens, 100, store, "synthetic"
        )
        for sample in load_locomo()[: args.conversations]:
            console.print(f"[bold]{sample['sample_id']}[/] ...")
            results[sample["sample_id"]] = trace(
                locomo_turns(sample), args.max_tokens, 20, store, sample["sample_id"]
            )
    rows = []
    for name, points in results.items():
        full_end = points["full"][-1][1]
        at600 = {k: next((t for i, t in v if i >= 600), v[-1][1]) for k, v in points.items()}
        rows.append(
            [
                name,
                points["full"][-1][0],
                full_end,
                max(t for _, t in points["window"]),
                max(t for _, t in points["recursive"]),
                max(t for _, t in points["hybrid"]),
                at600["recursive"] / at600["full"],
                at600["hybrid"] / at600["full"],
            ]
        )
    columns = [
        "conversation",
        "turns",
        "full tokens",
        "window max",
        "recursive max",
        "hybrid max",
        "recursive/full @600",
        "hybrid/full @600",
    ]
    print_table(f"Context tokens (budget {args.max_tokens})", columns, rows)
    over = [r[0] for r in rows if max(r[4], r[5]) > args.max_tokens]
    console.print("budget kept everywhere" if not over else f"OVER BUDGET in {over}")
    path = write_results(
        "context_growth",
        {
            "args": vars(args),
            "table": [dict(zip(columns, r, strict=True)) for r in rows],
            "points": results,
        },
    )
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, name in zip(
        axes, ["synthetic", next(k for k in results if k != "synthetic")], strict=True
    ):
        for system, points in results[name].items():
            ax.plot([i for i, _ in points], [t for _, t in points], label=system)
        ax.axhline(args.max_tokens, color="grey", linestyle="--", linewidth=1)
        ax.set_yscale("log")
        ax.set_xlabel("turns so far")
        ax.set_ylabel("context tokens")
        ax.set_title(name)
        ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "context_growth.png", dpi=120)
    console.print(f"wrote {path} and {RESULTS / 'context_growth.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
