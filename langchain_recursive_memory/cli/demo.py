"""``lrm demo``: a long scripted conversation through a HybridMemory, offline."""

import datetime as dt
import shlex
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from ..core import HybridMemory, RecallHit, StoredTurn, Turn
from ._app import ProgressOption, _console, _reported_errors, _settings, app
from .loaders import ingest as ingest_turns
from .render import recall_table, render_show

__all__ = ["demo", "demo_turns", "invocation"]

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
    *,
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
    progress: ProgressOption = True,
) -> None:
    """Offline demo: a long conversation through a HybridMemory, no LLM, no API key."""
    settings = _settings(ctx)
    console = _console()
    with _reported_errors():
        path = None
        if settings.host is None and settings.path is None:
            path = Path(tempfile.mkdtemp(prefix="lrm-demo-"))
        store = settings.open_store(path)
        console.print(_intro(exchanges, max_tokens, settings.location(path)))
        memory = HybridMemory(session, store=store, namespace=settings.ns, max_tokens=max_tokens)
        if store.count_turns(settings.ns, session):
            memory.clear()  # a re-run starts over (only this session is touched)
        turns = demo_turns(exchanges)
        # The bar counts turns (an exchange is two), so it says turns.
        ingest_turns(memory, turns, batch_size=2, progress=progress, description="turns")
        console.print()
        render_show(console, memory, window_rows=6)

        console.print()
        hits = memory.recall(query, k=3)
        console.print(recall_table(hits, f"recall({query!r}, k=3)"))
        _print_early_recall(console, memory, hits, exchanges)
        ctx_q = memory.context(query)
        full = memory.counter.count_turns(turns)
        console.print(
            f"Context for this question (summary + recalled memories + window): "
            f"{ctx_q.tokens:,} tokens of {max_tokens:,}; the full history is {full:,} tokens "
            f"({len(turns):,} messages)."
        )
        if path is not None:
            base = f"{invocation()} --path {shlex.quote(str(path))}"
            console.print(
                Text(
                    f"\nExplore the store:\n  {base} show {shlex.quote(session)}\n"
                    f"  {base} recall {shlex.quote(session)} 'When do we land in Tokyo?'"
                ),
                soft_wrap=True,
            )


def invocation() -> str:
    """The command that ran this program, to print commands that run as printed.

    ``.venv/bin/lrm`` when it was run so (the README's first command: the venv is not
    activated, so a bare ``lrm`` would not be found), ``python -m
    langchain_recursive_memory`` when run as a module, else ``lrm``.
    """
    argv0 = sys.argv[0] if sys.argv else ""
    name = Path(argv0).name
    if name in ("lrm", "langchain-recursive-memory"):
        return shlex.quote(argv0)
    if name == "__main__.py" and Path(argv0).parent.name == "langchain_recursive_memory":
        return f"{shlex.quote(sys.executable)} -m langchain_recursive_memory"
    return "lrm"


def _intro(exchanges: int, max_tokens: int, location: str) -> Panel:
    """The panel that says what the demo plays and that no model is called."""
    return Panel(
        Text(
            f"{exchanges} scripted exchanges (Ada states names, numbers and dates in "
            "the first ones) go through a HybridMemory with "
            f"max_tokens={max_tokens}, stored at {location} "
            "(the log in SQLite, the facts in Chroma).\n"
            "No model is called and no API key is needed: the assistant's replies are "
            "scripted, and the summaries are the no-LLM extractive ones (a rolling "
            "extract of the latest folded messages). Without a summarizer model no "
            "facts are extracted, so recall ranks the archived turns with BM25."
        ),
        title="langchain-recursive-memory demo (offline)",
        title_align="left",
    )


def _print_early_recall(
    console: Console, memory: HybridMemory, hits: Sequence[RecallHit], exchanges: int
) -> None:
    """Print which opening fact was recalled and whether it had left the window."""
    window_ids = {t.id for t in memory.context().window}
    logged = {t.id: t for t in memory.turns()}
    early = [
        h
        for h in hits
        if h.kind == "turn" and any(_is_early(logged.get(i)) for i in h.source_turn_ids)
    ]
    if not early:
        return
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


def _is_early(turn: StoredTurn | None) -> bool:
    """Whether a demo turn is one of the opening statements of facts."""
    return turn is not None and turn.id.startswith("u") and int(turn.id[1:]) < len(_DEMO_FACTS)
