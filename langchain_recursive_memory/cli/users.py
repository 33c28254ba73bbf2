"""``lrm users``, ``lrm forget-user`` and ``lrm rebuild``: users, erasure, derived state."""

from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from ..core import HiGMem, MemoryStore, RebuildProgress, RebuildResult, RecursiveMemory
from ._app import (
    MemoryKind,
    ProgressOption,
    Settings,
    _console,
    _fail,
    _make_memory,
    _reported_errors,
    _require_session,
    _resolve_model,
    _settings,
    _time,
    app,
)

__all__ = ["forget_user", "list_users", "rebuild"]

_UserArgument = Annotated[str, typer.Argument(help="The user id.")]


@app.command("users")
def list_users(ctx: typer.Context) -> None:
    """List users: namespace, id, sessions, facts, first seen."""
    settings = _settings(ctx)
    with _reported_errors():
        store = settings.readable_store()
        listed = _users_table(store, settings)
        _console().print(listed or f"No users in {settings.location()}.")


def _users_table(store: MemoryStore, settings: Settings) -> Table | None:
    """The users of the store (of ``--namespace``, or all), or None when there are none."""
    found = store.users(settings.namespace)
    if not found:
        return None
    table = Table(title=f"Users in {settings.location()}", title_justify="left")
    for column in ("namespace", "user"):
        table.add_column(column, overflow="fold")
    for column in ("sessions", "facts"):
        table.add_column(column, justify="right")
    table.add_column("first seen (UTC)", no_wrap=True)
    for info in found:
        sessions = store.user_sessions(info.namespace, info.user_id)
        facts = store.user_facts(info.namespace, info.user_id)
        table.add_row(
            Text(info.namespace),
            Text(info.user_id),
            f"{len(sessions):,}",
            f"{len(facts):,}",
            _time(info.created_at),
        )
    return table


def _require_user(settings: Settings, user: str) -> tuple[MemoryStore, list[str]]:
    """The store and the user's sessions; exit 1 when the store has no such user."""
    store = settings.existing_store()
    if not any(u.user_id == user for u in store.users(settings.ns)):
        raise _fail(f"no user {user!r} in namespace {settings.ns!r} (list them with `lrm users`)")
    return store, [s.session_id for s in store.user_sessions(settings.ns, user)]


@app.command("forget-user")
def forget_user(
    ctx: typer.Context,
    user: _UserArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete everything of a user: every session, fact, vector, node, usage record."""
    settings = _settings(ctx)
    with _reported_errors():
        store, sessions = _require_user(settings, user)
        if not yes:
            typer.confirm(
                f"Delete user {user!r} of namespace {settings.ns!r} and its "
                f"{len(sessions)} session(s) from {settings.location()}?",
                abort=True,
            )
        deleted = store.forget_user(settings.ns, user)
        typer.echo(f"Deleted user {user!r} and {len(deleted)} session(s).")


@app.command()
def rebuild(
    ctx: typer.Context,
    session: Annotated[
        str | None, typer.Argument(help="The session id (omit it with --user).")
    ] = None,
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="Rebuild every session of this user.")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="A LangChain 'provider:model' that extracts the facts (or indexes HiGMem "
            "turns) again. Default: no LLM (facts kept; vectors and no-LLM nodes rebuilt).",
        ),
    ] = None,
    progress: ProgressOption = True,
) -> None:
    """Derive facts, vectors and HiGMem nodes again from the turn log; resumable."""
    settings = _settings(ctx)
    console = _console()
    with _reported_errors():
        if (session is None) == (user is None):
            raise _fail("give a session id or --user (one of them)", 2)
        if user is not None:
            store, sessions = _require_user(settings, user)
            if not sessions:
                raise _fail(f"user {user!r} has no session to rebuild")
            first = sessions[0]
        else:
            assert session is not None
            store, _ = _require_session(settings.existing_store(), settings.ns, session)
            first = session
        memory = _rebuilding_memory(settings, store, first, user, model)
        result = _run(memory, "user" if user is not None else "session", progress=progress)
        console.print(_result_line(result))


def _rebuilding_memory(
    settings: Settings, store: MemoryStore, session: str, user: str | None, model: str | None
) -> RecursiveMemory | HiGMem:
    """The memory of ``session`` (as it was made) that rebuilds it, or its user."""
    made = store.session_settings(settings.ns, session)
    kind = made.get("memory")
    chosen = MemoryKind(kind) if kind in MemoryKind.__members__ else MemoryKind.hybrid
    return _make_memory(
        chosen, session, store, settings.ns, model=_resolve_model(model), user_id=user
    )


def _run(memory: RecursiveMemory | HiGMem, scope: str, *, progress: bool) -> RebuildResult:
    """Rebuild with a progress bar (a step: one version's facts, a batch of turns...)."""
    if not progress:
        return memory.rebuild(scope)
    columns = (
        TextColumn("rebuild {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=_console(), transient=True) as bar:
        task = bar.add_task(memory.session_id, total=None)

        def advance(step: RebuildProgress) -> None:
            description = f"{step.session_id} ({step.step})"
            bar.update(task, completed=step.done, total=step.total, description=description)

        return memory.rebuild(scope, on_progress=advance)


def _result_line(result: RebuildResult) -> str:
    """What the rebuild re-derived, in one line."""
    resumed = " (resumed)" if result.resumed else ""
    return (
        f"Rebuilt {len(result.sessions)} session(s){resumed}: {result.versions} summary "
        f"version(s), {result.facts} fact(s), {result.vectors} vector(s), "
        f"{result.nodes} HiGMem turn(s)."
    )
