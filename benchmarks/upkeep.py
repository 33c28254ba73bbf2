"""LLM upkeep: calls and tokens spent on memory maintenance per 100 turns.

Runs the LoCoMo dev conversations through the recursive, hybrid and HiGMem memories with
a counting wrapper around the model, and reports LLM calls and tokens per 100 turns, folds
per window's worth of messages, and the cost at a small model's list prices.

The model is an offline stand-in (``benchmarks/_standins.py``) that answers the real
prompts in the requested format: the calls and input tokens are those a real model would
get; output tokens depend on the stand-in. ``--model provider:model`` uses a real model.

    python benchmarks/upkeep.py [--conversations 5] [--model provider:model]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, console, load_locomo, print_table, pyplot, write_results
from _standins import higmem_stand_in, summary_stand_in

from langchain_recursive_memory.cli.loaders import locomo_turns
from langchain_recursive_memory.core import (
    CountingTextModel,
    FunctionTextModel,
    HiGMem,
    HybridMemory,
    MemoryStore,
    RecursiveMemory,
    RetryPolicy,
    TokenCounter,
)

PRICE_IN, PRICE_OUT = 0.15, 0.60  # gpt-4o-mini list prices, USD per million tokens
MAX_TOKENS, CAP = 2000, 300


def model_for(name: str | None, stand_in, counter: TokenCounter) -> CountingTextModel:
    if name:
        from langchain_recursive_memory.language_models import resolve_text_model

        inner = resolve_text_model(name)
    else:
        inner = FunctionTextModel(stand_in, name="stand-in")
    return CountingTextModel(inner, counter)


def run_system(system: str, samples, model_name: str | None, tmp: Path) -> dict:
    counter = TokenCounter("gpt-4o-mini")
    stand_in = higmem_stand_in if system.startswith("higmem") else summary_stand_in
    model = model_for(model_name, stand_in, counter)
    store = MemoryStore.persistent(tmp / system)
    retry = RetryPolicy(attempts=2, timeout=120)
    turns_total = folds = 0
    windows = overflows = 0.0
    for sample in samples:
        turns = locomo_turns(sample)
        sid = sample["sample_id"]
        if system == "recursive":
            memory = RecursiveMemory(
                sid,
                store=store,
                model=model,
                retry=retry,
                max_tokens=MAX_TOKENS,
                max_summary_tokens=CAP,
            )
        elif system == "hybrid":
            memory = HybridMemory(
                sid,
                store=store,
                model=model,
                retry=retry,
                max_tokens=MAX_TOKENS,
                max_summary_tokens=CAP,
            )
        else:
            batch = 1 if system == "higmem-batch1" else 4
            memory = HiGMem(sid, store=store, model=model, retry=retry, batch_size=batch)
        for turn in turns:
            memory.add(turn)
        if isinstance(memory, HiGMem):
            memory.flush()
        else:
            folds += len(store.summaries("default", sid))
            cfg = memory.config
            tokens = sum(counter.count_turn(t) for t in turns)
            windows += tokens / cfg.window_budget
            overflows += tokens / (cfg.window_budget - cfg.keep_tokens_effective)
        turns_total += len(turns)
    u = model.usage
    per100 = 100 / turns_total
    return {
        "system": system,
        "turns": turns_total,
        "llm_calls": u.calls,
        "calls_per_100_turns": u.calls * per100,
        "calls_per_turn": u.calls / turns_total,
        "input_tokens_per_100_turns": u.input_tokens * per100,
        "output_tokens_per_100_turns": u.output_tokens * per100,
        "folds": folds,
        "folds_per_window": folds / windows if windows else None,
        "folds_per_window_overflow": folds / overflows if overflows else None,
        "usd_per_1000_turns": u.cost(PRICE_IN, PRICE_OUT) * 1000 / turns_total,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--conversations", type=int, default=5)
    parser.add_argument("--model", default=None, help="provider:model (default: stand-in)")
    args = parser.parse_args()
    samples = (load_locomo(args.data) if args.data else load_locomo())[: args.conversations]
    systems = ["recursive", "hybrid", "higmem", "higmem-batch1"]
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for system in systems:
            console.print(f"[bold]{system}[/] ...")
            rows.append(run_system(system, samples, args.model, Path(tmp)))
    cols = list(rows[0])
    print_table(
        f"LLM upkeep ({args.model or 'offline stand-in'}; USD at gpt-4o-mini list prices "
        f"${PRICE_IN}/${PRICE_OUT} per M tokens; budget {MAX_TOKENS}, summary cap {CAP})",
        cols,
        [[r[c] if r[c] is not None else "" for c in cols] for r in rows],
    )
    path = write_results(
        "upkeep",
        {
            "model": args.model or "stand-in",
            "results": rows,
            "targets": {"recursive folds_per_window": "<= 1", "higmem calls_per_turn": "<= 1"},
        },
    )
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar([r["system"] for r in rows], [r["calls_per_100_turns"] for r in rows])
    ax.axhline(100, color="grey", linestyle="--", linewidth=1)
    ax.text(0, 102, "1 call per turn", fontsize=8, color="grey")
    ax.set_ylabel("LLM calls per 100 turns")
    ax.set_title("Memory upkeep on the LoCoMo dev conversations")
    fig.tight_layout()
    fig.savefig(RESULTS / "upkeep.png", dpi=120)
    console.print(f"wrote {path} and {RESULTS / 'upkeep.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
