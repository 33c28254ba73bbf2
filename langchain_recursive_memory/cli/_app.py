"""The typer app, its global options and the helpers every command shares.

The commands live in their own modules (:mod:`.ingest`, :mod:`.show`, :mod:`.sessions`,
:mod:`.demo`) and register themselves on :data:`app` when the package is imported.
"""

import datetime as dt
import logging
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from ..core import (
    DEFAULT_NAMESPACE,
    ConfigurationError,
    HiGMem,
    MemoryStore,
    RecursiveMemory,
    RecursiveMemoryError,
    TextModel,
    default_path,
)
from ..core.builder import MemoryOptions, build_memory
from ..core.cache import StoreCaches
from ..core.config import DEFAULT_MAX_TOKENS
from ..core.models import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_MODEL_TIMEOUT,
    DEFAULT_PROVIDER_RETRIES,
    DEFAULT_TEMPERATURE,
    ModelSettings,
)
from ..core.options import CLI, OPTIONS
from ..core.storage.keys import SCHEMA, collection_name
from ._group import LrmGroup

__all__ = [
    "DATABASE_FILE",
    "DEFAULT_MAX_TOKENS",
    "InputFormat",
    "MaxTokensOption",
    "MemoryKind",
    "MemoryOption",
    "ModelMaxTokensOption",
    "ModelRetriesOption",
    "ModelTemperatureOption",
    "ModelTimeoutOption",
    "ProgressOption",
    "Settings",
    "SummaryTokensOption",
    "UserOption",
    "app",
    "main",
    "parse_duration",
    "parse_options",
]


_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}

app = typer.Typer(
    name="lrm",
    help=(
        "Long-term conversation memory (the log in a database, facts and vectors in Chroma): "
        "ingest transcripts, inspect the summary, window and facts, recall memories, manage "
        "sessions and users. Offline demo: `lrm demo`."
    ),
    cls=LrmGroup,
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
            "Context budget of the recursive/hybrid memory (default: the session's own, "
            f"recorded when it was made, else {DEFAULT_MAX_TOKENS})."
        ),
    ),
]
_SUMMARY_TOKENS_HELP = (
    "Cap of the summary, inside --max-tokens (default: the session's, else 300, or a "
    "quarter of a --max-tokens under 1,200)."
)
SummaryTokensOption = Annotated[
    int | None, typer.Option("--summary-tokens", min=16, help=_SUMMARY_TOKENS_HELP)
]
_USER_HELP = (
    "The user the sessions belong to: the facts of each of the user's sessions are "
    "recalled in all of them (a session's user is fixed once recorded); recall: from "
    "every session of the user."
)
UserOption = Annotated[str | None, typer.Option("--user", "-u", help=_USER_HELP)]
_OPTION_HELP = (
    "A memory option NAME=VALUE of the recursive or hybrid memory (repeatable): "
    f"{', '.join(OPTIONS.on(CLI))}; 'none' for the default rule."
)
MemoryOption = Annotated[
    list[str] | None,
    typer.Option("--option", "-o", metavar="NAME=VALUE", help=_OPTION_HELP),
]
ProgressOption = Annotated[
    bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")
]
ModelTemperatureOption = Annotated[
    float,
    typer.Option(
        "--model-temperature",
        min=0.0,
        help=f"Temperature of --model's calls (default {DEFAULT_TEMPERATURE}, the papers').",
    ),
]
ModelMaxTokensOption = Annotated[
    int,
    typer.Option(
        "--model-max-tokens",
        min=1,
        help=f"Output limit of one --model call (default {DEFAULT_MAX_OUTPUT_TOKENS}).",
    ),
]
ModelTimeoutOption = Annotated[
    float,
    typer.Option(
        "--model-timeout",
        min=0.1,
        help=(
            "Seconds the provider's client waits for one --model call (default "
            f"{DEFAULT_MODEL_TIMEOUT:g}: it cancels the request, the memory cannot)."
        ),
    ),
]
ModelRetriesOption = Annotated[
    int,
    typer.Option(
        "--model-retries",
        min=0,
        help=(
            f"Retries inside the provider's client (default {DEFAULT_PROVIDER_RETRIES}: "
            "the memory retries; stacked retries multiply)."
        ),
    ),
]


