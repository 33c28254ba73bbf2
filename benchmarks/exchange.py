"""Cost per exchange of a live chat: our memories against the bare SQLite floor and
LlamaIndex ``Memory`` on SQLite, in one process per size (before/after the log moves to SQL).

An exchange, as an application runs it: add a user and an assistant message, then read what
the next model call is sent. The texts are LoCoMo's dev conversations cycled (user and
assistant take alternate turns); the question of each read is the next user turn. No LLM,
no embedder. Systems (``--systems``):

* ``sqlite``: the floor. stdlib ``sqlite3`` on one file (WAL, ``synchronous=FULL``, as
  Python and aiosqlite open it): insert the exchange's two rows in one transaction, then
  select the session's last ``--floor-rows`` rows.
* ``llamaindex``: ``llama_index.core.memory.Memory.from_defaults(session_id,
  token_limit=2000, async_database_uri="sqlite+aiosqlite:///<file>")``: ``put_messages``
  of the two ``ChatMessage`` objects, then ``get()`` (sync API).
* ``recursive``: ``RecursiveMemory(max_tokens=2000, max_summary_tokens=300)``,
  ``add([user, assistant])`` then ``context()``.
* ``hybrid``: ``HybridMemory`` (same budget), ``add`` then ``context(question)``.
* ``higmem``: ``HiGMem``, ``add`` then ``retrieve(question, k=8)`` (no-LLM ranking).

Each of ours runs on its own ``MemoryStore.persistent(<tmpdir>)``; the systems take turns
exchange by exchange (the order rotates), so the machine's noise falls on all alike. Only
the public API that exists before and after the move is used. With ``ChromaCalls`` from
``_measure.py`` (when the library still has ``core.storage.client``), the time our
exchanges spend inside Chroma is recorded too.

Also measured (``--parts``):

* ``bulk``: ``--bulk-turns`` turns (default 10,000) into one session per system, in
  batches of ``--ingest-batch`` (``add`` / ``put_messages`` / ``executemany``), then
  ``HiGMem.flush()``; seconds, the systems interleaved batch by batch.
* ``first_read``: a fresh process opens each bulk store and does one read (and a second);
  import, open and read seconds, medians of ``--first-reads`` (5) processes per system,
  the systems taking turns.
* ``memory``: a fresh process opens ``MemoryStore.in_memory()``, runs a ``--mem-exchanges``
  (150) exchange hybrid conversation, drops memory and store, ``gc.collect()``; RSS growth
  per store over ``--mem-stores`` (10) stores after one warm-up store. Baseline, in another
  fresh process: raw chromadb ``EphemeralClient``, a collection per store, the same records
  (documents, metadata, a 1-d placeholder vector as the library writes) and a filtered
  ``get`` of the session per exchange.

    python benchmarks/exchange.py --quick                       # smoke run, < 1 min
    python benchmarks/exchange.py --sizes 600,10000 --label before
    python benchmarks/exchange.py --sizes 600 --systems sqlite,llamaindex,hybrid --parts exchange

Writes ``<out>/exchange-<label>.json`` and ``.png`` (``--out``: default benchmarks/results).
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()  # before any import: a fresh process's import time counts from here

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DEFAULT_LOCOMO,
    RESULTS,
    Lines,
    block_ratio,
    console,
    fmt_ms,
    fmt_ratio,
    library_version,
    pct,
    print_table,
    progress,
    pyplot,
    ratio,
    save_figure,
    sums,
    uptime,
    write_result_files,
)
from _measure import child_json, malloc_trim, rss_bytes  # noqa: E402

SYSTEMS = ("sqlite", "llamaindex", "recursive", "hybrid", "higmem")
OURS = ("recursive", "hybrid", "higmem")
PARTS = ("exchange", "bulk", "first_read", "memory")
BASELINE = "llamaindex"
MAX_TOKENS = 2000
SUMMARY_TOKENS = 300
K = 8
WINDOW = 100
SID = "chat"
BULK_SID = "bulk"
CHILD = "--child"


# -- the conversation ----------------------------------------------------------------------


# -- the systems ---------------------------------------------------------------------------


class SqliteFloor:
    """Bare sqlite3: two inserts in one transaction, then the session's last N rows."""

    def __init__(self, path: Path, rows: int) -> None:
        self.db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS turns (session TEXT NOT NULL, seq INTEGER NOT NULL,"
            " role TEXT NOT NULL, name TEXT, content TEXT NOT NULL, created REAL NOT NULL,"
            " PRIMARY KEY (session, seq))"
        )
        self.rows = rows
        self.seq: dict[str, int] = {}

    def add(self, sid: str, turns: Sequence[tuple[str, str, str]]) -> None:
        start = self.seq.get(sid, 0)
        now = time.time()
        self.db.execute("BEGIN")
        self.db.executemany(
            "INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?)",
            [(sid, start + i, r, n, t, now) for i, (r, n, t) in enumerate(turns)],
        )
        self.db.execute("COMMIT")
        self.seq[sid] = start + len(turns)

    def read(self, sid: str, question: str) -> Any:
        got = self.db.execute(
            "SELECT role, name, content FROM turns WHERE session = ? ORDER BY seq DESC LIMIT ?",
            (sid, self.rows),
        ).fetchall()
        return got[::-1]


