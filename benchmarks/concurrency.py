"""Several writer processes on one session through a Chroma server.

For N writers in {1, 2, 4, 8} (``--writers``), each a separate process adding
``--messages`` messages to the *same* session of a ``chroma run`` server with folds
inline and a summarizer stand-in that takes ``--model-ms`` per call, prints and records:

* messages stored (expected: N x messages) and duplicates (a message stored twice);
* summary versions out of log order (a version whose first turn sorts before the previous
  version's last one) and overlapping version ranges;
* summarizer calls per committed version (calls of versions that lost the
  compare-and-set are waste; the fold lease keeps it near 1);
* p50 / p95 latency of ``add`` across all writers.

    python benchmarks/concurrency.py [--writers 1 2 4 8] [--messages 120] [--model-ms 40]

Starts its own Chroma server and PostgreSQL unless ``--host``/``--port`` and ``--database``
name them.
Writes ``benchmarks/results/concurrency.json`` and ``concurrency.png``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, print_table, pyplot, save_figure, write_results

from langchain_recursive_memory.core import MemoryStore
from langchain_recursive_memory.servers import LocalChromaServer, LocalPostgres

SESSION = "shared"
WRITER = """
import json, sys, time
sys.path.insert(0, sys.argv[6])
from _standins import summary_stand_in
from langchain_recursive_memory.core import (
    FunctionTextModel, MemoryStore, RecursiveMemory, RetryPolicy, Turn)
host, port, prefix, writer, count, _, model_ms, database = sys.argv[1:9]

def answer(prompt):
    time.sleep(float(model_ms) / 1000)
    return summary_stand_in(prompt)

store = MemoryStore.http(host, int(port), prefix=prefix, database=database)
memory = RecursiveMemory("shared", store=store, model=FunctionTextModel(answer),
                         max_tokens=600, max_summary_tokens=100,
                         retry=RetryPolicy(attempts=2, cooldown=0.0))
latencies = []
for i in range(int(count)):
    turn = Turn(role="user", text=f"writer {writer} message {i} about Oslo and the garden")
    start = time.perf_counter()
    memory.add(turn)
    latencies.append(time.perf_counter() - start)
print(json.dumps(latencies))
"""


def run(
    host: str, port: int, database: str, writers: int, messages: int, model_ms: float
) -> dict[str, Any]:
    """Run ``writers`` processes on one fresh session; return what the store holds."""
    prefix = f"bench{uuid.uuid4().hex[:10]}"
    bench_dir = str(Path(__file__).resolve().parent)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                host,
                str(port),
                prefix,
                str(w),
                str(messages),
                bench_dir,
                str(model_ms),
                database,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for w in range(writers)
    ]
    latencies: list[float] = []
    for proc in procs:
        out, err = proc.communicate(timeout=3600)
        if proc.returncode != 0:
            raise RuntimeError(err.decode()[-3000:])
        latencies.extend(json.loads(out.decode().strip().splitlines()[-1]))
    store = MemoryStore.http(host, port, prefix=prefix, database=database)
    return measure(store, writers * messages, latencies)


def measure(store: MemoryStore, expected: int, latencies: list[float]) -> dict[str, Any]:
    """Count what a run left in the store (see the module doc)."""
    log = store.turns("default", SESSION)
    texts = [t.turn.text for t in log]
    seq = {t.id: t.seq for t in log}
    versions = store.summaries("default", SESSION)
    ranges = [
        (min(seq[t] for t in v.turn_ids if t in seq), max(seq[t] for t in v.turn_ids if t in seq))
        for v in versions
        if any(t in seq for t in v.turn_ids)
    ]
    out_of_order = sum(1 for a, b in itertools.pairwise(ranges) if b[0] < a[1])
    overlapping = sum(
        1 for a, b in itertools.combinations(ranges, 2) if a[0] <= b[1] and b[0] <= a[1]
    )
    fold = store.usage("default", SESSION).get("fold")
    calls = (fold.calls + fold.failed_calls) if fold is not None else 0
    quantiles = statistics.quantiles(latencies, n=20) if len(latencies) >= 2 else [0.0] * 19
    return {
        "expected": expected,
        "stored": len(log),
        "duplicates": len(texts) - len(set(texts)),
        "versions": len(versions),
        "out_of_order_versions": out_of_order,
        "overlapping_ranges": overlapping,
        "summarizer_calls": calls,
        "calls_per_version": calls / len(versions) if versions else 0.0,
        "add_p50_ms": statistics.median(latencies) * 1000,
        "add_p95_ms": quantiles[18] * 1000,
    }


def plot(rows: dict[int, dict[str, Any]], path: Path) -> None:
    """Calls per committed version and p95 add latency against the number of writers."""
    plt = pyplot()
    ns = sorted(rows)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    left.plot(ns, [rows[n]["calls_per_version"] for n in ns], marker="o")
    left.axhline(1.1, color="grey", linestyle="--", linewidth=1)
    left.set(xlabel="writers", ylabel="summarizer calls / committed version", xticks=ns)
    right.plot(ns, [rows[n]["add_p50_ms"] for n in ns], marker="o", label="p50")
    right.plot(ns, [rows[n]["add_p95_ms"] for n in ns], marker="o", label="p95")
    right.set(xlabel="writers", ylabel="add latency (ms)", xticks=ns)
    right.legend()
    fig.suptitle("Writers on one session through a Chroma server")
    save_figure(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--messages", type=int, default=120, help="per writer")
    parser.add_argument("--model-ms", type=float, default=40.0, help="per summarizer call")
    parser.add_argument("--host", default=None)
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--database", default=None, help="default: a throwaway PostgreSQL")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        host, port, database = args.host, args.port, args.database
        if host is None or port is None:
            server = stack.enter_context(LocalChromaServer(Path(tmp) / "chroma"))
            host, port = server.host, server.port
        if database is None:
            database = stack.enter_context(LocalPostgres()).url
        rows = {n: run(host, port, database, n, args.messages, args.model_ms) for n in args.writers}
    columns = [
        "writers",
        "stored",
        "duplicates",
        "versions",
        "out of order",
        "overlapping",
        "calls/version",
        "add p50 ms",
        "add p95 ms",
    ]
    print_table(
        f"{args.messages} messages per writer, summarizer {args.model_ms:g} ms per call",
        columns,
        [
            [
                n,
                f"{r['stored']}/{r['expected']}",
                r["duplicates"],
                r["versions"],
                r["out_of_order_versions"],
                r["overlapping_ranges"],
                r["calls_per_version"],
                r["add_p50_ms"],
                r["add_p95_ms"],
            ]
            for n, r in rows.items()
        ],
    )
    settings = {"messages": args.messages, "model_ms": args.model_ms, "started": time.time()}
    path = write_results("concurrency", {"settings": settings, "writers": rows})
    plot(rows, RESULTS / "concurrency.png")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
