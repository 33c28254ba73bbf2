"""The command line: ``langchain-recursive-memory`` or ``lrm`` (also ``python -m ...``).

Ingest transcripts (JSONL or LoCoMo) into a memory, look at what the memory hands to the
model (summary, window, facts, HiGMem events, token counts), recall memories for a
question, list, clear and expire sessions, and run an offline demo. Built on
:mod:`langchain_recursive_memory.core` only: it imports neither LangChain nor LlamaIndex
(``--model provider:model`` imports LangChain when, and only when, it is given).

Global options come before the command::

    lrm --path ./memory ingest chat.jsonl --session support-42
    lrm --path ./memory show support-42
    lrm --path ./memory recall support-42 "What is my order number?"
    lrm --host 127.0.0.1 --port 8000 sessions
    lrm demo

Errors of the package (:class:`~.core.RecursiveMemoryError`) are printed as one line on
stderr with exit code 1; bad arguments exit with code 2.

Example:
    >>> from langchain_recursive_memory.cli import parse_duration
    >>> parse_duration("15m"), parse_duration("30d"), parse_duration("90")
    (900.0, 2592000.0, 90.0)
"""

import datetime as dt
import hashlib
import json
import logging
import re
import shlex
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .core import (
    DEFAULT_NAMESPACE,
    ConfigurationError,
    HiGMem,
    HybridMemory,
    InvalidInputError,
    MemoryStore,
    RecursiveMemory,
    RecursiveMemoryError,
    StoredTurn,
    TextModel,
    Turn,
    default_path,
)
from .core.ingest import ingest as ingest_turns
from .core.ingest import locomo_turns, turns_from_dicts

__all__ = ["app", "main", "parse_duration"]

DEFAULT_MAX_TOKENS = 2000
"""The memories' default ``max_tokens`` (also the CLI's)."""

_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}

