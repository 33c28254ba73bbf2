"""How long moving a 0.2.0 store's log into the database takes (``docs/upgrading-0.3.md``).

Writes a store with the **0.2.0 release** (a checkout and its venv given with
``--release``: the store must be what 0.2.0 writes), ``--sessions`` hybrid sessions of
``--turns`` turns each (LoCoMo texts, no model, no embedder, folded as 0.2.0 folds them),
then opens it with this checkout's code in a fresh process, which moves it (timed), and
checks every turn arrived. Prints a table and writes ``results/migration-<label>.json``.

Run (the 0.2.0 release in a worktree, as ``tests/data/make_store_0_2_0.py`` does)::

    git worktree add --detach /tmp/v020 74f87b1
    python3 -m venv /tmp/v020/.venv && /tmp/v020/.venv/bin/pip install -e "/tmp/v020[all]"
    .venv/bin/python benchmarks/migration.py --release /tmp/v020 --sessions 20 --turns 5000
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import (
    DEFAULT_LOCOMO,
    code_version,
    console,
    load_locomo,
    load_result,
    locomo_turns,
    machine,
    print_table,
    pyplot,
    save_figure,
    write_result_files,
)

WRITER = r"""
import json, sys, time
from langchain_recursive_memory.core import HybridMemory, MemoryStore, Turn
import langchain_recursive_memory as lrm
assert lrm.__version__ == "0.2.0", lrm.__version__
path, sessions, turns, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
texts = json.loads(sys.stdin.read())
store = MemoryStore.persistent(path)
started = time.monotonic()
for s in range(sessions):
    memory = HybridMemory(f"s{s}", store=store, max_tokens=2000)
    for start in range(0, turns, batch):
        memory.add([
            Turn(role="user" if (start + i) % 2 == 0 else "assistant",
                 text=texts[(s * 7919 + start + i) % len(texts)],
                 created_at=1.7e9 + (start + i) * 30.0)
            for i in range(min(batch, turns - start))
        ])
print(json.dumps({"seconds": time.monotonic() - started}))
"""

MOVER = r"""
import json, logging, sys, time
logging.basicConfig(level=logging.WARNING)
started = time.monotonic()
from langchain_recursive_memory.core import MemoryStore
store = MemoryStore.persistent(sys.argv[1])
moved = time.monotonic() - started
count = sum(store.count_turns(s.namespace, s.session_id) for s in store.sessions())
print(json.dumps({"seconds": moved, "turns": count, "sessions": len(store.sessions())}))
"""


def _texts(path: Path) -> list[str]:
    return [t["text"] for sample in load_locomo(path) for t in locomo_turns(sample) if t["text"]]


def draw(data: dict[str, Any]) -> Callable[[Path], object]:
    """The plot: 0.2.0's write of the store beside 0.3.0's move of it, in seconds."""

    def plot(path: Path) -> object:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7, 2.4))
        labels = ["0.2.0 writes the store", "0.3.0 moves it (first open)"]
        values = [data["write"]["seconds"], data["move"]["seconds"]]
        bars = ax.barh(labels, values, color=["#999999", "#1f77b4"])
        ax.bar_label(bars, labels=[f"{v:.1f} s" for v in values], padding=3)
        ax.invert_yaxis()
        ax.set_xlabel("seconds")
        turns = data["move"]["turns"]
        ax.set_title(
            f"{turns:,} turns in {data['move']['sessions']} sessions: "
            f"{data['seconds_per_100k_turns']:.1f} s per 100,000 turns"
        )
        ax.set_xlim(0, max(values) * 1.15)
        return save_figure(fig, path)

    return plot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path, required=True, help="a 0.2.0 checkout with .venv")
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=5000, help="turns per session")
    parser.add_argument("--batch", type=int, default=500, help="turns per 0.2.0 add")
    parser.add_argument("--label", default="0.3.0")
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument(
        "--replot", action="store_true", help="draw results/migration-<label>.json again, only"
    )
    args = parser.parse_args()
    if args.replot:
        name = f"migration-{args.label}"
        path = draw(load_result(name))(Path(__file__).parent / "results" / f"{name}.png")
        console.print(f"wrote {path}")
        return
    old_python = args.release / ".venv" / "bin" / "python"
    folder = Path(tempfile.mkdtemp(prefix="lrm-migration-"))
    try:
        run(args, old_python, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # a 100,000-turn store is 310 MB


def run(args: argparse.Namespace, old_python: Path, folder: Path) -> None:
    """Write the store with 0.2.0 in ``folder``, move it with this checkout, report."""
    total = args.sessions * args.turns
    console.print(f"writing {total:,} turns with 0.2.0 ({old_python}) into {folder}")
    written = subprocess.run(
        [str(old_python), "-c", WRITER, str(folder), str(args.sessions), str(args.turns),
         str(args.batch)],
        input=json.dumps(_texts(args.data)), capture_output=True, text=True, check=True,
        cwd=tempfile.gettempdir(),
    )  # fmt: skip
    write = json.loads(written.stdout.strip().splitlines()[-1])
    console.print(f"written in {write['seconds']:.0f} s; moving with this checkout")
    moved = subprocess.run(
        [sys.executable, "-c", MOVER, str(folder)], capture_output=True, text=True, check=True
    )
    move = json.loads(moved.stdout.strip().splitlines()[-1])
    assert move["turns"] == total, (move, total)
    per_100k = move["seconds"] * 100_000 / total
    rows = [
        ("turns", f"{total:,}", f"{args.sessions} sessions x {args.turns:,}"),
        ("0.2.0 write", f"{write['seconds']:.1f} s", "HybridMemory.add in batches, no model"),
        ("move (first open)", f"{move['seconds']:.1f} s", f"{move['turns']:,} turns read back"),
        ("per 100,000 turns", f"{per_100k:.1f} s", "the move, scaled"),
    ]
    print_table(f"Moving a 0.2.0 store into the database ({args.label})", ["", "value", ""], rows)
    data = {
        "machine": machine(),
        "code": code_version(),
        "settings": vars(args) | {"release": str(args.release), "data": str(args.data)},
        "write": write,
        "move": move,
        "seconds_per_100k_turns": per_100k,
        "store_bytes": sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()),
    }
    out, png = write_result_files(f"migration-{args.label}", data, draw(data))
    console.print(f"wrote {out} and {png}")


if __name__ == "__main__":
    main()
