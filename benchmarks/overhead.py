"""What the memory costs beyond Chroma itself (no LLM, a fixed precomputed embedding).

Measures, in one run, on an embedded persistent store:

1. ``add`` of one message against a raw chromadb ``add`` of the same record;
2. the latency of a turn that triggers a fold against one that does not, with background
   folds and a summarizer that takes ``--fold-ms`` (a stand-in for an LLM call);
3. reading the context (``context()``, what ``messages`` returns) of a 100-message session
   against a 10,000-message one;
4. ``recall`` of one 680-turn conversation (hybrid, windows embedded at fold) against a
   plain Chroma kNN read of the same session;
5. ``recall`` latency with 100,000 stored turns across 1,000 sessions (recall scores the
   session's vectors by exact search), and the quality and latency of Chroma's per-session
   filtered vector search (which HiGMem's retrieval uses) against exact search;
6. token counting per turn at 10,000 messages.

    python benchmarks/overhead.py [--sessions 1000] [--turns-per-session 100] [--repeat 200]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, console, pct, print_table, pyplot, save_figure, write_results
from _standins import summary_stand_in

from langchain_recursive_memory.core import (
    FunctionTextModel,
    HybridMemory,
    MemoryStore,
    RecursiveMemory,
    RetryPolicy,
    TokenCounter,
    Turn,
)
from langchain_recursive_memory.core.storage import session_key
from langchain_recursive_memory.core.storage.keys import SessionOwner, window_kind

DIM = 384
WORDS = [
    "garden",
    "train",
    "budget",
    "Oslo",
    "Lisbon",
    "violin",
    "cat",
    "dog",
    "recipe",
    "marathon",
    "museum",
    "ticket",
    "hotel",
    "meeting",
    "doctor",
    "school",
    "invoice",
    "birthday",
    "concert",
    "weather",
    "football",
    "coffee",
    "project",
]


class FixedEmbedder:
    """A precomputed embedding: a fixed pseudo-random unit vector per text (no model)."""

    model_name = "fixed"

    def _vec(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        return (v / np.linalg.norm(v)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


def message(rng: random.Random, i: int) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(25))
    return f"Message {i}: {words}."


def bench_add(tmp: Path, repeat: int) -> dict[str, float]:
    import chromadb
    from chromadb.config import Settings

    rng = random.Random(1)
    raw_client = chromadb.PersistentClient(
        path=str(tmp / "raw"), settings=Settings(anonymized_telemetry=False)
    )
    raw = raw_client.get_or_create_collection("raw_turns", embedding_function=None)
    store = MemoryStore.persistent(tmp / "ours")
    memory = RecursiveMemory("add", store=store, max_tokens=2000, max_summary_tokens=300)
    counter = TokenCounter()
    skey = session_key("default", "add")
    raw_ms, ours_ms = [], []
    for i in range(repeat):
        text = message(rng, i)
        # The same record our log writes: document, metadata, one-dimensional embedding.
        meta = {
            "ns": "default",
            "sid": "add",
            "tid": f"r{i}",
            "role": "user",
            "seq": i,
            "created": time.time(),
            "tok": counter.count_turn(Turn(role="user", text=text)),
            "enc": "o200k_base",
            "folded": 0,
        }
        start = time.perf_counter()
        raw.add(ids=[f"{skey}:t:r{i}"], documents=[text], metadatas=[meta], embeddings=[[0.0]])
        raw_ms.append(time.perf_counter() - start)
        start = time.perf_counter()
        memory.add(Turn(role="user", text=text))
        ours_ms.append(time.perf_counter() - start)
    return {
        "raw_add_p50_ms": statistics.median(raw_ms) * 1000,
        "memory_add_p50_ms": statistics.median(ours_ms) * 1000,
        "add_ratio_p50": statistics.median(ours_ms) / statistics.median(raw_ms),
        "memory_add_p95_ms": pct(ours_ms, 95),
    }


def bench_fold_latency(tmp: Path, fold_ms: float, repeat: int) -> dict[str, float]:
    rng = random.Random(2)

    def slow_summary(prompt: str) -> str:
        time.sleep(fold_ms / 1000)
        return summary_stand_in(prompt)  # a summary of what it is shown

    model = FunctionTextModel(slow_summary)
    out: dict[str, float] = {}
    for background in (False, True):
        memory = RecursiveMemory(
            f"fold-{background}",
            store=MemoryStore.persistent(tmp / "fold"),
            model=model,
            max_tokens=1200,
            max_summary_tokens=100,
            background_folds=background,
            retry=RetryPolicy(attempts=1, timeout=60),
        )
        triggering, plain = [], []
        for i in range(repeat):
            before = memory.get_summary()
            start = time.perf_counter()
            memory.add(Turn(role="user", text=message(rng, i)))
            took = time.perf_counter() - start
            memory.wait_for_folds(60)
            after = memory.get_summary()
            folded = (after.version if after else 0) > (before.version if before else 0)
            (triggering if folded else plain).append(took)
        label = "background" if background else "inline"
        out[f"{label}_fold_turn_p50_ms"] = statistics.median(triggering) * 1000
        out[f"{label}_plain_turn_p50_ms"] = statistics.median(plain) * 1000
        out[f"{label}_fold_turns"] = len(triggering)
    return out


def bench_context(tmp: Path, repeat: int) -> dict[str, float]:
    """Both sessions live in the same store, and are read alternately (same conditions)."""
    rng = random.Random(3)
    store = MemoryStore.persistent(tmp / "ctx")
    memories = {}
    for size in (100, 10_000):
        memory = RecursiveMemory(f"ctx-{size}", store=store, max_tokens=2000)
        for start in range(0, size, 50):
            memory.add([Turn(role="user", text=message(rng, i)) for i in range(start, start + 50)])
        memories[size] = memory
    samples: dict[int, list[float]] = {100: [], 10_000: []}
    for _ in range(repeat):
        for size, memory in memories.items():
            t0 = time.perf_counter()
            ctx = memory.context()
            samples[size].append(time.perf_counter() - t0)
            assert ctx.tokens <= 2000
    out = {f"context_{size}_p50_ms": statistics.median(xs) * 1000 for size, xs in samples.items()}
    out["context_ratio_10000_over_100"] = out["context_10000_p50_ms"] / out["context_100_p50_ms"]
    return out


def bench_recall(tmp: Path, sessions: int, per_session: int, repeat: int) -> dict[str, float]:
    rng = random.Random(4)
    store = MemoryStore.persistent(tmp / "recall")
    embedder = FixedEmbedder()
    built = time.perf_counter()
    for s in range(sessions):
        memory = RecursiveMemory(
            f"user-{s}", store=store, embedder=embedder, max_tokens=1000, max_summary_tokens=100
        )
        memory.add(
            [Turn(role="user", text=message(rng, i)) for i in range(per_session)], fold=False
        )
        memory.fold(force=True)  # archives (and embeds) all but the recent window
    build_s = time.perf_counter() - built
    cold, warm = [], []
    for sid in rng.sample([f"user-{s}" for s in range(sessions)], min(repeat, sessions)):
        memory = RecursiveMemory(
            sid, store=store, embedder=embedder, max_tokens=1000, max_summary_tokens=100
        )
        for samples in (cold, warm):  # the first recall of a session builds its BM25 index
            query = " ".join(rng.choice(WORDS) for _ in range(4))
            t0 = time.perf_counter()
            hits = memory.recall(query, k=5)
            samples.append(time.perf_counter() - t0)
            assert all(h.kind == "turn" for h in hits)
    # Filtered search quality: Chroma's per-session kNN against exact search.
    # The store's vector repository (a benchmark looks inside).
    vectors = store.parts.repos.vector_spaces
    space = vectors.spaces()[0]
    recalls: list[float] = []
    knn: list[float] = []
    for _ in range(min(repeat, 200)):
        sid = f"user-{rng.randrange(sessions)}"
        records = vectors.of_kinds(space, SessionOwner.of("default", sid), [window_kind(1)])
        matrix = np.asarray([r.vector for r in records], np.float32)
        q = np.asarray(embedder.embed_query(" ".join(rng.choice(WORDS) for _ in range(4))))
        exact = {records[i].ref for i in np.argsort(-(matrix @ q))[:10]}
        t0 = time.perf_counter()
        near = vectors.nearest(
            space, SessionOwner.of("default", sid), q.tolist(), 10, [window_kind(1)]
        )
        knn.append(time.perf_counter() - t0)
        got = {ref for _, ref, _ in near}
        recalls.append(len(exact & got) / len(exact))
    total = int(vectors.collection(space).count())
    return {
        "stored_turns": sessions * per_session,
        "stored_vectors": total,
        "build_seconds": build_s,
        "recall_p50_ms": statistics.median(warm) * 1000,
        "recall_p95_ms": pct(warm, 95),
        "recall_first_in_session_p50_ms": statistics.median(cold) * 1000,
        "filtered_knn_recall_at_10": float(np.mean(recalls)),
        "chroma_filtered_knn_p50_ms": statistics.median(knn) * 1000,
    }


def bench_session_recall(tmp: Path, turns: int, repeat: int) -> dict[str, float]:
    """``recall`` of one long conversation (a LoCoMo-sized 680 turns) against a plain kNN."""
    rng = random.Random(7)
    store = MemoryStore.persistent(tmp / "session-recall")
    embedder = FixedEmbedder()
    memory = HybridMemory(
        "conversation",
        store=store,
        embedder=embedder,
        model=FunctionTextModel(summary_stand_in),
        max_tokens=2000,
    )
    for i in range(turns):
        memory.add(Turn(role="user" if i % 2 else "assistant", text=message(rng, i)))
    memory.recall("warm up the caches")
    warm, knn = [], []
    space = memory.space
    assert space is not None
    for _ in range(repeat):
        query = " ".join(rng.choice(WORDS) for _ in range(4))
        t0 = time.perf_counter()
        memory.recall(query, k=8)
        warm.append(time.perf_counter() - t0)
        vector = embedder.embed_query(query)
        t0 = time.perf_counter()
        store.parts.repos.vector_spaces.nearest(
            space, SessionOwner.of("default", "conversation"), vector, 8, [window_kind(1)]
        )
        knn.append(time.perf_counter() - t0)
    return {
        "session_recall_turns": turns,
        "session_recall_p50_ms": statistics.median(warm) * 1000,
        "session_recall_p95_ms": pct(warm, 95),
        "session_chroma_knn_p50_ms": statistics.median(knn) * 1000,
    }


def bench_tokens(repeat: int) -> dict[str, float]:
    rng = random.Random(5)
    counter = TokenCounter()
    turns = [Turn(role="user", text=message(rng, i)) for i in range(10_000)]
    t0 = time.perf_counter()
    for turn in turns:
        counter.count_turn(turn)
    first = (time.perf_counter() - t0) / len(turns)
    t0 = time.perf_counter()
    for turn in turns[-repeat:]:
        counter.count_turn(turn)
    cached = (time.perf_counter() - t0) / repeat
    return {"count_new_turn_us": first * 1e6, "count_cached_turn_us": cached * 1e6}


def plot(results: dict[str, float], path: Path) -> None:
    """Bar chart of the medians (log scale: a fold waited for inline dwarfs the rest)."""
    plt = pyplot()
    bars = [
        ("raw Chroma add", "raw_add_p50_ms", "tab:gray"),
        ("memory add", "memory_add_p50_ms", "tab:blue"),
        ("turn with fold, inline", "inline_fold_turn_p50_ms", "tab:red"),
        ("turn with fold, background", "background_fold_turn_p50_ms", "tab:blue"),
        ("turn without fold, background", "background_plain_turn_p50_ms", "tab:blue"),
        ("context, 100 messages", "context_100_p50_ms", "tab:blue"),
        ("context, 10,000 messages", "context_10000_p50_ms", "tab:blue"),
        ("recall, 100k turns / 1k sessions", "recall_p50_ms", "tab:blue"),
        ("raw Chroma filtered kNN, same store", "chroma_filtered_knn_p50_ms", "tab:gray"),
    ]
    bars = [b for b in bars if b[1] in results]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ys = range(len(bars))
    values = [results[key] for _, key, _ in bars]
    ax.barh(list(ys), values, color=[c for _, _, c in bars])
    ax.set_yticks(list(ys), [label for label, _, _ in bars])
    ax.invert_yaxis()
    ax.set_xscale("log")
    for y, v in zip(ys, values, strict=True):
        ax.text(v * 1.08, y, f"{v:.1f} ms", va="center", fontsize=8)
    ax.set_xlim(right=max(values) * 4)
    ax.set_xlabel("median latency (ms, log scale)")
    ax.set_title("Memory overhead against raw Chroma (gray: Chroma alone)")
    save_figure(fig, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns-per-session", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--fold-ms", type=float, default=300.0)
    parser.add_argument(
        "--replot", action="store_true", help="redraw the PNG from the saved JSON only"
    )
    args = parser.parse_args()
    if args.replot:
        saved = json.loads((RESULTS / "overhead.json").read_text())
        plot(saved["results"], RESULTS / "overhead.png")
        console.print(f"wrote {RESULTS / 'overhead.png'}")
        return 0
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        for name, run in (
            ("add", lambda: bench_add(tmp, args.repeat)),
            ("fold latency", lambda: bench_fold_latency(tmp, args.fold_ms, args.repeat)),
            ("context", lambda: bench_context(tmp, args.repeat)),
            (
                "recall",
                lambda: bench_recall(tmp, args.sessions, args.turns_per_session, args.repeat),
            ),
            ("session recall", lambda: bench_session_recall(tmp, 680, args.repeat)),
            ("tokens", lambda: bench_tokens(args.repeat)),
        ):
            console.print(f"[bold]{name}[/] ...")
            results.update(run())
    targets = {
        "add_ratio_p50": ("<= 1.5", results["add_ratio_p50"] <= 1.5),
        "context_ratio_10000_over_100": ("<= 1.2", results["context_ratio_10000_over_100"] <= 1.2),
        "recall_p50_ms": ("<= 20", results["recall_p50_ms"] <= 20),
        "session_recall_p50_ms": ("<= 10", results["session_recall_p50_ms"] <= 10),
        "filtered_knn_recall_at_10": (">= 0.99", results["filtered_knn_recall_at_10"] >= 0.99),
    }
    print_table(
        "Overhead (medians of one run; embedded persistent Chroma, no LLM)",
        ["measure", "value", "target", "met"],
        [[k, v, *(targets.get(k, ("", "")))] for k, v in results.items()],
    )
    path = write_results(
        "overhead",
        {"args": vars(args), "results": results, "targets": {k: v[0] for k, v in targets.items()}},
    )
    plot(results, RESULTS / "overhead.png")
    console.print(f"wrote {path} and {RESULTS / 'overhead.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