app = typer.Typer(
    name="lrm",
    help=(
        "Long-term conversation memory on Chroma: ingest transcripts, inspect the summary, "
        "window and facts, recall memories, manage sessions. Offline demo: `lrm demo`."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class InputFormat(str, Enum):
    """Transcript formats ``ingest`` reads."""

    auto = "auto"
    jsonl = "jsonl"
    locomo = "locomo"


class MemoryKind(str, Enum):
    """The memories a session can be read or filled with."""

    recursive = "recursive"
    hybrid = "hybrid"
    higmem = "higmem"


MaxTokensOption = Annotated[
    int | None,
    typer.Option(
        "--max-tokens",
        min=1,
        help=(
            f"Context budget of the recursive/hybrid memory (default {DEFAULT_MAX_TOKENS}); "
            "show and recall need the value used at ingest."
        ),
    ),
]
SummaryTokensOption = Annotated[
    int | None,
    typer.Option(
        "--summary-tokens",
        min=16,
        help="Cap of the summary, inside --max-tokens (default 300).",
    ),
]


@dataclass(frozen=True)
class Settings:
    """The global options, shared by every command.

    Attributes:
        path: The embedded store's directory (None: :func:`~.core.default_path`).
        host: A Chroma server's host (None: the embedded store).
        port: The server's port.
        prefix: Collection name prefix.
        namespace: The namespace given with ``--namespace``, or None.
    """

    path: Path | None
    host: str | None
    port: int
    prefix: str
    namespace: str | None

    @property
    def ns(self) -> str:
        """The namespace of per-session commands (``"default"`` unless given)."""
        return self.namespace if self.namespace is not None else DEFAULT_NAMESPACE

    def location(self, path: Path | None = None) -> str:
        """A readable name of the store (directory or server address)."""
        where = (
            f"http://{self.host}:{self.port}"
            if self.host is not None
            else str(path or self.path or default_path())
        )
        return where if self.prefix == "lrm" else f"{where} (prefix {self.prefix!r})"

    def open_store(self, path: Path | None = None) -> MemoryStore:
        """Open the configured store (``path`` overrides ``--path``).

        Raises:
            StoreError: When the store cannot be opened or the server does not answer.
        """
        if self.host is not None:
            return MemoryStore.http(self.host, self.port, prefix=self.prefix)
        return MemoryStore.persistent(path or self.path or default_path(), prefix=self.prefix)


# -- small helpers ----------------------------------------------------------------------------


def parse_duration(text: str) -> float:
    """Parse a duration like ``90s``, ``15m``, ``12h``, ``30d`` or ``2w`` into seconds.

    A bare number is seconds.

    Args:
        text: The duration.

    Returns:
        The duration in seconds (> 0).

    Raises:
        typer.BadParameter: For anything else, or a zero duration.
    """
    match = _DURATION_RE.match(text)
    if not match:
        raise typer.BadParameter(
            f"{text!r} is not a duration; use a number and a unit: 90s, 15m, 12h, 30d, 2w"
        )
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()]
    if seconds <= 0:
        raise typer.BadParameter(f"{text!r}: the duration must be > 0")
    return seconds


def _settings(ctx: typer.Context) -> Settings:
    obj = ctx.find_root().obj
    if not isinstance(obj, Settings):  # pragma: no cover - the callback always sets it
        raise RuntimeError("the CLI's global options were not parsed")
    return obj


def _console() -> Console:
    return Console(highlight=False, soft_wrap=False)


def _fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``error: message`` on one line on stderr; return the exit to raise."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    return typer.Exit(code)


@contextmanager
def _reported_errors() -> Iterator[None]:
    """Turn the package's errors into one line on stderr and exit code 1 (no traceback)."""
    try:
        yield
    except RecursiveMemoryError as exc:
        raise _fail(f"{type(exc).__name__}: {exc}") from None
    except KeyboardInterrupt:
        raise _fail("interrupted (run the same command again to resume)", 130) from None


def _time(ts: float | None) -> str:
    if ts is None:
        return ""
    return dt.datetime.fromtimestamp(ts, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M")


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _resolve_model(spec: str | None) -> TextModel | None:
    """Resolve ``--model provider:model`` with LangChain, imported only when given.

    Raises:
        ConfigurationError: When LangChain is not installed or the model cannot be loaded.
    """
    if spec is None:
        return None
    try:
        from .language_models import resolve_text_model
    except ImportError as exc:
        raise ConfigurationError.for_value(
            "--model",
            spec,
            "a 'provider:model' needs LangChain: pip install "
            f"'langchain-recursive-memory[agents]' and the provider's package ({exc})",
        ) from exc
    return resolve_text_model(spec)


def _make_memory(
    kind: MemoryKind,
    session_id: str,
    store: MemoryStore,
    namespace: str,
    *,
    max_tokens: int | None = None,
    summary_tokens: int | None = None,
    model: TextModel | None = None,
) -> RecursiveMemory | HiGMem:
    if kind is MemoryKind.higmem:
        return HiGMem(session_id, model=model, store=store, namespace=namespace)
    cls = HybridMemory if kind is MemoryKind.hybrid else RecursiveMemory
    budget: dict[str, Any] = {"max_tokens": max_tokens or DEFAULT_MAX_TOKENS}
    if summary_tokens is not None:
        budget["max_summary_tokens"] = summary_tokens
    return cls(session_id, model=model, store=store, namespace=namespace, **budget)


def _require_session(store: MemoryStore, namespace: str, session_id: str) -> int:
    """Return the session's turn count; exit 1 when nothing is stored for it."""
    count = store.count_turns(namespace, session_id)
    if count == 0 and not any(s.session_id == session_id for s in store.sessions(namespace)):
        raise _fail(
            f"no session {session_id!r} in namespace {namespace!r} "
            "(list them with the `sessions` command)"
        )
    return count


# -- reading transcripts ---------------------------------------------------------------------


def _jsonl_turns(path: Path) -> list[Turn]:
    """Read a JSONL transcript; give turns without an id a stable one (for resuming).

    The derived id is the record's position and a hash of its role and text
    (``j12-3fa9c1d2``): re-reading the same file (or a longer version of it) yields the
    same ids, and another transcript's turn shares an id only if position, role and text
    are all equal.
    """
    records = []
    for n, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InvalidInputError.for_value(f"{path}:{n}", line[:80], f"not JSON: {exc}") from exc
    turns = turns_from_dicts(records)
    out = []
    for n, turn in enumerate(turns, start=1):
        if turn.id is None:
            digest = hashlib.blake2b(f"{turn.role}\x00{turn.text}".encode(), digest_size=4)
            turn = replace(turn, id=f"j{n}-{digest.hexdigest()}")
        out.append(turn)
    return out


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError.for_value("FILE", str(path), f"cannot be read: {exc}") from exc


def _locomo_samples(path: Path, data: Any) -> list[tuple[str, list[Turn]]]:
    """Return ``(sample_id, turns)`` of every conversation of a LoCoMo-format file."""
    samples = [data] if isinstance(data, Mapping) else data
    if not isinstance(samples, list) or not samples:
        raise InvalidInputError.for_value(
            str(path), type(data).__name__, "a LoCoMo file is a non-empty list of samples"
        )
    out = []
    for n, sample in enumerate(samples, start=1):
        if not isinstance(sample, Mapping) or not isinstance(sample.get("conversation"), Mapping):
            raise InvalidInputError.for_value(
                f"{path} sample {n}", sample, "has no 'conversation' object (not LoCoMo)"
            )
        sample_id = str(sample.get("sample_id") or f"sample-{n}")
        try:
            turns = locomo_turns(sample)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidInputError.for_value(
                f"{path} sample {sample_id!r}", exc, "is not a LoCoMo conversation"
            ) from exc
        out.append((sample_id, turns))
    return out


def _load_transcript(
    path: Path, fmt: InputFormat, session: str | None
) -> list[tuple[str, list[Turn]]]:
    """Return the ``(session_id, turns)`` pairs to ingest from ``path``."""
    text = _read_text(path)
    data: Any = None
    if fmt is InputFormat.auto:
        fmt = InputFormat.jsonl
        head = text.lstrip()[:1]
        if head in ("[", "{"):
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                data = None
            if isinstance(data, list) or (isinstance(data, Mapping) and "conversation" in data):
                fmt = InputFormat.locomo
    if fmt is InputFormat.jsonl:
        if session is None:
            raise typer.BadParameter("a JSONL transcript needs --session", param_hint="--session")
        return [(session, _jsonl_turns(path))]
    if data is None:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInputError.for_value(
                str(path), text[:40], f"not JSON (LoCoMo files are JSON): {exc}"
            ) from exc
    return [
        (f"{session}-{sample_id}" if session else sample_id, turns)
        for sample_id, turns in _locomo_samples(path, data)
    ]


# -- rendering ------------------------------------------------------------------------------


def _render_show(console: Console, memory: RecursiveMemory, *, window_rows: int) -> None:
    """Print the summary, the window, the facts, HiGMem events and the token counts."""
    store = memory.store
    turns = memory.turns()
    ctx = memory.context()
    facts = memory.facts()
    events = store.get_events(memory.namespace, memory.session_id)
    counter = memory.counter
    folded = sum(1 for t in turns if t.folded_in)

    summary = ctx.summary
    if summary is not None:
        method = "extractive, no LLM" if summary.method == "extractive" else summary.method
        title = (
            f"Summary v{summary.version} ({method}) · covers {summary.covered} turns · "
            f"{summary.tokens} tokens"
        )
        console.print(Panel(Text(summary.text), title=title, title_align="left"))
    else:
        console.print(Panel(Text("No summary yet: nothing has been folded."), title="Summary"))

    window = Table(
        title=f"Window: {len(ctx.window)} recent messages, verbatim",
        title_justify="left",
        caption=(
            f"last {window_rows} of {len(ctx.window)} shown"
            if len(ctx.window) > window_rows
            else None
        ),
    )
    window.add_column("id", overflow="fold")
    window.add_column("role")
    window.add_column("time (UTC)", no_wrap=True)
    window.add_column("text", overflow="fold", ratio=1)
    for turn in ctx.window[-window_rows:] if window_rows else ():
        role = f"{turn.role} ({turn.name})" if turn.name else turn.role
        window.add_row(
            Text(turn.id or ""), Text(role), _time(turn.created_at), Text(_cut(turn.text, 120))
        )
    console.print(window)

    if facts:
        table = Table(title=f"Facts ({len(facts)})", title_justify="left")
        table.add_column("key", overflow="fold")
        table.add_column("fact", overflow="fold", ratio=1)
        table.add_column("time", overflow="fold")
        table.add_column("source turns", overflow="fold")
        for fact in facts:
            table.add_row(
                Text(fact.key),
                Text(_cut(fact.text, 160)),
                Text(fact.time),
                Text(", ".join(fact.source_turn_ids)),
            )
        console.print(table)
    else:
        console.print(
            "Facts: none stored (facts are extracted at folds by a summarizer model; "
            "the no-LLM extractive summarizer extracts none).\n"
        )

    if events:
        table = Table(title=f"HiGMem events ({len(events)})", title_justify="left")
        table.add_column("id", overflow="fold")
        table.add_column("method")
        table.add_column("turns", justify="right")
        table.add_column("summary", overflow="fold", ratio=1)
        for event in events:
            table.add_row(
                Text(event.id),
                event.method,
                str(len(event.turn_ids)),
                Text(_cut(event.summary, 160)),
            )
        console.print(table)

    full = counter.count_turns(t.turn for t in turns)
    first = counter.count_turn(ctx.summary_turn) if ctx.summary_turn is not None else 0
    window_tokens = ctx.tokens - first - 3  # 3: reply priming
    tokens = Table(title="Tokens", title_justify="left")
    tokens.add_column("")
    tokens.add_column("messages", justify="right")
    tokens.add_column("tokens", justify="right")
    tokens.add_row("full log", f"{len(turns):,}", f"{full:,}")
    tokens.add_row(
        "context handed to the model",
        f"{len(ctx.turns):,}",
        f"{ctx.tokens:,} / {ctx.max_tokens:,}",
    )
    tokens.add_row("  summary message", "1" if first else "0", f"{first:,}")
    tokens.add_row("  window", f"{len(ctx.window):,}", f"{window_tokens:,}")
    console.print(tokens)
    saved = f" ({100 * (1 - ctx.tokens / full):.0f}% fewer)" if full > ctx.tokens else ""
    console.print(
        f"Log: {len(turns):,} turns, {folded:,} folded into the summary, "
        f"{len(turns) - folded:,} unfolded. The context is {ctx.tokens:,} tokens against "
        f"{full:,} for the full log{saved}."
    )
    if ctx.hidden:
        console.print(
            f"{ctx.hidden:,} unfolded messages do not fit the window (a fold is pending, or "
            "the session was filled by HiGMem, which does not fold, or with a larger "
            "--max-tokens)."
        )


def _recall_table(hits: Sequence[Any], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("kind")
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("time (UTC)")
    table.add_column("text", overflow="fold", ratio=3)
    table.add_column("source turns", overflow="fold", ratio=1)
    for n, hit in enumerate(hits, start=1):
        kind = hit.kind if hit.role is None else f"{hit.kind} ({hit.role})"
        table.add_row(
            str(n),
            kind,
            f"{hit.score:.4f}",
            _time(hit.time),
            Text(_cut(hit.text, 200)),
            Text(", ".join(hit.source_turn_ids)),
        )
    return table


# -- global options ---------------------------------------------------------------------------


@app.callback()
def _global_options(
    ctx: typer.Context,
    path: Annotated[
        Path | None,
        typer.Option(
            "--path",
            help=(
                "Embedded Chroma store directory [default: $LANGCHAIN_RECURSIVE_MEMORY_PATH "
                "or ~/.local/share/langchain-recursive-memory/chroma]"
            ),
            file_okay=False,
        ),
    ] = None,
    host: Annotated[
        str | None, typer.Option("--host", help="A Chroma server's host (`chroma run`).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", help="The Chroma server's port (default 8000).", min=1, max=65535),
    ] = None,
    prefix: Annotated[str, typer.Option("--prefix", help="Collection name prefix.")] = "lrm",
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace",
            help=(
                "Namespace (default 'default'); `sessions` and `expire` cover every "
                "namespace unless it is given."
            ),
        ),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log what the memory does (INFO).")
    ] = False,
) -> None:
    """Long-term conversation memory on Chroma (no LLM needed to try it: `lrm demo`)."""
    if path is not None and (host is not None or port is not None):
        raise typer.BadParameter(
            "give either --path (embedded store) or --host/--port (server), not both",
            param_hint="--path",
        )
    if port is not None and host is None:
        host = "localhost"
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    ctx.obj = Settings(path=path, host=host, port=port or 8000, prefix=prefix, namespace=namespace)


# -- commands ---------------------------------------------------------------------------------


@app.command()
def ingest(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(
            help="A JSONL transcript (one message object per line) or a LoCoMo JSON file.",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ],
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            "-s",
            help=(
                "Session id. Required for JSONL; for LoCoMo each conversation becomes "
                "'<ID>-<sample_id>' (or its sample id when omitted)."
            ),
        ),
    ] = None,
    fmt: Annotated[
        InputFormat,
        typer.Option(
            "--format",
            help="auto: a JSON list (or an object with 'conversation') is LoCoMo, else JSONL.",
        ),
    ] = InputFormat.auto,
    memory_kind: Annotated[
        MemoryKind, typer.Option("--memory", help="The memory that indexes the turns.")
    ] = MemoryKind.hybrid,
    max_tokens: MaxTokensOption = None,
    summary_tokens: SummaryTokensOption = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help=(
                "A LangChain 'provider:model' for summaries, facts and HiGMem analysis "
                "(needs langchain and the provider's package). Default: no LLM."
            ),
        ),
    ] = None,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")
    ] = True,
) -> None:
    """Ingest a transcript; resumable (turns already stored are skipped)."""
    settings = _settings(ctx)
    if memory_kind is MemoryKind.higmem and (max_tokens or summary_tokens):
        raise typer.BadParameter(
            "--max-tokens and --summary-tokens apply to --memory recursive or hybrid",
            param_hint="--memory",
        )
    console = _console()
    with _reported_errors():
        transcripts = _load_transcript(file, fmt, session)
        text_model = _resolve_model(model)
        store = settings.open_store()
        summary = Table(title=f"Ingested into {settings.location()}", title_justify="left")
        for column in ("session", "added", "already stored", "log", "summary", "facts/events"):
            summary.add_column(column, justify="left" if column == "session" else "right")
        for session_id, turns in transcripts:
            memory = _make_memory(
                memory_kind,
                session_id,
                store,
                settings.ns,
                max_tokens=max_tokens,
                summary_tokens=summary_tokens,
                model=text_model,
            )
            added = ingest_turns(memory, turns, progress=progress, description=session_id)
            logged = len(memory.turns())
            if isinstance(memory, HiGMem):
                version, extra = "-", f"{len(memory.events())} events"
            else:
                latest = memory.summary()
                version = f"v{latest.version}" if latest else "none"
                extra = f"{len(memory.facts())} facts"
            summary.add_row(
                Text(session_id),
                f"{added:,}",
                f"{len(turns) - added:,}",
                f"{logged:,}",
                version,
                extra,
            )
        console.print(summary)
        if text_model is None:
            console.print(
                "No model was called: summaries are the no-LLM extractive ones"
                + (
                    " and events are the conversation's sessions."
                    if memory_kind is MemoryKind.higmem
                    else "."
                )
            )


