"""Shared helpers of the benchmarks: LoCoMo loading, result files, tables, plots, statistics,
machine info, the code measured, and the corpus of model answers the parser tests use
(``tests/data/model_answers/``)."""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _shared_data() -> Path:
    """The ``shared/data`` folder beside the checkout (or beside a parent: a worktree)."""
    for parent in ROOT.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    return ROOT.parent / "shared" / "data"


SHARED_DATA = _shared_data()
LIBRARY = ("langchain_recursive_memory", "llamaindex_higmem")
"""The library's packages (the folders whose changes a result's ``code`` records)."""
DEFAULT_LOCOMO = SHARED_DATA / "locomo" / "locomo_dev.json"
DEFAULT_LONGMEMEVAL = SHARED_DATA / "longmemeval" / "longmemeval_s_dev.json.xz"
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


def _git(root: Path, *args: str) -> str | None:
    """``git -C root args`` output, or None when git fails (or is missing)."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def code_version(root: Path = ROOT) -> dict[str, Any]:
    """The git commit measured, and the library files that differ from it (if any)."""
    commit = (_git(root, "rev-parse", "HEAD") or "").strip() or None
    status = _git(root, "status", "--porcelain", "--", *LIBRARY)
    return {
        "commit": commit,
        "modified_library_files": [line[3:] for line in (status or "").splitlines() if line],
    }


def library_version() -> dict[str, Any]:
    """What was measured: the library actually imported (its folder, the commit of its
    checkout, its modified files), which may be another worktree than this script's."""
    import langchain_recursive_memory

    root = Path(langchain_recursive_memory.__file__).resolve().parents[1]
    out = code_version(root)
    out["library_path"] = str(root)
    commit = _git(root, "log", "-1", "--format=%H", "--", *LIBRARY)
    out["library_commit"] = None if commit is None else commit.strip()
    out["script_commit"] = code_version()["commit"]
    return out


def write_results(name: str, data: dict[str, Any], *, directory: Path | None = None) -> Path:
    """Write ``<name>.json`` to ``benchmarks/results`` (or ``directory``) with machine info."""
    target = RESULTS if directory is None else Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **data}, indent=2, default=str))
    return path


def write_result_files(
    name: str,
    data: dict[str, Any],
    draw: Callable[[Path], object] | None = None,
    *,
    directory: Path | None = None,
) -> tuple[Path, Path | None]:
    """:func:`write_results`, then ``draw(<name>.png)`` beside the JSON; both paths."""
    path = write_results(name, data, directory=directory)
    if draw is None:
        return path, None
    png = path.with_suffix(".png")
    draw(png)
    return path, png


def load_result(name: str, directory: Path = RESULTS) -> dict[str, Any]:
    """A result written by :func:`write_results` (``<directory>/<name>.json``)."""
    data: dict[str, Any] = json.loads((directory / f"{name}.json").read_text())
    return data


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Print a table with rich."""
    table = Table(title=title)
    for j, col in enumerate(columns):  # the first column is never wrapped or cut
        table.add_column(col, justify="left" if j == 0 else "right", no_wrap=j == 0)
    for row in rows:
        table.add_row(*[f"{v:,.3f}" if isinstance(v, float) else str(v) for v in row])
    console.print(table)


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> Path:
    """Lay out a matplotlib figure, write it to ``path`` (PNG, 120 dpi) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def pct(seconds: Sequence[float], q: float, method: str = "linear") -> float:
    """The ``q``-th percentile of durations in seconds, in milliseconds (0 when empty).

    ``method`` is numpy's (``"lower"``: the sample at ``floor(q / 100 * (n - 1))``).
    """
    if not len(seconds):
        return 0.0
    import numpy as np

    xs = np.asarray(seconds, dtype=float)
    return float(np.percentile(xs, q, method=method) * 1000)  # type: ignore[call-overload]


def mean_or_none(values: Sequence[float]) -> float | None:
    """The mean of ``values``, or None when there are none."""
    return statistics.fmean(values) if values else None


def median_or_none(values: Sequence[float]) -> float | None:
    """The median of ``values``, or None when there are none."""
    return statistics.median(values) if values else None


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


def load_longmemeval(path: Path | str = DEFAULT_LONGMEMEVAL) -> list[dict[str, Any]]:
    """Load a LongMemEval-format file (a JSON list of questions; ``.xz`` is decompressed)."""
    import lzma

    path = Path(path)
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, list):
        raise SystemExit(f"{path}: expected a list of LongMemEval questions")
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


