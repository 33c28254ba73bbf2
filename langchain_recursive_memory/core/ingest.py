"""Ingest an existing transcript into a memory: messages, JSONL, or LoCoMo conversations.

Ingestion is resumable when turns carry stable ids (LoCoMo turns use their ``dia_id``;
give JSONL messages an ``id``, or read them with ``read_jsonl(path, stable_ids=True)``):
turns already in the session's log are skipped, and indexing picks up where it stopped.
A progress bar (tqdm) shows the way.

Example:
    >>> from langchain_recursive_memory.core import HiGMem, MemoryStore, Turn
    >>> from langchain_recursive_memory.core.ingest import ingest
    >>> memory = HiGMem("t", store=MemoryStore.in_memory())
    >>> turns = [Turn(role="user", text=f"line {i}", id=f"m{i}") for i in range(5)]
    >>> ingest(memory, turns, progress=False), ingest(memory, turns, progress=False)
    (5, 0)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from .dates import parse_datetime
from .errors import InvalidInputError
from .message_dicts import turns_from_dict
from .storage import StoredTurn
from .turn import Turn

__all__ = ["ingest", "locomo_sessions", "locomo_turns", "read_jsonl", "turns_from_dicts"]


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

    Works with :class:`~.memory.RecursiveMemory`, :class:`~.memory.HybridMemory` and
    :class:`~.higmem.HiGMem`. Interrupted, it can simply be called again: turns with ids
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


def turns_from_dicts(records: Iterable[Mapping[str, Any]]) -> list[Turn]:
    """Build turns from message objects, in any of the shapes of :mod:`.message_dicts`.

    OpenAI, Anthropic, LangChain and LlamaIndex message dicts and this package's own
    ``{role, content|text, name?, id?, created_at?, session?}``; ``created_at`` is seconds
    since the epoch or an ISO 8601 string.

    Raises:
        InvalidInputError: Naming the record that cannot be read.
    """
    return [turn for n, rec in enumerate(records, start=1) for turn in turns_from_dict(rec, n)]


def read_jsonl(path: str | Path, *, stable_ids: bool = False) -> list[Turn]:
    """Read a JSONL transcript (one message object per line, see :func:`turns_from_dicts`).

    Blank lines are skipped.

    Args:
        path: The transcript, UTF-8.
        stable_ids: Give every turn without an ``id`` a derived one, so that ingesting
            the file again resumes instead of adding its turns twice. The derived id is
            the record's position (blank lines not counted) and a hash of its role and
            text, ``j12-3fa9c1d2``: re-reading the same file (or a longer version of it)
            yields the same ids, and another transcript's turn shares an id only if
            position, role and text are all equal. Default: such turns keep ``id=None``.

    Returns:
        The turns, in file order.

    Raises:
        InvalidInputError: When the file cannot be read (missing, not UTF-8), a line is
            not JSON or a record is not a message, named by file and line:
            ``chat.jsonl:5: unknown role 'wizard' (use ...)``.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: cannot be read ({exc})") from exc
    turns = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{path}:{n}: not JSON ({exc})") from exc
        turns += turns_from_dict(record, f"{path}:{n}")
    if not stable_ids:
        return turns
    return [
        turn if turn.id is not None else replace(turn, id=_stable_id(n, turn))
        for n, turn in enumerate(turns, start=1)
    ]


def _stable_id(position: int, turn: Turn) -> str:
    """The id :func:`read_jsonl` derives for the ``position``-th record (from 1)."""
    digest = hashlib.blake2b(f"{turn.role}\x00{turn.text}".encode(), digest_size=4)
    return f"j{position}-{digest.hexdigest()}"


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
