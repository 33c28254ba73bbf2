"""The command line of ``benchmarks/live.py``: the sweep (default), ``--concurrency``,
``--worker-memory N``, ``--replot NAME``, and the flags its own child processes run with."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from _common import DEFAULT_LOCOMO, RESULTS, console, load_result

from .report import replot
from .scenarios import run
from .systems import EMBEDDERS, ENGINES
from .throughput import CONC_WORKER, conc_worker, concurrency
from .worker import WORKER_MEMORY, WORKER_TURNS, worker_memory, worker_memory_child


def parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 5000, 10000])
    parser.add_argument("--samples", type=int, default=30, help="timed exchanges per size")
    parser.add_argument("--batch", type=int, default=100, help="turns per untimed add")
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    parser.add_argument("--embedders", nargs="+", choices=EMBEDDERS, default=["none", "fixed"])
    parser.add_argument("--user-sessions", type=int, default=50)
    parser.add_argument("--user-turns", type=int, default=1000)
    parser.add_argument("--user-samples", type=int, default=None, help="default: --samples")
    parser.add_argument(
        "--user-embedders",
        nargs="+",
        choices=EMBEDDERS,
        default=None,
        help="the embedders the user's scope is measured with (default: --embedders)",
    )
    parser.add_argument("--no-first-read", action="store_true")
    parser.add_argument("--data", default=str(DEFAULT_LOCOMO))
    parser.add_argument("--out", default=None, help="result name (benchmarks/results/<out>)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--replot", default=None, metavar="NAME", help="redraw <NAME>.png")
    conc = parser.add_argument_group("--concurrency: throughput over a chroma server")
    conc.add_argument("--concurrency", action="store_true")
    conc.add_argument("--host", default=None)
    conc.add_argument("--database", default=None, help="default: a throwaway PostgreSQL")
    conc.add_argument("--port", type=int, default=None)
    conc.add_argument("--conc-levels", type=int, nargs="+", default=[1, 8, 64])
    conc.add_argument("--conc-procs", type=int, default=4)
    conc.add_argument("--conc-threads", type=int, default=8)
    conc.add_argument("--conc-seconds", type=float, default=15.0)
    conc.add_argument("--conc-prefill", type=int, default=200)
    conc.add_argument("--conc-embedder", choices=EMBEDDERS, default="none")
    mem = parser.add_argument_group("--worker-memory N: RSS of a long-running worker")
    mem.add_argument("--worker-memory", type=int, default=None, metavar="N")
    mem.add_argument("--worker-kinds", nargs="+", choices=("ours", "raw"), default=["ours", "raw"])
    mem.add_argument("--worker-embedder", choices=EMBEDDERS, default="none")
    mem.add_argument("--tracemalloc", action="store_true")
    mem.add_argument("--worker-turns", type=int, default=WORKER_TURNS, help="turns per session")
    mem.add_argument(
        "--worker-cache-mb",
        type=int,
        default=None,
        help="the store's cache byte bound (CacheLimits.nbytes; default: the library's)",
    )
    return parser


def main(argv: Sequence[str] | None = None, description: str = "") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == [CONC_WORKER]:
        print(json.dumps(conc_worker(json.loads(argv[1]))))
        return 0
    if argv[:1] == [WORKER_MEMORY]:
        print(json.dumps(worker_memory_child(json.loads(argv[1]))))
        return 0
    args = parser(description).parse_args(argv)
    if args.replot:
        console.print(f"wrote {replot(load_result(args.replot), RESULTS / f'{args.replot}.png')}")
    elif args.concurrency:
        concurrency(
            host=args.host,
            port=args.port,
            database=args.database,
            engines=args.engines,
            levels=args.conc_levels,
            procs=args.conc_procs,
            threads=args.conc_threads,
            seconds=args.conc_seconds,
            prefill=args.conc_prefill,
            embedder_name=args.conc_embedder,
            data=args.data,
            out=args.out or "live-concurrency",
        )
    elif args.worker_memory is not None:
        worker_memory(
            args.worker_memory,
            kinds=args.worker_kinds,
            tracemalloc=args.tracemalloc,
            embedder_name=args.worker_embedder,
            data=args.data,
            out=args.out or "live-worker-memory",
            turns=args.worker_turns,
            cache_mb=args.worker_cache_mb,
        )
    else:
        run(
            sizes=args.sizes,
            samples=args.samples,
            batch=args.batch,
            engines=args.engines,
            embedders=args.embedders,
            user_sessions=args.user_sessions,
            user_turns=args.user_turns,
            user_samples=args.user_samples,
            user_embedders=args.user_embedders,
            first_reads=not args.no_first_read,
            data=args.data,
            out=args.out or "live",
            seed=args.seed,
        )
    return 0
