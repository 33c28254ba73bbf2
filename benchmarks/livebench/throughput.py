"""Throughput of many sessions at once over a ``chroma run`` server: one asyncio process with
the async twins, and worker processes of threads with the sync API, ours against raw
chromadb doing the same writes and reads."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import DEFAULT_LOCOMO, console, library_version, pct

from langchain_recursive_memory.core import MemoryStore

from . import LIVE
from .report import TARGETS, plot_concurrency, report_concurrency, written
from .systems import (
    ENGINES,
    FLOOR,
    Vectors,
    aread,
    make_embedder,
    make_memory,
    raw_add,
    raw_exchange,
    read,
)
from .talk import Talk

CONC_WORKER = "--conc-worker"


@dataclass
class Load:
    """Where the sessions run and how hard: the server, the cases, their length."""

    host: str
    port: int
    database: str
    levels: Sequence[int]
    procs: int
    threads: int
    seconds: float
    prefill: int
    embedder_name: str
    data: str | None


# -- one exchange of a session ------------------------------------------------------------------


def _sync_steps(
    system: str,
    host: str,
    port: int,
    database: str,
    prefix: str,
    sessions: Sequence[int],
    embedder_name: str,
    data: str | None,
) -> list[Callable[[int], None]]:
    """Per session, ``step(n)``: exchange ``n`` added then the next question read (sync)."""
    embedder = make_embedder(embedder_name)
    vectors = Vectors(embedder)
    if system == FLOOR:
        import chromadb

        def make(s: int) -> Callable[[int], None]:
            client = chromadb.HttpClient(host=host, port=port)
            coll = client.get_collection(f"{prefix}_raw")
            talk = Talk(data, variant=s)
            rng = random.Random(s)

            def step(n: int) -> None:
                question = talk.question(rng, n)
                add, query = raw_exchange(f"c{s}", n, talk.turns(n, 2), question, vectors)
                coll.add(**add)
                coll.query(**query)

            return step

    else:
        store = MemoryStore.http(host, port, prefix=prefix, database=database)

        def make(s: int) -> Callable[[int], None]:
            memory = make_memory(system, f"c{s}", store, embedder)
            talk = Talk(data, variant=s)
            rng = random.Random(s)

            def step(n: int) -> None:
                memory.add(talk.turns(n, 2))
                read(system, memory, talk.question(rng, n))

            return step

    return [make(s) for s in sessions]


async def _async_steps(
    system: str, prefix: str, load: Load, sessions: Sequence[int], embedder: Any
) -> list[Callable[[int], Any]]:
    """Per session, ``step(n)``: the async twin of :func:`_sync_steps`'s."""
    vectors = Vectors(embedder)
    data = load.data
    if system == FLOOR:
        import chromadb

        client = await chromadb.AsyncHttpClient(host=load.host, port=load.port)
        coll = await client.get_collection(f"{prefix}_raw")

        def make(s: int) -> Callable[[int], Any]:
            talk = Talk(data, variant=s)
            rng = random.Random(s)

            async def step(n: int) -> None:
                question = talk.question(rng, n)
                add, query = raw_exchange(f"c{s}", n, talk.turns(n, 2), question, vectors)
                await coll.add(**add)
                await coll.query(**query)

            return step

    else:
        store = MemoryStore.http(load.host, load.port, prefix=prefix, database=load.database)

        def make(s: int) -> Callable[[int], Any]:
            memory = make_memory(system, f"c{s}", store, embedder)
            talk = Talk(data, variant=s)
            rng = random.Random(s)

            async def step(n: int) -> None:
                await memory.aadd(talk.turns(n, 2))
                await aread(system, memory, talk.question(rng, n))

            return step

    return [make(s) for s in sessions]


# -- the loops ----------------------------------------------------------------------------------


