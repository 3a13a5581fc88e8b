"""Time-expression resolution: calendar-true ranges for English and Chinese expressions.

Every expected start/end below is computed by hand from a calendar, not by the code.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import date, datetime, timedelta, timezone, tzinfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hello_memory.errors import InvalidInputError
from hello_memory.text.timeparse import TimeRange, find_time_ranges, parse_time_range

UTC = timezone.utc
UTC8 = timezone(timedelta(hours=8))
REFS = {
    "wed": datetime(2024, 5, 15, 10, 0, tzinfo=UTC),  # Wednesday
    "jan": datetime(2024, 1, 3, 10, 0, tzinfo=UTC),  # Wednesday, first week of a year
    "leap": datetime(2024, 2, 29, 12, 0, tzinfo=UTC),  # Thursday, leap day
    "sun": datetime(2024, 5, 19, 18, 0, tzinfo=UTC),  # Sunday
    "utc8": datetime(2024, 5, 15, 2, 0, tzinfo=UTC8),  # still 2024-05-14 in UTC
}

# (reference, week_start, expression, start, end, granularity); dates are local midnights
# in the reference's zone unless a time is given.
CASES: list[tuple[str, int, str, str, str, str]] = [
    # --- single days --------------------------------------------------------------
    ("wed", 0, "yesterday", "2024-05-14", "2024-05-15", "day"),
    ("wed", 0, "today", "2024-05-15", "2024-05-16", "day"),
    ("wed", 0, "tomorrow", "2024-05-16", "2024-05-17", "day"),
    ("wed", 0, "the day before yesterday", "2024-05-13", "2024-05-14", "day"),
    ("wed", 0, "the day after tomorrow", "2024-05-17", "2024-05-18", "day"),
    ("wed", 0, "大前天", "2024-05-12", "2024-05-13", "day"),
    ("wed", 0, "前天", "2024-05-13", "2024-05-14", "day"),
    ("wed", 0, "昨天", "2024-05-14", "2024-05-15", "day"),
    ("wed", 0, "今天", "2024-05-15", "2024-05-16", "day"),
    ("wed", 0, "明天", "2024-05-16", "2024-05-17", "day"),
    ("wed", 0, "后天", "2024-05-17", "2024-05-18", "day"),
    ("leap", 0, "tomorrow", "2024-03-01", "2024-03-02", "day"),
    # --- calendar weeks (Monday start) ----------------------------------------------
    ("wed", 0, "last week", "2024-05-06", "2024-05-13", "week"),
    ("wed", 0, "this week", "2024-05-13", "2024-05-20", "week"),
    ("wed", 0, "next week", "2024-05-20", "2024-05-27", "week"),
    ("wed", 0, "上周", "2024-05-06", "2024-05-13", "week"),
    ("wed", 0, "上个星期", "2024-05-06", "2024-05-13", "week"),
    ("wed", 0, "上星期", "2024-05-06", "2024-05-13", "week"),
    ("wed", 0, "上个礼拜", "2024-05-06", "2024-05-13", "week"),
    ("wed", 0, "本周", "2024-05-13", "2024-05-20", "week"),
    ("wed", 0, "这周", "2024-05-13", "2024-05-20", "week"),
    ("wed", 0, "这个星期", "2024-05-13", "2024-05-20", "week"),
    ("wed", 0, "下周", "2024-05-20", "2024-05-27", "week"),
    ("wed", 0, "上上周", "2024-04-29", "2024-05-06", "week"),
    ("jan", 0, "last week", "2023-12-25", "2024-01-01", "week"),  # across the year boundary
    ("jan", 0, "上周", "2023-12-25", "2024-01-01", "week"),
    ("jan", 0, "this week", "2024-01-01", "2024-01-08", "week"),
    ("sun", 0, "this week", "2024-05-13", "2024-05-20", "week"),  # Sunday ends a Mon week
    ("sun", 0, "last week", "2024-05-06", "2024-05-13", "week"),
    # --- weeks starting on Sunday ---------------------------------------------------
    ("sun", 6, "this week", "2024-05-19", "2024-05-26", "week"),
    ("sun", 6, "last week", "2024-05-12", "2024-05-19", "week"),
    ("sun", 6, "last Monday", "2024-05-13", "2024-05-14", "day"),
    ("sun", 6, "本周一", "2024-05-20", "2024-05-21", "day"),
    ("wed", 6, "this week", "2024-05-12", "2024-05-19", "week"),
    ("wed", 6, "上周", "2024-05-05", "2024-05-12", "week"),
    # --- calendar months and years ----------------------------------------------------
    ("wed", 0, "last month", "2024-04-01", "2024-05-01", "month"),
    ("wed", 0, "this month", "2024-05-01", "2024-06-01", "month"),
    ("wed", 0, "next month", "2024-06-01", "2024-07-01", "month"),
    ("wed", 0, "上个月", "2024-04-01", "2024-05-01", "month"),
    ("wed", 0, "上月", "2024-04-01", "2024-05-01", "month"),
    ("wed", 0, "这个月", "2024-05-01", "2024-06-01", "month"),
    ("wed", 0, "本月", "2024-05-01", "2024-06-01", "month"),
    ("wed", 0, "下个月", "2024-06-01", "2024-07-01", "month"),
    ("jan", 0, "last month", "2023-12-01", "2024-01-01", "month"),  # across the year boundary
    ("jan", 0, "上个月", "2023-12-01", "2024-01-01", "month"),
    ("leap", 0, "next month", "2024-03-01", "2024-04-01", "month"),
    ("wed", 0, "last year", "2023-01-01", "2024-01-01", "year"),
    ("wed", 0, "this year", "2024-01-01", "2025-01-01", "year"),
    ("wed", 0, "next year", "2025-01-01", "2026-01-01", "year"),
    ("wed", 0, "去年", "2023-01-01", "2024-01-01", "year"),
    ("wed", 0, "今年", "2024-01-01", "2025-01-01", "year"),
    ("wed", 0, "明年", "2025-01-01", "2026-01-01", "year"),
    ("wed", 0, "前年", "2022-01-01", "2023-01-01", "year"),
    ("leap", 0, "last year", "2023-01-01", "2024-01-01", "year"),
    ("jan", 0, "last year", "2023-01-01", "2024-01-01", "year"),
    # --- named months ------------------------------------------------------------------
    ("wed", 0, "in May 2023", "2023-05-01", "2023-06-01", "month"),
    ("wed", 0, "May 2023", "2023-05-01", "2023-06-01", "month"),
    ("wed", 0, "2023年5月", "2023-05-01", "2023-06-01", "month"),
    ("wed", 0, "去年五月", "2023-05-01", "2023-06-01", "month"),
    ("wed", 0, "去年5月", "2023-05-01", "2023-06-01", "month"),
    ("wed", 0, "二〇二三年五月", "2023-05-01", "2023-06-01", "month"),
    ("wed", 0, "五月", "2024-05-01", "2024-06-01", "month"),  # reference month counts
    ("wed", 0, "5月份", "2024-05-01", "2024-06-01", "month"),
    ("wed", 0, "in May", "2024-05-01", "2024-06-01", "month"),
    ("wed", 0, "六月", "2023-06-01", "2023-07-01", "month"),  # after May: last year's
    ("wed", 0, "in June", "2023-06-01", "2023-07-01", "month"),
    ("wed", 0, "十二月", "2023-12-01", "2024-01-01", "month"),
    ("wed", 0, "in march", "2024-03-01", "2024-04-01", "month"),
    ("wed", 0, "last May", "2023-05-01", "2023-06-01", "month"),
    ("wed", 0, "next May", "2025-05-01", "2025-06-01", "month"),
    ("jan", 0, "五月", "2023-05-01", "2023-06-01", "month"),
    # --- years ---------------------------------------------------------------------------
    ("wed", 0, "in 2022", "2022-01-01", "2023-01-01", "year"),
    ("wed", 0, "2022年", "2022-01-01", "2023-01-01", "year"),
    ("wed", 0, "二〇二二年", "2022-01-01", "2023-01-01", "year"),
    # --- dates ---------------------------------------------------------------------------
    ("wed", 0, "on 8 May 2023", "2023-05-08", "2023-05-09", "day"),
    ("wed", 0, "the 8th of May 2023", "2023-05-08", "2023-05-09", "day"),
    ("wed", 0, "May 8, 2023", "2023-05-08", "2023-05-09", "day"),
    ("wed", 0, "May 8th 2023", "2023-05-08", "2023-05-09", "day"),
    ("wed", 0, "2023-05-08", "2023-05-08", "2023-05-09", "day"),
    ("wed", 0, "2023/5/8", "2023-05-08", "2023-05-09", "day"),
    ("wed", 0, "2023.05.08", "2023-05-08", "2023-05-09", "day"),
    ("wed", 0, "2023年5月8日", "2023-05-08", "2023-05-09", "day"),
    ("wed", 0, "去年5月8日", "2023-05-08", "2023-05-09", "day"),
    ("wed", 0, "5月8日", "2024-05-08", "2024-05-09", "day"),
    ("wed", 0, "五月八号", "2024-05-08", "2024-05-09", "day"),
    ("wed", 0, "May 8", "2024-05-08", "2024-05-09", "day"),
    ("wed", 0, "5月15日", "2024-05-15", "2024-05-16", "day"),  # today is not the future
    ("wed", 0, "5月16日", "2023-05-16", "2023-05-17", "day"),  # tomorrow is: last year's
    ("wed", 0, "十二月二十五日", "2023-12-25", "2023-12-26", "day"),
    ("jan", 0, "12月25日", "2023-12-25", "2023-12-26", "day"),
    ("leap", 0, "2月29日", "2024-02-29", "2024-03-01", "day"),
    ("jan", 0, "2月29日", "2020-02-29", "2020-03-01", "day"),  # latest Feb 29 before 2024-01
    ("wed", 0, "Tuesday, May 8, 2023", "2023-05-08", "2023-05-09", "day"),
    ("wed", 0, "２０２３年５月８日", "2023-05-08", "2023-05-09", "day"),  # full-width digits
    ("wed", 0, "2023-05-08 14:30", "2023-05-08T14:30", "2023-05-08T14:31", "instant"),
    # --- weekdays ------------------------------------------------------------------------
    ("wed", 0, "last Monday", "2024-05-06", "2024-05-07", "day"),
    ("wed", 0, "上周一", "2024-05-06", "2024-05-07", "day"),
    ("wed", 0, "上星期一", "2024-05-06", "2024-05-07", "day"),
    ("wed", 0, "last Friday", "2024-05-10", "2024-05-11", "day"),
    ("wed", 0, "this Monday", "2024-05-13", "2024-05-14", "day"),
    ("wed", 0, "next Monday", "2024-05-20", "2024-05-21", "day"),
    ("wed", 0, "下周三", "2024-05-22", "2024-05-23", "day"),
    ("wed", 0, "本周五", "2024-05-17", "2024-05-18", "day"),
    ("wed", 0, "on Friday", "2024-05-10", "2024-05-11", "day"),
    ("wed", 0, "周五", "2024-05-10", "2024-05-11", "day"),
    ("wed", 0, "星期五", "2024-05-10", "2024-05-11", "day"),
    ("wed", 0, "礼拜五", "2024-05-10", "2024-05-11", "day"),
    ("wed", 0, "on Wednesday", "2024-05-08", "2024-05-09", "day"),  # same weekday: a week ago
    ("wed", 0, "星期天", "2024-05-12", "2024-05-13", "day"),
    ("sun", 0, "周日", "2024-05-12", "2024-05-13", "day"),
    ("sun", 0, "上周日", "2024-05-12", "2024-05-13", "day"),
    ("sun", 0, "this Sunday", "2024-05-19", "2024-05-20", "day"),
    ("sun", 0, "on Saturday", "2024-05-18", "2024-05-19", "day"),
    ("sun", 0, "yesterday", "2024-05-18", "2024-05-19", "day"),
    ("jan", 0, "last Friday", "2023-12-29", "2023-12-30", "day"),
    # --- N units ago / from now -----------------------------------------------------------
    ("wed", 0, "3 days ago", "2024-05-12", "2024-05-13", "day"),
    ("wed", 0, "三天前", "2024-05-12", "2024-05-13", "day"),
    ("wed", 0, "二十天前", "2024-04-25", "2024-04-26", "day"),
    ("wed", 0, "two weeks ago", "2024-04-29", "2024-05-06", "week"),
    ("wed", 0, "两周前", "2024-04-29", "2024-05-06", "week"),
    ("wed", 0, "a fortnight ago", "2024-04-29", "2024-05-06", "week"),
    ("wed", 0, "一个月前", "2024-04-01", "2024-05-01", "month"),
    ("wed", 0, "a year ago", "2023-01-01", "2024-01-01", "year"),
    ("wed", 0, "两年前", "2022-01-01", "2023-01-01", "year"),
    ("wed", 0, "3 days from now", "2024-05-18", "2024-05-19", "day"),
    ("wed", 0, "三天后", "2024-05-18", "2024-05-19", "day"),
    ("wed", 0, "2 hours ago", "2024-05-15T08:00", "2024-05-15T09:00", "instant"),
    ("wed", 0, "两个小时前", "2024-05-15T08:00", "2024-05-15T09:00", "instant"),
    ("jan", 0, "3 days ago", "2023-12-31", "2024-01-01", "day"),
    ("jan", 0, "两周前", "2023-12-18", "2023-12-25", "week"),
    ("jan", 0, "一个月前", "2023-12-01", "2024-01-01", "month"),
    ("leap", 0, "one year ago", "2023-01-01", "2024-01-01", "year"),
    # --- rolling windows: [start of day - N units, end of reference day) ----------------
    ("wed", 0, "in the last 3 days", "2024-05-12", "2024-05-16", "range"),
    ("wed", 0, "last 3 days", "2024-05-12", "2024-05-16", "range"),
    ("wed", 0, "past week", "2024-05-08", "2024-05-16", "range"),
    ("wed", 0, "the past two weeks", "2024-05-01", "2024-05-16", "range"),
    ("wed", 0, "the last month", "2024-04-15", "2024-05-16", "range"),
    ("wed", 0, "最近三天", "2024-05-12", "2024-05-16", "range"),
    ("wed", 0, "过去一周", "2024-05-08", "2024-05-16", "range"),
    ("wed", 0, "近一个月", "2024-04-15", "2024-05-16", "range"),
    ("wed", 0, "过去两年", "2022-05-15", "2024-05-16", "range"),
    ("jan", 0, "past week", "2023-12-27", "2024-01-04", "range"),
    ("leap", 0, "近一个月", "2024-01-29", "2024-03-01", "range"),
    ("leap", 0, "in the last year", "2023-02-28", "2024-03-01", "range"),  # Feb 29 clamps
    ("wed", 0, "recently", "2024-05-08", "2024-05-16", "range"),
    ("wed", 0, "lately", "2024-05-08", "2024-05-16", "range"),
    ("wed", 0, "最近", "2024-05-08", "2024-05-16", "range"),
    ("wed", 0, "近期", "2024-05-08", "2024-05-16", "range"),
    # --- explicit ranges: end day inclusive -> exclusive next day -------------------------
    ("wed", 0, "between May 1 and May 10, 2023", "2023-05-01", "2023-05-11", "range"),
    ("wed", 0, "from 2023-05-01 to 2023-05-10", "2023-05-01", "2023-05-11", "range"),
    ("wed", 0, "2023年5月1日到5月10日", "2023-05-01", "2023-05-11", "range"),
    ("wed", 0, "2023年5月1日至2023年5月10日", "2023-05-01", "2023-05-11", "range"),
    ("wed", 0, "May 1-10, 2023", "2023-05-01", "2023-05-11", "range"),
    ("wed", 0, "5月1日到10日", "2024-05-01", "2024-05-11", "range"),
    ("wed", 0, "from 2020 to 2022", "2020-01-01", "2023-01-01", "range"),
    ("wed", 0, "from April to May 2023", "2023-04-01", "2023-06-01", "range"),
    ("wed", 0, "从上周到这周", "2024-05-06", "2024-05-20", "range"),
    # --- a reference in UTC+8: local midnights, not UTC's ---------------------------------
    ("utc8", 0, "today", "2024-05-15", "2024-05-16", "day"),
    ("utc8", 0, "昨天", "2024-05-14", "2024-05-15", "day"),
    ("utc8", 0, "last week", "2024-05-06", "2024-05-13", "week"),
    ("utc8", 0, "2 hours ago", "2024-05-15T00:00", "2024-05-15T01:00", "instant"),
]


def local(value: str, tz: tzinfo | None) -> datetime:
    return datetime.fromisoformat(value).replace(tzinfo=tz)


@pytest.mark.parametrize(("ref", "week_start", "expr", "start", "end", "gran"), CASES)
def test_expression_resolves_to_calendar_range(
    ref: str, week_start: int, expr: str, start: str, end: str, gran: str
) -> None:
    reference = REFS[ref]
    found = find_time_ranges(expr, reference, week_start=week_start)
    assert len(found) == 1, found
    (got,) = found
    assert (got.start, got.end) == (local(start, reference.tzinfo), local(end, reference.tzinfo))
    assert got.granularity == gran
    assert got.text and got.text in expr
    assert got.start.tzinfo is reference.tzinfo and got.end.tzinfo is reference.tzinfo


@pytest.mark.parametrize(
    "text",
    [
        "I may go",
        "May I help you?",
        "march forward",
        "we march 5 miles",
        "the second option",
        "Sun Yat-sen",
        "It was a sunny day",
        "Jan said hello",
        "12 people came, 2022 of them left",
        "这周围很安静",  # 周围 = surroundings
        "马上月底了",  # 马上 = soon
        "一周一次",  # once a week
        "请于5日前提交",  # before the 5th, not 5 days ago
        "坐8号线",  # metro line 8
        "The user's order number is 984233.",
        "",
    ],
)
def test_plain_words_are_not_dates(text: str) -> None:
    assert find_time_ranges(text, REFS["wed"]) == []


def spans(found: list[TimeRange]) -> list[tuple[str, str, str]]:
    return [(r.text, r.start.date().isoformat(), r.end.date().isoformat()) for r in found]


def test_mixed_sentences() -> None:
    ref = REFS["wed"]
    assert spans(find_time_ranges("What did Alice do last week in Berlin?", ref)) == [
        ("last week", "2024-05-06", "2024-05-13")
    ]
    assert spans(find_time_ranges("上周Alice在上海跟谁聊了产品XYZ？", ref)) == [
        ("上周", "2024-05-06", "2024-05-13")
    ]
    assert spans(find_time_ranges("我yesterday去了超市", ref)) == [
        ("yesterday", "2024-05-14", "2024-05-15")
    ]
    # several expressions: order of appearance
    text = "Yesterday I met Bob; 上个月 we met Carol, and in May 2023 Dave."
    assert spans(find_time_ranges(text, ref)) == [
        ("Yesterday", "2024-05-14", "2024-05-15"),
        ("上个月", "2024-04-01", "2024-05-01"),
        ("May 2023", "2023-05-01", "2023-06-01"),
    ]
    # "and" without "between" lists two days; it does not make a range
    assert spans(find_time_ranges("I saw him on May 5 and May 7", ref)) == [
        ("May 5", "2024-05-05", "2024-05-06"),
        ("May 7", "2024-05-07", "2024-05-08"),
    ]
    # a weekday naming the date next to it is not a second range
    assert spans(find_time_ranges("会议在5月8日(周三)举行", ref)) == [
        ("5月8日", "2024-05-08", "2024-05-09")
    ]
    # 上个星期 + 一起 (together) is last week, not last Monday
    assert spans(find_time_ranges("上个星期一起吃饭", ref)) == [
        ("上个星期", "2024-05-06", "2024-05-13")
    ]


def test_same_range_twice_is_returned_once() -> None:
    found = find_time_ranges("yesterday, and again yesterday (昨天)", REFS["wed"])
    assert spans(found) == [("yesterday", "2024-05-14", "2024-05-15")]


def test_text_is_the_callers_text() -> None:
    text = "见面时间：２０２３年５月８日。"
    (got,) = find_time_ranges(text, REFS["wed"])
    assert got.text == "２０２３年５月８日" and text[text.index(got.text) :].startswith(got.text)


def test_between_range_text_includes_the_connectors() -> None:
    (got,) = find_time_ranges("Trips between May 1 and May 10, 2023 only", REFS["wed"])
    assert got.text == "between May 1 and May 10, 2023"


def test_naive_reference_is_rejected() -> None:
    with pytest.raises(InvalidInputError):
        find_time_ranges("yesterday", datetime(2024, 5, 15, 10, 0))
    with pytest.raises(InvalidInputError):
        parse_time_range("yesterday", datetime(2024, 5, 15, 10, 0))


@pytest.mark.parametrize("week_start", [-1, 7, True, 1.0])
def test_bad_week_start_is_rejected(week_start: object) -> None:
    with pytest.raises(InvalidInputError):
        find_time_ranges("last week", REFS["wed"], week_start=week_start)  # type: ignore[arg-type]


def test_non_string_text_is_rejected() -> None:
    with pytest.raises(InvalidInputError):
        find_time_ranges(b"yesterday", REFS["wed"])  # type: ignore[arg-type]


def test_timezone_is_preserved() -> None:
    ref = REFS["utc8"]
    (got,) = find_time_ranges("today", ref)
    assert got.start.utcoffset() == timedelta(hours=8)
    assert got.start == datetime(2024, 5, 14, 16, 0, tzinfo=UTC)  # local midnight in UTC


def test_local_midnights_across_dst() -> None:
    import zoneinfo  # tzdata comes with dateparser's dependencies

    new_york = zoneinfo.ZoneInfo("America/New_York")
    ref = datetime(2024, 3, 12, 9, 0, tzinfo=new_york)  # DST began Sun 2024-03-10
    (got,) = find_time_ranges("last week", ref)
    assert (got.start.hour, got.end.hour) == (0, 0)
    assert (got.start.date(), got.end.date()) == (date(2024, 3, 4), date(2024, 3, 11))
    assert got.end.astimezone(UTC) - got.start.astimezone(UTC) == timedelta(hours=167)


def test_out_of_range_years_are_skipped_not_raised() -> None:
    assert find_time_ranges("next year", datetime(9999, 6, 1, tzinfo=UTC)) == []
    assert find_time_ranges("last year", datetime(1, 6, 1, tzinfo=UTC)) == []
    assert find_time_ranges("2月30日", REFS["wed"]) == []  # no such day


# --- parse_time_range ----------------------------------------------------------------
def test_parse_time_range_uses_the_rules_first() -> None:
    got = parse_time_range("last week in Berlin", REFS["wed"])
    assert got is not None and got.text == "last week" and got.granularity == "week"
    assert parse_time_range("上周", REFS["sun"], week_start=6) == find_time_ranges(
        "上周", REFS["sun"], week_start=6
    )[0]


@pytest.mark.parametrize("expr", ["no time here", "may", "Sun", "second", "last decade", ""])
def test_parse_time_range_rejects_plain_words(expr: str) -> None:
    assert parse_time_range(expr, REFS["wed"]) is None


def test_parse_time_range_dateparser_fallback() -> None:
    import dateparser  # noqa: F401  (a dev dependency: this path must be exercised)

    ref = REFS["wed"]
    # A capitalised bare month: no rule (no context word), dateparser reads it.
    got = parse_time_range("March", ref)
    assert got is not None
    assert (got.start, got.end, got.granularity) == (
        datetime(2024, 3, 1, tzinfo=UTC),
        datetime(2024, 4, 1, tzinfo=UTC),
        "month",
    )
    # A clock time with a zone: one minute, shown in the reference's zone.
    got = parse_time_range("3pm PST", REFS["utc8"])
    assert got is not None and got.granularity == "instant"
    assert got.end - got.start == timedelta(minutes=1)
    assert got.start.tzinfo is UTC8 and got.start.astimezone(UTC).hour == 23


def test_parse_time_range_without_dateparser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "dateparser", None)  # import now raises ImportError
    monkeypatch.setitem(sys.modules, "dateparser.date", None)
    assert parse_time_range("March", REFS["wed"]) is None
    assert parse_time_range("yesterday", REFS["wed"]) is not None


def test_dateparser_is_not_imported_by_the_rules() -> None:
    code = (
        "import sys, datetime as d\n"
        "from hello_memory.text.timeparse import find_time_ranges, parse_time_range\n"
        "ref = d.datetime(2024, 5, 15, tzinfo=d.timezone.utc)\n"
        "find_time_ranges('between May 1 and May 10, 2023, 上周', ref)\n"
        "parse_time_range('yesterday', ref)\n"
        "assert 'dateparser' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- property ------------------------------------------------------------------------
SUPPORTED = sorted({case[2] for case in CASES})
CURRENT = ["today", "今天", "this week", "本周", "这周", "this month", "本月", "this year", "今年"]
ZONES = st.sampled_from(
    [UTC, UTC8, timezone(timedelta(hours=-9, minutes=-30)), timezone(timedelta(hours=14))]
)
REFERENCES = st.datetimes(
    min_value=datetime(1900, 1, 1), max_value=datetime(2100, 12, 31), timezones=ZONES
)


@settings(max_examples=300, deadline=None)
@given(ref=REFERENCES, expr=st.sampled_from(SUPPORTED), week_start=st.integers(0, 6))
def test_property_ranges_are_well_formed(ref: datetime, expr: str, week_start: int) -> None:
    found = find_time_ranges(expr, ref, week_start=week_start)
    assert found, expr
    for r in found:
        assert r.start < r.end
        assert r.start.tzinfo is ref.tzinfo and r.end.tzinfo is ref.tzinfo
        assert r.start.utcoffset() is not None and r.end.utcoffset() is not None


@settings(max_examples=200, deadline=None)
@given(ref=REFERENCES, expr=st.sampled_from(CURRENT), week_start=st.integers(0, 6))
def test_property_current_period_contains_reference(
    ref: datetime, expr: str, week_start: int
) -> None:
    (r,) = find_time_ranges(expr, ref, week_start=week_start)
    assert r.start <= ref < r.end
    assert r.start.time() == datetime.min.time()  # periods start at local midnight


@pytest.mark.parametrize(("text", "expected"), [
    ("The lift is serviced on Mondays.", True), ("Badge readers reset at midnight.", True),
    ("I run every morning.", True), ("Standup at 9:30.", True), ("Call me at 3pm", True),
    ("每周一开会", True), ("晚上八点见", True), ("三点半出发", True),
    ("我有一点累", False), ("Alice prefers green tea.", False),
    ("The printer jams on A3 paper.", False),
])
def test_says_when_reads_recurring_days_and_clock_times(text: str, expected: bool) -> None:
    from hello_memory.text.timeparse import says_when

    assert says_when(text) is expected
