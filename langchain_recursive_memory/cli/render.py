"""Rich rendering of what a memory holds: ``show``'s panels and tables, recall tables.

Stored text is always wrapped in :class:`~rich.text.Text`, so it is printed as text and
never read as rich markup.
"""

from collections.abc import Callable, Sequence

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..core import (
    Context,
    Event,
    Fact,
    MemoryStore,
    RecallHit,
    RecursiveMemory,
    RetrievedTurn,
    StoredTurn,
    Summary,
    TokenCounter,
    Turn,
)
from ..core.turn import MEDIA_BLOCK_TYPES, is_reasoning, reasoning_text
from ._app import _cut, _time

__all__ = ["higmem_table", "recall_table", "render_show", "render_user", "turn_line"]


def render_show(
    console: Console,
    memory: RecursiveMemory,
    *,
    window_rows: int,
    reasoning: bool = False,
    budget_known: bool = True,
) -> None:
    """Print the summary, the window, the facts, HiGMem events and the token counts.

    Args:
        console: Where to print.
        memory: The memory of the session shown.
        window_rows: Most window messages to list (the newest).
        reasoning: Show the window's reasoning in full (default: collapsed).
        budget_known: Whether the memory's budget is the session's (False: it was never
            recorded, and the memory reads it with a default: said so, not shown as its).
    """
    turns = memory.turns()
    ctx = memory.context()
    facts = memory.facts()
    events = memory.session.records.nodes.events()
    console.print(_summary_panel(ctx.summary))
    console.print(_window_table(ctx.window, window_rows, memory.counter, reasoning=reasoning))
    if facts:
        console.print(_facts_table(facts))
    else:
        console.print(
            "Facts: none stored (facts are extracted at folds by a summarizer model; "
            "the no-LLM extractive summarizer extracts none).\n"
        )
    if events:
        console.print(_events_table(events))
    _print_tokens(console, memory.counter, turns, ctx, budget_known=budget_known)


def render_user(
    console: Console, store: MemoryStore, namespace: str, user_id: str, where: str
) -> None:
    """Print a user's sessions and the user's facts (newest statement of each key).

    Args:
        console: Where to print.
        store: The store.
        namespace: The user's namespace.
        user_id: The user.
        where: The store's readable location (for the title).
    """
    console.print(Text(f"User {user_id!r} · namespace {namespace!r} · {where}", style="bold"))
    sessions = Table(title="Sessions", title_justify="left")
    sessions.add_column("session", overflow="fold")
    sessions.add_column("turns", justify="right")
    for info in store.user_sessions(namespace, user_id):
        sessions.add_row(
            Text(info.session_id), f"{store.count_turns(namespace, info.session_id):,}"
        )
    console.print(sessions)
    facts = store.user_facts(namespace, user_id)
    if not facts:
        console.print("Facts: none stored yet (a session's facts reach its user at its folds).")
        return
    console.print(
        _facts_table(
            facts,
            ("sessions", "previously"),
            lambda f: (", ".join(f.session_ids), " | ".join(_cut(p, 60) for p in f.previous)),
        )
    )


def _summary_panel(summary: Summary | None) -> Panel:
    """The summary's text, titled with its version, method, coverage and size."""
    if summary is None:
        return Panel(Text("No summary yet: nothing has been folded."), title="Summary")
    method = "extractive, no LLM" if summary.method == "extractive" else summary.method
    title = (
        f"Summary v{summary.version} ({method}) · covers {summary.covered} turns · "
        f"{summary.tokens} tokens"
    )
    return Panel(Text(summary.text), title=title, title_align="left")


def turn_line(turn: Turn, counter: TokenCounter, *, reasoning: bool = False) -> str:
    """A turn on one line, with its structure: what was said, and what else it holds.

    A tool call is ``-> name(args)``, a tool result starts ``[result of <call id>]``, a
    media block is ``[image, ~765 tokens]`` (its estimate), reasoning is collapsed to
    ``[reasoning, N tokens]`` (in full with ``reasoning``; redacted reasoning has no
    readable text: ``[reasoning, redacted, N tokens]``). The text is cut to
    :data:`SHOWN_TEXT_CHARS`; the markers never are.
    """
    head = f"[result of {turn.tool_call_id}]" if turn.role == "tool" else ""
    thoughts: list[str] = []
    media: list[str] = []
    for block in turn.blocks or ():
        kind = str(block.get("type", block.get("block_type")))
        if is_reasoning(block):
            thought = reasoning_text([block])
            if reasoning and thought:
                thoughts.append(f"[reasoning: {' '.join(thought.split())}]")
            else:
                label = "reasoning, redacted" if kind == "redacted_thinking" else "reasoning"
                thoughts.append(f"[{label}, {counter.count_block(block)} tokens]")
        elif kind in MEDIA_BLOCK_TYPES:
            name = kind.removeprefix("input_").removesuffix("_url")
            media.append(f"[{name}, ~{counter.count_block(block)} tokens]")
    calls = [
        f"-> {c.name}({', '.join(f'{k}={v!r}' for k, v in c.args.items())})"
        for c in turn.tool_calls
    ]
    text = _cut(turn.text, SHOWN_TEXT_CHARS) if turn.text else ""
    return " ".join(p for p in (head, *thoughts, text, *media, *calls) if p)