def conc_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Threads, one per session, each looping add + read for ``seconds`` (sync API).

    Prints ``READY`` once set up and waits for a line on stdin, so that every worker
    process starts at the same moment.
    """
    sessions = spec["sessions"]
    counts = {int(k): v for k, v in spec["counts"].items()}
    work = _sync_steps(
        spec["system"],
        spec["host"],
        int(spec["port"]),
        spec["database"],
        spec["prefix"],
        sessions,
        spec["embedder"],
        spec["data"],
    )
    done: dict[int, int] = dict.fromkeys(sessions, 0)
    finished: dict[int, float] = {}
    latencies: list[float] = []
    errors: list[str] = []
    print("READY", flush=True)
    sys.stdin.readline()
    deadline = time.time() + float(spec["seconds"])

    def loop(s: int, step: Callable[[int], None]) -> None:
        n = counts[s]
        while time.time() < deadline:
            t0 = time.perf_counter()
            try:
                step(n)
            except Exception:  # counted and reported; the session goes on, as an app's would
                errors.append(traceback.format_exc()[-2000:])
            else:
                latencies.append(time.perf_counter() - t0)
                done[s] += 1
            n += 2
        finished[s] = time.time()

    began = time.time()
    threads = [
        threading.Thread(target=loop, args=(s, step))
        for s, step in zip(sessions, work, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {
        "exchanges": done,
        "began": began,
        "ended": max(finished.values()) if finished else time.time(),
        "latencies": latencies,
        "errors": errors,
    }


async def _conc_async(
    system: str,
    prefix: str,
    load: Load,
    sessions: Sequence[int],
    counts: dict[int, int],
    embedder: Any,
) -> dict[str, Any]:
    """``len(sessions)`` tasks in one event loop, each looping add + read (async twins)."""
    steps = await _async_steps(system, prefix, load, sessions, embedder)
    done = dict.fromkeys(sessions, 0)
    latencies: list[float] = []
    errors: list[str] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + load.seconds

    async def run_one(s: int, step: Callable[[int], Any]) -> None:
        n = counts[s]
        while loop.time() < deadline:
            t0 = time.perf_counter()
            try:
                await step(n)
            except Exception:  # counted and reported; the session goes on
                errors.append(traceback.format_exc()[-2000:])
            else:
                latencies.append(time.perf_counter() - t0)
                done[s] += 1
            n += 2

    began = time.perf_counter()
    await asyncio.gather(*(run_one(s, step) for s, step in zip(sessions, steps, strict=True)))
    elapsed = time.perf_counter() - began
    return {"exchanges": done, "elapsed": elapsed, "latencies": latencies, "errors": errors}


def _prefill(system: str, prefix: str, load: Load, sessions: int, embedder: Any) -> None:
    """Give every session ``load.prefill`` turns before anything is timed (batches of 100)."""
    turns = load.prefill
    if system == FLOOR:
        import chromadb

        vectors = Vectors(embedder)
        coll = chromadb.HttpClient(host=load.host, port=load.port).get_or_create_collection(
            f"{prefix}_raw", embedding_function=None
        )
        for s in range(sessions):
            talk = Talk(load.data, variant=s)
            for at in range(0, turns, 100):
                coll.add(**raw_add(f"c{s}", at, talk.turns(at, min(100, turns - at)), vectors))
        return
    store = MemoryStore.http(load.host, load.port, prefix=prefix, database=load.database)
    for s in range(sessions):
        memory = make_memory(system, f"c{s}", store, embedder)
        talk = Talk(load.data, variant=s)
        for at in range(0, turns, 100):
            memory.add(talk.turns(at, min(100, turns - at)))


def _distinct(errors: list[str], most: int = 3) -> list[str]:
    """The first ``most`` distinct tracebacks (by their last line)."""
    seen: dict[str, str] = {}
    for error in errors:
        seen.setdefault(error.strip().splitlines()[-1], error)
    return list(seen.values())[:most]


def _throughput(
    exchanges: int, seconds: float, latencies: list[float], errors: list[str]
) -> dict[str, Any]:
    return {
        "exchanges": exchanges,
        "seconds": seconds,
        "turns_per_s": 2 * exchanges / seconds if seconds > 0 else 0.0,
        "exchange_p50_ms": pct(latencies, 50),
        "exchange_p95_ms": pct(latencies, 95),
        "error_count": len(errors),
        "errors": _distinct(errors),
    }


def _start_workers(
    system: str, prefix: str, load: Load, counts: dict[int, int]
) -> list[subprocess.Popen[str]]:
    """``load.procs`` worker processes of ``load.threads`` sessions each, all ready."""
    children = []
    for p in range(load.procs):
        sessions = list(range(p * load.threads, (p + 1) * load.threads))
        spec = {
            "system": system,
            "host": load.host,
            "port": load.port,
            "database": load.database,
            "prefix": prefix,
            "sessions": sessions,
            "counts": {str(s): counts[s] for s in sessions},
            "embedder": load.embedder_name,
            "data": load.data,
            "seconds": load.seconds,
        }
        children.append(
            subprocess.Popen(
                [sys.executable, str(LIVE), CONC_WORKER, json.dumps(spec)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for child in children:  # every worker has its memories (or clients) ready
        assert child.stdout is not None
        line = child.stdout.readline()
        if line.strip() != "READY":
            _, stderr = child.communicate(timeout=60)
            raise RuntimeError(f"worker failed to start:\n{line}{stderr[-3000:]}")
    return children


def _processes(system: str, prefix: str, load: Load, counts: dict[int, int]) -> dict[str, Any]:
    """``procs`` worker processes of ``threads`` threads each, started at the same moment."""
    children = _start_workers(system, prefix, load, counts)
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    reports = []
    for child in children:
        stdout, stderr = child.communicate(timeout=load.seconds + 600)
        if child.returncode != 0:
            raise RuntimeError(f"worker failed:\n{stderr[-3000:]}")
        reports.append(json.loads(stdout.strip().splitlines()[-1]))
    exchanges = 0
    latencies: list[float] = []
    errors: list[str] = []
    for got in reports:
        for s, n in got["exchanges"].items():
            counts[int(s)] += 2 * n
            exchanges += n
        latencies.extend(got["latencies"])
        errors.extend(got["errors"])
    began = min(r["began"] for r in reports)
    ended = max(r["ended"] for r in reports)
    return _throughput(exchanges, ended - began, latencies, errors)


# -- the scenario -------------------------------------------------------------------------------


def _cases(system: str, load: Load, embedder: Any) -> dict[str, Any]:
    """One system's cases: prefilled sessions, then each asyncio level, then the processes."""
    prefix = f"lv{uuid.uuid4().hex[:10]}"
    need = max([*load.levels, load.procs * load.threads])
    t0 = time.perf_counter()
    _prefill(system, prefix, load, need, embedder)
    console.print(
        f"  {system}: {need} sessions x {load.prefill} turns prefilled in "
        f"{time.perf_counter() - t0:.0f} s"
    )
    counts = dict.fromkeys(range(need), load.prefill)
    by_case: dict[str, Any] = {}
    for level in load.levels:
        got = asyncio.run(_conc_async(system, prefix, load, list(range(level)), counts, embedder))
        for s, n in got["exchanges"].items():
            counts[s] += 2 * n
        row = _throughput(
            sum(got["exchanges"].values()), got["elapsed"], got["latencies"], got["errors"]
        )
        by_case[f"asyncio x {level}"] = row
        console.print(
            f"  {system}, asyncio x {level}: {row['turns_per_s']:.1f} turns/s"
            + (f" ({len(got['errors'])} errors)" if got["errors"] else "")
        )
    if load.procs > 0 and load.threads > 0:
        row = _processes(system, prefix, load, counts)
        by_case[f"{load.procs} procs x {load.threads} threads"] = row
        console.print(
            f"  {system}, {load.procs} procs x {load.threads} threads: "
            f"{row['turns_per_s']:.1f} turns/s"
        )
    return by_case


