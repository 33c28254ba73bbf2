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
from dataclasses import dataclass

__all__ = [
    "OPEN_RANGE_DAYS",
    "DateSpan",
    "date_closeness",
    "date_matches",
    "format_time",
    "parse_date",
    "parse_datetime",
    "question_dates",
    "question_spans",
    "utc_date",
    "without_dates",
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


def _month(name: str) -> int:
    return _MONTHS.index(name.lower()[:3]) + 1  # "sep" of "September"


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
        hour, minute = int(m.group("hour")) % 24, int(m.group("minute"))
        meridian = (m.group("meridian") or "").lower().replace(".", "")
        if meridian == "pm" and hour < 12:
            hour += 12
        elif meridian == "am" and hour == 12:
            hour = 0
    return dt.datetime(day.year, day.month, day.day, hour, minute)


def _found_dates(text: str) -> list[tuple[int, int, DateMention]]:
    """``(start, end, mention)`` of each explicit calendar mention, in order."""
    patterns: list[tuple[str, tuple[int, int, int]]] = [
        (_DAY + r"\s+(?:of\s+)?" + _MON + r"\b,?\s*" + _YEAR + "?", (2, 1, 0)),
        (_MON + r"\s+" + _DAY + r"\b,?\s*" + _YEAR + "?", (2, 0, 1)),
        (_MON + r"\b,?\s*" + _YEAR + "?", (1, 0, -1)),
        (r"\b" + _YEAR + r"\b", (0, -1, -1)),
    ]
    found = _numeric_dates(text or "")
    for pattern, (yi, mi, di) in patterns:
        for m in re.finditer(r"\b" + pattern, text or "", re.I):
            if any(m.start() < end and start < m.end() for start, end, _ in found):
                continue
            groups = m.groups()
            year = groups[yi] if yi >= 0 else None
            mon = groups[mi] if mi >= 0 else None
            day = groups[di] if di >= 0 else None
            if mon is not None and mon.lower() in _AMBIGUOUS and day is None and year is None:
                continue
            mention = (
                int(year) if year else None,
                _month(mon) if mon else None,
                int(day) if day else None,
            )
            found.append((m.start(), m.end(), mention))
    found.sort()
    return found


def question_dates(text: str) -> list[DateMention]:
    """Return the explicit calendar mentions of a question, in order.

    Handles ``8 May, 2023``, ``8th of May 2023``, ``May 8, 2023``, ``May 2023``,
    ``in December`` and ``2024``; ``2023-03-14``, ``14.03.2023``, ``2023年3月14日``,
    ``3月14日`` and ``2023년 3월 14일``. A lone ``may``/``march`` (a verb, a noun) is ignored.
    """
    return [mention for _, _, mention in _found_dates(text)]


def without_dates(text: str) -> str:
    """``text`` with its calendar dates that name a month blanked out (for lexical terms).

    The rule of the ranker's date cue: the words of a date a question names (``9 March
    2024``, ``March 9th``, ``the 9th of March``, ``2024-03-09``) are matched against each
    turn's own date, not against the words of turn texts. Kept as lexical terms, they
    made a turn that mentions *another* day of that month (``booked for 18 March``) match
    ``March``, and outrank the turns said on the day; every form of a date now ranks as
    ``2024-03-09`` did. A turn whose text names the same date counts at half the cue
    (:mod:`.retrieval.mentions`): a date mentioned inside a text never outranks a turn's
    own date for a date-named question. A year alone (``in 2024``) is kept.

    Example:
        >>> without_dates("What happened on 9 March 2024 at the office?")
        'What happened on   at the office?'
    """
    out = text or ""
    for start, end, (_, month, _) in reversed(_found_dates(out)):
        if month is not None:
            out = out[:start] + " " + out[end:]
    return out


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
            end = dt.date(yy + (month == 12), month % 12 + 1, 1)
            if start <= date < end + dt.timedelta(days=tolerance_days):
                return True
    return False


# -- numeric and CJK dates ---------------------------------------------------------------

# ISO (2023-03-14, 2023/3/14), day-first with dots (14.03.2023), CJK (2023年3月14日, 3月14日,
# 2023年3月) and Korean (2023년 3월 14일, 3월 14일). Digits of other scripts are read as
# digits (``\d`` is Unicode); slashes with the year last (3/14/2023) are left out: day or
# month first depends on the writer.
_NUMERIC_DATES: list[tuple[re.Pattern[str], tuple[int, int, int]]] = [
    (re.compile(r"(?<!\d)(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?!\d)"), (0, 1, 2)),
    (re.compile(r"(?<![\d.])(\d{1,2})\.\s?(\d{1,2})\.\s?(\d{4})(?!\d)"), (2, 1, 0)),
    (
        re.compile(r"(?:(\d{4})\s?[年년]\s?)?(\d{1,2})\s?[月월](?:\s?(\d{1,2})\s?[日일号])?"),
        (0, 1, 2),
    ),
    (re.compile(r"(\d{4})\s?[年년]"), (0, -1, -1)),
]


def _numeric_dates(text: str) -> list[tuple[int, int, DateMention]]:
    found: list[tuple[int, int, DateMention]] = []
    for pattern, (yi, mi, di) in _NUMERIC_DATES:
        for m in pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end, _ in found):
                continue
            groups = [int(g) if g else None for g in m.groups()]
            year, month, day = (groups[i] if i >= 0 else None for i in (yi, mi, di))
            if month is not None and not 1 <= month <= 12:
                continue
            found.append((m.start(), m.end(), (year, month, day)))
    return found


