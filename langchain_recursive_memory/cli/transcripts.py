"""Reading the transcripts ``ingest`` takes: JSONL or LoCoMo JSON.

JSONL is read by :func:`~.core.ingest.read_jsonl` with stable ids, so that ingesting the
same file again resumes; LoCoMo turns carry their ``dia_id``.
"""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from ..core import InvalidInputError, Turn
from ..core.ingest import read_jsonl
from ._app import InputFormat
from .loaders import locomo_turns

__all__ = ["load_transcript"]


def load_transcript(
    path: Path, fmt: InputFormat, session: str | None
) -> list[tuple[str, list[Turn]]]:
    """Return the ``(session_id, turns)`` pairs to ingest from ``path``.

    Args:
        path: The transcript.
        fmt: Its format; ``auto`` takes a JSON list (or an object with a
            ``conversation``) for LoCoMo, anything else for JSONL.
        session: The session id (JSONL), or the prefix of LoCoMo conversations' ids.

    Returns:
        One pair for JSONL; one per conversation for LoCoMo (``<session>-<sample_id>``,
        or the sample id when ``session`` is None).

    Raises:
        InvalidInputError: When the file cannot be read or is not of the format.
        typer.BadParameter: For JSONL without a session.
    """
    text = _read_text(path)
    data: Any = None
    if fmt is InputFormat.auto:
        fmt = InputFormat.jsonl
        if text.lstrip()[:1] in ("[", "{"):
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                data = None
            if isinstance(data, list) or (isinstance(data, Mapping) and "conversation" in data):
                fmt = InputFormat.locomo
    if fmt is InputFormat.jsonl:
        if session is None:
            raise typer.BadParameter("a JSONL transcript needs --session", param_hint="--session")
        return [(session, _some(path, read_jsonl(path, stable_ids=True)))]
    if data is None:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{path}: not JSON (LoCoMo files are JSON: {exc})") from exc
    return [
        (f"{session}-{sample_id}" if session else sample_id, turns)
        for sample_id, turns in _locomo_samples(path, data)
    ]


def _read_text(path: Path) -> str:
    """The file's text; an :class:`~.core.InvalidInputError` when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: cannot be read ({exc})") from exc


def _locomo_samples(path: Path, data: Any) -> list[tuple[str, list[Turn]]]:
    """Return ``(sample_id, turns)`` of every conversation of a LoCoMo-format file."""
    samples = [data] if isinstance(data, Mapping) else data
    if not isinstance(samples, list) or not samples:
        raise InvalidInputError(
            f"{path}: a LoCoMo file is a non-empty list of samples (got {type(data).__name__})"
        )
    out = []
    for n, sample in enumerate(samples, start=1):
        if not isinstance(sample, Mapping) or not isinstance(sample.get("conversation"), Mapping):
            raise InvalidInputError(f"{path} sample {n}: has no 'conversation' object (not LoCoMo)")
        sample_id = str(sample.get("sample_id") or f"sample-{n}")
        try:
            turns = locomo_turns(sample)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidInputError(
                f"{path} sample {sample_id!r}: not a LoCoMo conversation ({exc!r})"
            ) from exc
        out.append((sample_id, _some(f"{path} sample {sample_id!r}", turns)))
    return out


def _some(where: Path | str, turns: list[Turn]) -> list[Turn]:
    """``turns``; an empty transcript is an error, not a session ingested with nothing."""
    if not turns:
        raise InvalidInputError(f"{where}: no messages to ingest (the file is empty)")
    return turns