class LlamaMemory:
    """LlamaIndex ``Memory`` on a SQLite file: ``put_messages`` then ``get()``."""

    def __init__(self, path: Path, sid: str) -> None:
        from llama_index.core.memory import Memory

        self.memory = Memory.from_defaults(
            session_id=sid,
            token_limit=MAX_TOKENS,
            async_database_uri=f"sqlite+aiosqlite:///{path}",
        )

    def add(self, sid: str, turns: Sequence[tuple[str, str, str]]) -> None:
        from llama_index.core.llms import ChatMessage

        self.memory.put_messages([ChatMessage(role=r, content=t) for r, _, t in turns])

    def read(self, sid: str, question: str) -> Any:
        return self.memory.get()


def make_memory(engine: str, sid: str, store: Any) -> Any:
    """One of our engines (no LLM, no embedder; budget 2,000, summary cap 300)."""
    from langchain_recursive_memory.core import HiGMem, HybridMemory, RecursiveMemory

    if engine == "recursive":
        return RecursiveMemory(
            sid, store=store, max_tokens=MAX_TOKENS, max_summary_tokens=SUMMARY_TOKENS
        )
    if engine == "hybrid":
        return HybridMemory(
            sid, store=store, max_tokens=MAX_TOKENS, max_summary_tokens=SUMMARY_TOKENS
        )
    if engine == "higmem":
        return HiGMem(sid, store=store)
    raise SystemExit(f"unknown engine {engine!r}")


def our_read(engine: str, memory: Any, question: str) -> Any:
    """The read an application does before the next model call."""
    if engine == "recursive":
        return memory.context()
    if engine == "hybrid":
        return memory.context(question)
    return memory.retrieve(question, k=K)


class Ours:
    """One of our engines on its own persistent store."""

    def __init__(self, engine: str, path: Path, sid: str) -> None:
        from langchain_recursive_memory.core import MemoryStore

        self.engine = engine
        self.store = MemoryStore.persistent(path)
        self.memory = make_memory(engine, sid, self.store)

    def add(self, sid: str, turns: Sequence[tuple[str, str, str]]) -> None:
        from langchain_recursive_memory.core import Turn

        self.memory.add([Turn(role=r, text=t, name=n) for r, n, t in turns])

    def read(self, sid: str, question: str) -> Any:
        return our_read(self.engine, self.memory, question)

    def flush(self) -> None:
        flush = getattr(self.memory, "flush", None)
        if callable(flush):
            flush()


def open_system(name: str, root: Path, sid: str, floor_rows: int) -> Any:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    if name == "sqlite":
        return SqliteFloor(folder / "floor.db", floor_rows)
    if name == "llamaindex":
        return LlamaMemory(folder / "memory.db", sid)
    return Ours(name, folder, sid)


def chroma_calls() -> Any:
    """``_measure.ChromaCalls`` installed, or None when the library has no ``StoreClient``."""
    try:
        from _measure import ChromaCalls

        ChromaCalls.install()
        return ChromaCalls
    except (ImportError, AttributeError):
        return None


# -- child: exchanges at one size ----------------------------------------------------------