# -- spans: what a question's dates cover ------------------------------------------------

_LEAP_YEAR = 2000
"""The placeholder year of a span whose text names no year (it has a 29 February)."""
OPEN_RANGE_DAYS = 31
"""How far an open "before X" / "after X" / "as of X" reaches from X: a month.

Not tuned: LoCoMo questions say "the week before", "two weekends before" when they mean
less; a month is the horizon of a plain "before"."""
_UNIT_DAYS = {"day": 1, "week": 7, "weekend": 7, "month": 30, "year": 365}
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "the": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2,
    "a couple of": 2, "few": 3, "a few": 3, "several": 3,
}  # fmt: skip
_COUNT = (
    r"(?P<n>\d+|a couple of|couple of|a few|few|several|"
    + "|".join(w for w in _NUMBER_WORDS if " " not in w)
    + ")"
)
_UNIT = (
    r"(?P<unit>days?|weeks?|weekends?|months?|years?|" + "|".join(d + "s?" for d in _WEEKDAYS) + ")"
)
_RELATION_RE = re.compile(
    rf"(?:\b{_COUNT}\s+)?(?:\b{_UNIT}\s+)?\b(?P<rel>before|prior to|after|since|until|till"
    r"|by|as of|up to)\s+(?:the\s+)?(?:(?:on|in)\s+)?$",
    re.I,
)
_PART_RE = re.compile(
    r"\b(?P<part>beginning|start|early|first half|middle|mid|second half|end|late)"
    r"(?:\s+of)?\s+(?:the\s+)?-?$",
    re.I,
)
_WEEK_OF_RE = re.compile(
    r"\b(?P<ord>first|second|third|fourth|last)\s+week\s+of\s+(?:the\s+)?$", re.I
)
_BETWEEN_RE = re.compile(r"\b(?:between|from)\s+(?:the\s+)?$", re.I)
_AND_RE = re.compile(r"\s*(?:and|to|until|till|-|\u2013)\s*(?:the\s+)?$", re.I)
# Thirds and halves of a month (days) and of a year (months): (first, last), 0 = the end.
_PARTS = {
    "beginning": (0.0, 1 / 3), "start": (0.0, 1 / 3), "early": (0.0, 1 / 3),
    "first half": (0.0, 0.5), "middle": (1 / 3, 2 / 3), "mid": (1 / 3, 2 / 3),
    "second half": (0.5, 1.0), "end": (2 / 3, 1.0), "late": (2 / 3, 1.0),
}  # fmt: skip
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4}


@dataclass(frozen=True, slots=True)
class DateSpan:
    """The days a date expression of a question covers, ``first`` to ``last`` inclusive.

    Attributes:
        first: The first day.
        last: The last day.
        any_year: The text named no year: the span may fall in any year (its dates are in
            the placeholder year 2000, or the year of the question's "now").
    """

    first: dt.date
    last: dt.date
    any_year: bool = False

    def closeness(self, day: dt.date, after_days: int, before_days: int) -> float:
        """How well ``day`` fits the span, from 1 (inside) to 0.

        It falls linearly to 0 past ``after_days`` after the span and past ``before_days``
        before it (evidence is told on the day or soon after).

        Example:
            >>> span = DateSpan(dt.date(2023, 5, 8), dt.date(2023, 5, 8))
            >>> [round(span.closeness(dt.date(2023, 5, d), 7, 2), 3) for d in (8, 9, 16, 7)]
            [1.0, 0.875, 0.0, 0.667]
        """
        spans = [self]
        if self.any_year:
            spans = [self._in_year(day.year), self._in_year(day.year - 1)]
        best = 0.0
        for span in spans:
            if span.first <= day <= span.last:
                return 1.0
            if day > span.last:
                gap, reach = (day - span.last).days, after_days
            else:
                gap, reach = (span.first - day).days, before_days
            best = max(best, 1.0 - gap / (reach + 1))
        return best

    def _in_year(self, year: int) -> DateSpan:
        shift = year - self.first.year
        return DateSpan(_add_years(self.first, shift), _add_years(self.last, shift))