@dataclass(frozen=True)
class Settings:
    """The global options, shared by every command.

    Attributes:
        path: The embedded store's directory (None: :func:`~.core.default_path`).
        host: A Chroma server's host (None: the embedded store).
        port: The server's port.
        prefix: Table and collection name prefix.
        namespace: The namespace given with ``--namespace``, or None.
        database: The database URL (None: the SQLite file in the store's folder).
    """

    path: Path | None
    host: str | None
    port: int
    prefix: str
    namespace: str | None
    database: str | None = None

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

    def open_store(self, path: Path | None = None, *, migrate: bool = True) -> MemoryStore:
        """Open (or create) the configured store (``path`` overrides ``--path``).

        ``migrate``: move what an earlier release wrote (False: leave it, ``lrm migrate``).

        Raises:
            StoreError: When the store cannot be opened or the server does not answer.
        """
        options: dict[str, Any] = {"prefix": self.prefix, "database": self.database}
        if self.host is not None:
            if self.database is None:
                raise _fail(
                    "--host needs --database (or $LRM_DATABASE_URL): the database the "
                    "workers share, e.g. postgresql+psycopg://user:password@host/db"
                )
            return MemoryStore.http(self.host, self.port, migrate=migrate, **options)
        return MemoryStore.persistent(path or self.folder, migrate=migrate, **options)

    def existing_store(self, *, migrate: bool = True) -> MemoryStore:
        """The configured store, which must exist: commands that change it use it.

        They never create a store at a mistyped path: a folder that does not exist, or
        holds no store, exits 1 and says so.
        """
        self.check_exists()
        return self.open_store(migrate=migrate)

    def readable_store(self) -> MemoryStore:
        """The configured store, which must exist, opened to be read (read-only commands).

        Nothing of the store is changed: it is opened without moving an earlier release's
        log (``migrate=False``), an embedded store whose folder holds no database yet is
        read through an empty one in memory (no ``memory.sqlite3`` is made), and a store
        whose log is still where 0.1.0 or 0.2.0 kept it exits 1 naming ``lrm migrate``
        (for an embedded store, before Chroma is even opened: its file is only read).
        """
        self.check_exists()
        ask = True  # whether Chroma itself must say if a legacy log waits
        if self.host is None:
            found = _legacy_log_in_file(self.folder / "chroma.sqlite3", self.prefix)
            if found:
                raise self._needs_moving()
            ask = found is None
        embedded = self.host is None and self.database is None
        if embedded and not (self.folder / DATABASE_FILE).exists():
            store = self.scratch_store()
        else:
            store = self.open_store(migrate=False)
        if ask and _legacy_log_in_chroma(store, self.prefix):
            store.close()
            raise self._needs_moving()
        return store

    @property
    def folder(self) -> Path:
        """The embedded store's folder (``--path``, else :func:`~.core.default_path`)."""
        return self.path or default_path()

    def scratch_store(self) -> MemoryStore:
        """The configured embedded store over an empty database in memory.

        What reads and dry runs use where the folder holds no ``memory.sqlite3``: they
        make none. Chroma is the folder's.
        """
        from sqlalchemy import create_engine
        from sqlalchemy.pool import StaticPool

        engine = create_engine(
            "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
        )
        return MemoryStore.persistent(
            self.folder, prefix=self.prefix, database=engine, migrate=False, cache=StoreCaches()
        )

    def _needs_moving(self) -> typer.Exit:
        """The exit of a read-only command on a store whose log still needs moving."""
        if self.host is not None:
            options = f"--host {self.host} --port {self.port} --database URL "
        else:
            options = f"--path {self.path} " if self.path is not None else ""
        options += f"--prefix {self.prefix} " if self.prefix != "lrm" else ""
        here = f": `lrm {options}migrate`" if options else ""
        return _fail(
            f"the store at {self.location()} was written by an earlier release (0.1.0 or "
            "0.2.0) and needs moving: its log is still in Chroma, not yet in the database. "
            f"This command changes nothing; run `lrm migrate` first{here} (once; with "
            "--dry-run it lists what it would move)."
        )

    def check_exists(self) -> None:
        """Exit 1 unless the configured embedded folder exists and holds a store."""
        if self.host is None:
            where = self.folder
            if not where.is_dir():
                raise _fail(f"no memory store at {where}: the folder does not exist ({_CHECK})")
            if not any((where / name).exists() for name in ("chroma.sqlite3", DATABASE_FILE)):
                raise _fail(f"no memory store at {where}: the folder holds none ({_CHECK})")


