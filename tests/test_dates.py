"""Dates in questions: explicit, partial, qualified and relative, and the ranker's date cue."""

from __future__ import annotations

import datetime as dt

import pytest

from langchain_recursive_memory.core import (
    HiGMem,
    HybridMemory,
    InvalidInputError,
    MemoryStore,
    Turn,
)
from langchain_recursive_memory.core.dates import (
    DateSpan,
    date_closeness,
    date_matches,
    parse_date,
    question_dates,
    question_spans,
)
from langchain_recursive_memory.core.retrieval.ranking import RankedTurn, TurnRanker

D = dt.date
NOW = D(2023, 6, 14)  # a Wednesday


def spans(text: str, now: dt.date | None = NOW) -> list[tuple[str, str]]:
    return [(str(s.first), str(s.last)) for s in question_spans(text, now)]


def test_question_dates_english_as_before():
    assert question_dates("What did Caroline do on 10 May 2023? And in June?") == [
        (2023, 5, 10),
        (None, 6, None),
    ]
    assert question_dates("May I ask what you did in March?") == []  # verb, noun
    assert question_dates("the 8th of May 2023, then May 9, 2023 and 2024") == [
        (2023, 5, 8),
        (2023, 5, 9),
        (2024, None, None),
    ]
    assert date_matches(question_dates("in May 2023"), parse_date("8 May, 2023"))


@pytest.mark.parametrize(
    ("text", "mention"),
    [
        ("2023-03-14", (2023, 3, 14)),
        ("2023/3/14", (2023, 3, 14)),
        ("am 14.03.2023", (2023, 3, 14)),
        ("2023年3月14日", (2023, 3, 14)),
        ("3月14日に", (None, 3, 14)),
        ("2023年3月", (2023, 3, None)),
        ("2023년 3월 14일", (2023, 3, 14)),
        ("3월 14일에", (None, 3, 14)),
        ("٢٠٢٣-٠٣-١٤", (2023, 3, 14)),
    ],
)
def test_numeric_and_cjk_dates(text, mention):
    assert question_dates(text) == [mention]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("on 9 November, 2022", [("2022-11-09", "2022-11-09")]),
        ("in May 2023", [("2023-05-01", "2023-05-31")]),
        ("in 2024", [("2024-01-01", "2024-12-31")]),
        ("the week before 9 June 2023", [("2023-06-02", "2023-06-09")]),
        ("two weekends before 17 July 2023", [("2023-07-03", "2023-07-17")]),
        ("the Friday before 15 July 2023", [("2023-07-08", "2023-07-15")]),
        ("two weeks after 3 June 2022", [("2022-06-03", "2022-06-17")]),
        ("after 3 June 2022", [("2022-06-03", "2022-07-04")]),
        ("as of December 2023", [("2023-10-31", "2023-12-31")]),
        ("between August 11 and August 15 2023", [("2023-08-11", "2023-08-15")]),
        ("in the beginning of November 2022", [("2022-11-01", "2022-11-10")]),
        ("the first half of September 2022", [("2022-09-01", "2022-09-15")]),
        ("late August 2023", [("2023-08-21", "2023-08-31")]),
        ("the end of 2023", [("2023-09-01", "2023-12-31")]),
        ("the second week of November 2023", [("2023-11-08", "2023-11-14")]),
        ("last weekend before April 10, 2023", [("2023-04-03", "2023-04-10")]),
    ],
)
def test_explicit_spans(text, expected):
    assert spans(text) == expected


