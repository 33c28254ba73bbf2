"""Shared helpers of the benchmarks: LoCoMo loading, result files, tables, machine info."""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DEFAULT_LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
_DIA_RE = re.compile(r"^D\d+:\d+$")

console = Console(width=140)


def machine() -> dict[str, Any]:
    """Describe the machine a result was measured on."""
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }


def code_version(root: Path = ROOT) -> dict[str, Any]:
    """The git commit measured, and the library files that differ from it (if any)."""
    import subprocess

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = (git("rev-parse", "HEAD") or "").strip() or None
    status = git("status", "--porcelain", "--", "langchain_recursive_memory", "llamaindex_higmem")
    return {
        "commit": commit,
        "modified_library_files": [line[3:] for line in (status or "").splitlines() if line],
    }


def write_results(name: str, data: dict[str, Any], *, directory: Path | None = None) -> Path:
    """Write ``<name>.json`` to ``benchmarks/results`` (or ``directory``) with machine info."""
    target = RESULTS if directory is None else Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **data}, indent=2, default=str))
    return path


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Print a table with rich."""
    table = Table(title=title)
    for col in columns:
        table.add_column(col, justify="right" if col != columns[0] else "left")
    for row in rows:
        table.add_row(*[f"{v:,.3f}" if isinstance(v, float) else str(v) for v in row])
    console.print(table)


def median_ms(samples: Sequence[float]) -> float:
    """Median of durations in seconds, in milliseconds."""
    return statistics.median(samples) * 1000


class Timer:
    """``with Timer() as t: ...; t.seconds``."""

    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


def load_locomo(path: Path | str = DEFAULT_LOCOMO) -> list[dict[str, Any]]:
    """Load a LoCoMo-format file (a list of samples)."""
    data = json.loads(Path(path).read_text())
    if not isinstance(data, list):
        raise SystemExit(f"{path}: expected a list of LoCoMo samples")
    return data


def locomo_turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """Return a sample's turns in order: ``{dia_id, speaker, text, session, date}``.

    Image turns get their ``blip_caption`` appended as text.
    """
    conv = sample["conversation"]
    sessions = sorted(
        (int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k)),
    )
    out = []
    for n in sessions:
        date = conv.get(f"session_{n}_date_time", "")
        for turn in conv[f"session_{n}"]:
            text = turn.get("text", "")
            if turn.get("blip_caption"):
                text = f"{text} [image: {turn['blip_caption']}]".strip()
            out.append(
                {
                    "dia_id": turn["dia_id"],
                    "speaker": turn["speaker"],
                    "text": text,
                    "session": n,
                    "date": date,
                }
            )
    return out


def evidence_ids(item: dict[str, Any]) -> list[str]:
    """The well-formed evidence dia ids of a QA item (malformed entries split and cleaned)."""
    out: list[str] = []
    for entry in item.get("evidence", []) or []:
        for part in re.split(r"[;,\s]+", str(entry)):
            if _DIA_RE.match(part) and part not in out:
                out.append(part)
    return out
