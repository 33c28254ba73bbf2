"""The memory of a long-running worker: a fresh process writes many sessions and records
its RSS, what the library's caches hold, and what clearing them gives back; a second
process does the same writes and reads with raw chromadb."""

from __future__ import annotations

import contextlib
import gc
import json
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import DEFAULT_LOCOMO, console, library_version
from _measure import child_json, malloc_trim, rss_bytes

from langchain_recursive_memory.core import CacheLimits, MemoryStore

from . import LIVE
from .report import plot_worker, report_worker, written
from .systems import Vectors, chroma_client, make_embedder, make_memory, raw_add, raw_query
from .talk import Talk

WORKER_MEMORY = "--worker-memory-child"
WORKER_TURNS = 480
WORKER_BATCH = 16


def rss_mb() -> float:
    """Resident set size of this process, in MB."""
    return rss_bytes() / 1e6


def library_caches() -> list[dict[str, Any]]:
    """Every per-session cache of the library this process holds, with entries and bytes."""
    try:
        from langchain_recursive_memory.core.cache import caches
    except ImportError:
        return []
    return [
        {"repr": repr(c), "name": getattr(c, "name", "?"), "entries": len(c), "bytes": c.nbytes}
        for c in caches()
    ]


def clear_library_caches() -> None:
    with contextlib.suppress(ImportError):
        from langchain_recursive_memory.core.cache import clear_caches

        clear_caches()


def _package(filename: str) -> str:
    """Group a tracemalloc frame's file by package."""
    parts = Path(filename).parts
    for marker in ("site-packages", "langchain_recursive_memory", "benchmarks"):
        if marker in parts:
            i = parts.index(marker)
            if marker == "site-packages":
                return parts[i + 1] if i + 1 < len(parts) else filename
            return marker
    return "python" if "lib" in parts else filename


class _Serving:
    """The child's store (ours: a ``MemoryStore``; raw: a chromadb collection) and how one
    session is served on it: batches of turns, a read after each."""

    def __init__(self, spec: dict[str, Any], embedder: Any, tmp: Path) -> None:
        self.kind = spec["kind"]
        self.embedder = embedder
        self.store: Any = None
        self.coll: Any = None
        if self.kind == "ours":
            limits = CacheLimits()
            if spec.get("cache_mb") is not None:
                limits = CacheLimits(nbytes=int(spec["cache_mb"]) * 2**20)
            self.store = MemoryStore.persistent(tmp / "store", cache=limits)
        else:
            self.vectors = Vectors(self.embedder)
            self.coll = chroma_client(tmp / "raw").get_or_create_collection(
                "raw_turns", embedding_function=None
            )

    def session(self, s: int, turns: int, batch: int, data: Any, rng: random.Random) -> None:
        talk = Talk(data, variant=s)
        sid = f"w{s}"
        ours = self.kind == "ours"
        memory = make_memory("hybrid", sid, self.store, self.embedder) if ours else None
        for at in range(0, turns, batch):
            chunk = talk.turns(at, min(batch, turns - at))
            question = talk.question(rng, at + len(chunk))
            if memory is not None:
                memory.add(chunk)
                memory.context(question)
            else:
                self.coll.add(**raw_add(sid, at, chunk, self.vectors))
                self.coll.get(where={"sid": sid}, include=["documents", "metadatas"])
                self.coll.query(**raw_query(sid, self.vectors.query(question)))

    def point(self, sessions: int, seconds: float, trace: bool) -> dict[str, Any]:
        import tracemalloc

        point: dict[str, Any] = {"sessions": sessions, "rss_mb": rss_mb(), "seconds": seconds}
        if self.kind == "ours":
            held = library_caches()
            point["cache_entries"] = sum(c["entries"] for c in held)
            point["cache_bytes"] = sum(c["bytes"] for c in held)
        if trace:
            point["traced_mb"] = tracemalloc.get_traced_memory()[0] / 1e6
        return point

    def drop(self) -> None:
        self.store = self.coll = None