def _stats(add: Sequence[float], read: Sequence[float]) -> dict[str, Any]:
    total = [a + r for a, r in zip(add, read, strict=True)]
    return {
        "n": len(total),
        "p50_ms": pct(total, 50),
        "p90_ms": pct(total, 90),
        "add_p50_ms": pct(add, 50),
        "read_p50_ms": pct(read, 50),
    }


def exchange_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Run ``size`` exchanges on every system, interleaved; stats per window and blocks."""
    size, systems = int(spec["size"]), list(spec["systems"])
    lines = Lines(spec["data"])
    cap = float(spec["cap_seconds"])
    calls = chroma_calls() if any(s in OURS for s in systems) else None
    out: dict[str, Any] = {"size": size, "load_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="lrm-exchange-") as tmp:
        t0 = time.perf_counter()
        opened = {s: open_system(s, Path(tmp), SID, spec["floor_rows"]) for s in systems}
        out["open_s"] = time.perf_counter() - t0
        adds: dict[str, list[float]] = {s: [] for s in systems}
        reads: dict[str, list[float]] = {s: [] for s in systems}
        chroma: dict[str, list[float]] = {s: [] for s in systems if s in OURS}
        ncalls: dict[str, list[int]] = {s: [] for s in systems if s in OURS}
        spent = dict.fromkeys(systems, 0.0)
        capped: dict[str, int] = {}
        loads: list[float] = []
        started = time.perf_counter()
        for i in range(size):
            turns, question = lines.exchange(i), lines.question(i)
            live = [s for s in systems if s not in capped]
            if not live:
                break
            shift = i % len(live)
            for name in live[shift:] + live[:shift]:
                system = opened[name]
                c0 = calls.seconds if calls is not None else 0.0
                n0 = calls.total() if calls is not None else 0
                a0 = time.perf_counter()
                system.add(SID, turns)
                a1 = time.perf_counter()
                system.read(SID, question)
                a2 = time.perf_counter()
                adds[name].append(a1 - a0)
                reads[name].append(a2 - a1)
                if name in chroma and calls is not None:
                    chroma[name].append(calls.seconds - c0)
                    ncalls[name].append(calls.total() - n0)
                spent[name] += a2 - a0
                if spent[name] > cap:
                    capped[name] = i + 1
            if (i + 1) % WINDOW == 0:
                loads.append(os.getloadavg()[0])
            if (i + 1) % spec["progress"] == 0 or i + 1 == size:
                recent = {s: sums(adds[s], reads[s], WINDOW) for s in systems}
                progress(str(size), f"{i + 1} exchanges", started, recent, WINDOW)
        out["seconds"] = time.perf_counter() - started
        out["load_end"] = os.getloadavg()
        out["load_per_window"] = loads
        out["capped"] = capped
        out["systems"] = {}
        for s in systems:
            add, read = adds[s], reads[s]
            total = [a + r for a, r in zip(add, read, strict=True)]
            w = min(WINDOW, len(total))
            row: dict[str, Any] = {
                "exchanges": len(total),
                "seconds": spent[s],
                "first": _stats(add[:w], read[:w]),
                "last": _stats(add[-w:], read[-w:]),
                "all": _stats(add, read),
                "blocks_p50_ms": [
                    pct(total[j : j + WINDOW], 50) for j in range(0, len(total), WINDOW)
                ],
                "blocks_p90_ms": [
                    pct(total[j : j + WINDOW], 90) for j in range(0, len(total), WINDOW)
                ],
            }
            ch = chroma.get(s)
            if ch:
                row["in_chroma_p50_ms"] = pct(ch, 50)
                row["in_chroma_share"] = sum(ch) / max(sum(total), 1e-12)
                row["in_chroma_last_p50_ms"] = pct(ch[-w:], 50)
                row["in_chroma_last_share"] = sum(ch[-w:]) / max(sum(total[-w:]), 1e-12)
                row["chroma_calls_per_exchange"] = statistics.fmean(ncalls[s])
                row["chroma_calls_per_exchange_last"] = statistics.fmean(ncalls[s][-w:])
            out["systems"][s] = row
    if calls is not None:
        out["chroma_calls"] = dict(calls.counts)
    return out


# -- child: bulk ingest --------------------------------------------------------------------


def bulk_child(spec: dict[str, Any]) -> dict[str, Any]:
    """``turns`` turns into one session per system, batches interleaved; seconds."""
    systems, n, batch = list(spec["systems"]), int(spec["turns"]), int(spec["batch"])
    lines = Lines(spec["data"])
    root = Path(spec["root"])
    opened = {s: open_system(s, root, BULK_SID, spec["floor_rows"]) for s in systems}
    seconds = dict.fromkeys(systems, 0.0)
    all_turns = [lines.turn(j) for j in range(n)]
    for b, start in enumerate(range(0, n, batch)):
        chunk = all_turns[start : start + batch]
        shift = b % len(systems)
        for name in systems[shift:] + systems[:shift]:
            t0 = time.perf_counter()
            opened[name].add(BULK_SID, chunk)
            seconds[name] += time.perf_counter() - t0
        if (start // batch + 1) % max(1, (n // batch) // 10) == 0:
            print(
                f"[bulk] {start + len(chunk)} turns: "
                + ", ".join(f"{s} {v:.1f} s" for s, v in seconds.items()),
                file=sys.stderr,
                flush=True,
            )
    flushed: dict[str, float] = {}
    for name in systems:
        if isinstance(opened[name], Ours):
            t0 = time.perf_counter()
            opened[name].flush()
            flushed[name] = time.perf_counter() - t0
            seconds[name] += flushed[name]
    question = lines.turn(n)[2] if n % 2 == 0 else lines.turn(n + 1)[2]
    return {
        "turns": n,
        "batch": batch,
        "seconds": seconds,
        "flush_seconds": flushed,
        "turns_per_second": {s: n / max(v, 1e-12) for s, v in seconds.items()},
        "question": question,
        "load_end": os.getloadavg(),
    }


# -- child: the first read in a fresh process ----------------------------------------------


def first_read_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Open a bulk store in this (fresh) process and time one read, then a second."""
    t0 = _T0
    name = spec["system"]
    if name in OURS:
        import langchain_recursive_memory.core  # noqa: F401
    elif name == "llamaindex":
        import llama_index.core.memory  # noqa: F401
    t1 = time.perf_counter()
    system = open_system(name, Path(spec["root"]), BULK_SID, spec["floor_rows"])
    t2 = time.perf_counter()
    system.read(BULK_SID, spec["question"])
    t3 = time.perf_counter()
    system.read(BULK_SID, spec["question"])
    t4 = time.perf_counter()
    return {
        "import_s": t1 - t0,  # from the script's first line: its imports and the engine's
        "open_s": t2 - t1,
        "first_read_s": t3 - t2,
        "open_and_first_read_s": t3 - t1,
        "second_read_s": t4 - t3,
    }


