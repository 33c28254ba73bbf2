"""Calendar dates written in text: in session headers, and in questions (a retrieval cue).

Example:
    >>> from langchain_recursive_memory.core.dates import parse_date, question_dates, date_matches
    >>> parse_date("1:56 pm on 8 May, 2023")
    datetime.date(2023, 5, 8)
    >>> question_dates("What did Caroline do on 10 May 2023? And in June?")
    [(2023, 5, 10), (None, 6, None)]
    >>> date_matches(question_dates("in May 2023"), parse_date("8 May, 2023"))
    True
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

__all__ = [
    "date_matches",
    "format_time",
    "parse_date",
    "parse_datetime",
    "question_dates",
    "utc_date",
]

_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_MON = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_TIME = r"(?P<hour>\d{1,2}):(?P<minute>\d\d)\s*(?P<meridian>[ap]\.?m\.?)?"
# Month names that are also common words: ignored when alone (no day, no year).
_AMBIGUOUS = {"may", "mar", "march"}

DateMention = tuple[int | None, int | None, int | None]
"""``(year, month, day)``, each None when the text does not say."""


def format_time(ts: float | None) -> str:
    """``"YYYY-MM-DD HH:MM"`` (UTC) of seconds since the epoch; ``""`` for None.

    Example:
        >>> format_time(0.0), format_time(None)
        ('1970-01-01 00:00', '')
    """
    if ts is None:
        return ""
    return dt.datetime.fromtimestamp(ts, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M")


def utc_date(ts: float | None) -> dt.date | None:
    """The UTC calendar date of seconds since the epoch, or None."""
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, tz=dt.timezone.utc).date()


_ABBREVIATION = 3
"""Letters that name a month (``"sep"`` of ``"September"``)."""
_HOURS = 24
_NOON = 12
_MONTHS_IN_YEAR = 12


def _month(name: str) -> int:
    return _MONTHS.index(name.lower()[:_ABBREVIATION]) + 1


def parse_date(text: str) -> dt.date | None:
    """Return the first full date (``8 May, 2023`` or ``May 8, 2023``) in ``text``."""
    m = re.search(_DAY + r"\s+(?:of\s+)?" + _MON + r",?\s+" + _YEAR, text or "", re.I)
    if m:
        day, mon, year = m.groups()
    else:
        m = re.search(_MON + r"\s+" + _DAY + r",?\s*" + _YEAR, text or "", re.I)
        if not m:
            return None
        mon, day, year = m.groups()
    try:
        return dt.date(int(year), _month(mon), int(day))
    except ValueError:
        return None


def parse_datetime(text: str) -> dt.datetime | None:
    """Return the date of ``text`` with its clock time when given (``1:56 pm on 8 May, 2023``).

    The result is naive (no time zone), as the text gives none.

    Example:
        >>> parse_datetime("1:56 pm on 8 May, 2023")
        datetime.datetime(2023, 5, 8, 13, 56)
    """
    day = parse_date(text)
    if day is None:
        return None
    m = re.search(_TIME, text or "", re.I)
    hour = minute = 0
    if m:
        hour, minute = int(m.group("hour")) % _HOURS, int(m.group("minute"))
        meridian = (m.group("meridian") or "").lower().replace(".", "")
        if meridian == "pm" and hour < _NOON:
            hour += _NOON
        elif meridian == "am" and hour == _NOON:
            hour = 0
    return dt.datetime(day.year, day.month, day.day, hour, minute)


def question_dates(text: str) -> list[DateMention]:
    """Return the explicit calendar mentions of a question, in order.

    Handles ``8 May, 2023``, ``8th of May 2023``, ``May 8, 2023``, ``May 2023``,
    ``in December`` and ``2024``. A lone ``may``/``march`` (a verb, a noun) is ignored.
    """
    patterns: list[tuple[str, tuple[int, int, int]]] = [
        (_DAY + r"\s+(?:of\s+)?" + _MON + r"\b,?\s*" + _YEAR + "?", (2, 1, 0)),
        (_MON + r"\s+" + _DAY + r"\b,?\s*" + _YEAR + "?", (2, 0, 1)),
        (_MON + r"\b,?\s*" + _YEAR + "?", (1, 0, -1)),
        (r"\b" + _YEAR + r"\b", (0, -1, -1)),
    ]
    found: list[tuple[int, DateMention]] = []
    taken: list[tuple[int, int]] = []
    for pattern, (yi, mi, di) in patterns:
        for m in re.finditer(r"\b" + pattern, text or "", re.I):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            groups = m.groups()
            year = groups[yi] if yi >= 0 else None
            mon = groups[mi] if mi >= 0 else None
            day = groups[di] if di >= 0 else None
            if mon is not None and mon.lower() in _AMBIGUOUS and day is None and year is None:
                continue
            taken.append((m.start(), m.end()))
            found.append(
                (
                    m.start(),
                    (
                        int(year) if year else None,
                        _month(mon) if mon else None,
                        int(day) if day else None,
                    ),
                )
            )
    found.sort()
    return [mention for _, mention in found]


def date_matches(
    mentions: Sequence[DateMention], date: dt.date | None, tolerance_days: int = 7
) -> bool:
    """Whether ``date`` is compatible with one of the question's date mentions.

    A day must be within ``tolerance_days``; a month matches that month and up to
    ``tolerance_days`` after it; a year alone matches that year. A mention without a year
    matches any year.
    """
    if date is None:
        return False
    for year, month, day in mentions:
        if month is None:
            if year is not None and date.year == year:
                return True
            continue
        yy = year if year else date.year
        if day is not None:
            try:
                ref = dt.date(yy, month, day)
            except ValueError:
                continue
            if abs((date - ref).days) <= tolerance_days:
                return True
        else:
            start = dt.date(yy, month, 1)
            end = dt.date(yy + (month == _MONTHS_IN_YEAR), month % _MONTHS_IN_YEAR + 1, 1)
            if start <= date < end + dt.timedelta(days=tolerance_days):
                return True
    return False
