"""The modules of ``benchmarks/live.py`` (the command; its docstring describes the benchmark):

* ``talk``: the conversation (LoCoMo cycled with variations) and its questions;
* ``systems``: the library's engines and raw chromadb (the floor), their embedders;
* ``scenarios``: the size sweep, the first read in a fresh process, a user's scope, ratios;
* ``throughput``: many sessions at once over a ``chroma run`` server (``--concurrency``);
* ``worker``: the memory of a long-running worker (``--worker-memory N``);
* ``report``: the tables, verdicts against the targets, PNGs and result files;
* ``cli``: the command line.
"""

from pathlib import Path

LIVE = Path(__file__).resolve().parents[1] / "live.py"
"""The command: the children of the live benchmark (first reads, workers) run through it."""