# -- child: memory released by dropped stores ----------------------------------------------


def _mb() -> float:
    return rss_bytes() / 2**20


def memory_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Open, use and drop ``stores`` stores (plus a warm-up one); RSS after each drop."""
    kind, stores, exchanges = spec["kind"], int(spec["stores"]), int(spec["exchanges"])
    lines = Lines(spec["data"])
    if kind == "ours":
        from langchain_recursive_memory.core import HybridMemory, MemoryStore, Turn
    else:
        import chromadb
        from chromadb.config import Settings

    def one(n: int) -> None:
        sid = f"m{n}"
        if kind == "ours":
            store = MemoryStore.in_memory()
            memory = HybridMemory(
                sid, store=store, max_tokens=MAX_TOKENS, max_summary_tokens=SUMMARY_TOKENS
            )
            for i in range(exchanges):
                turns, question = lines.exchange(i), lines.question(i)
                memory.add([Turn(role=r, text=t, name=nm) for r, nm, t in turns])
                memory.context(question)
            del memory, store
        else:
            client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
            coll = client.create_collection(f"raw-{uuid.uuid4().hex[:12]}", embedding_function=None)
            for i in range(exchanges):
                turns = lines.exchange(i)
                placeholders: list[Sequence[float]] = [[0.0] for _ in turns]  # as the library
                coll.add(
                    ids=[f"{sid}:{2 * i + j}" for j in range(len(turns))],
                    documents=[t for _, _, t in turns],
                    metadatas=[
                        {"sid": sid, "seq": 2 * i + j, "role": r, "name": nm}
                        for j, (r, nm, _) in enumerate(turns)
                    ],
                    embeddings=placeholders,
                )
                coll.get(where={"sid": sid}, include=["documents", "metadatas"])
            del coll, client

    start = _mb()
    t0 = time.perf_counter()
    one(-1)  # warm-up: imports, the first client, one-time allocations
    gc.collect()
    after_warmup = _mb()
    points = []
    for n in range(stores):
        one(n)
        gc.collect()
        points.append(_mb())
    trimmed = malloc_trim()
    after_trim = _mb()
    return {
        "kind": kind,
        "stores": stores,
        "exchanges": exchanges,
        "rss_start_mb": start,
        "rss_after_warmup_mb": after_warmup,
        "rss_after_each_mb": points,
        "rss_after_malloc_trim_mb": after_trim,
        "malloc_trim": trimmed,
        "growth_per_store_mb": (points[-1] - after_warmup) / stores,
        "growth_per_store_after_trim_mb": (after_trim - after_warmup) / stores,
        "seconds": time.perf_counter() - t0,
    }


CHILDREN = {
    "exchange": exchange_child,
    "bulk": bulk_child,
    "first_read": first_read_child,
    "memory": memory_child,
}


def first_reads(systems: list[str], spec: dict[str, Any], args: Any) -> dict[str, Any]:
    """Each system's first read in ``args.first_reads`` fresh processes, systems taking turns
    (each round in the other order); per system the median of each time and every sample."""
    samples: dict[str, list[dict[str, float]]] = {s: [] for s in systems}
    for run in range(args.first_reads):
        console.print(f"first read in a fresh process, round {run + 1} of {args.first_reads}")
        for s in systems if run % 2 == 0 else systems[::-1]:
            t0 = time.perf_counter()
            got = run_child("first_read", {**spec, "system": s}, timeout=3600)
            got["process_s"] = time.perf_counter() - t0  # spawn to exit, as the parent saw
            samples[s].append(got)
    return {
        s: {k: statistics.median(x[k] for x in got) for k in got[0]} | {"samples": got}
        for s, got in samples.items()
    }


def run_child(kind: str, spec: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), CHILD, kind, json.dumps(spec)]
    return child_json(command, f"{kind} child", timeout=timeout, stderr=False)


# -- report --------------------------------------------------------------------------------


def exchange_rows(result: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for size, got in result["exchange"].items():
        base = got["systems"].get(BASELINE)
        for s, row in got["systems"].items():
            capped = got["capped"].get(s)
            rows.append(
                [
                    s,
                    f"{int(size):,}" + (f" (capped at {capped})" if capped else ""),
                    *(
                        fmt_ms(row[w][k])
                        for w, k in (
                            ("first", "p50_ms"),
                            ("first", "p90_ms"),
                            ("last", "p50_ms"),
                            ("last", "p90_ms"),
                            ("all", "p50_ms"),
                            ("all", "add_p50_ms"),
                            ("all", "read_p50_ms"),
                        )
                    ),
                    fmt_ratio(ratio(row["all"]["p50_ms"], base and base["all"]["p50_ms"])),
                    fmt_ratio(ratio(row["last"]["p50_ms"], base and base["last"]["p50_ms"])),
                    fmt_ratio(block_ratio(row, base)),
                    fmt_ratio(row.get("in_chroma_share"), percent=True),
                ]
            )
    return rows


def report(result: dict[str, Any]) -> None:
    if result.get("exchange"):
        console.print(
            f"first/last = the first/last {WINDOW} exchanges; add, read = their p50 over all; "
            "/LI = the system's p50 over LlamaIndex Memory's in the same run (all, last "
            f"{WINDOW}, and blk: the median over blocks of {WINDOW} of the blocks' ratios); "
            "Chroma = the share of our time spent inside Chroma calls"
        )
        print_table(
            f"Per exchange (add user + assistant, then the read), ms; label {result['label']}",
            [
                "system",
                "exchanges",
                "first p50",
                "first p90",
                "last p50",
                "last p90",
                "all p50",
                "add",
                "read",
                "/LI all",
                "/LI last",
                "/LI blk",
                "Chroma",
            ],
            exchange_rows(result),
        )
    bulk = result.get("bulk")
    if bulk:
        first = result.get("first_read") or {}
        print_table(
            f"Bulk ingest of {bulk['turns']:,} turns (batches of {bulk['batch']}), "
            "first read in a fresh process",
            [
                "system",
                "ingest s",
                "turns/s",
                "fresh: import s",
                "open s",
                "first read s",
                "second read s",
                "process s",
            ],
            [
                [
                    s,
                    secs,
                    bulk["turns_per_second"][s],
                    *(
                        [
                            first[s]["import_s"],
                            first[s]["open_s"],
                            first[s]["first_read_s"],
                            first[s]["second_read_s"],
                            first[s].get("process_s", 0.0),
                        ]
                        if s in first
                        else ["-"] * 5
                    ),
                ]
                for s, secs in bulk["seconds"].items()
            ],
        )
    mem = result.get("memory")
    if mem:
        print_table(
            "Memory released by dropped stores (RSS MB)",
            [
                "kind",
                "stores x exchanges",
                "after warm-up",
                "after last",
                "per store",
                "per store after malloc_trim",
            ],
            [
                [
                    k,
                    f"{m['stores']} x {m['exchanges']}",
                    m["rss_after_warmup_mb"],
                    m["rss_after_each_mb"][-1],
                    m["growth_per_store_mb"],
                    m["growth_per_store_after_trim_mb"],
                ]
                for k, m in mem.items()
            ],
        )


def draw(result: dict[str, Any]) -> Any:
    def plot(path: Path) -> None:
        plt = pyplot()
        panels = len(result.get("exchange", {})) + (1 if result.get("bulk") else 0)
        fig, axes = plt.subplots(1, max(panels, 1), figsize=(6.5 * max(panels, 1), 4.6))
        axes = [axes] if panels <= 1 else list(axes)
        for ax, (size, got) in zip(axes, result.get("exchange", {}).items(), strict=False):
            for s, row in got["systems"].items():
                blocks = row["blocks_p50_ms"]
                xs = [(j + 1) * WINDOW for j in range(len(blocks))]
                ax.plot(xs, blocks, marker="." if len(xs) < 30 else None, label=s)
            ax.set_yscale("log")
            ax.set_xlabel("exchange")
            ax.set_ylabel(f"ms per exchange (p50 of {WINDOW})")
            ax.set_title(f"{int(size):,} exchanges ({result['label']})")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        bulk = result.get("bulk")
        if bulk:
            ax = axes[-1]
            names = list(bulk["seconds"])
            first = result.get("first_read") or {}
            at = list(range(len(names)))
            ax.bar(
                [x - 0.2 for x in at],
                [bulk["seconds"][s] for s in names],
                0.4,
                label=f"ingest {bulk['turns']:,} turns (s)",
            )
            ax.bar(
                [x + 0.2 for x in at],
                [first[s]["open_and_first_read_s"] if s in first else 0 for s in names],
                0.4,
                label="fresh process: open + first read (s)",
            )
            ax.set_xticks(at, names)
            ax.set_yscale("log")
            ax.set_title("bulk ingest, first read")
            ax.grid(True, axis="y", which="both", alpha=0.3)
            ax.legend(fontsize=8)
        save_figure(fig, path)

    return plot


# -- main ----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == CHILD:
        got = CHILDREN[argv[1]](json.loads(argv[2]))
        print(json.dumps(got))
        return 0
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--label", default="run")
    p.add_argument("--sizes", default="600,10000", help="exchanges per run, comma-separated")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--parts", default=",".join(PARTS))
    p.add_argument("--out", default=str(RESULTS), help="directory of the JSON and PNG")
    p.add_argument("--data", default=str(DEFAULT_LOCOMO), help="a LoCoMo-format file")
    p.add_argument("--quick", action="store_true", help="a smoke run: 30 exchanges, small parts")
    p.add_argument(
        "--replot",
        action="store_true",
        help="print the tables and redraw the PNG of <out>/exchange-<label>.json, measure nothing",
    )
    p.add_argument("--floor-rows", type=int, default=50, help="rows the SQLite floor reads")
    p.add_argument("--bulk-turns", type=int, default=10_000)
    p.add_argument("--ingest-batch", type=int, default=1000)
    p.add_argument(
        "--first-reads", type=int, default=5, help="fresh processes per system (medians)"
    )
    p.add_argument("--mem-stores", type=int, default=10)
    p.add_argument("--mem-exchanges", type=int, default=150)
    p.add_argument(
        "--cap-minutes",
        type=float,
        default=90.0,
        help="stop a system's exchanges once they took this long (others go on)",
    )
    args = p.parse_args(argv)
    if args.replot:
        path = Path(args.out) / f"exchange-{args.label}.json"
        old = json.loads(path.read_text())
        draw(old)(path.with_suffix(".png"))
        report(old)
        console.print(f"load: start {old['uptime_start']}\n      end   {old['uptime_end']}")
        return 0
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    parts = [s.strip() for s in args.parts.split(",") if s.strip()]
    for s in systems:
        if s not in SYSTEMS:
            raise SystemExit(f"unknown system {s!r} (choose from {', '.join(SYSTEMS)})")
    if args.quick:
        sizes, args.bulk_turns, args.mem_stores, args.mem_exchanges = [30], 300, 3, 30
        args.first_reads = 2
    data = str(Path(args.data).resolve())
    if not Path(data).exists():
        raise SystemExit(f"{data}: no such file (give --data)")
    result: dict[str, Any] = {
        "label": args.label,
        "code": library_version(),
        "settings": {
            "sizes": sizes,
            "systems": systems,
            "parts": parts,
            "data": data,
            "max_tokens": MAX_TOKENS,
            "max_summary_tokens": SUMMARY_TOKENS,
            "k": K,
            "window": WINDOW,
            "floor_rows": args.floor_rows,
            "floor_sqlite": "WAL, synchronous=FULL (default), one transaction per exchange",
            "llamaindex": f"Memory.from_defaults(token_limit={MAX_TOKENS}, "
            "async_database_uri=sqlite+aiosqlite), put_messages + get()",
            "bulk_turns": args.bulk_turns,
            "first_reads": args.first_reads,
            "ingest_batch": args.ingest_batch,
            "mem_stores": args.mem_stores,
            "mem_exchanges": args.mem_exchanges,
            "cap_minutes": args.cap_minutes,
            "quick": args.quick,
        },
        "uptime_start": uptime(),
        "exchange": {},
    }
    out_dir = Path(args.out)
    name = f"exchange-{args.label}"
    common = {"data": data, "floor_rows": args.floor_rows}
    t_start = time.perf_counter()

    def save() -> None:
        result["uptime_end"] = uptime()
        result["seconds"] = time.perf_counter() - t_start
        write_result_files(name, result, draw(result), directory=out_dir)

    if "exchange" in parts:
        for size in sizes:
            console.print(f"exchanges: {size:,} x {', '.join(systems)} (one process)")
            spec = {
                **common,
                "size": size,
                "systems": systems,
                "cap_seconds": args.cap_minutes * 60,
                "progress": 10 if size <= 100 else (100 if size <= 1000 else 500),
            }
            result["exchange"][str(size)] = run_child("exchange", spec)
            save()
    with tempfile.TemporaryDirectory(prefix="lrm-bulk-") as tmp:
        if "bulk" in parts or "first_read" in parts:
            console.print(f"bulk ingest: {args.bulk_turns:,} turns x {', '.join(systems)}")
            spec = {
                **common,
                "systems": systems,
                "turns": args.bulk_turns,
                "batch": args.ingest_batch,
                "root": tmp,
            }
            result["bulk"] = run_child("bulk", spec)
            save()
        if "first_read" in parts:
            result["first_read"] = first_reads(
                systems, {**common, "root": tmp, "question": result["bulk"]["question"]}, args
            )
            save()
    if "memory" in parts:
        result["memory"] = {}
        kinds = ["ours", "raw_chromadb"] if "hybrid" in systems else ["raw_chromadb"]
        for kind in kinds:
            console.print(f"memory of dropped stores: {kind}")
            spec = {
                **common,
                "kind": "ours" if kind == "ours" else "raw",
                "stores": args.mem_stores,
                "exchanges": args.mem_exchanges,
            }
            result["memory"][kind] = run_child("memory", spec, timeout=3600)
        save()
    save()
    report(result)
    console.print(f"load: start {result['uptime_start']}\n      end   {result['uptime_end']}")
    console.print(f"wrote {out_dir / (name + '.json')} and .png ({result['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