class Lines:
    """LoCoMo's dev turns, conversations one after another, cycled: ``(speaker, text)``.

    The endless conversation the per-exchange benchmarks play: even turns are the user's.
    """

    def __init__(self, path: Path | str) -> None:
        self.lines = [
            (str(t["speaker"]), str(t["text"]))
            for sample in load_locomo(path)
            for t in locomo_turns(sample)
            if t["text"]
        ]
        if len(self.lines) < 3:
            raise SystemExit(f"{path}: too few turns")

    def turn(self, n: int) -> tuple[str, str, str]:
        """Turn ``n`` of the endless conversation: (role, speaker, text); even n = user."""
        speaker, text = self.lines[n % len(self.lines)]
        return ("user" if n % 2 == 0 else "assistant"), speaker, text

    def exchange(self, i: int) -> list[tuple[str, str, str]]:
        """Exchange ``i``: its user and assistant turns."""
        return [self.turn(2 * i), self.turn(2 * i + 1)]

    def question(self, i: int) -> str:
        """The user's next message after exchange ``i`` (what the next read asks)."""
        return self.turn(2 * i + 2)[2]

    def summary(self, chars: int) -> str:
        """A fixed summary for a fake summarizer: the first lines, ``chars`` long."""
        text = " ".join(f"{s} said: {t}" for s, t in self.lines[:40])
        return "Summary of the conversation so far: " + text[:chars]


# -- ratios in one run, and how loaded the machine was ----------------------------------------


def ratio(value: float, base: float | None) -> float | None:
    """``value / base``; None without a base."""
    return value / base if base else None


def block_ratio(row: dict[str, Any], base: dict[str, Any] | None) -> float | None:
    """The median, over blocks of exchanges, of a block's p50 over the baseline's p50 in
    the same block (``blocks_p50_ms``): a ratio the machine's load drifting affects least."""
    if not base:
        return None
    pairs = zip(row["blocks_p50_ms"], base["blocks_p50_ms"], strict=False)
    ratios = [a / b for a, b in pairs if b]
    return statistics.median(ratios) if ratios else None


def fmt_ratio(v: float | None, percent: bool = False) -> str:
    """A ratio as ``1.23x`` (or ``12%``); ``-`` for none."""
    if v is None:
        return "-"
    return f"{v * 100:.0f}%" if percent else f"{v:.2f}x"


def fmt_ms(v: float) -> str:
    """Milliseconds with 3 significant figures or so."""
    return f"{v:.2f}" if v < 10 else f"{v:.1f}"


def sums(a: Sequence[float], b: Sequence[float], window: int) -> list[float]:
    """The last ``window`` pairs of two per-sample series, added (an add plus its read)."""
    return [x + y for x, y in zip(a[-window:], b[-window:], strict=True)]


def progress(
    tag: str, done: str, started: float, recent: Mapping[str, Sequence[float]], window: int
) -> None:
    """A progress line on stderr: how far, how long, each system's p50 of its last samples."""
    p50s = ", ".join(f"{name} {pct(v[-window:], 50):.1f} ms" for name, v in recent.items())
    print(
        f"[{tag}] {done}, {time.perf_counter() - started:.0f} s; last-{window} p50: {p50s}",
        file=sys.stderr,
        flush=True,
    )


def uptime() -> str:
    """``uptime``'s line (the load averages), for a result's record of the machine's load."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return " ".join(f"{x:.2f}" for x in os.getloadavg())


def evidence_ids(item: dict[str, Any]) -> list[str]:
    """The well-formed evidence dia ids of a QA item (malformed entries split and cleaned)."""
    out: list[str] = []
    for entry in item.get("evidence", []) or []:
        for part in re.split(r"[;,\s]+", str(entry)):
            if _DIA_RE.match(part) and part not in out:
                out.append(part)
    return out


# -- the corpus of model answers (tests/data/model_answers/) -------------------------------
#
# One JSONL file per prompt; each line is one answer a model gave (or would give) to that
# prompt, with what the library's parser must extract from it:
#
#   {"id": "...", "style": "gpt-4o-mini | claude | open-model | <recorded model>",
#    "issue": "14.1" (optional), "note": "...", "args": {...}, "answer": "...",
#    "expect": {...}}
#
# ``args`` are what the parser needs besides the answer (read from the prompt by
# ``AnswerKind.args``); ``expect`` is compared with ``AnswerKind.describe(answer, args)`` by
# ``matches`` (the keys given must match; lists in order). ``benchmarks/locomo.py --record
# DIR`` appends real answers in this format, labelled with what the parser extracted then.

CORPUS = ROOT / "tests" / "data" / "model_answers"


@dataclass(frozen=True)
class AnswerKind:
    """One prompt of the corpus: how to recognise it, read its args, and parse an answer."""

    name: str
    recognises: Callable[[str], bool]
    args: Callable[[str], dict[str, Any]]
    describe: Callable[[str, Mapping[str, Any]], dict[str, Any]]


ANSWER_KINDS: dict[str, AnswerKind] = {}


def register_kind(kind: AnswerKind) -> AnswerKind:
    """Add ``kind`` to :data:`ANSWER_KINDS` (the first that recognises a prompt wins)."""
    ANSWER_KINDS[kind.name] = kind
    return kind


def kind_of(prompt: str) -> AnswerKind | None:
    """The corpus kind of a prompt, or None."""
    return next((k for k in ANSWER_KINDS.values() if k.recognises(prompt)), None)


def matches(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` has what ``expected`` says (dict keys given, lists in order)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and matches(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list | tuple)
            and len(expected) == len(actual)
            and all(matches(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


def load_corpus(directory: Path = CORPUS) -> list[tuple[str, dict[str, Any]]]:
    """Every ``(kind, entry)`` of the corpus files in ``directory``."""
    out = []
    for path in sorted(directory.glob("*.jsonl")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if line.strip():
                try:
                    out.append((path.stem, json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise SystemExit(f"{path}:{number}: not JSON ({exc})") from exc
    return out


def append_corpus(directory: Path, kind: str, entries: Sequence[Mapping[str, Any]]) -> int:
    """Append ``entries`` to ``<directory>/<kind>.jsonl`` (ids already there are skipped)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{kind}.jsonl"
    seen = {e["id"] for k, e in load_corpus(directory) if k == kind}
    fresh = [e for e in entries if e["id"] not in seen]
    with path.open("a") as f:
        for entry in fresh:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return len(fresh)