SHOWN_TEXT_CHARS = 120
"""Longest text of a turn ``show`` lists (its structure markers come in full)."""


def _window_table(
    window: Sequence[Turn], rows: int, counter: TokenCounter, *, reasoning: bool = False
) -> Table:
    """The newest ``rows`` messages of the window, with their structure."""
    table = Table(
        title=f"Window: {len(window)} recent messages, verbatim",
        title_justify="left",
        caption=f"last {rows} of {len(window)} shown" if len(window) > rows else None,
    )
    table.add_column("id", overflow="fold")
    table.add_column("role")
    table.add_column("time (UTC)", no_wrap=True)
    table.add_column("text", overflow="fold", ratio=1)
    for turn in window[-rows:] if rows else ():
        role = f"{turn.role} ({turn.name})" if turn.name else turn.role
        table.add_row(
            Text(turn.id or ""),
            Text(role),
            _time(turn.created_at),
            Text(turn_line(turn, counter, reasoning=reasoning)),
        )
    return table


def _facts_table(
    facts: Sequence[Fact],
    columns: Sequence[str] = ("time", "source turns"),
    cells: Callable[[Fact], Sequence[str]] = lambda f: (f.time, ", ".join(f.source_turn_ids)),
) -> Table:
    """Facts: key and text, then ``columns`` (the ``cells`` of each fact).

    The default: a session's facts with their times and source turns.
    """
    table = Table(title=f"Facts ({len(facts)})", title_justify="left")
    table.add_column("key", overflow="fold")
    table.add_column("fact", overflow="fold", ratio=1)
    for column in columns:
        table.add_column(column, overflow="fold")
    for fact in facts:
        table.add_row(Text(fact.key), Text(_cut(fact.text, 160)), *(Text(c) for c in cells(fact)))
    return table


def _events_table(events: Sequence[Event]) -> Table:
    """The session's HiGMem event nodes."""
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
    return table


def _print_tokens(
    console: Console,
    counter: TokenCounter,
    turns: Sequence[StoredTurn],
    ctx: Context,
    *,
    budget_known: bool = True,
) -> None:
    """Print the token counts of the log and the context, and what was folded.

    ``budget_known=False``: the session's budget was never recorded: the context's row
    says so instead of showing the default it was read with as the session's.
    """
    full = counter.count_turns(t.turn for t in turns)
    first = counter.count_turn(ctx.summary_turn) if ctx.summary_turn is not None else 0
    window_tokens = ctx.tokens - first - 3  # 3: reply priming
    tokens = Table(title="Tokens", title_justify="left")
    tokens.add_column("")
    tokens.add_column("messages", justify="right")
    tokens.add_column("tokens", justify="right")
    tokens.add_row("full log", f"{len(turns):,}", f"{full:,}")
    budget = f" / {ctx.max_tokens:,}" if budget_known else " (budget unknown)"
    tokens.add_row("context handed to the model", f"{len(ctx.turns):,}", f"{ctx.tokens:,}{budget}")
    tokens.add_row("  summary message", "1" if first else "0", f"{first:,}")
    tokens.add_row("  window", f"{len(ctx.window):,}", f"{window_tokens:,}")
    console.print(tokens)
    folded = sum(1 for t in turns if t.folded_in)
    saved = f" ({100 * (1 - ctx.tokens / full):.0f}% fewer)" if full > ctx.tokens else ""
    console.print(
        f"Log: {len(turns):,} turns, {folded:,} folded into the summary, "
        f"{len(turns) - folded:,} unfolded. The context is {ctx.tokens:,} tokens against "
        f"{full:,} for the full log{saved}."
    )
    if not budget_known:
        console.print(
            "The session's budget is unknown: it was never recorded (0.1.0 recorded none; "
            f"HiGMem has none). The context above was cut to {ctx.max_tokens:,} tokens, "
            "the default; read it with another budget with --max-tokens."
        )
    if ctx.hidden:
        console.print(
            f"{ctx.hidden:,} unfolded messages do not fit the window (a fold is pending, or "
            "the session was filled by HiGMem, which does not fold, or with a larger "
            "--max-tokens)."
        )


def recall_table(hits: Sequence[RecallHit], title: str) -> Table:
    """A table of recalled memories (facts and archived turns), best first.

    Args:
        hits: What :meth:`~.core.RecursiveMemory.recall` returned.
        title: The table's title.

    Returns:
        The table.
    """
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


def higmem_table(found: Sequence[RetrievedTurn], title: str) -> Table:
    """A table of turns HiGMem retrieved, with their speakers, scores and events.

    Args:
        found: What :meth:`~.core.HiGMem.retrieve` returned.
        title: The table's title.

    Returns:
        The table.
    """
    table = Table(title=title, title_justify="left")
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
    return table
