"""``lrm show`` and ``lrm recall``: what a stored session hands to the model."""

from typing import Annotated

import typer
from rich.text import Text

from ..core import HiGMem, MemoryStore, RecursiveMemory
from ._app import (
    MaxTokensOption,
    MemoryKind,
    Settings,
    SummaryTokensOption,
    _console,
    _make_memory,
    _reported_errors,
    _require_session,
    _resolve_model,
    _settings,
    app,
)
from .render import higmem_table, recall_table, render_show

__all__ = ["recall", "show"]

_SessionArgument = Annotated[str, typer.Argument(help="The session id.")]


def _open_session(settings: Settings, session: str) -> MemoryStore:
    """Open the store; exit 1 when it holds nothing for ``session``."""
    store = settings.open_store()
    _require_session(store, settings.ns, session)
    return store


def _session_memory(
    settings: Settings,
    store: MemoryStore,
    session: str,
    kind: MemoryKind,
    max_tokens: int | None,
    summary_tokens: int | None,
) -> RecursiveMemory:
    """The recursive or hybrid memory that reads a stored session, with its budget.

    HiGMem never folds: its log is read as a recursive memory (no recall share).
    """
    kind = MemoryKind.recursive if kind is MemoryKind.higmem else kind
    memory = _make_memory(
        kind, session, store, settings.ns, max_tokens=max_tokens, summary_tokens=summary_tokens
    )
    assert isinstance(memory, RecursiveMemory)
    return memory


@app.command()
def show(
    ctx: typer.Context,
    session: _SessionArgument,
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
        store = _open_session(settings, session)
        memory = _session_memory(settings, store, session, memory_kind, max_tokens, summary_tokens)
        console.print(
            Text(
                f"Session {session!r} · namespace {settings.ns!r} · {settings.location()}",
                style="bold",
            )
        )
        render_show(console, memory, window_rows=window_rows)


@app.command()
def recall(
    ctx: typer.Context,
    session: _SessionArgument,
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
        store = _open_session(settings, session)
        if higmem or memory_kind is MemoryKind.higmem:
            hg = HiGMem(session, model=_resolve_model(model), store=store, namespace=settings.ns)
            found = hg.retrieve(query, k=k)
            title = f"HiGMem retrieval for {query!r}"
            console.print(higmem_table(found, title) if found else "No turn matched.")
            return
        memory = _session_memory(settings, store, session, memory_kind, max_tokens, summary_tokens)
        hits = memory.recall(query, k=k)
        if not hits:
            console.print("No memory matched (turns still in the window are not recalled).")
            return
        console.print(recall_table(hits, f"Recalled for {query!r}"))
