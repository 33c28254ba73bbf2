"""The checks at the public boundary: every bad value gets an :class:`InvalidInputError`.

Each check names the parameter and shows the bad value (shortened), so a caller sees what
to fix. The memories, stores and adapters call these checks before anything is written:
a refused call changes nothing.

Example:
    >>> from langchain_recursive_memory.core.validation import check_count
    >>> check_count("k", 3)
    3
    >>> check_count("k", 1.5)
    Traceback (most recent call last):
    ...
    langchain_recursive_memory.core.errors.InvalidInputError: k=1.5: must be an int >= 1
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import json
import math
from collections.abc import Mapping
from typing import Any

from .errors import ConfigurationError, InvalidInputError

__all__ = [
    "KnownFields",
    "check_fields",
    "check_count",
    "check_json",
    "check_optional_text",
    "check_text",
    "check_timestamp",
    "check_when",
    "check_tokens",
]


def check_text(name: str, value: object) -> str:
    """``value`` if it is a str that can be stored (valid Unicode: no lone surrogates).

    Raises:
        InvalidInputError: For anything else.
    """
    if not isinstance(value, str):
        raise InvalidInputError.for_value(name, value, "must be a str")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInputError.for_value(
                name, value, f"is not valid Unicode ({exc.reason} at {exc.start})"
            ) from exc
    return value


def check_optional_text(name: str, value: object) -> str | None:
    """``value`` if it is None or a storable str (see :func:`check_text`)."""
    return None if value is None else check_text(name, value)


def check_timestamp(name: str, value: object) -> float | None:
    """``value`` if it is None or a finite number of seconds (not a bool).

    Raises:
        InvalidInputError: For NaN, infinities, strings, bools...
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError.for_value(name, value, "must be seconds since the epoch")
    if not math.isfinite(value):
        raise InvalidInputError.for_value(name, value, "must be a finite number")
    return float(value)


def check_when(name: str, value: object) -> dt.date | None:
    """The UTC day of a moment given as seconds since the epoch, a datetime or a date.

    A naive datetime is read as UTC. None stays None.

    Raises:
        InvalidInputError: For anything else (NaN, strings, bools...).
    """
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc)
        return value.date()
    if isinstance(value, dt.date):
        return value
    seconds = check_timestamp(name, value)
    assert seconds is not None
    try:
        return dt.datetime.fromtimestamp(seconds, tz=dt.timezone.utc).date()
    except (OverflowError, OSError, ValueError) as exc:
        raise InvalidInputError.for_value(name, value, "is out of the calendar's range") from exc


def check_count(name: str, value: object, minimum: int = 1) -> int:
    """``value`` if it is an int (not a bool) of at least ``minimum``.

    Raises:
        InvalidInputError: For floats, bools, strings and ints below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInputError.for_value(name, value, f"must be an int >= {minimum}")
    return value


def check_tokens(name: str, value: object) -> int:
    """``value`` if it is a token count: an int >= 0 (not a bool)."""
    return check_count(name, value, minimum=0)


def check_json(name: str, value: object) -> Any:
    """``value`` if it is JSON-serializable without loss of meaning (finite numbers, str keys).

    Raises:
        InvalidInputError: Naming what cannot be stored.
    """
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise InvalidInputError.for_value(
            name, value, f"must be JSON-serializable ({exc})"
        ) from exc
    if isinstance(value, Mapping):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise InvalidInputError.for_value(name, value, f"keys must be str, not {bad[0]!r}")
    return value


def check_fields(cls: type, given: Mapping[str, Any]) -> None:
    """Refuse keyword arguments that are not fields of the dataclass ``cls``.

    Raises:
        ConfigurationError: Naming the unknown field (and the closest known one).
    """
    known = [f.name for f in dataclasses.fields(cls)]
    for name, value in given.items():
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigurationError.for_value(
                name, value, f"is not a field of {cls.__name__}{hint}"
            )


class KnownFields:
    """Base of the configuration dataclasses: an unknown field is a ``ConfigurationError``.

    Python's own ``TypeError`` ("unexpected keyword argument") is raised before any check
    of the dataclass runs; this base checks first.

    Example:
        >>> from langchain_recursive_memory.core import ConfigurationError, MemoryConfig
        >>> try:
        ...     MemoryConfig(max_token=100)
        ... except ConfigurationError as exc:
        ...     print(exc)
        max_token=100: is not a field of MemoryConfig; did you mean 'max_tokens'?
    """

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        """Check the keyword arguments' names, then create the object."""
        check_fields(cls, kwargs)
        return super().__new__(cls)
