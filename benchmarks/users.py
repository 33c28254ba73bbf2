"""Memory across a user's conversations: LoCoMo with one conversation per session.

Each LoCoMo sample is one user pair; each of its sessions becomes a separate conversation
(session id ``<sample>-s<n>``) of the same user (``user_id`` = the sample id), ingested and
ended (folded whole) in order. Every question is then asked from a *fresh* conversation of
the user, and we measure the evidence recall of the turns recalled (the share of a
question's gold evidence turns among the ``k`` recalled), for:

* ``session scope, fresh conversation``: what every memory scoped to one session gives a
  user who opens a new conversation (nothing of the earlier ones);
* ``session scope, latest conversation``: the question asked in the user's last
  conversation instead (only that conversation's turns);
* ``user scope, fresh conversation``: ``recall(..., scope="user")`` (``retrieve`` for
  HiGMem): every conversation of the user, ranked as one pool;
* ``one session (reference)``: the whole sample ingested as a single session, asked from
  it (the single-session setting of ``benchmarks/locomo.py``).

No LLM (the extractive summarizer; HiGMem's no-LLM ranking); BM25 only unless
``--embedder minilm``. Prints a table, writes ``benchmarks/results/users-<embedder>.json``
and a bar plot.

    python benchmarks/users.py [--embedder none|minilm] [--k 4 8] [--engines hybrid higmem]
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
    RESULTS,
    evidence_ids,
    load_locomo,
    print_table,
    pyplot,
    save_figure,
    write_results,
)

from langchain_recursive_memory.cli.loaders import ingest, locomo_turns
from langchain_recursive_memory.core import HiGMem, MemoryStore, RecursiveMemory, Turn

SETTINGS = ("session scope, fresh", "session scope, latest", "user scope, fresh", "one session")
"""What is compared (see the module doc), in the table's order."""
KS = (4, 8)
MAX_TOKENS = 2000
SUMMARY_TOKENS = 300

Recall = Callable[[str, int], list[str]]
"""``(question, k) -> the recalled turn ids``."""


def _conversations(sample: Mapping[str, Any]) -> list[tuple[str, list[Turn]]]:
    """The sample's sessions as separate conversations ``(session id, turns)``, in order."""
    by_session: dict[str, list[Turn]] = {}
    for turn in locomo_turns(sample):
        by_session.setdefault(str(turn.extra["session"]), []).append(turn)
    return [(f"{sample['sample_id']}-s{n}", turns) for n, turns in by_session.items()]


def _engine(kind: str, session_id: str, store: MemoryStore, embedder: Any, user: str | None):
    if kind == "higmem":
        return HiGMem(session_id, store=store, embedder=embedder, user_id=user)
    return RecursiveMemory(
        session_id,
        store=store,
        embedder=embedder,
        user_id=user,
        max_tokens=MAX_TOKENS,
        max_summary_tokens=SUMMARY_TOKENS,
    )


def _end(memory: Any) -> None:
    """End a conversation: fold it whole (HiGMem: index every turn)."""
    if isinstance(memory, HiGMem):
        memory.flush()
    else:
        memory.fold(force=True, keep=False)


def _recaller(memory: Any, scope: str) -> Recall:
    if isinstance(memory, HiGMem):
        return lambda q, k: [r.turn.id or "" for r in memory.retrieve(q, k, scope=scope)]
    return lambda q, k: [
        tid for h in memory.recall(q, k, kinds=("turn",), scope=scope) for tid in h.source_turn_ids
    ]


def recallers(kind: str, sample: Mapping[str, Any], embedder: Any) -> dict[str, Recall]:
    """The four settings' recall functions over one sample (its memories built here)."""
    user = str(sample["sample_id"])
    store = MemoryStore.in_memory()
    latest = None
    for session_id, turns in _conversations(sample):
        latest = _engine(kind, session_id, store, embedder, user)
        ingest(latest, turns, batch_size=64, progress=False)
        _end(latest)
    fresh = _engine(kind, f"{user}-fresh", store, embedder, user)
    whole = _engine(kind, f"{user}-whole", MemoryStore.in_memory(), embedder, None)
    ingest(whole, locomo_turns(sample), batch_size=64, progress=False)
    _end(whole)
    return dict(
        zip(
            SETTINGS,
            (
                _recaller(fresh, "session"),
                _recaller(latest, "session"),
                _recaller(fresh, "user"),
                _recaller(whole, "session"),
            ),
            strict=True,
        )
    )


def measure(
    samples: Sequence[Mapping[str, Any]], kind: str, embedder: Any, ks: Sequence[int]
) -> dict[str, dict[str, float]]:
    """Mean evidence recall at each ``k`` of every setting (questions with evidence)."""
    scores: dict[str, dict[int, list[float]]] = {s: {k: [] for k in ks} for s in SETTINGS}
    for sample in samples:
        for setting, recall in recallers(kind, sample, embedder).items():
            for item in sample["qa"]:
                gold = set(evidence_ids(item))
                if not gold:
                    continue
                found = recall(str(item["question"]), max(ks))
                for k in ks:
                    scores[setting][k].append(len(gold & set(found[:k])) / len(gold))
    return {
        s: {f"recall@{k}": statistics.mean(v) for k, v in by_k.items()} | {"questions": n}
        for s, by_k in scores.items()
        for n in [len(next(iter(by_k.values())))]
    }


def plot(results: Mapping[str, Mapping[str, Mapping[str, float]]], path: Path, k: int) -> None:
    """Evidence recall at ``k`` per setting, one group of bars per engine."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    width = 0.8 / max(1, len(results))
    for i, (engine, by_setting) in enumerate(results.items()):
        xs = [j + i * width for j in range(len(SETTINGS))]
        ax.bar(xs, [by_setting[s][f"recall@{k}"] for s in SETTINGS], width, label=engine)
    ax.set_xticks([j + width * (len(results) - 1) / 2 for j in range(len(SETTINGS))])
    ax.set_xticklabels(SETTINGS, fontsize=8)
    ax.set(ylabel=f"evidence recall@{k}", title="A question asked in a new conversation")
    ax.legend()
    save_figure(fig, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_LOCOMO))
    parser.add_argument("--embedder", choices=("none", "minilm"), default="none")
    parser.add_argument("--k", type=int, nargs="+", default=list(KS))
    parser.add_argument(
        "--engines", nargs="+", choices=("hybrid", "higmem"), default=["hybrid", "higmem"]
    )
    args = parser.parse_args()
    embedder = None
    if args.embedder == "minilm":
        from locomo import MiniLMEmbedder

        embedder = MiniLMEmbedder()
    samples = load_locomo(args.data)
    results, seconds = {}, {}
    for engine in args.engines:
        start = time.perf_counter()
        results[engine] = measure(samples, engine, embedder, args.k)
        seconds[engine] = time.perf_counter() - start
    columns = ["engine / setting", *(f"recall@{k}" for k in args.k), "questions"]
    rows = [
        [f"{engine}: {setting}", *(v[f"recall@{k}"] for k in args.k), int(v["questions"])]
        for engine, by_setting in results.items()
        for setting, v in by_setting.items()
    ]
    print_table(
        f"Evidence recall from a new conversation of the same user, LoCoMo "
        f"({len(samples)} user pairs, embedder {args.embedder})",
        columns,
        rows,
    )
    name = f"users-{args.embedder}"
    path = write_results(name, {"settings": vars(args), "results": results, "seconds": seconds})
    plot(results, RESULTS / f"{name}.png", max(args.k))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