@app.command()
def show(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="The session id.")],
    memory_kind: Annotated[
        MemoryKind,
        typer.Option(
            "--memory",
            help=(
                "The memory used at ingest (hybrid reserves a quarter of the budget for "
                "recall; higmem is read as recursive)."
            ),
        ),
    ] = MemoryKind.hybrid,
    max_tokens: MaxTokensOption = None,
    summary_tokens: SummaryTokensOption = None,
    window_rows: Annotated[
        int, typer.Option("--rows", min=0, help="Most window messages to list (newest).")
    ] = 30,
) -> None:
    """Show a session: summary, window, facts, HiGMem events, token counts."""
    settings = _settings(ctx)
    console = _console()
    with _reported_errors():
        store = settings.open_store()
        _require_session(store, settings.ns, session)
        # HiGMem never folds: read its log as a recursive memory (no recall share).
        kind = MemoryKind.recursive if memory_kind is MemoryKind.higmem else memory_kind
        memory = _make_memory(
            kind,
            session,
            store,
            settings.ns,
            max_tokens=max_tokens,
            summary_tokens=summary_tokens,
        )
        assert isinstance(memory, RecursiveMemory)
        console.print(
            Text(
                f"Session {session!r} · namespace {settings.ns!r} · {settings.location()}",
                style="bold",
            )
        )
        _render_show(console, memory, window_rows=window_rows)