def test_a_mention_without_year_takes_the_questions_year_or_any():
    assert spans("between August 11 and August 15 2023") == [("2023-08-11", "2023-08-15")]
    (june,) = question_spans("When did Melanie go camping in June?", NOW)
    assert june.any_year
    assert june.closeness(D(2021, 6, 20), 7, 7) == 1.0
    (december,) = question_spans("what about December?")
    assert december.closeness(D(2024, 1, 3), 7, 7) > 0  # told early in the next year


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("yesterday", [("2023-06-13", "2023-06-13")]),
        ("what did I say today", [("2023-06-14", "2023-06-14")]),
        ("last week", [("2023-06-05", "2023-06-11")]),
        ("this week", [("2023-06-12", "2023-06-18")]),
        ("last weekend", [("2023-06-10", "2023-06-11")]),
        ("last month", [("2023-05-01", "2023-05-31")]),
        ("this month", [("2023-06-01", "2023-06-30")]),
        ("last year", [("2022-01-01", "2022-12-31")]),
        ("last Friday", [("2023-06-09", "2023-06-09")]),
        ("last Wednesday", [("2023-06-07", "2023-06-07")]),
        ("3 days ago", [("2023-06-11", "2023-06-11")]),
        ("two weeks ago", [("2023-05-28", "2023-06-03")]),
        ("last summer", [("2022-06-01", "2022-08-31")]),
        ("last winter", [("2022-12-01", "2023-02-28")]),
    ],
)
def test_relative_spans_count_from_now(text, expected):
    assert spans(text) == expected
    assert question_spans(text) == []  # no "now": nothing to count from


def test_closeness_prefers_the_day_and_the_days_after():
    span = DateSpan(D(2023, 5, 8), D(2023, 5, 8))
    assert span.closeness(D(2023, 5, 8), 7, 2) == 1.0
    assert span.closeness(D(2023, 5, 9), 7, 2) > span.closeness(D(2023, 5, 12), 7, 2) > 0
    assert span.closeness(D(2023, 5, 16), 7, 2) == 0.0
    assert span.closeness(D(2023, 5, 5), 7, 2) == 0.0
    assert date_closeness([], D(2023, 5, 8), 7, 2) == 0.0
    assert date_closeness([span], None, 7, 2) == 0.0


def session(day: dt.date, label: str) -> list[RankedTurn]:
    return [
        RankedTurn(f"{label}-1", "Ada", "We talked about the garden again.", label, day),
        RankedTurn(f"{label}-2", "Bob", "The roses are fine this year.", label, day),
    ]


def test_the_exact_day_outranks_sessions_two_days_away():
    turns = session(D(2022, 11, 7), "a") + session(D(2022, 11, 9), "b")
    turns += session(D(2022, 11, 11), "c")
    ranker = TurnRanker(turns)
    assert ranker.top("What did Ada say about the garden on 9 November, 2022?", None, 1) == ["b-1"]


def test_relative_dates_count_from_the_newest_turn_or_now():
    turns = session(D(2023, 5, 30), "old") + session(D(2023, 6, 14), "new")
    ranker = TurnRanker(turns)
    question = "What did Ada say about the garden last week?"
    # Newest turn: 14 June, so last week is 5-11 June: "old" (30 May) is not in it,
    # "new" is 3 days after it.
    assert ranker.top(question, None, 1) == ["new-1"]
    # Asked on 6 June, last week is 29 May - 4 June: the 30 May session.
    scores = ranker.scores(question, None, now=D(2023, 6, 6))
    assert ranker.turns[int(scores.argmax())].id == "old-1"


def _weeks_of_chat(memory) -> None:
    """A turn a day for three weeks of June 2024, then silence."""
    day = dt.datetime(2024, 6, 1, 12, tzinfo=dt.timezone.utc).timestamp()
    topics = ["pottery", "sailing", "chess"]
    turns = [
        Turn(role="user", name="Ada", text=f"Today I practised {topics[d // 7]} again.",
             created_at=day + d * 86_400, id=f"d{d}")
        for d in range(21)
    ]  # fmt: skip
    memory.add(turns)


