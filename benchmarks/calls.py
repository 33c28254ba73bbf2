"""Chroma calls per add and per read, per engine, in the steady state of live.py's loop.

Each engine's session grows to ``--turns`` turns (untimed adds of ``--batch``), then
``--exchanges`` live exchanges run as in ``live.py`` (``add`` of one user + assistant
exchange, then the read for the next question); every call of the library's Chroma wrapper
(``StoreClient.call``, outermost only) is counted, by what it does, separately for the add
and the read. Raw chromadb's floor is one ``add`` and one ``query`` per exchange. A user of
``--user-sessions`` x ``--user-turns`` turns gives the same counts for a ``scope="user"``
read. Counts only, no timing: the machine's load does not change them.

Runs against whichever library the interpreter imports (run it with each checkout's venv).

    python benchmarks/calls.py --out calls-after
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DEFAULT_LOCOMO, console, library_version, print_table, write_results
from _measure import ChromaCalls
from livebench.systems import ENGINES, USER, make_memory, read
from livebench.talk import Talk

from langchain_recursive_memory.core import MemoryStore


def _delta(before: Counter[str]) -> Counter[str]:
    return Counter(
        {k: v - before.get(k, 0) for k, v in ChromaCalls.counts.items() if v - before.get(k, 0)}
    )


def count(
    memory: Any,
    engine: str,
    talk: Talk,
    start: int,
    exchanges: int,
    rng: random.Random,
    scope: str = "session",
) -> dict[str, Any]:
    """Calls per add and per read over ``exchanges`` live exchanges from turn ``start``."""
    adds: list[int] = []
    reads: list[int] = []
    add_kinds: Counter[str] = Counter()
    read_kinds: Counter[str] = Counter()
    n = start
    for _ in range(exchanges):
        question = talk.question(rng, n)
        c0 = ChromaCalls.snapshot()
        memory.add(talk.turns(n, 2))
        d = _delta(c0)
        adds.append(sum(d.values()))
        add_kinds.update(d)
        c0 = ChromaCalls.snapshot()
        read(engine, memory, question, scope)
        d = _delta(c0)
        reads.append(sum(d.values()))
        read_kinds.update(d)
        n += 2
    return {
        "add_mean": statistics.fmean(adds),
        "add_median": statistics.median(adds),
        "add_min": min(adds),
        "add_max": max(adds),
        "read_mean": statistics.fmean(reads),
        "read_median": statistics.median(reads),
        "read_min": min(reads),
        "read_max": max(reads),
        "add_by_kind": {k: v / exchanges for k, v in sorted(add_kinds.items())},
        "read_by_kind": {k: v / exchanges for k, v in sorted(read_kinds.items())},
        "exchanges": exchanges,
    }


def report(out: dict[str, Any], turns: int) -> None:
    """The calls per add and per read of each engine and scope, and by what they do."""
    rows = []
    for scope in ("session", "user"):
        for engine, got in out[scope].items():
            rows.append(
                [
                    f"{engine} ({scope})",
                    f"{got['add_mean']:.2f} ({got['add_min']}-{got['add_max']})",
                    f"{got['read_mean']:.2f} ({got['read_min']}-{got['read_max']})",
                    f"{got['add_mean'] + got['read_mean']:.2f}",
                ]
            )
    rows.append(["raw chromadb (floor)", "1", "1", "2"])
    print_table(
        f"Chroma calls per exchange, steady state ({turns:,} turns; library "
        f"{out['code'].get('library_path')})",
        ["engine", "per add: mean (min-max)", "per read: mean (min-max)", "per exchange"],
        rows,
    )
    for scope in ("session", "user"):
        for engine, got in out[scope].items():
            console.print(f"{engine} ({scope}) add: {json.dumps(got['add_by_kind'])}")
            console.print(f"{engine} ({scope}) read: {json.dumps(got['read_by_kind'])}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--exchanges", type=int, default=48, help="a multiple of 8: HiGMem's batch")
    parser.add_argument("--user-sessions", type=int, default=10)
    parser.add_argument("--user-turns", type=int, default=200)
    parser.add_argument("--data", default=str(DEFAULT_LOCOMO))
    parser.add_argument("--out", default="calls")
    args = parser.parse_args(argv)
    import langchain_recursive_memory

    console.print(f"library: {langchain_recursive_memory.__file__}")
    ChromaCalls.install()
    rng = random.Random(0)
    out: dict[str, Any] = {"code": library_version(), "settings": vars(args)}
    out.update(session={}, user={})
    with tempfile.TemporaryDirectory(prefix="lrm-calls-") as tmp:
        for engine in args.engines:
            talk = Talk(args.data, variant=0)
            store = MemoryStore.persistent(Path(tmp) / engine)
            memory = make_memory(engine, "live", store)
            for at in range(0, args.turns, args.batch):
                memory.add(talk.turns(at, min(args.batch, args.turns - at)))
            read(engine, memory, talk.question(rng, args.turns))  # warm: the first read builds
            out["session"][engine] = count(memory, engine, talk, args.turns, args.exchanges, rng)
            if engine == "recursive":
                continue
            ustore = MemoryStore.persistent(Path(tmp) / f"user-{engine}")
            talks = [Talk(args.data, variant=s + 1) for s in range(args.user_sessions)]
            for s in range(args.user_sessions):
                m = make_memory(engine, f"s{s}", ustore, user_id=USER)
                for at in range(0, args.user_turns, args.batch):
                    m.add(talks[s].turns(at, min(args.batch, args.user_turns - at)))
            umem = make_memory(engine, "s0", ustore, user_id=USER, scope="user")
            read(engine, umem, talks[0].question(rng, args.user_turns), "user")
            out["user"][engine] = count(
                umem, engine, talks[0], args.user_turns, args.exchanges, rng, scope="user"
            )
    report(out, args.turns)
    console.print(f"wrote {write_results(args.out, out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