@app.command()
def recall(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="The session id.")],
    query: Annotated[str, typer.Argument(help="The question.")],
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="How many memories.")] = 6,
    higmem: Annotated[
        bool,
        typer.Option(
            "--higmem",
            help="Use HiGMem retrieval (indexes turns not indexed yet, without an LLM "
            "unless --model is given).",
        ),
    ] = False,
    memory_kind: Annotated[
        MemoryKind,
        typer.Option("--memory", help="Memory whose window is excluded from recall."),
    ] = MemoryKind.hybrid,
    max_tokens: MaxTokensOption = None,
    summary_tokens: SummaryTokensOption = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="A LangChain 'provider:model' for HiGMem's guided retrieval."),
    ] = None,
) -> None:
    """Recall the facts and archived turns most relevant to QUERY."""
    settings = _settings(ctx)
    console = _console()
    with _reported_errors():
        store = settings.open_store()
        _require_session(store, settings.ns, session)
        if higmem or memory_kind is MemoryKind.higmem:
            text_model = _resolve_model(model)
            hg = HiGMem(session, model=text_model, store=store, namespace=settings.ns)
            found = hg.retrieve(query, k=k)
            table = Table(title=f"HiGMem retrieval for {query!r}", title_justify="left")
            for column in ("#", "turn", "speaker", "score", "time (UTC)", "text", "events"):
                table.add_column(column, overflow="fold", ratio=1 if column == "text" else None)
            for n, item in enumerate(found, start=1):
                table.add_row(
                    str(n),
                    Text(item.turn.id or ""),
                    Text(item.speaker),
                    f"{item.score:.4f}",
                    _time(item.turn.created_at),
                    Text(_cut(item.turn.text, 200)),
                    Text(", ".join(item.event_ids)),
                )
            console.print(table if found else "No turn matched.")
            return
        memory = _make_memory(
            memory_kind,
            session,
            store,
            settings.ns,
            max_tokens=max_tokens,
            summary_tokens=summary_tokens,
        )
        assert isinstance(memory, RecursiveMemory)
        hits = memory.recall(query, k=k)
        if not hits:
            console.print("No memory matched (turns still in the window are not recalled).")
            return
        console.print(_recall_table(hits, f"Recalled for {query!r}"))


