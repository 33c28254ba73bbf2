"""``lrm sessions``, ``lrm clear``, ``lrm expire``, ``lrm migrate``: sessions and the store."""

import datetime as dt
from collections.abc import Sequence
from enum import Enum
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from ..core import MemoryStore, RecursiveMemory
from ._app import (
    DATABASE_FILE,
    Settings,
    _console,
    _reported_errors,
    _require_session,
    _settings,
    _time,
    app,
    parse_duration,
)

__all__ = ["clear", "expire", "list_sessions", "migrate"]


class ExpireBy(str, Enum):
    """What ``expire`` measures a session's age by."""

    written = "written"
    created = "created"


_BY_HELP = (
    "written (default): the session's last write (a transcript ingested today is young); "
    "created: its newest turn's own time (JSONL created_at)."
)

_Doomed = Sequence[tuple[tuple[str, str], float]]
"""``((namespace, session_id), last activity)`` of the sessions ``expire`` deletes."""


@app.command("sessions")
def list_sessions(ctx: typer.Context) -> None:
    """List sessions: namespace, id, turns, last activity."""
    settings = _settings(ctx)
    console = _console()
    with _reported_errors():
        store = settings.readable_store()
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
        store, count = _require_session(settings.existing_store(), settings.ns, session)
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
    by: Annotated[ExpireBy, typer.Option("--by", help=_BY_HELP)] = ExpireBy.written,
) -> None:
    """Delete inactive sessions (a retention period; run it from a scheduled job)."""
    settings = _settings(ctx)
    seconds = parse_duration(older_than)
    console = _console()
    with _reported_errors():
        store = settings.existing_store()
        doomed = _expire(store, settings, seconds, dry_run=dry_run, by=by.value)
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
            console.print(_doomed_table(doomed, by))


def _expire(
    store: MemoryStore, settings: Settings, seconds: float, *, dry_run: bool, by: str
) -> _Doomed:
    """Delete (or, for a dry run, only find) the sessions inactive for ``seconds``."""
    activity = store.activity(settings.namespace, by=by)
    if dry_run:
        cutoff = dt.datetime.now(tz=dt.timezone.utc).timestamp() - seconds
        return [(key, last) for key, last in activity.items() if last < cutoff]
    deleted = store.expire(seconds, namespace=settings.namespace, by=by)
    return [(key, activity.get(key, 0.0)) for key in deleted]


def _doomed_table(doomed: _Doomed, by: ExpireBy) -> Table:
    """The expired sessions, least recently active first."""
    table = Table()
    table.add_column("namespace", overflow="fold")
    table.add_column("session", overflow="fold")
    when = "last activity" if by is ExpireBy.written else "newest turn's time"
    table.add_column(f"{when} (UTC)", no_wrap=True)
    for (ns, sid), last in sorted(doomed, key=lambda item: item[1]):
        table.add_row(Text(ns), Text(sid), _time(last))
    return table


@app.command()
def migrate(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be done, change nothing.")
    ] = False,
) -> None:
    """Bring a store written by an earlier release up to this one.

    Runs by itself the first time a process opens the store; run it by hand to see what
    it does (--dry-run) or after a process of an earlier release wrote again.
    """
    settings = _settings(ctx)
    console = _console()
    with _reported_errors():
        store = _migrating_store(settings, dry_run=dry_run)
        done = store.migrate(dry_run=dry_run)
        if not done.needed:
            console.print(f"Nothing to migrate in {settings.location()}.")
            return
        moved = "Would move" if dry_run else "Moved"
        for ns, sid, turns in done.sessions:
            console.print(f"{moved} session {ns}/{sid} ({turns} turns) into the database")
        verb = "Would rename" if dry_run else "Renamed"
        for old, new in done.renamed:
            console.print(f"{verb} {old} -> {new}")
        for old, why in done.left:
            console.print(f"Left {old} as it is: {why} (reindex() embeds its vectors again)")


def _migrating_store(settings: Settings, *, dry_run: bool) -> MemoryStore:
    """The store ``migrate`` works on, opened without moving anything by itself.

    A dry run changes nothing: an embedded store whose folder holds no database yet is
    read through an empty one in memory (every session is listed; no file is made).
    """
    if dry_run and settings.host is None and settings.database is None:
        settings.check_exists()
        if not (settings.folder / DATABASE_FILE).exists():
            return settings.scratch_store()
    return settings.existing_store(migrate=False)