def _add_years(day: dt.date, years: int) -> dt.date:
    try:
        return day.replace(year=day.year + years)
    except ValueError:  # 29 February in a year without one
        return day.replace(year=day.year + years, day=day.day - 1)


def _month_end(year: int, month: int) -> dt.date:
    nxt = dt.date(year + (month == 12), month % 12 + 1, 1)
    return nxt - dt.timedelta(days=1)


def _mention_span(mention: DateMention, year: int | None) -> DateSpan | None:
    """The span of one calendar mention; ``year`` fills a mention that names none."""
    y, month, day = mention
    any_year = y is None and year is None
    yy = y or year or _LEAP_YEAR
    try:
        if month is None:
            return None if y is None else DateSpan(dt.date(y, 1, 1), _month_end(y, 12))
        if day is None:
            return DateSpan(dt.date(yy, month, 1), _month_end(yy, month), any_year)
        return DateSpan(dt.date(yy, month, day), dt.date(yy, month, day), any_year)
    except ValueError:
        return None


def _count(word: str | None) -> int:
    if not word:
        return 1
    return int(word) if word.isdigit() else _NUMBER_WORDS.get(word.lower(), 1)


def _unit_days(unit: str | None) -> int | None:
    if not unit:
        return None
    name = unit.lower().rstrip("s")
    return 7 if name in _WEEKDAYS else _UNIT_DAYS.get(name)


def _part_of(span: DateSpan, prefix: str) -> DateSpan:
    """``early May``, ``the end of 2023``, ``the second week of November``: a part of it."""
    week = _WEEK_OF_RE.search(prefix)
    length = (span.last - span.first).days + 1
    if week is not None:
        k = _ORDINALS.get(week["ord"].lower())
        first = span.first + dt.timedelta(days=7 * (k - 1)) if k else span.last
        first = first - dt.timedelta(days=6) if k is None else first
        return DateSpan(first, min(first + dt.timedelta(days=6), span.last), span.any_year)
    part = _PART_RE.search(prefix)
    if part is None or length <= 1:
        return span
    lo, hi = _PARTS[part["part"].lower()]
    first = span.first + dt.timedelta(days=int(lo * length))
    last = span.first + dt.timedelta(days=max(int(hi * length) - 1, int(lo * length)))
    return DateSpan(first, last, span.any_year)


def _related(span: DateSpan, prefix: str) -> DateSpan:
    """``the week before X``, ``two weeks after X``, ``since X``, ``as of X``."""
    m = _RELATION_RE.search(prefix)
    if m is None:
        return span
    unit = _unit_days(m["unit"])
    reach = dt.timedelta(days=_count(m["n"]) * unit if unit else OPEN_RANGE_DAYS)
    if m["rel"].lower() in ("after", "since"):
        return DateSpan(span.first, span.last + reach, span.any_year)
    # before X, as of X, by X, until X: what happened up to X, told by X at the latest.
    return DateSpan(span.first - reach, span.last, span.any_year)


def question_spans(text: str, now: dt.date | None = None) -> list[DateSpan]:
    """The spans of days the dates of a question cover, explicit and relative.

    Explicit dates (:func:`question_dates`) with what qualifies them: ``between X and Y``,
    ``the week before X``, ``two weekends before X``, ``after X``, ``since X``, ``as of X``,
    ``early/mid/late X``, ``the beginning/end of X``, ``the first half of X``, ``the second
    week of X``. A mention with no year takes the year another mention of the question
    names, else any year. Relative dates (``yesterday``, ``last week``, ``3 days ago``,
    ``last month``, ``this year``, ``last Friday``, ``last summer``...) are resolved
    against ``now`` (none without it).

    Example:
        >>> spans = question_spans("What did Ada do the week before 9 June 2023?")
        >>> [(str(s.first), str(s.last)) for s in spans]
        [('2023-06-02', '2023-06-09')]
        >>> [str(s.first) for s in question_spans("And last week?", dt.date(2023, 6, 14))]
        ['2023-06-05']
    """
    found = _found_dates(text)
    named = [m[0] for _, _, m in found if m[0] is not None]
    year = named[0] if named else None
    spans: list[DateSpan] = []
    i = 0
    while i < len(found):
        start, end, mention = found[i]
        span = _mention_span(mention, year)
        if span is not None and i + 1 < len(found) and _BETWEEN_RE.search(text[:start]):
            other = _mention_span(found[i + 1][2], year)
            if other is not None and _AND_RE.fullmatch(text[end : found[i + 1][0]] + " "):
                span = DateSpan(span.first, other.last, span.any_year and other.any_year)
                i += 1
        if span is not None:
            prefix = text[max(0, start - _PREFIX_CHARS) : start]
            spans.append(_related(_part_of(span, prefix), prefix))
        i += 1
    if now is not None:
        taken = [(s, e) for s, e, _ in found]
        spans += [
            span
            for start, end, span in _relative_spans(text, now)
            if not any(start < e and s < end for s, e in taken)
        ]
    return spans