@app.command("sessions")
def list_sessions(ctx: typer.Context) -> None:
    """List sessions: namespace, id, turns, last activity."""
    settings = _settings(ctx)
    console = _console()
    with _reported_errors():
        store = settings.open_store()
        found = store.sessions(settings.namespace)
        if not found:
            console.print(f"No sessions in {settings.location()}.")
            return
        activity = store.activity(settings.namespace)
        table = Table(title=f"Sessions in {settings.location()}", title_justify="left")
        table.add_column("namespace", overflow="fold")
        table.add_column("session", overflow="fold")
        table.add_column("turns", justify="right")
        table.add_column("last activity (UTC)", no_wrap=True)
        for info in found:
            last = activity.get((info.namespace, info.session_id))
            table.add_row(
                Text(info.namespace),
                Text(info.session_id),
                f"{store.count_turns(info.namespace, info.session_id):,}",
                _time(last) if last is not None else "-",
            )
        console.print(table)


@app.command()
def clear(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="The session id.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete everything of a session: turns, summaries, facts, HiGMem nodes, vectors."""
    settings = _settings(ctx)
    with _reported_errors():
        store = settings.open_store()
        count = _require_session(store, settings.ns, session)
        if not yes:
            typer.confirm(
                f"Delete session {session!r} of namespace {settings.ns!r} "
                f"({count:,} turns) from {settings.location()}?",
                abort=True,
            )
        RecursiveMemory(session, store=store, namespace=settings.ns).clear()
        typer.echo(f"Deleted session {session!r} ({count:,} turns).")


@app.command()
def expire(
    ctx: typer.Context,
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            help="Delete sessions that stored nothing for this long: 90s, 15m, 12h, 30d, 2w.",
        ),
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the sessions, delete nothing.")
    ] = False,
) -> None:
    """Delete inactive sessions (a retention period; run it from a scheduled job)."""
    settings = _settings(ctx)
    seconds = parse_duration(older_than)
    console = _console()
    with _reported_errors():
        store = settings.open_store()
        if dry_run:
            cutoff = dt.datetime.now(tz=dt.timezone.utc).timestamp() - seconds
            doomed = [
                (key, last)
                for key, last in store.activity(settings.namespace).items()
                if last < cutoff
            ]
        else:
            activity = store.activity(settings.namespace)
            deleted = store.expire(seconds, namespace=settings.namespace)
            doomed = [(key, activity.get(key, 0.0)) for key in deleted]
        verb = "Would delete" if dry_run else "Deleted"
        scope = (
            f"namespace {settings.namespace!r}"
            if settings.namespace is not None
            else "all namespaces"
        )
        console.print(
            f"{verb} {len(doomed)} session(s) inactive for more than {older_than} ({scope})."
        )
        if doomed:
            table = Table()
            table.add_column("namespace", overflow="fold")
            table.add_column("session", overflow="fold")
            table.add_column("last activity (UTC)", no_wrap=True)
            for (ns, sid), last in sorted(doomed, key=lambda item: item[1]):
                table.add_row(Text(ns), Text(sid), _time(last))
            console.print(table)


