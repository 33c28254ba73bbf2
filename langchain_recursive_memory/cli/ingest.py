"""``lrm ingest``: a JSONL or LoCoMo transcript into a memory, resumable."""

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from ..core import HiGMem, RecursiveMemory, Turn
from ..core.models import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_MODEL_TIMEOUT,
    DEFAULT_PROVIDER_RETRIES,
    DEFAULT_TEMPERATURE,
    ModelSettings,
)
from ._app import (
    InputFormat,
    MaxTokensOption,
    MemoryKind,
    MemoryOption,
    ModelMaxTokensOption,
    ModelRetriesOption,
    ModelTemperatureOption,
    ModelTimeoutOption,
    ProgressOption,
    SummaryTokensOption,
    UserOption,
    _console,
    _make_memory,
    _reported_errors,
    _resolve_model,
    _settings,
    app,
    parse_options,
)
from .loaders import ingest as ingest_turns
from .transcripts import load_transcript

__all__ = ["ingest"]

_FileArgument = Annotated[
    Path,
    typer.Argument(
        help="A JSONL transcript (one message object per line) or a LoCoMo JSON file.",
        exists=True,
        dir_okay=False,
        readable=True,
    ),
]
_SessionOption = Annotated[
    str | None,
    typer.Option(
        "--session",
        "-s",
        help=(
            "Session id. Required for JSONL; for LoCoMo each conversation becomes "
            "'<ID>-<sample_id>' (or its sample id when omitted)."
        ),
    ),
]
_FormatOption = Annotated[
    InputFormat,
    typer.Option(
        "--format",
        help="auto: a JSON list (or an object with 'conversation') is LoCoMo, else JSONL.",
    ),
]
_MemoryOption = Annotated[
    MemoryKind, typer.Option("--memory", help="The memory that indexes the turns.")
]
_MODEL_HELP = (
    "A LangChain 'provider:model' for summaries, facts and HiGMem analysis "
    "(needs langchain and the provider's package). Default: no LLM."
)
_ModelOption = Annotated[str | None, typer.Option("--model", help=_MODEL_HELP)]
_COLUMNS = ("session", "added", "already stored", "log", "summary", "facts/events")


@app.command()
def ingest(
    ctx: typer.Context,
    *,
    file: _FileArgument,
    session: _SessionOption = None,
    user: UserOption = None,
    fmt: _FormatOption = InputFormat.auto,
    memory_kind: _MemoryOption = MemoryKind.hybrid,
    max_tokens: MaxTokensOption = None,
    summary_tokens: SummaryTokensOption = None,
    option: MemoryOption = None,
    model: _ModelOption = None,
    model_temperature: ModelTemperatureOption = DEFAULT_TEMPERATURE,
    model_max_tokens: ModelMaxTokensOption = DEFAULT_MAX_OUTPUT_TOKENS,
    model_timeout: ModelTimeoutOption = DEFAULT_MODEL_TIMEOUT,
    model_retries: ModelRetriesOption = DEFAULT_PROVIDER_RETRIES,
    progress: ProgressOption = True,
) -> None:
    """Ingest a transcript; resumable (turns already stored are skipped)."""
    settings = _settings(ctx)
    if memory_kind is MemoryKind.higmem and (max_tokens or summary_tokens or option):
        raise typer.BadParameter(
            "--max-tokens, --summary-tokens and --option apply to --memory recursive or hybrid",
            param_hint="--memory",
        )
    console = _console()
    with _reported_errors():
        options = parse_options(option)
        transcripts = load_transcript(file, fmt, session)
        text_model = _resolve_model(
            model,
            ModelSettings(
                temperature=model_temperature,
                max_output_tokens=model_max_tokens,
                timeout=model_timeout,
                max_retries=model_retries,
            ),
        )
        store = settings.open_store()
        summary = Table(title=f"Ingested into {settings.location()}", title_justify="left")
        for column in _COLUMNS:
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
                user_id=user,
                options=options,
            )
            summary.add_row(*_ingest_session(memory, session_id, turns, progress=progress))
        console.print(summary)
        if text_model is None:
            console.print(_no_model_note(memory_kind))


def _ingest_session(
    memory: RecursiveMemory | HiGMem, session_id: str, turns: Sequence[Turn], *, progress: bool
) -> tuple[Text, str, str, str, str, str]:
    """Ingest one session's turns; return its row of the summary table."""
    added = ingest_turns(memory, turns, progress=progress, description=session_id)
    logged = len(memory.turns())
    if isinstance(memory, HiGMem):
        version, extra = "-", f"{len(memory.events())} events"
    else:
        latest = memory.get_summary()
        version = f"v{latest.version}" if latest else "none"
        extra = f"{len(memory.facts())} facts"
    return (
        Text(session_id),
        f"{added:,}",
        f"{len(turns) - added:,}",
        f"{logged:,}",
        version,
        extra,
    )


def _no_model_note(memory_kind: MemoryKind) -> str:
    """What was done without a model (no LLM call was made)."""
    note = "No model was called: summaries are the no-LLM extractive ones"
    if memory_kind is MemoryKind.higmem:
        return f"{note} and events are the conversation's sessions."
    return f"{note}."
