"""Natural question phrasings of months and weeks (issue 13): resolved, and applied by
:func:`analyze_query`; plain words that look like months stay words.

Expected ranges are computed by hand from a calendar. References: Wed 2024-05-15 (before
June and October), Thu 2024-10-10 (inside October), Wed 2024-11-20 (after both).
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from hello_memory.retrieval.planning import analyze_query
from hello_memory.text.timeparse import find_time_ranges

UTC = timezone.utc
REFS = {
    "may": datetime(2024, 5, 15, 10, 0, tzinfo=UTC),
    "oct": datetime(2024, 10, 10, 10, 0, tzinfo=UTC),
    "nov": datetime(2024, 11, 20, 10, 0, tzinfo=UTC),
}
Span = tuple[str, str, str]  # (text, start date, end date), end exclusive


def spans(text: str, ref: str) -> list[Span]:
    found = find_time_ranges(text, REFS[ref])
    return [(r.text, r.start.date().isoformat(), r.end.date().isoformat()) for r in found]


OCT23, OCT24 = ("2023-10-01", "2023-11-01"), ("2024-10-01", "2024-11-01")
JUN23, JUN24 = ("2023-06-01", "2023-07-01"), ("2024-06-01", "2024-07-01")

# Phrasings that resolved to nothing (or to the wrong range) before issue 13.
FIXED: list[tuple[str, str, list[Span]]] = [
    # a month name that is nothing but a month needs no preposition: sentence start,
    # possessive, attributive, question, lowercase
    ("nov", "October was busy", [("October", *OCT24)]),
    ("may", "October was busy", [("October", *OCT23)]),
    ("oct", "How was October?", [("October", *OCT24)]),
    ("nov", "How did October go?", [("October", *OCT24)]),
    ("nov", "What about October?", [("October", *OCT24)]),
    ("nov", "October?", [("October", *OCT24)]),
    ("nov", "So, October: what happened?", [("October", *OCT24)]),
    ("nov", "October's trip to Rome", [("October", *OCT24)]),
    ("nov", "Tom's October trip", [("October", *OCT24)]),
    ("nov", "the October meetup", [("October", *OCT24)]),
    ("nov", "october was busy", [("october", *OCT24)]),
    ("may", "July was hot", [("July", "2023-07-01", "2023-08-01")]),
    # more prepositions that make any month a date
    ("nov", "What did Tom do around June?", [("June", *JUN24)]),
    ("nov", "What did you do over June?", [("June", *JUN24)]),
    ("nov", "throughout June", [("June", *JUN24)]),
    # a month with its year written as "of 2023" / "(of) last/this/next year": one month
    ("may", "June of 2023", [("June of 2023", *JUN23)]),
    ("nov", "June of last year", [("June of last year", *JUN23)]),
    ("nov", "in June last year", [("June last year", *JUN23)]),
    ("may", "What did Tom do in October last year?", [("October last year", *OCT23)]),
    ("may", "October this year", [("October this year", *OCT24)]),
    ("nov", "in June next year", [("June next year", "2025-06-01", "2025-07-01")]),
    ("may", "on June 5 last year", [("June 5 last year", "2023-06-05", "2023-06-06")]),
    # two periods back / forward
    ("may", "the week before last", [("the week before last", "2024-04-29", "2024-05-06")]),
    ("may", "What did I buy the week before last?",
     [("the week before last", "2024-04-29", "2024-05-06")]),
    ("may", "week before last", [("week before last", "2024-04-29", "2024-05-06")]),
    ("may", "the month before last", [("the month before last", "2024-03-01", "2024-04-01")]),
    ("may", "the year before last", [("the year before last", "2022-01-01", "2023-01-01")]),
    ("may", "the week after next", [("the week after next", "2024-05-27", "2024-06-03")]),
    # a range of months or days with no year: Y is the first one not before X
    ("nov", "From October to December",
     [("From October to December", "2024-10-01", "2025-01-01")]),
    ("may", "January to March", [("January to March", "2024-01-01", "2024-04-01")]),
    # Chinese: a year word, 的, a month
    ("nov", "去年的十月", [("去年的十月", *OCT23)]),
    ("may", "今年的六月他去了哪里", [("今年的六月", *JUN24)]),
]  # fmt: skip

# Phrasings from the issue that already resolved; kept so they stay resolved.
KEPT: list[tuple[str, str, list[Span]]] = [
    ("may", "What did Tom do in June?", [("June", *JUN23)]),
    ("nov", "What did Tom do in June?", [("June", *JUN24)]),
    ("nov", "What did Tom do in june?", [("june", *JUN24)]),
    ("may", "What happened in October?", [("October", *OCT23)]),
    ("oct", "What happened in October?", [("October", *OCT24)]),
    ("nov", "Where did Anna go in October?", [("October", *OCT24)]),
    ("may", "in October 2026", [("October 2026", "2026-10-01", "2026-11-01")]),
    ("nov", "in early June", [("June", *JUN24)]),
    ("nov", "in mid-October", [("October", *OCT24)]),
    ("may", "What did I do last October?", [("last October", *OCT23)]),
    ("may", "What did I buy last week?", [("last week", "2024-05-06", "2024-05-13")]),
    ("nov", "what did we talk about last week", [("last week", "2024-11-11", "2024-11-18")]),
    ("nov", "during last week", [("last week", "2024-11-11", "2024-11-18")]),
    ("nov", "What was last week's plan?", [("last week", "2024-11-11", "2024-11-18")]),
    ("nov", "earlier this month", [("this month", "2024-11-01", "2024-12-01")]),
    ("nov", "上个月", [("上个月", *OCT24)]),
    ("may", "十月份做了什么", [("十月份", *OCT23)]),
    ("oct", "安娜十月份做了什么？", [("十月份", *OCT24)]),
    ("may", "六月", [("六月", *JUN23)]),
    ("nov", "汤姆六月去了哪里？", [("六月", *JUN24)]),
    ("nov", "上周我买了什么", [("上周", "2024-11-11", "2024-11-18")]),
    ("nov", "上个礼拜我买了什么", [("上个礼拜", "2024-11-11", "2024-11-18")]),
    ("nov", "去年十月", [("去年十月", *OCT23)]),
    ("may", "What did Tom do in December?", [("December", "2023-12-01", "2024-01-01")]),
    ("may", "Where was Anna in September?", [("September", "2023-09-01", "2023-10-01")]),
    ("may", "Did Anna travel through June?", [("June", *JUN23)]),
    ("nov", "from June to October", [("from June to October", "2024-06-01", "2024-11-01")]),
    (
        "may",
        "What did we do from December to February?",
        [("from December to February", "2023-12-01", "2024-03-01")],
    ),
]


@pytest.mark.parametrize(("ref", "text", "expected"), FIXED + KEPT)
def test_phrasing_resolves(ref: str, text: str, expected: list[Span]) -> None:
    assert spans(text, ref) == expected


@pytest.mark.parametrize(("ref", "text", "expected"), FIXED + KEPT)
def test_analyze_query_applies_the_phrasing(ref: str, text: str, expected: list[Span]) -> None:
    analysis = analyze_query(text, REFS[ref])
    got = [(lo.date().isoformat(), hi.date().isoformat()) for lo, hi in analysis.time_ranges]
    assert got == [(start, end) for _, start, end in expected]


@pytest.mark.parametrize(
    "text",
    [
        # "may", "march", "april", "june", "august", "jan": verbs, adjectives and names
        # need a preposition, a day, a year or last/this/next
        "may I ask you something",
        "May I ask you something?",
        "we march on",
        "March on!",
        "a June bug",
        "June was tired",
        "June, what happened?",
        "What did June do?",
        "I met April last year at the gym",  # "last year" alone is a range; not April
        "an august institution",
        "Jan said hi",
        "we may next year move",  # "next year" alone
        # a month in general, not one month
        "an October wedding",
        "every October",
        "each December",
        # abbreviations need context too ("Dec" in code, "Jun" the name)
        "Oct",
        "Jun said hello",
        # the month-only prepositions do not make a count a year
        "over 2000 people came",
        "around 2010 users",
        # Chinese: 一月一次 is "once a month"
        "一月一次",
        "去年的事",
    ],
)
def test_plain_words_stay_words(text: str) -> None:
    found = find_time_ranges(text, REFS["nov"])
    assert [r.text for r in found if r.granularity != "year"] == [], found


def test_year_word_alone_next_to_a_name_like_month() -> None:
    # "last year" still resolves on its own when the month before it is a name
    assert spans("I met April last year at the gym", "nov") == [
        ("last year", "2023-01-01", "2024-01-01")
    ]
    assert spans("we may next year move", "nov") == [("next year", "2025-01-01", "2026-01-01")]


def test_reversed_yearless_range_is_not_a_range() -> None:
    # same month, days reversed: not wrapped into next year
    assert spans("from May 10 to May 1", "may") == [
        ("May 10", "2024-05-10", "2024-05-11"),
        ("May 1", "2024-05-01", "2024-05-02"),
    ]


def test_yearless_day_range_across_months() -> None:
    # on May 30, "May 28 to June 3" is this trip, not May 2024 .. June 2023
    ref = datetime(2024, 5, 30, 9, 0, tzinfo=UTC)
    (got,) = find_time_ranges("from May 28 to June 3", ref)
    assert (got.start.date().isoformat(), got.end.date().isoformat()) == (
        "2024-05-28",
        "2024-06-04",
    )
