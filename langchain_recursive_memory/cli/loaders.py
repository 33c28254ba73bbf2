"""Loaders of the CLI, usable from Python: ``ingest`` (resumable, with a tqdm bar) and LoCoMo.

Ingestion is resumable when turns carry stable ids (LoCoMo turns use their ``dia_id``;
give JSONL messages an ``id``, or read them with
:func:`~langchain_recursive_memory.core.ingest.read_jsonl` ``(path, stable_ids=True)``):
turns already in the session's log are skipped, and indexing picks up where it stopped.
A progress bar (tqdm) shows the way.

Example:
    >>> from langchain_recursive_memory.core import HiGMem, MemoryStore, Turn
    >>> from langchain_recursive_memory.cli.loaders import ingest
    >>> memory = HiGMem("t", store=MemoryStore.in_memory())
    >>> turns = [Turn(role="user", text=f"line {i}", id=f"m{i}") for i in range(5)]
    >>> ingest(memory, turns, progress=False), ingest(memory, turns, progress=False)
    (5, 0)
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from ..core.dates import parse_datetime
from ..core.errors import InvalidInputError
from ..core.storage import StoredTurn
from ..core.turn import Turn

__all__ = ["ingest", "locomo_sessions", "locomo_turns"]


class _Memory(Protocol):
    session_id: str
    namespace: str

    def add(self, turns: Sequence[Turn]) -> list[StoredTurn]: ...

    def turns(self) -> list[StoredTurn]: ...


def ingest(
    memory: _Memory,
    turns: Iterable[Turn],
    *,
    batch_size: int = 16,
    progress: bool = True,
    description: str | None = None,
) -> int:
    """Add ``turns`` to ``memory`` in batches, skipping those already logged.

    Works with :class:`~.core.RecursiveMemory`, :class:`~.core.HybridMemory` and
    :class:`~.core.HiGMem`. Interrupted, it can simply be called again: turns with ids
    already in the log are skipped (turns without ids get none, so give ids to resume).

    Args:
        memory: The memory to fill.
        turns: The transcript, oldest first.
        batch_size: Turns per ``add`` call.
        progress: Show a tqdm progress bar.
        description: The bar's label (default: the session id).

    Returns:
        How many turns were added.
    """
    from tqdm import tqdm

    if batch_size < 1:
        raise InvalidInputError.for_value("batch_size", batch_size, "must be >= 1")
    items = list(turns)
    have = {s.id for s in memory.turns()}
    todo = [t for t in items if t.id is None or t.id not in have]
    bar = tqdm(
        total=len(items),
        initial=len(items) - len(todo),
        desc=description or memory.session_id,
        unit="turn",
        disable=not progress,
    )
    added = 0
    try:
        for start in range(0, len(todo), batch_size):
            chunk = todo[start : start + batch_size]
            memory.add(chunk)
            added += len(chunk)
            bar.update(len(chunk))
        flush = getattr(memory, "flush", None)
        if callable(flush):
            flush()
    finally:
        bar.close()
    return added


def locomo_sessions(sample: Mapping[str, Any]) -> list[int]:
    """The session numbers of a LoCoMo sample, in order."""
    conv = sample["conversation"]
    return sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))


def locomo_turns(sample: Mapping[str, Any], *, user_speaker: str | None = None) -> list[Turn]:
    """Turn a LoCoMo sample's conversation into turns.

    Each turn's id is its ``dia_id`` (``"D3:7"``), its name the speaker, its time the
    session's date (plus one second per turn, keeping order), ``extra["session"]`` the
    session number; an image's ``blip_caption`` is appended as ``[image: ...]`` (the
    official loaders drop them). ``speaker_a`` (or ``user_speaker``) is the user role.
    """
    conv = sample["conversation"]
    user = user_speaker or conv.get("speaker_a")
    out = []
    for n in locomo_sessions(sample):
        when = parse_datetime(str(conv.get(f"session_{n}_date_time", "")))
        base = when.replace(tzinfo=dt.timezone.utc).timestamp() if when else None
        for i, turn in enumerate(conv[f"session_{n}"]):
            text = str(turn.get("text", ""))
            if turn.get("blip_caption"):
                text = f"{text} [image: {turn['blip_caption']}]".strip()
            out.append(
                Turn(
                    role="user" if turn["speaker"] == user else "assistant",
                    text=text,
                    name=str(turn["speaker"]),
                    id=str(turn["dia_id"]),
                    created_at=base + i if base is not None else None,
                    extra={"session": str(n)},
                )
            )
    return out
