"""What the live benchmark prints and draws: the tables of each scenario, the verdicts
against the issue's targets, the PNGs, and the result files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import console, print_table, pyplot, save_figure, write_result_files

from .systems import FLOOR

TARGETS = {
    "growth": ("add+read p50, largest size / 1,000 turns", 1.3, "<="),
    "floor": ("add+read p50 / raw Chroma's, largest size", 3.0, "<="),
    "user": ("user-scope read / session-scope read, p50", 2.0, "<="),
    "first_read": ("first read in a fresh process, largest size (s)", 2.0, "<="),
    "throughput": ("turns/s, ours / raw Chroma", 0.5, ">="),
}
COLORS = {FLOOR: "grey", "recursive": "tab:green", "hybrid": "tab:blue", "higmem": "tab:red"}


def verdict(value: float | None, target: float, sense: str) -> str:
    if value is None:
        return "-"
    ok = value <= target if sense == "<=" else value >= target
    return "PASS" if ok else "FAIL"


def floor_total(row: dict[str, Any], mode: str) -> float:
    """The floor's add + query p50, embedding included when there is an embedder."""
    if mode == "none":
        return float(row["total_p50_ms"])
    return float(row["total_with_embedding_p50_ms"])


def written(
    out: str,
    result: dict[str, Any],
    draw: Callable[[Path], object] | None,
    results_dir: Path | None,
) -> dict[str, Any]:
    """Write ``<out>.json`` (and ``<out>.png`` with ``draw``); ``result`` with their paths."""
    path, png = write_result_files(out, result, draw, directory=results_dir)
    result["json"] = str(path)
    if png is not None:
        result["png"] = str(png)
    console.print(f"wrote {path}")
    return result


# -- the sweep ----------------------------------------------------------------------------------


def report(result: dict[str, Any]) -> None:
    """Print the latency tables and the ratios against their targets."""
    for mode, got in result["modes"].items():
        _latency_table(mode, got)
        _targets_table(mode, got)


def _latency_table(mode: str, got: dict[str, Any]) -> None:
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
        ["system", "turns", "add", "read", "add + read", "in Chroma", "library", "x raw Chroma"],
        rows,
    )


def _targets_row(engine: str, got: dict[str, Any]) -> list[str]:
    r = got["ratios"][engine]
    first = got.get("first_read", {}).get(engine, {})
    user = got.get("user", {}).get(engine, {})
    return [
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


def _targets_table(mode: str, got: dict[str, Any]) -> None:
    rat = got["ratios"]
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
        [_targets_row(engine, got) for engine in got["engines"]],
    )


def plot(result: dict[str, Any], path: Path) -> Path:
    """Log-log: add + read p50 per exchange against the session's turns, per embedder."""
    plt = pyplot()
    modes = result["modes"]
    fig, axes = plt.subplots(1, len(modes), figsize=(5.2 * len(modes), 4.2), squeeze=False)
    for ax, (mode, got) in zip(axes[0], modes.items(), strict=True):
        stats = got["sweep"]["sizes"]
        for name in [*got["engines"], FLOOR]:
            sizes = sorted(int(s) for s in stats[name])
            style: dict[str, Any]
            if name == FLOOR:
                ys = [floor_total(stats[name][str(s)], mode) for s in sizes]
                style = {"color": "grey", "linestyle": "--", "label": "raw Chroma (floor)"}
            else:
                ys = [stats[name][str(s)]["total_p50_ms"] for s in sizes]
                style = {"color": COLORS.get(name), "label": name}
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


# -- concurrency --------------------------------------------------------------------------------


def _throughput_cell(system: str, row: dict[str, Any], ratio: float | None) -> str:
    cell = f"{row['turns_per_s']:.1f}"
    if row["error_count"]:
        cell += f" [{row['error_count']} failed]"
    if system != FLOOR:
        cell += f" ({ratio:.2f}x {verdict(ratio, 0.5, '>=')})"
    return cell


def report_concurrency(result: dict[str, Any]) -> None:
    """Turns per second of each case, ours against raw Chroma."""
    cases, ratios, settings = result["cases"], result["ratios"], result["settings"]
    case_names = list(cases[FLOOR])
    print_table(
        f"Turns per second over a chroma server ({settings['seconds']:g} s per case, sessions "
        f"prefilled with {settings['prefill']} turns, embedder {settings['embedder']}); ours / "
        "raw Chroma (target >= 0.5)",
        ["system", *case_names],
        [
            [
                system,
                *(
                    _throughput_cell(system, by_case[c], ratios.get(system, {}).get(c))
                    for c in case_names
                ),
            ]
            for system, by_case in cases.items()
        ],
    )


def plot_concurrency(result: dict[str, Any], path: Path) -> Path:
    """Bars: turns per second per case, ours and raw Chroma side by side."""
    plt = pyplot()
    cases = result["cases"]
    systems = list(cases)
    names = list(cases[FLOOR])
    fig, ax = plt.subplots(figsize=(8.5, 4))
    width = 0.8 / len(systems)
    for i, system in enumerate(systems):
        xs = [j + i * width for j in range(len(names))]
        ax.bar(
            xs,
            [cases[system][n]["turns_per_s"] for n in names],
            width,
            label="raw Chroma" if system == FLOOR else system,
            color=COLORS.get(system),
        )
    ax.set_xticks([j + width * (len(systems) - 1) / 2 for j in range(len(names))], names)
    ax.set_ylabel("turns per second (add + read per exchange)")
    ax.set_title("Many sessions at once over a chroma server")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


# -- the memory of a long-running worker --------------------------------------------------------


def report_worker(result: dict[str, Any]) -> None:
    """RSS every 10 sessions, then what clearing the caches (and the store) gives back."""
    runs, settings = result["runs"], result["settings"]
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
        f"Worker memory: sessions x {settings['turns']} turns, batches of {settings['batch']}, "
        "a read after each",
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


def plot_worker(result: dict[str, Any], path: Path) -> Path:
    plt = pyplot()
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


def replot(saved: dict[str, Any], path: Path) -> Path:
    """Redraw a result's PNG with the plot of its kind (concurrency, worker, or sweep)."""
    drawer = plot_concurrency if "cases" in saved else plot_worker if "runs" in saved else plot
    return drawer(saved, path)