# -- demo -------------------------------------------------------------------------------------

_DEMO_FACTS = (
    "Hi! I'm Ada Quist and I'm planning a trip to Japan with my brother Bob Quist.",
    "We land in Tokyo on 14 March 2027 and fly home on 2 April 2027.",
    "Our budget is 4,800 euros for the two of us, flights not included.",
    "Bob is allergic to peanuts, so every restaurant has to know about it.",
    "The code of the luggage locker at Shinjuku station is 4471.",
    "We booked the Hoshinoya ryokan in Kyoto for 18 March, confirmation KX-20931.",
)
_DEMO_TOPICS = ("temples", "ramen", "museums", "day trips", "markets", "onsen", "gardens")
_DEMO_QUERY = "What was the code of the luggage locker?"
_DEMO_START = dt.datetime(2027, 1, 10, 9, 0, tzinfo=dt.timezone.utc).timestamp()


def demo_turns(exchanges: int) -> list[Turn]:
    """The demo's scripted conversation: names, numbers and dates first, then small talk.

    Args:
        exchanges: How many user/assistant exchanges.

    Returns:
        The turns, with stable ids (``u<i>``, ``a<i>``) and times ten minutes apart.
    """
    turns = []
    for i in range(exchanges):
        if i < len(_DEMO_FACTS):
            question = _DEMO_FACTS[i]
            reply = f"Noted, I'll keep that in mind for the plan. (scripted reply {i})"
        else:
            topic = _DEMO_TOPICS[i % len(_DEMO_TOPICS)]
            question = f"Question {i}: what would you suggest about {topic} for day {i % 19 + 1}?"
            reply = (
                f"(scripted reply {i}) For {topic} on day {i % 19 + 1}, I would plan around "
                "the train timetable and keep an hour free in the afternoon."
            )
        when = _DEMO_START + 600 * i
        turns.append(Turn(role="user", name="Ada", text=question, id=f"u{i}", created_at=when))
        turns.append(Turn(role="assistant", text=reply, id=f"a{i}", created_at=when + 30))
    return turns