_PREFIX_CHARS = 40
"""Characters before a date searched for what qualifies it (``two weekends before``)."""
_ANCHORED_RE = re.compile(r"\s+(?:before|after|prior to)\b", re.I)
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11)}
_WINTER = "winter"
_RELATIVE_RE = re.compile(
    r"\b(?:(?P<yesterday>yesterday|last night)|(?P<today>today|tonight|this morning"
    r"|this afternoon|this evening)"
    rf"|{_COUNT}\s+{_UNIT}\s+ago"
    r"|(?P<which>last|past|previous|this)\s+(?P<what>week|weekend|month|year|spring|summer"
    r"|fall|autumn|winter|" + "|".join(_WEEKDAYS) + r"))\b",
    re.I,
)


def _season(name: str, year: int) -> DateSpan:
    """The months of a season (northern hemisphere); winter starts in December of ``year``."""
    if name == _WINTER:
        return DateSpan(dt.date(year, 12, 1), _month_end(year + 1, 2))
    first, last = _SEASONS[name]
    return DateSpan(dt.date(year, first, 1), _month_end(year, last))


def _this_or_last(what: str, which: str, now: dt.date) -> DateSpan:
    """``this``/``last`` week, weekend, month, year, season or weekday, seen from ``now``."""
    last = which != "this"
    monday = now - dt.timedelta(days=now.weekday())
    if what in ("week", "weekend"):
        start = monday - dt.timedelta(days=7) if last else monday
        if what == "weekend":
            start += dt.timedelta(days=5)  # the Saturday
            return DateSpan(start, start + dt.timedelta(days=1))
        return DateSpan(start, start + dt.timedelta(days=6))
    if what == "month":
        first = (now.replace(day=1) - dt.timedelta(days=1)).replace(day=1) if last else now
        return DateSpan(first.replace(day=1), _month_end(first.year, first.month))
    if what == "year":
        y = now.year - last
        return DateSpan(dt.date(y, 1, 1), _month_end(y, 12))
    if what in _WEEKDAYS:
        back = (now.weekday() - _WEEKDAYS.index(what)) % 7 or (7 if last else 0)
        day = (
            now - dt.timedelta(days=back)
            if last
            else monday + dt.timedelta(days=_WEEKDAYS.index(what))
        )
        return DateSpan(day, day)
    season = _season(what, now.year - (what == _WINTER and now.month <= 2))
    if last:
        while season.last >= now:
            season = _season(what, season.first.year - 1)
    return season


def _relative_spans(text: str, now: dt.date) -> list[tuple[int, int, DateSpan]]:
    """Relative dates of ``text`` resolved against ``now``: ``(start, end, span)``."""
    out = []
    for m in _RELATIVE_RE.finditer(text):
        if _ANCHORED_RE.match(text, m.end()):
            continue  # "the weekend before 10 April": the explicit date's relation
        if m["yesterday"]:
            span = DateSpan(now - dt.timedelta(days=1), now - dt.timedelta(days=1))
        elif m["today"]:
            span = DateSpan(now, now)
        elif m["which"]:
            span = _this_or_last(m["what"].lower(), m["which"].lower(), now)
        else:
            unit = _unit_days(m["unit"]) or 1
            center = now - dt.timedelta(days=_count(m["n"]) * unit)
            half = dt.timedelta(days=unit // 2)
            span = DateSpan(center - half, center + half)
        out.append((m.start(), m.end(), span))
    return out


def date_closeness(
    spans: Sequence[DateSpan], date: dt.date | None, after_days: int, before_days: int
) -> float:
    """How well ``date`` fits the best of ``spans`` (see :meth:`DateSpan.closeness`).

    Example:
        >>> spans = question_spans("What did Tim say on 16 November, 2023?")
        >>> date_closeness(spans, dt.date(2023, 11, 16), 7, 2)
        1.0
        >>> date_closeness(spans, dt.date(2023, 11, 11), 7, 2)
        0.0
    """
    if date is None:
        return 0.0
    return max((s.closeness(date, after_days, before_days) for s in spans), default=0.0)