def _traced() -> dict[str, Any]:
    """Where the traced Python heap is: by package, and the top lines."""
    import tracemalloc

    snapshot = tracemalloc.take_snapshot()
    by_package: Counter[str] = Counter()
    for stat in snapshot.statistics("filename"):
        by_package[_package(stat.traceback[0].filename)] += stat.size
    return {
        "traced_by_package_mb": {k: v / 1e6 for k, v in by_package.most_common(12)},
        "traced_top_lines": [
            {"where": str(stat.traceback[0]), "mb": stat.size / 1e6, "count": stat.count}
            for stat in snapshot.statistics("lineno")[:15]
        ],
    }


def _given_back(serving: _Serving, out: dict[str, Any], trace: bool) -> None:
    """What ``clear_caches()`` + ``gc``, ``malloc_trim`` and dropping the store give back."""
    import tracemalloc

    types = Counter(type(o).__name__ for o in gc.get_objects())
    out["gc_objects_top"] = dict(types.most_common(12))
    out["rss_before_clear_mb"] = rss_mb()
    clear_library_caches()
    gc.collect()
    out["rss_after_clear_gc_mb"] = rss_mb()
    if trace:
        out["traced_after_clear_mb"] = tracemalloc.get_traced_memory()[0] / 1e6
    out["malloc_trim"] = malloc_trim()
    out["rss_after_malloc_trim_mb"] = rss_mb()
    serving.drop()
    gc.collect()
    malloc_trim()
    out["rss_after_dropping_store_mb"] = rss_mb()


def worker_memory_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Write ``sessions`` x 480 turns (batches of 16, a read after each); RSS every 10."""
    import tracemalloc

    sessions = int(spec["sessions"])
    turns = int(spec.get("turns", WORKER_TURNS))
    batch = int(spec.get("batch", WORKER_BATCH))
    trace = bool(spec.get("tracemalloc"))
    embedder = make_embedder(spec.get("embedder", "none"))
    rng = random.Random(3)
    points: list[dict[str, Any]] = [{"sessions": 0, "rss_mb": rss_mb()}]
    with tempfile.TemporaryDirectory(prefix="lrm-worker-") as tmp:
        serving = _Serving(spec, embedder, Path(tmp))
        points.append({"sessions": 0, "rss_mb": rss_mb(), "note": "store open"})
        if trace:
            tracemalloc.start(1)
        t0 = time.perf_counter()
        for s in range(sessions):
            serving.session(s, turns, batch, spec.get("data"), rng)
            if (s + 1) % 10 == 0 or s + 1 == sessions:
                points.append(serving.point(s + 1, time.perf_counter() - t0, trace))
                print(json.dumps(points[-1]), file=sys.stderr, flush=True)
        out: dict[str, Any] = {"kind": serving.kind, "points": points}
        out["caches"] = library_caches() if serving.kind == "ours" else []
        if trace:
            out.update(_traced())
        _given_back(serving, out, trace)
    return out


def worker_memory(
    sessions: int,
    *,
    kinds: Sequence[str] = ("ours", "raw"),
    tracemalloc: bool = False,
    embedder_name: str = "none",
    data: Path | str | None = DEFAULT_LOCOMO,
    out: str = "live-worker-memory",
    results_dir: Path | None = None,
    turns: int = WORKER_TURNS,
    batch: int = WORKER_BATCH,
    plot_it: bool = True,
    cache_mb: int | None = None,
) -> dict[str, Any]:
    """Each kind in a fresh process; RSS every 10 sessions, then what clearing gives back."""
    runs: dict[str, Any] = {}
    for kind in kinds:
        spec = {
            "kind": kind,
            "sessions": sessions,
            "turns": turns,
            "batch": batch,
            "cache_mb": cache_mb,
            "tracemalloc": tracemalloc and kind == "ours",
            "embedder": embedder_name,
            "data": str(data) if data else None,
        }
        console.print(f"[bold]worker memory, {kind}[/]: {sessions} sessions x {turns} turns")
        command = [sys.executable, str(LIVE), WORKER_MEMORY, json.dumps(spec)]
        runs[kind] = child_json(command, f"worker ({kind})", timeout=24 * 3600)
    result = {
        "code": library_version(),
        "settings": {
            "sessions": sessions,
            "turns": turns,
            "batch": batch,
            "engine": "hybrid",
            "embedder": embedder_name,
            "tracemalloc": tracemalloc,
            "cache_mb": cache_mb,
        },
        "runs": runs,
    }
    report_worker(result)
    draw = (lambda png: plot_worker(result, png)) if plot_it else None
    return written(out, result, draw, results_dir)
