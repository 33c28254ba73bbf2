"""``lrm show`` and ``lrm recall``: what a stored session hands to the model."""

from typing import Annotated, Any

import typer
from rich.text import Text

from ..core import HiGMem, MemoryStore, RecursiveMemory
from ._app import (
    MaxTokensOption,
    MemoryKind,
    MemoryOption,
    Settings,
    SummaryTokensOption,
    UserOption,
    _console,
    _fail,
    _make_memory,
    _reported_errors,
    _require_session,
    _resolve_model,
    _settings,
    app,
    parse_options,
)
from .render import higmem_table, recall_table, render_show, render_user

__all__ = ["recall", "show"]

_SessionArgument = Annotated[str, typer.Argument(help="The session id.")]


def _open_session(settings: Settings, session: str) -> MemoryStore:
    """Open the store to read it; exit 1 when it holds nothing for ``session``.

    Or when it does not exist, or still needs ``lrm migrate`` (:meth:`Settings.readable_store`).
    """
    store, _ = _require_session(settings.readable_store(), settings.ns, session)
    return store


def _session_kind(
    store: MemoryStore, settings: Settings, session: str, kind: MemoryKind | None
) -> tuple[MemoryKind, dict[str, Any]]:
    """The memory the session was made with (``--memory`` wins) and its recorded settings."""
    made = store.session_settings(settings.ns, session)
    if kind is None:
        kind = (
            MemoryKind(made["memory"])
            if made.get("memory") in MemoryKind.__members__
            else MemoryKind.hybrid
        )
    return kind, made


def _session_memory(
    settings: Settings,
    store: MemoryStore,
    session: str,
    kind: MemoryKind | None,
    *,
    max_tokens: int | None,
    summary_tokens: int | None,
    user: str | None = None,
    option: list[str] | None = None,
) -> tuple[RecursiveMemory, bool]:
    """The recursive or hybrid memory that reads a stored session, with its budget.

    The session's recorded kind and budget are the defaults. HiGMem never folds: its log
    is read as a recursive memory (no recall share). ``option``: ``--option`` flags.

    Returns:
        The memory, and whether its budget is known (given, or recorded with the session:
        0.1.0 recorded none, and HiGMem has none; the CLI's default stands in).
    """
    kind, made = _session_kind(store, settings, session, kind)
    kind = MemoryKind.recursive if kind is MemoryKind.higmem else kind
    budget = max_tokens or _int(made.get("max_tokens"))
    # The recorded summary cap belongs to the recorded budget: a budget given without a
    # cap derives its own.
    recorded_cap = _int(made.get("max_summary_tokens")) if max_tokens is None else None
    memory = _make_memory(
        kind,
        session,
        store,
        settings.ns,
        max_tokens=budget,
        summary_tokens=summary_tokens or recorded_cap,
        user_id=user,
        options=parse_options(option),
    )
    assert isinstance(memory, RecursiveMemory)
    return memory, budget is not None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@app.command()
def show(
    ctx: typer.Context,
    *,
    session: Annotated[
        str | None, typer.Argument(help="The session id (omit it with --user: the user).")
    ] = None,
    user: UserOption = None,
    memory_kind: Annotated[
        MemoryKind | None,
        typer.Option(
            "--memory",
            help=(
                "Read the session as this memory (default: the one it was made with, else "
                "hybrid; hybrid reserves a quarter of the budget for recall; higmem is read "
                "as recursive)."
            ),
        ),
    ] = None,
    max_tokens: MaxTokensOption = None,
    summary_tokens: SummaryTokensOption = None,
    option: MemoryOption = None,
    window_rows: Annotated[
        int, typer.Option("--rows", min=0, help="Most window messages to list (newest).")
    ] = 30,
    reasoning: Annotated[
        bool,
        typer.Option(
            "--reasoning", help="Show the messages' reasoning in full (default: collapsed)."
        ),
    ] = False,
) -> None:
    """Show a session (summary, window, facts, HiGMem events, tokens), or a user's memory."""
    settings = _settings(ctx)
    console = _console()
    with _reported_errors():
        if session is None:
            if user is None:
                raise _fail("give a session id, or --user for a user's sessions and facts", 2)
            _show_user(settings, user)
            return
        store = _open_session(settings, session)
        memory, budget_known = _session_memory(
            settings,
            store,
            session,
            memory_kind,
            max_tokens=max_tokens,
            summary_tokens=summary_tokens,
            user=user,
            option=option,
        )
        owner_id = memory.user_id or store.session(settings.ns, session).recorded_user()
        owner = f" · user {owner_id!r}" if owner_id else ""
        console.print(
            Text(
                f"Session {session!r}{owner} · namespace {settings.ns!r} · {settings.location()}",
                style="bold",
            )
        )
        render_show(
            console,
            memory,
            window_rows=window_rows,
            reasoning=reasoning,
            budget_known=budget_known,
        )


def _show_user(settings: Settings, user: str) -> None:
    """Print a user's sessions and facts (exit 1 when the store has no such user)."""
    store = settings.readable_store()
    if not any(u.user_id == user for u in store.users(settings.ns)):
        raise _fail(f"no user {user!r} in namespace {settings.ns!r} (list them with `lrm users`)")
    render_user(_console(), store, settings.ns, user, settings.location())


@app.command()
def recall(
    ctx: typer.Context,
    *,
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
        MemoryKind | None,
        typer.Option(
            "--memory",
            help="The memory to recall with (default: the one the session was made with; "
            "a HiGMem session recalls with HiGMem retrieval).",
        ),
    ] = None,
    max_tokens: MaxTokensOption = None,
    summary_tokens: SummaryTokensOption = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="A LangChain 'provider:model' for HiGMem's guided retrieval."),
    ] = None,
    user: UserOption = None,
) -> None:
    """Recall the facts and archived turns most relevant to QUERY (--user: of every session)."""
    settings = _settings(ctx)
    console = _console()
    scope = "session" if user is None else "user"
    with _reported_errors():
        store = _open_session(settings, session)
        kind, _ = _session_kind(store, settings, session, memory_kind)
        if higmem or kind is MemoryKind.higmem:
            hg = HiGMem(
                session,
                model=_resolve_model(model) if user is None else None,
                store=store,
                namespace=settings.ns,
                user_id=user,
            )
            found = hg.retrieve(query, k=k, scope=scope)
            title = f"HiGMem retrieval for {query!r}"
            console.print(higmem_table(found, title) if found else "No turn matched.")
            return
        memory, _ = _session_memory(
            settings,
            store,
            session,
            kind,
            max_tokens=max_tokens,
            summary_tokens=summary_tokens,
            user=user,
        )
        hits = memory.recall(query, k=k, scope=scope)
        if not hits:
            console.print("No memory matched (turns still in the window are not recalled).")
            return
        console.print(recall_table(hits, f"Recalled for {query!r}"))
