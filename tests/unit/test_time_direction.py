"""Time that points the right way (issue 26, failure class 2 and 3): a date without a
year in a memory is the occurrence its wording points to, ranges keep both ends, a
recurring day is no calendar date, and "this year" does not answer "last Thursday"."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from hello_memory.retrieval.planning import analyze_query, question_type
from hello_memory.text.timeparse import direction_of, find_time_ranges, mentioned_ranges

SAID = datetime(2026, 11, 20, 9, 30, tzinfo=timezone(timedelta(hours=1)))


def days(ranges):
    return [(r.start.date(), r.end.date()) for r in ranges]


@pytest.mark.parametrize(("text", "expected"), [
    # a plan said before the date: this December, not last
    ("Dentist on 9 December", [(date(2026, 12, 9), date(2026, 12, 10))]),
    ("Booked the dentist for 9 December at 10", [(date(2026, 12, 9), date(2026, 12, 10))]),
    ("牙医预约在12月9日", [(date(2026, 12, 9), date(2026, 12, 10))]),
    # both ends of a range, in the year the plan points to
    ("Flying to Lisbon 18-21 December", [(date(2026, 12, 18), date(2026, 12, 22))]),
    ("Lisbon trip December 18-21", [(date(2026, 12, 18), date(2026, 12, 22))]),
    # something done points back
    ("We went to Porto on 3 May", [(date(2026, 5, 3), date(2026, 5, 4))]),
    ("去了杭州，12月1日回来的", [(date(2025, 12, 1), date(2025, 12, 2))]),
    # a booked Friday is the coming one
    ("Dinner with Anna on Friday, booked a table", [(date(2026, 11, 27), date(2026, 11, 28))]),
    # tickets bought for a date: the coming one, though "got" is past
    ("Got tickets for The Lantern Choir on 15 December",
     [(date(2026, 12, 15), date(2026, 12, 16))]),
])
def test_a_memory_date_without_a_year_points_the_way_its_wording_does(text, expected):
    assert days(mentioned_ranges(text, SAID)) == expected


def test_the_default_reading_is_unchanged_for_callers_that_ask_for_the_past():
    assert days(find_time_ranges("Dentist on 9 December", SAID)) == [
        (date(2025, 12, 9), date(2025, 12, 10))]


@pytest.mark.parametrize("text", ["Every Monday I swim at the lido", "each Friday we do pizza",
                                  "每周一去游泳"])
def test_a_recurring_day_is_no_calendar_date(text):
    assert mentioned_ranges(text, SAID) == []


def test_direction_of_reads_tense_in_english_and_chinese():
    assert direction_of("I'm going to see Anna on 2 December") == "future"
    assert direction_of("打算12月去北京") == "future"
    assert direction_of("We had lunch with Tom on 2 November") == "past"
    assert direction_of("Anna's birthday, 2 December") == "nearest"
    assert direction_of("Anna's birthday, 2 December", "past") == "past"


def test_a_question_that_looks_ahead_resolves_forward():
    ranges = analyze_query("What's on 9 December?", SAID).time_ranges
    assert [r[0].date() for r in ranges] == [date(2026, 12, 9)]
    ranges = analyze_query("What did I do on 9 November?", SAID).time_ranges
    assert [r[0].date() for r in ranges] == [date(2026, 11, 9)]


@pytest.mark.parametrize(("question", "kind"), [
    ("Which seat should I choose when I book?", "which"),
    ("What should I cook when Anna comes over?", "what"),
    ("When is my dentist appointment?", "when"),
    ("when did we go to Porto", "when"),
    ("Since when?", "when"),
])
def test_when_makes_a_when_question_only_when_it_asks_when(question, kind):
    assert question_type(question) == kind


@pytest.mark.parametrize(("question", "asked", "day"), [
    # a weekday with a day of the month picks the month where they agree (issue 26)
    ("What's happening on Saturday the 12th?", date(2026, 12, 5), date(2026, 12, 12)),
    ("What did we do on Sunday the 8th?", date(2026, 11, 20), date(2026, 11, 8)),
    # a bare day of the month in a past question: the latest one not after today
    ("What did I do on the evening of the 15th?", date(2026, 11, 20), date(2026, 11, 15)),
    ("What did I do on the 25th?", date(2026, 11, 20), date(2026, 10, 25)),
    # a question about what is coming points forward even with "got"
    ("What have I got on Saturday?", date(2026, 11, 30), date(2026, 12, 5)),
])
def test_days_a_question_names_without_a_month(question: str, asked: date, day: date) -> None:
    ref = datetime(asked.year, asked.month, asked.day, 10, tzinfo=timezone(timedelta(hours=1)))
    ranges = analyze_query(question, ref).time_ranges
    assert [(lo.date(), (hi - lo).days) for lo, hi in ranges] == [(day, 1)]


def test_a_day_of_the_month_with_a_month_named_is_that_date() -> None:
    ref = datetime(2026, 10, 20, 10, tzinfo=timezone.utc)
    [found] = find_time_ranges("the 17th of October", ref)
    assert found.start.date() == date(2026, 10, 17)
    assert direction_of("What have we got on next week?") == "future"


@pytest.mark.parametrize(("question", "first"), [
    ("What did we buy last weekend?", date(2026, 11, 21)),
    ("What are we doing this weekend?", date(2026, 11, 28)),
    ("What did we do at the weekend?", date(2026, 11, 21)),
])
def test_weekends(question: str, first: date) -> None:
    ref = datetime(2026, 11, 24, 20, tzinfo=timezone(timedelta(hours=1)))  # a Tuesday
    [(lo, hi)] = analyze_query(question, ref).time_ranges
    assert (lo.date(), (hi - lo).days) == (first, 2)
    # "at weekends" is a habit, not a date
    assert analyze_query("Does Marcus play cricket at weekends?", ref).time_ranges == []