def _block(prompt: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", prompt, re.S)
    return match.group(1) if match else ""


def _numbered(text: str) -> int:
    return len(re.findall(r"^\[\d+\] ", text, re.M))


def _rejected(exc: Exception) -> dict[str, Any]:
    return {"rejected": True, "reason": f"{type(exc).__name__}: {exc}"}


def _fact_dict(fact: Any, ids: Sequence[str]) -> dict[str, Any]:
    return {
        "key": fact.key,
        "fact": fact.text,
        "time": fact.time,
        "sources": [ids.index(t) + 1 for t in fact.source_turn_ids],
    }


def _summary_args(prompt: str) -> dict[str, Any]:
    previous = _block(prompt, "summary")
    messages = _block(prompt, "messages")
    return {
        "previous": None if previous.startswith("(empty") else previous,
        "messages": messages,
        "n_messages": _numbered(messages),
    }


def _describe_summary(answer: str, args: Mapping[str, Any]) -> dict[str, Any]:
    from langchain_recursive_memory.core.errors import ModelOutputError
    from langchain_recursive_memory.core.prompts import parse_summary

    previous = args.get("previous")
    sources = "\n".join([previous or "", args.get("messages", "")])
    try:
        return {"summary": parse_summary(answer, previous=previous, sources=sources)}
    except ModelOutputError as exc:
        return _rejected(exc)


def _describe_combined(answer: str, args: Mapping[str, Any]) -> dict[str, Any]:
    from langchain_recursive_memory.core.errors import ModelOutputError
    from langchain_recursive_memory.core.prompts import check_grounded, check_kept, parse_combined

    ids = [f"m{i}" for i in range(1, int(args.get("n_messages", 0)) + 1)]
    previous = args.get("previous")
    sources = "\n".join([previous or "", args.get("messages", "")])
    try:
        summary, facts, problem = parse_combined(answer, ids)
        summary = check_kept(check_grounded(summary, sources), previous)
    except ModelOutputError as exc:
        return _rejected(exc)
    return {
        "summary": summary,
        "facts": None if facts is None else [_fact_dict(f, ids) for f in facts],
        "facts_problem": problem,
    }


def _describe_facts(answer: str, args: Mapping[str, Any]) -> dict[str, Any]:
    from langchain_recursive_memory.core.errors import ModelOutputError
    from langchain_recursive_memory.core.prompts import parse_facts

    ids = [f"m{i}" for i in range(1, int(args.get("n_messages", 0)) + 1)]
    try:
        return {"facts": [_fact_dict(f, ids) for f in parse_facts(answer, ids)]}
    except ModelOutputError as exc:
        return _rejected(exc)


def _describe_shorten(answer: str, args: Mapping[str, Any]) -> dict[str, Any]:
    from langchain_recursive_memory.core.errors import ModelOutputError
    from langchain_recursive_memory.core.prompts import clean_summary

    try:
        return {"summary": clean_summary(answer)}
    except ModelOutputError as exc:
        return _rejected(exc)


_EVENT_LINE_RE = re.compile(r"^(E\d+) \((\d+) turns\): (.*)$", re.M)


def _index_args(prompt: str) -> dict[str, Any]:
    events = [
        {"summary": m.group(3), "turns": int(m.group(2))}
        for m in _EVENT_LINE_RE.finditer(_block(prompt, "events"))
    ]
    last = re.search(r"The last updated event is (E\d+)", prompt)
    return {
        "n_turns": _numbered(_block(prompt, "turns")),
        "candidates": events,
        "last": last.group(1) if last else None,
    }


def _describe_index(answer: str, args: Mapping[str, Any]) -> dict[str, Any]:
    from langchain_recursive_memory.core.errors import ModelOutputError
    from langchain_recursive_memory.core.events import Event
    from langchain_recursive_memory.core.higmem.affiliation import Aliases
    from langchain_recursive_memory.core.prompts import parse_analysis

    n_turns = int(args["n_turns"])
    candidates = [
        Event(f"event-{i}", c["summary"], turn_ids=tuple(f"old-{i}-{j}" for j in range(c["turns"])))
        for i, c in enumerate(args.get("candidates", []), start=1)
    ]
    last = args.get("last")
    aliases = Aliases(candidates, candidates[int(last[1:]) - 1] if last else None)
    try:
        analysis = parse_analysis(answer, n_turns)
    except ModelOutputError as exc:
        return _rejected(exc)
    known = {e.id: e for e in candidates}
    affiliation = aliases.affiliate(analysis, n_turns, known)

    def label(eid: str) -> str:
        return aliases.of_id.get(eid) or f"NEW:{affiliation.titles.get(eid, '?')}"

    turns = {}
    for n in range(1, n_turns + 1):
        item = analysis.turns.get(n, {})
        turns[str(n)] = {
            "events": [label(e) for e in affiliation.turn_events[n]],
            "keywords": list(item.get("keywords") or []),
        }
    return {
        "turns": turns,
        "unanalysed": affiliation.unanalysed,
        "updated": sorted(label(e) for e in affiliation.specs),
        "summaries": {label(e): str(s.get("summary", "")) for e, s in affiliation.specs.items()},
    }


def _list_args(prompt: str) -> dict[str, Any]:
    return {"size": _numbered(_block(prompt, "turns"))}


def _describe_list(answer: str, args: Mapping[str, Any]) -> dict[str, Any]:
    from langchain_recursive_memory.core.errors import ModelOutputError
    from langchain_recursive_memory.core.prompts import parse_number_list

    try:
        return {"turns": parse_number_list(answer, int(args["size"]))}
    except ModelOutputError as exc:
        return _rejected(exc)


def _rewrite_args(prompt: str) -> dict[str, Any]:
    match = re.search(r"Question: (.*)\s*$", prompt)
    return {"question": match.group(1).strip() if match else ""}


def _describe_rewrite(answer: str, args: Mapping[str, Any]) -> dict[str, Any]:
    from langchain_recursive_memory.core.prompts import parse_rewrite

    return {"query": parse_rewrite(answer, str(args.get("question", "")))}


def _starts(template: str) -> Callable[[str], bool]:
    head = template.split("{")[0][:40]
    return lambda prompt: prompt.startswith(head)


def _library_kinds() -> None:
    from langchain_recursive_memory.core.prompts import (
        FACTS_PROMPT,
        FILTER_PROMPT,
        PREDICT_PROMPT,
        REWRITE_PROMPT,
    )
    from langchain_recursive_memory.core.prompts.higmem import ANALYSE_PROMPT
    from langchain_recursive_memory.core.prompts.summary import (
        ANSWER_WITH_FACTS,
        SHORTEN_PROMPT,
        SUMMARY_PROMPT,
    )

    summary = _starts(SUMMARY_PROMPT)
    for kind in (
        AnswerKind(
            "combined",
            lambda p: summary(p) and ANSWER_WITH_FACTS in p,
            _summary_args,
            _describe_combined,
        ),
        AnswerKind("summary", summary, _summary_args, _describe_summary),
        AnswerKind("shorten", _starts(SHORTEN_PROMPT), lambda p: {}, _describe_shorten),
        AnswerKind("facts", _starts(FACTS_PROMPT), _summary_args, _describe_facts),
        AnswerKind("higmem_index", _starts(ANALYSE_PROMPT), _index_args, _describe_index),
        AnswerKind("higmem_predict", _starts(PREDICT_PROMPT), _list_args, _describe_list),
        AnswerKind("higmem_filter", _starts(FILTER_PROMPT), _list_args, _describe_list),
        AnswerKind("higmem_rewrite", _starts(REWRITE_PROMPT), _rewrite_args, _describe_rewrite),
    ):
        register_kind(kind)


_library_kinds()
