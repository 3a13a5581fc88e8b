"""Find English and Chinese time expressions in text and resolve them to calendar ranges.

Ranges are half-open ``[start, end)``, timezone-aware, in the reference's timezone and
calendar-true: "last week" is the previous calendar week, not the seed retriever's
"that day ± 7 days". With reference Wed 2024-05-15 10:00 and ``week_start=0`` (Monday):

=======================================  ===============================================
yesterday/today/tomorrow, the day        that day; 大前天 .. 大后天 reach ±3 days
before yesterday, 前天 昨天 今天 明天 后天
last/this/next week|month|year, 上周,    that calendar week/month/year (上上周, 下下个月,
上个星期, 本周, 这周, 下个月, 去年,      the week before last, the month after next:
前年; the week before last, the month    two away); weeks start on ``week_start``
after next
May 2023, June of 2023, 2023年5月,       that month / year; last/this/next year after a
去年五月, 去年的五月, in 2022; June of   month is that month in that year
last year, in June next year
in May, October, 五月, 5月份 (no year)   the latest May not after the reference month
                                         (2024-05); "last May" strictly before it (2023),
                                         "next May" strictly after it (2025)
8 May 2023, May 8, 2023, 2023-05-08,     that day; with no year, the latest such date
2023/5/8, 2023年5月8日, 5月8日              not after the reference day (today counts;
                                         Feb 29 goes back to the last leap year)
2023-05-08 14:30; 2 hours ago, 两小时前     that minute / clock hour ("instant")
last/this/next Monday, 上周一, 下星期三      that weekday in the previous/this/next week
Friday, on Friday, 周五, 星期五             the latest Friday strictly before the reference
                                         day: on a Friday it is a week ago, because
                                         people call the current day "today"
3 days ago, two weeks ago, 三天前, 两周前,   the calendar day/week/month/year that many
一个月前; 3 days from now, 三天后            periods back/forward: "3 days ago" = the day
                                         of reference - 3 days
the last 3 days, past week, 最近三天,       [start of (reference day - N units), end of
过去一周, 近一个月; recently, 最近, 近期      reference day) ("range"); alone, 7 days
between May 1 and May 10, 2023, from X   start of X .. end of Y ("range"); a year or
to Y, 2023年5月1日到5月10日, May 1-10, 2023  month written on one side holds for both; with
                                         none written, Y is the first one from X on
                                         ("from October to December" in November 2024:
                                         2024-10-01 .. 2025-01-01)
=======================================  ===============================================

Not handled, so no range: seasons ("last summer", 去年夏天), weekends, open ranges
("since May" gives May), all-numeric D/M/Y vs M/D/Y ("5/8/2023"), time zones written
in the text, "in 3 days" (a duration as often as a date), and plain words that look
like dates ("Sun", "second"). A month that is also a word or a name (May, March, April,
June, August; abbreviations such as Jan, Jun, Dec) needs context: "in/of/since/over/around
May", a day, a year or last/this/next; lowercase "may"/"march" need it even with a day
("we march 5 miles"), and "last year" after one is no year of it ("I met April last
year"). The other full names need none ("October was busy", "Tom's October trip") unless
they mean any such month ("an October wedding", "every October"). A preposition is
context, not part of ``TimeRange.text`` ("in May 2023" -> "May 2023").

Matching is rule-based (about 1 ms per 600 characters), deterministic and guarded
against plain words.
:func:`parse_time_range` falls back to the optional ``dateparser`` for one-off
expressions the rules miss; it is imported lazily because importing it costs 0.1-0.2 s
and its first parse another ~0.1 s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from hello_memory.errors import InvalidInputError
from hello_memory.text._time_rules import (
    _COMPILED,
    _REL,
    _YMD,
    Direction,
    Granularity,
    _Ctx,
    _weekday,
)

__all__ = ["Direction", "Granularity", "TimeRange", "direction_of", "find_time_ranges",
           "mentioned_ranges", "parse_time_range", "says_when"]


@dataclass(frozen=True)
class TimeRange:
    """A resolved time expression: ``start`` inclusive, ``end`` exclusive, both aware."""

    start: datetime
    end: datetime
    text: str
    granularity: Granularity


# Full-width ASCII (１２３, ／, ＭＡＹ) -> ASCII one character for one, so that match
# offsets in the normalised text are offsets in the caller's text too.
_FULLWIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}

_CONNECT_RE = re.compile(r"\s*(?:(?P<and>and)|to|until|till|through|thru|[-–—~～到至])\s*", re.I)
_FROM_RE = re.compile(r"(?:\b(?P<between>between)|\bfrom|从|自)\s*$", re.I | re.A)
_CONT_RE = re.compile(r"(?P<d>\d{1,2})(?:st|nd|rd|th|日|号)?(?:,?\s+(?P<y>\d{4}))?(?![\d:])", re.I)
_WD_SEP_RE = re.compile(r"[\s,，、(（]*")


@dataclass(frozen=True)
class _Hit:
    start: int
    end: int
    lo: datetime
    hi: datetime
    gran: Granularity
    ymd: _YMD | None = None
    bare_weekday: bool = False  # "Friday" alone: dropped when it labels a date next to it


def _scan(text: str, c: _Ctx) -> list[_Hit]:
    """All rule matches, overlaps resolved leftmost first, then longest."""
    found: list[_Hit] = []
    for pattern, handler in _COMPILED:
        for m in pattern.finditer(text):
            try:
                span = handler(m, c)
            except (ValueError, OverflowError):  # Feb 30, or beyond datetime's years 1..9999
                continue
            if span is not None:
                bare = handler is _weekday and (m["rel"] or "").lower() not in _REL
                found.append(_Hit(m.start(), m.end(), *span, bare_weekday=bare))
    found.sort(key=lambda h: (h.start, h.start - h.end))
    hits: list[_Hit] = []
    for hit in found:
        if not hits or hit.start >= hits[-1].end:
            hits.append(hit)
    return hits


def _merge_weekdays(hits: list[_Hit], text: str) -> list[_Hit]:
    """'Friday, May 8' / '5月8日(周五)': a weekday next to a date only labels it."""
    out: list[_Hit] = []
    for hit in hits:
        prev = out[-1] if out else None
        if prev and _WD_SEP_RE.fullmatch(text, prev.end, hit.start):
            if prev.bare_weekday and hit.gran == "day" and hit.ymd:
                out[-1] = replace(hit, start=prev.start)
                continue
            if hit.bare_weekday and prev.gran == "day" and prev.ymd:
                continue
        out.append(hit)
    return out


def _try_join(a: _Hit, nxt: _Hit | None, text: str, c: _Ctx) -> tuple[_Hit, int] | None:
    """X, a range connector and Y -> (the range, 1 if Y was the hit ``nxt`` else 0)."""
    link = _CONNECT_RE.match(text, a.end)
    lead = _FROM_RE.search(text, max(0, a.start - 12), a.start)
    if not link or a.gran == "instant" or (link["and"] and not (lead and lead["between"])):
        return None  # "and" joins only after "between": "on May 1 and May 3" are two days
    b, used = nxt, 1
    if b is None or b.start != link.end():
        cont = _CONT_RE.match(text, link.end())
        if not (cont and a.ymd and a.ymd[1] and a.ymd[2]):
            return None
        y = int(cont["y"]) if cont["y"] else a.ymd[0]  # "5月1日到10日", "May 1-10, 2023"
        try:
            b, used = _Hit(cont.start(), cont.end(), *c.ymd(y, a.ymd[1], int(cont["d"]))), 0
        except ValueError:
            return None
    ay, by = a.ymd, b.ymd
    if ay and by:  # a year written on one side only holds for both
        if by[0] is None and ay[0] is not None:
            b = _Hit(b.start, b.end, *c.ymd(ay[0], by[1], by[2]))
        elif ay[0] is None and by[0] is not None:
            a = _Hit(a.start, a.end, *c.ymd(by[0], ay[1], ay[2]))
        elif ay[0] is None and by[0] is None and ay[1] and by[1] and b.hi <= a.lo:
            # no year on either side: Y is the first one from X on ("from October to
            # December" in November is this October..December, not October..last December)
            year = a.lo.year + (by[1] < ay[1])
            b = _Hit(b.start, b.end, *c.ymd(year, by[1], by[2]))
    if b.hi <= a.lo:
        return None
    return _Hit(lead.start() if lead else a.start, b.end, a.lo, b.hi, "range"), used


def _join_ranges(hits: list[_Hit], text: str, c: _Ctx) -> list[_Hit]:
    """'from X to Y', 'between X and Y', 'X到Y', 'May 1-10, 2023' -> one range [X, Y]."""
    out: list[_Hit] = []
    i = 0
    while i < len(hits):
        joined = _try_join(hits[i], hits[i + 1] if i + 1 < len(hits) else None, text, c)
        if joined is None:
            out.append(hits[i])
            i += 1
        else:
            out.append(joined[0])
            i += 1 + joined[1]
    return out


def _make_ctx(reference: datetime, week_start: int, direction: Direction = "past") -> _Ctx:
    if not isinstance(reference, datetime) or reference.utcoffset() is None:
        raise InvalidInputError(f"reference must be a timezone-aware datetime, got {reference!r}")
    if type(week_start) is not int or not 0 <= week_start <= 6:
        raise InvalidInputError(f"week_start must be 0 (Monday) .. 6 (Sunday), got {week_start!r}")
    if direction not in ("past", "future", "nearest"):
        raise InvalidInputError(f"direction must be past, future or nearest, got {direction!r}")
    return _Ctx(reference, week_start, direction)


def find_time_ranges(text: str, reference: datetime, *, week_start: int = 0,
                     direction: Direction = "past") -> list[TimeRange]:
    """Every time expression in ``text``, resolved against ``reference``, in order of appearance.

    ``direction`` says which occurrence a date without a year and a bare weekday mean
    (:data:`Direction`; "past", the default, is the table above; a memory's own text is
    read with :func:`direction_of`, see :func:`mentioned_ranges`).

    Ranges with the same start and end are returned once (the first mention). Text with
    no time expression gives ``[]``. Raises :class:`InvalidInputError` for a naive
    ``reference``, a ``week_start`` outside 0..6 or a non-string ``text``.
    """
    c = _make_ctx(reference, week_start, direction)
    if not isinstance(text, str):
        raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
    norm = text.translate(_FULLWIDTH)
    hits = _join_ranges(_merge_weekdays(_scan(norm, c), norm), norm, c)
    seen: set[tuple[datetime, datetime]] = set()
    out: list[TimeRange] = []
    for hit in hits:
        if (hit.lo, hit.hi) not in seen:
            seen.add((hit.lo, hit.hi))
            out.append(TimeRange(hit.lo, hit.hi, text[hit.start : hit.end], hit.gran))
    return out


# Wording that places what a text says ahead of when it was said (a plan, an
# appointment, a trip) or behind it (something done). Checked on the text around the
# dates; "nearest" when neither or both speak (issue 26).
_FUTURE_RE = re.compile(
    r"\b(?:will|shall|won't|going\s+to|gonna|plan(?:s|ning|ned)?\s+to|planning|intend|"
    r"about\s+to|booked|scheduled|appointment|reservation|upcoming|coming\s+up|due|"
    r"deadline|remind(?:er)?|is\s+on|are\s+on|is\s+due|starts?|begins?|leaving|"
    r"flying|fly(?:ing)?\s+(?:to|out)|hoping\s+to|want\s+to|need\s+to|have\s+to|"
    r"next|tomorrow|soon|what's\s+on|when\s+is|when\s+are|when's|"
    r"tickets?\s+(?:for|to)|flights?\s+(?:for|to)|invited\s+to|invitation)\b|'ll\b"
    r"|打算|计划|准备|预约|约了|安排|将要|将会|要去|会去|下周|下个|明天|后天|明年|到时候|提醒",
    re.I)
_PAST_RE = re.compile(
    r"\b(?:was|were|went|had|did|got|came|saw|met|visited|finished|celebrated|spent|"
    r"took|made|ate|bought|moved|returned|attended|enjoyed|ago|last|yesterday|earlier|"
    r"used\s+to|back\s+in|when\s+did|what\s+did|where\s+did|who\s+did|how\s+did)\b"
    r"|去了|去过|过了|已经|昨天|前天|上周|上个|去年|那时|当时|刚刚|了[。，！!,.\s]|了$",
    re.I)


# A question about what is coming: "what have I got on Saturday?", "what's happening on
# the 12th?" ("got" and "had" read as the past otherwise).
_UPCOMING_RE = re.compile(r"\b(?:have|has)\s+(?:i|we|you|he|she|they)\s+got\b|"
                          r"\bwhat(?:'s|\s+is)\s+happening\b|\bam\s+i\s+doing\b|"
                          r"\bare\s+we\s+doing\b|\bdo\s+(?:i|we)\s+have\s+on\b|有什么安排", re.I)


def direction_of(text: str, default: Direction = "nearest") -> Direction:
    """Which way a year-less date in ``text`` points, by its wording: "future" for a
    plan or an appointment ("dentist on 9 December, booked", "下周去杭州"), "past" for
    something done ("we went to Porto on 3 May", "去了杭州"), else ``default``."""
    if _UPCOMING_RE.search(text):
        return "future"
    ahead, behind = bool(_FUTURE_RE.search(text)), bool(_PAST_RE.search(text))
    if ahead != behind:
        return "future" if ahead else "past"
    return default


def mentioned_ranges(text: str, said_at: datetime, *, week_start: int = 0) -> list[TimeRange]:
    """The times a memory's own text names, resolved against when it was said: a date
    without a year is the occurrence its wording points to (:func:`direction_of`),
    the nearer one when the wording does not say ("Dentist on 9 December", said on
    20 November 2026, is 9 December 2026; issue 26)."""
    return find_time_ranges(text, said_at, week_start=week_start,
                            direction=direction_of(text))


# dateparser reads plain words as dates ("may", "march", "second", "sun", "last decade"),
# so it is only asked about expressions with a digit or a capitalised month name.
_FALLBACK_OK_RE = re.compile(r"\d|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\b")
_CLOCK_RE = re.compile(r"\d\s*(?::\d\d|[ap]\.?m\b)|\d点", re.I)


def parse_time_range(
    expression: str, reference: datetime, *, week_start: int = 0
) -> TimeRange | None:
    """Resolve one expression (e.g. an LLM-extracted "time_expression"), or None.

    The rules of :func:`find_time_ranges` come first (its first range is returned).
    Failing those, ``dateparser`` is asked, when installed and when the expression has a
    digit or a capitalised month name; it returns an instant, from which the range is
    derived by the period dateparser reports (day/week/month/year), or one minute when
    the expression names a clock time ("3pm PST").
    """
    found = find_time_ranges(expression, reference, week_start=week_start)
    if found:
        return found[0]
    c = _make_ctx(reference, week_start)
    if not _FALLBACK_OK_RE.search(expression):
        return None
    try:
        from dateparser.date import DateDataParser  # slow import: only on this path
    except ImportError:
        return None
    settings = {"RELATIVE_BASE": c.ref.replace(tzinfo=None), "PREFER_DATES_FROM": "past"}
    try:
        data = DateDataParser(languages=["en", "zh"], settings=settings).get_date_data(expression)
    except Exception:  # a third-party parser failing on odd input means "no date", not a crash
        return None
    when: datetime | None = data.date_obj
    if when is None:
        return None
    if when.tzinfo is not None:  # "5pm PST": same instant, shown in the reference's zone
        when = when.astimezone(c.ref.tzinfo)
    when = when.replace(tzinfo=c.ref.tzinfo)
    if _CLOCK_RE.search(expression):
        lo = when.replace(second=0, microsecond=0)
        return TimeRange(lo, lo + timedelta(minutes=1), expression, "instant")
    unit = data.period if data.period in ("week", "month", "year") else "day"
    lo, hi, gran, _ = c.period(unit, 0, anchor=when.date())
    return TimeRange(lo, hi, expression, gran)


# Times a text can give that are no calendar range: a recurring day ("on Mondays",
# "every week", "每周一"), a time of day ("at 9am", "at midnight", "晚上八点"), a
# frequency ("daily", "每天"). A memory saying one of them answers a "when" question as
# well as one with a date (hello_memory/retrieval/_hybrid_scoring.py, WHEN_MISS_FACTOR).
_WHEN_RE = re.compile(
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b"
    r"|\b(?:every|each)\s+(?:day|night|morning|evening|week|weekend|month|year|"
    r"hour|\w+day)\b"
    r"|\b(?:daily|nightly|weekly|fortnightly|monthly|yearly|annually|weekends?)\b"
    r"|\b(?:at\s+)?(?:noon|midnight|dawn|dusk)\b"
    r"|\b\d{1,2}(?::\d{2})?\s*(?:a\.?m\.?|p\.?m\.?)(?!\w)|\b\d{1,2}:\d{2}\b"
    r"|\bat\s+\d{1,2}\s+o'?clock\b"
    r"|(?:星期|周|礼拜)[一二三四五六日天]|每(?:天|日|晚|周|星期|月|年)"
    r"|(?:早上|上午|中午|下午|晚上|凌晨)[零〇一二两三四五六七八九十\d]{1,3}点"
    r"|[零〇一二两三四五六七八九十\d]{1,3}点(?:钟|半|整|\d{1,2}分)",
    re.I)


def says_when(text: str) -> bool:
    """Whether ``text`` names a time that :func:`find_time_ranges` does not turn into a
    calendar range: a recurring day, a time of day or a frequency (en + zh)."""
    return bool(_WHEN_RE.search(text))

