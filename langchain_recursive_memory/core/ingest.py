"""Read a transcript into turns: message dicts or a JSONL file.

The framework-free half of ingestion. Adding the turns to a memory with a progress bar
(``ingest``) and reading LoCoMo conversations (``locomo_turns``) live in
:mod:`langchain_recursive_memory.cli.loaders`, beside the ``lrm ingest`` command that uses
them.

Example:
    >>> from langchain_recursive_memory.core.ingest import turns_from_dicts
    >>> [t.role for t in turns_from_dicts([{"role": "user", "content": "hi"}])]
    ['user']
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from .errors import InvalidInputError
from .message_dicts import turns_from_dict
from .turn import Turn

__all__ = ["read_jsonl", "turns_from_dicts"]


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