@pytest.mark.parametrize("kind", ["hybrid", "higmem"])
def test_relative_dates_count_from_when_the_question_is_asked(kind):
    store = MemoryStore.in_memory()
    if kind == "hybrid":
        memory = HybridMemory("q", store=store, max_tokens=300, max_summary_tokens=60)
    else:
        memory = HiGMem("q", store=store)
    _weeks_of_chat(memory)

    def best(**kw):
        question = "What did I practise last week?"
        if kind == "hybrid":
            return memory.recall(question, k=1, kinds=("turn",), **kw)[0].id
        return max(memory.retrieve(question, k=3, **kw), key=lambda r: r.score).turn.id

    # By default "last week" is the week before the newest turn (21 June): sailing days.
    assert best() in {f"d{d}" for d in range(7, 14)}
    # Asked on 15 June, "last week" is 3-9 June: pottery and the first sailing days.
    asked = dt.datetime(2024, 6, 15, 9, tzinfo=dt.timezone.utc)
    assert best(now=asked) in {f"d{d}" for d in range(2, 9)}
    assert best(now=asked.timestamp()) == best(now=asked) == best(now=asked.date())
    with pytest.raises(InvalidInputError, match="now"):
        best(now="yesterday")


# -- a date-named question prefers the turns of that date (issue 22, 7) ----------------------

MARCH = [
    (1, "I started the pottery course at the community centre."),
    (2, "The dentist appointment is booked for 18 March, so I will skip pottery that week."),
    (5, "Bought new glazes for the pottery course."),
    (9, "We moved the office into the new building today."),
    (9, "The movers dropped a lamp, but nothing else broke."),
    (9, "In the evening I unpacked my desk and set up the plants."),
    (12, "Pottery class was cancelled because the teacher was ill."),
    (15, "Went hiking with Sam along the river."),
    (20, "Sam lent me a book about ceramics."),
]
NINTH = {"m3", "m4", "m5"}


def _march(memory) -> None:
    """A user message and a short reply on each of several days of March 2024."""
    turns = []
    for i, (day, text) in enumerate(MARCH):
        said = dt.datetime(2024, 3, day, 9 + i % 3, tzinfo=dt.timezone.utc).timestamp()
        turns.append(Turn(role="user", text=text, created_at=said, id=f"m{i}"))
        turns.append(Turn(role="assistant", text="Noted.", created_at=said + 60, id=f"r{i}"))
    memory.add(turns)


@pytest.mark.parametrize(
    "question",
    [
        "What happened on 9 March 2024?",
        "What happened on 2024-03-09?",
        "What happened on March 9, 2024?",
        "What happened on the 9th of March?",
        "What happened on March 9th?",
    ],
)
def test_a_date_named_question_prefers_the_turns_of_that_date(tmp_path, question):
    store = MemoryStore.persistent(tmp_path / "chroma")
    hybrid = HybridMemory("h", store=store, max_tokens=300, max_summary_tokens=60)
    higmem = HiGMem("g", store=store)
    _march(hybrid)
    _march(higmem)
    top = [h.id for h in hybrid.recall(question, k=3, kinds=("turn",))]
    assert top[0] in NINTH, top
    assert set(top) & NINTH and "m1" not in top  # not the 2 March turn naming 18 March
    recalled = [h.id for h in hybrid.context(question).recalled]
    assert recalled and recalled[0] in NINTH and "m1" not in recalled
    found = sorted(higmem.retrieve(question, k=3), key=lambda r: -r.score)
    ids = [r.turn.id for r in found]
    assert ids[0] in NINTH and "m1" not in ids, ids
    asked = dt.datetime(2024, 3, 21, tzinfo=dt.timezone.utc)  # the question's own time
    assert hybrid.recall(question, k=1, kinds=("turn",), now=asked)[0].id in NINTH


def test_a_turn_that_names_the_date_is_still_found():
    turns = [
        RankedTurn("a", "Ada", "The move is planned for 18 March.", "s1", D(2024, 3, 2)),
        RankedTurn("b", "Ada", "I bought a lamp for the new office.", "s2", D(2024, 3, 9)),
        RankedTurn("c", "Ada", "The movers were late.", "s3", D(2024, 3, 18)),
    ]
    ranker = TurnRanker(turns)
    assert ranker.top("What happened on 18 March 2024?", None, 1) == ["c"]  # its own day
    assert ranker.top("When is the move planned?", None, 1) == ["a"]