@contextlib.contextmanager
def _server(
    host: str | None, port: int | None, database: str | None
) -> Iterator[tuple[str, int, str, bool]]:
    """The servers named, or a ``LocalChromaServer`` and ``LocalPostgres`` started here."""
    from langchain_recursive_memory.servers import LocalChromaServer, LocalPostgres

    with contextlib.ExitStack() as stack:
        local = host is None or port is None
        if local:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="lrm-live-conc-"))
            server = stack.enter_context(LocalChromaServer(Path(tmp) / "chroma"))
            host, port = server.host, server.port
        if database is None:
            database = stack.enter_context(LocalPostgres()).url
        assert host is not None
        assert port is not None
        yield host, port, database, local


def concurrency(
    *,
    host: str | None = None,
    port: int | None = None,
    database: str | None = None,
    engines: Sequence[str] = ENGINES,
    levels: Sequence[int] = (1, 8, 64),
    procs: int = 4,
    threads: int = 8,
    seconds: float = 15.0,
    prefill: int = 200,
    embedder_name: str = "none",
    data: Path | str | None = DEFAULT_LOCOMO,
    out: str = "live-concurrency",
    results_dir: Path | None = None,
    plot_it: bool = True,
) -> dict[str, Any]:
    """Turns per second of many sessions at once over a server, ours against raw chromadb."""
    embedder = make_embedder(embedder_name)
    started = time.time()
    data_str = str(data) if data else None
    with _server(host, port, database) as (at_host, at_port, at_database, local):
        load = Load(
            at_host,
            at_port,
            at_database,
            levels,
            procs,
            threads,
            seconds,
            prefill,
            embedder_name,
            data_str,
        )
        cases = {system: _cases(system, load, embedder) for system in [FLOOR, *engines]}
    floor = cases[FLOOR]
    result = {
        "code": library_version(),
        "settings": {
            "engines": list(engines),
            "levels": list(levels),
            "procs": procs,
            "threads": threads,
            "seconds": seconds,
            "prefill": prefill,
            "embedder": embedder_name,
            "server": "LocalChromaServer" if local else "external",
        },
        "cases": cases,
        "ratios": {
            engine: {
                case: (row["turns_per_s"] / floor[case]["turns_per_s"])
                if floor[case]["turns_per_s"]
                else None
                for case, row in by_case.items()
            }
            for engine, by_case in cases.items()
            if engine != FLOOR
        },
        "target": {"ratio": TARGETS["throughput"][1], "sense": ">="},
        "seconds": time.time() - started,
    }
    report_concurrency(result)
    draw = (lambda png: plot_concurrency(result, png)) if plot_it else None
    return written(out, result, draw, results_dir)