DATABASE_FILE = "memory.sqlite3"
"""An embedded store's database in its folder (the storage's own name for it, which the
command line may not import: ``[tool.importlinter]``)."""


def _legacy_log_in_file(path: Path, prefix: str) -> bool | None:
    """Whether Chroma's file at ``path`` holds a log of 0.1.0 or 0.2.0 still to move.

    Read with SQLite, read-only (opening chromadb writes to the file): ``{prefix}_turns``
    with ``lrm_schema`` 2 (the migration marks it 3 once every session has moved). False
    when there is no file; None when it does not read as Chroma's tables are known to be
    (then :func:`_legacy_log_in_chroma` asks Chroma).
    """
    if not path.exists():
        return False
    log = collection_name(prefix, "turns")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            names = {r[0] for r in conn.execute("SELECT name FROM collections")}
            schemas = conn.execute(
                "SELECT m.int_value FROM collections c JOIN collection_metadata m "
                "ON m.collection_id = c.id AND m.key = 'lrm_schema' WHERE c.name = ?",
                (log,),
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    if log not in names:
        return False
    if not schemas:
        return None  # the collection is there, its marker not where it was looked for
    return any(value == SCHEMA for (value,) in schemas)


def _legacy_log_in_chroma(store: MemoryStore, prefix: str) -> bool:
    """Whether the store's Chroma holds a log of 0.1.0 or 0.2.0 still to move (it is asked)."""
    log = collection_name(prefix, "turns")
    if log not in store.chroma.collection_names():
        return False
    found = store.chroma.call("read the log's marker", lambda: store.client.get_collection(log))
    return (found.metadata or {}).get("lrm_schema") == SCHEMA


_CHECK = "check --path, or $LANGCHAIN_RECURSIVE_MEMORY_PATH; `lrm ingest` creates a store"


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


def parse_options(texts: Sequence[str] | None) -> dict[str, Any]:
    """The memory options of ``--option NAME=VALUE`` flags, by their core names.

    The names, types and checks are the option table's (its ``cli`` surface).

    Raises:
        ConfigurationError: For an unknown option (named, with the options) or a value of
            the wrong type.

    Example:
        >>> parse_options(["keep_messages=4", "recall-scope=user"])
        {'keep_messages': 4, 'recall_scope': 'user'}
    """
    return dict(OPTIONS.parse(text, CLI) for text in texts or ())


def _settings(ctx: typer.Context) -> Settings:
    """The global options, parsed by the app's callback."""
    obj = ctx.find_root().obj
    if not isinstance(obj, Settings):  # pragma: no cover - the callback always sets it
        raise RuntimeError("the CLI's global options were not parsed")
    return obj


def _console() -> Console:
    """The console commands print to (no highlighting, no soft wrapping)."""
    return Console(highlight=False, soft_wrap=False)


def _fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``error: message`` on one line on stderr; return the exit to raise."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    return typer.Exit(code)


@contextmanager
def _reported_errors() -> Iterator[None]:
    """Turn the package's errors into one line on stderr and exit code 1 (no traceback).

    The line is the error's message, without its class name: ``error: chat.jsonl:5:
    unknown role 'wizard' (...)``.
    """
    try:
        yield
    except RecursiveMemoryError as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise _fail("interrupted (run the same command again to resume)", 130) from None


def _time(ts: float | None) -> str:
    """A UTC time as ``YYYY-MM-DD HH:MM`` (empty for None)."""
    if ts is None:
        return ""
    return dt.datetime.fromtimestamp(ts, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M")


def _cut(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _resolve_model(spec: str | None, settings: ModelSettings | None = None) -> TextModel | None:
    """Resolve ``--model provider:model`` with LangChain, imported only when given.

    ``settings`` are the ``--model-*`` flags (default: :class:`~.core.models.ModelSettings`).

    Raises:
        ConfigurationError: When LangChain is not installed or the model cannot be loaded.
    """
    if spec is None:
        return None
    try:
        from ..language_models import resolve_text_model
    except ImportError as exc:
        needs = (
            "a 'provider:model' needs LangChain: pip install "
            f"'langchain-recursive-memory[agents]' and the provider's package ({exc})"
        )
        raise ConfigurationError.for_value("--model", spec, needs) from exc
    return resolve_text_model(spec, settings=settings)


def _make_memory(
    kind: MemoryKind,
    session_id: str,
    store: MemoryStore,
    namespace: str,
    *,
    max_tokens: int | None = None,
    summary_tokens: int | None = None,
    model: TextModel | None = None,
    user_id: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> RecursiveMemory | HiGMem:
    """Build the memory of ``kind`` for a session (the CLI's budget defaults).

    ``options`` are more memory options (:func:`parse_options`), by their core names.
    """
    if kind is MemoryKind.higmem:
        return HiGMem(session_id, model=model, store=store, namespace=namespace, user_id=user_id)
    memory_options = MemoryOptions(
        max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
        max_summary_tokens=summary_tokens,  # None: the one rule (core.config.summary_cap)
        extract_facts=kind is MemoryKind.hybrid,  # the hybrid memory: facts and recall
        **(options or {}),
    )
    return build_memory(
        session_id, memory_options, model=model, store=store, namespace=namespace, user_id=user_id
    )


def _require_session(
    store: MemoryStore, namespace: str, session_id: str
) -> tuple[MemoryStore, int]:
    """Return the store and the session's turn count.

    Exits 1 when nothing is stored for the session.
    """
    count = store.count_turns(namespace, session_id)
    if count == 0 and not any(s.session_id == session_id for s in store.sessions(namespace)):
        raise _fail(
            f"no session {session_id!r} in namespace {namespace!r} "
            "(list them with the `sessions` command)"
        )
    return store, count


# -- global options ---------------------------------------------------------------------------

_PATH_HELP = (
    "The store's folder (its SQLite log, embedded Chroma) [default: "
    "$LANGCHAIN_RECURSIVE_MEMORY_PATH or ~/.local/share/langchain-recursive-memory/chroma]"
)
_NAMESPACE_HELP = (
    "Namespace (default 'default'); `sessions` and `expire` cover every "
    "namespace unless it is given."
)
_PathOption = Annotated[Path | None, typer.Option("--path", help=_PATH_HELP, file_okay=False)]
_HostOption = Annotated[
    str | None, typer.Option("--host", help="A Chroma server's host (`chroma run`).")
]
_PortOption = Annotated[
    int | None,
    typer.Option("--port", help="The Chroma server's port (default 8000).", min=1, max=65535),
]
_PrefixOption = Annotated[str, typer.Option("--prefix", help="Table and collection name prefix.")]
_DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        envvar="LRM_DATABASE_URL",
        help="The database URL (default: the SQLite file in the store's folder; with "
        "--host, e.g. postgresql+psycopg://user:password@host/db).",
    ),
]
_NamespaceOption = Annotated[str | None, typer.Option("--namespace", help=_NAMESPACE_HELP)]
_VerboseOption = Annotated[
    bool, typer.Option("--verbose", "-v", help="Log what the memory does (INFO).")
]


@app.callback()
def _global_options(
    ctx: typer.Context,
    *,
    path: _PathOption = None,
    host: _HostOption = None,
    port: _PortOption = None,
    prefix: _PrefixOption = "lrm",
    namespace: _NamespaceOption = None,
    database: _DatabaseOption = None,
    verbose: _VerboseOption = False,
) -> None:
    """Long-term conversation memory (no LLM needed to try it: `lrm demo`)."""
    if path is not None and (host is not None or port is not None):
        raise typer.BadParameter(
            "give either --path (embedded store) or --host/--port (server), not both",
            param_hint="--path",
        )
    if port is not None and host is None:
        host = "localhost"
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    ctx.obj = Settings(
        path=path,
        host=host,
        port=port or 8000,
        prefix=prefix,
        namespace=namespace,
        database=database,
    )


def main(prog_name: str | None = None) -> None:
    """Run the command line (the ``langchain-recursive-memory`` and ``lrm`` scripts).

    Args:
        prog_name: The program name shown in usage lines (default: from ``sys.argv[0]``).
    """
    app(prog_name=prog_name)
