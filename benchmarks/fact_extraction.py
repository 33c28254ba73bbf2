"""Fact extraction at folds: in the summary call ("combined") or in a second call ("separate").

Runs the LoCoMo dev conversations through HybridMemory in both modes, counting the LLM
calls and tokens of memory upkeep with CountingTextModel.

The model is an offline *stand-in*: it answers a summary of about the requested length and
one fact per message that states a number or a name, in the format the real prompts ask
for. The *input* tokens are therefore exactly what a real model would be sent; the output
tokens depend on the stand-in's answers, and the quality of real facts cannot be measured
offline (run with --model provider:model to measure with a real model).

    python benchmarks/fact_extraction.py [--data FILE] [--conversations N] [--model provider:model]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, console, load_locomo, locomo_turns, print_table, pyplot, write_results
from _standins import summary_stand_in

from langchain_recursive_memory.core import (
    CountingTextModel,
    FunctionTextModel,
    HybridMemory,
    MemoryStore,
    RetryPolicy,
    TokenCounter,
    Turn,
)

PRICE_IN, PRICE_OUT = 0.15, 0.60  # gpt-4o-mini list prices, USD per million tokens


def run(samples, mode: str, model_name: str | None) -> dict:
    counter = TokenCounter("gpt-4o-mini")
    if model_name:
        from langchain_recursive_memory.language_models import resolve_text_model

        inner = resolve_text_model(model_name)
    else:
        inner = FunctionTextModel(summary_stand_in, name="stand-in")
    model = CountingTextModel(inner, counter)
    turns_total = folds = facts = 0
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore.persistent(tmp)
        for sample in samples:
            memory = HybridMemory(
                sample["sample_id"],
                store=store,
                model=model,
                fact_mode=mode,
                max_tokens=2000,
                max_summary_tokens=300,
                retry=RetryPolicy(attempts=2),
            )
            speaker_a = sample["conversation"]["speaker_a"]
            for t in locomo_turns(sample):
                role = "user" if t["speaker"] == speaker_a else "assistant"
                memory.add(Turn(role=role, text=t["text"], name=t["speaker"]))
                turns_total += 1
            folds += len(store.summaries("default", sample["sample_id"]))
            facts += len(memory.facts())
    u = model.usage
    per100 = 100 / turns_total
    return {
        "mode": mode,
        "turns": turns_total,
        "folds": folds,
        "facts": facts,
        "llm_calls": u.calls,
        "calls_per_100_turns": u.calls * per100,
        "input_tokens_per_100_turns": u.input_tokens * per100,
        "output_tokens_per_100_turns": u.output_tokens * per100,
        "usd_per_1000_turns": u.cost(PRICE_IN, PRICE_OUT) * 10 * per100,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--conversations", type=int, default=5)
    parser.add_argument("--model", default=None, help="provider:model (default: stand-in)")
    args = parser.parse_args()
    samples = (
        load_locomo(args.data)[: args.conversations]
        if args.data
        else load_locomo()[: args.conversations]
    )
    results = [run(samples, mode, args.model) for mode in ("combined", "separate")]
    cols = list(results[0])
    print_table(
        f"Fact extraction cost ({args.model or 'offline stand-in model'}; "
        f"USD at gpt-4o-mini list prices ${PRICE_IN}/${PRICE_OUT} per M tokens)",
        cols,
        [[r[c] for c in cols] for r in results],
    )
    ratio = results[1]["input_tokens_per_100_turns"] / results[0]["input_tokens_per_100_turns"]
    console.print(f"separate / combined input tokens: {ratio:.2f}x")
    path = write_results(
        "fact_extraction",
        {
            "model": args.model or "stand-in",
            "results": results,
            "separate_over_combined_input": ratio,
        },
    )
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    names = [r["mode"] for r in results]
    ax.bar([n + " in" for n in names], [r["input_tokens_per_100_turns"] for r in results])
    ax.bar([n + " out" for n in names], [r["output_tokens_per_100_turns"] for r in results])
    ax.set_ylabel("tokens per 100 turns")
    ax.set_title("Upkeep tokens: facts in the summary call vs a second call")
    fig.tight_layout()
    fig.savefig(RESULTS / "fact_extraction.png", dpi=120)
    console.print(f"wrote {path} and {RESULTS / 'fact_extraction.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