@app.command()
def demo(
    ctx: typer.Context,
    exchanges: Annotated[
        int, typer.Option("--exchanges", min=10, help="Scripted exchanges to play.")
    ] = 150,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", min=200, help="The memory's context budget.")
    ] = 1500,
    query: Annotated[
        str, typer.Option("--query", help="The question recalled at the end.")
    ] = _DEMO_QUERY,
    session: Annotated[str, typer.Option("--session", help="The demo's session id.")] = "demo",
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")
    ] = True,
) -> None:
    """Offline demo: a long conversation through a HybridMemory, no LLM, no API key."""
    settings = _settings(ctx)
    console = _console()
    with _reported_errors():
        path = None
        if settings.host is None and settings.path is None:
            path = Path(tempfile.mkdtemp(prefix="lrm-demo-"))
        store = settings.open_store(path)
        location = settings.location(path)
        console.print(
            Panel(
                Text(
                    f"{exchanges} scripted exchanges (Ada states names, numbers and dates in "
                    "the first ones) go through a HybridMemory with "
                    f"max_tokens={max_tokens}, stored in Chroma at {location}.\n"
                    "No model is called and no API key is needed: the assistant's replies are "
                    "scripted, and the summaries are the no-LLM extractive ones (a rolling "
                    "extract of the latest folded messages). Without a summarizer model no "
                    "facts are extracted, so recall ranks the archived turns with BM25."
                ),
                title="langchain-recursive-memory demo (offline)",
                title_align="left",
            )
        )
        memory = HybridMemory(session, store=store, namespace=settings.ns, max_tokens=max_tokens)
        if store.count_turns(settings.ns, session):
            memory.clear()  # a re-run starts over (only this session is touched)
        turns = demo_turns(exchanges)
        ingest_turns(memory, turns, batch_size=2, progress=progress, description="exchanges")
        console.print()
        _render_show(console, memory, window_rows=6)

        console.print()
        hits = memory.recall(query, k=3)
        console.print(_recall_table(hits, f"recall({query!r}, k=3)"))
        window_ids = {t.id for t in memory.context().window}
        logged = {t.id: t for t in memory.turns()}
        early = [
            h
            for h in hits
            if h.kind == "turn" and any(_is_early(logged.get(i)) for i in h.source_turn_ids)
        ]
        if early:
            hit = early[0]
            source = logged[hit.source_turn_ids[0]]
            where = (
                "still in the window"
                if source.id in window_ids
                else f"left the window long ago (folded into summary v{source.folded_in})"
            )
            console.print(
                Text(
                    f"Recalled turn {source.id} (exchange {int(source.id[1:]) + 1} of "
                    f"{exchanges}), which {where}: {hit.text!r}"
                )
            )
        ctx_q = memory.context(query)
        full = memory.counter.count_turns(turns)
        console.print(
            f"Context for this question (summary + recalled memories + window): "
            f"{ctx_q.tokens:,} tokens of {max_tokens:,}; the full history is {full:,} tokens "
            f"({len(turns):,} messages)."
        )
        if path is not None:
            base = f"lrm --path {shlex.quote(str(path))}"
            console.print(
                Text(
                    f"\nExplore the store:\n  {base} show {shlex.quote(session)}\n"
                    f"  {base} recall {shlex.quote(session)} 'When do we land in Tokyo?'"
                ),
                soft_wrap=True,
            )


def _is_early(turn: StoredTurn | None) -> bool:
    """Whether a demo turn is one of the opening statements of facts."""
    return turn is not None and turn.id.startswith("u") and int(turn.id[1:]) < len(_DEMO_FACTS)


def main(prog_name: str | None = None) -> None:
    """Run the command line (the ``langchain-recursive-memory`` and ``lrm`` scripts).

    Args:
        prog_name: The program name shown in usage lines (default: from ``sys.argv[0]``).
    """
    app(prog_name=prog_name)
