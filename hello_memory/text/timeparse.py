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

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from typing import Literal, cast

from hello_memory.errors import InvalidInputError

__all__ = ["Direction", "Granularity", "TimeRange", "direction_of", "find_time_ranges",
           "mentioned_ranges", "parse_time_range", "says_when"]

Granularity = Literal["day", "week", "month", "year", "range", "instant"]
# Which occurrence a date written without a year (or a bare weekday) means: the latest
# not after the reference ("past"), the first not before it ("future"), or, for a month
# or a day, whichever of the two is nearer ("nearest"; issue 26, time that points the
# right way).
Direction = Literal["past", "future", "nearest"]
_YMD = tuple[int | None, int | None, int | None]  # the calendar fields written in the text
_Span = tuple[datetime, datetime, Granularity, _YMD | None]


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
_ZH_DIGIT = {ch: int(v) for ch, v in zip("零〇一二两三四五六七八九", "001223456789", strict=True)}
_EN_WORDS = "one two three four five six seven eight nine ten eleven twelve"
_EN_NUM = {"a": 1, "an": 1} | {w: i for i, w in enumerate(_EN_WORDS.split(), 1)}
_UNITS: dict[str, tuple[str, int]] = {"fortnight": ("week", 2)} | {
    word: (unit, 1)
    for unit, words in (("day", "天 日"), ("week", "周 星期 礼拜"), ("month", "月"), ("year", "年"),
                        ("hour", "小时 钟头"), ("minute", "分钟"))
    for word in (unit, *words.split())
}  # fmt: skip
_REL = {"last": -1, "previous": -1, "this": 0, "current": 0, "next": 1, "coming": 1,
        "上上": -2, "上": -1, "本": 0, "这": 0, "下": 1, "下下": 2}  # fmt: skip
_DAY_WORDS = {"day before yesterday": -2, "day after tomorrow": 2, "yesterday": -1,
              "last night": -1, "today": 0, "tonight": 0, "tomorrow": 1, "大前天": -3,
              "前天": -2, "昨天": -1, "昨日": -1, "昨晚": -1, "今天": 0, "今日": 0, "今晚": 0,
              "明天": 1, "明日": 1, "后天": 2, "大后天": 3}  # fmt: skip
_YEAR_WORDS = {"大前年": -3, "前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2, "大后年": 3}
_WEEKDAYS = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}
_WEEKDAYS |= {ch: int(v) for ch, v in zip("一二三四五六日天", "01234566", strict=True)}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _num(s: str) -> int:
    """'12', 'two', '两', '十二', '二十三', '二〇二三' -> int."""
    s = s.lower()
    if s.isdigit():
        return int(s)
    if s in _EN_NUM:
        return _EN_NUM[s]
    if "十" in s:  # 十 = 10, 十二 = 12, 二十 = 20, 二十三 = 23
        tens, _, ones = s.partition("十")
        return _ZH_DIGIT.get(tens, 1) * 10 + _ZH_DIGIT.get(ones, 0)
    return int("".join(str(_ZH_DIGIT[ch]) for ch in s))  # digit by digit: 二〇二三


def _unit(word: str) -> tuple[str, int]:
    return _UNITS[word.lower().removeprefix("个")]


def _shift(d: date, unit: str, n: int) -> date:
    """Move ``d`` by ``n`` units; month/year steps clamp the day (Mar 31 - 1 month = Feb 29)."""
    if unit == "day":
        return d + timedelta(days=n)
    if unit == "week":
        return d + timedelta(weeks=n)
    y, m0 = divmod(d.year * 12 + d.month - 1 + (n if unit == "month" else 12 * n), 12)
    return date(y, m0 + 1, min(d.day, calendar.monthrange(y, m0 + 1)[1]))


def _floor(d: date, unit: str, week_start: int) -> date:
    """First day of the calendar ``unit`` containing ``d``."""
    if unit == "week":
        return d - timedelta(days=(d.weekday() - week_start) % 7)
    if unit == "month":
        return d.replace(day=1)
    return d.replace(month=1, day=1) if unit == "year" else d


@dataclass(frozen=True)
class _Ctx:
    ref: datetime
    week_start: int
    direction: Direction = "past"

    @property
    def today(self) -> date:
        return self.ref.date()  # the reference's own wall-clock date, not UTC's

    def span(self, lo: date, hi: date, gran: Granularity, ymd: _YMD | None = None) -> _Span:
        # Built from fields rather than by adding timedeltas to instants, so every bound
        # is a local midnight even across DST changes.
        tz = self.ref.tzinfo
        start = datetime(lo.year, lo.month, lo.day, tzinfo=tz)
        return start, datetime(hi.year, hi.month, hi.day, tzinfo=tz), gran, ymd

    def period(self, unit: str, n: int, anchor: date | None = None) -> _Span:
        """The calendar ``unit`` ``n`` units away from the one containing ``anchor``."""
        start = _shift(_floor(anchor or self.today, unit, self.week_start), unit, n)
        return self.span(start, _shift(start, unit, 1), cast(Granularity, unit))

    def _year_for(self, m: int | None, d: int | None) -> int:
        """The year of a month (and day) written without one, by ``direction``."""
        t = self.today
        past = t.year - (1 if (m or 1, d or 1) > (t.month, t.day) else 0)
        if d is None and m is not None and m == t.month:
            return t.year  # "in December", said in December: this one, either way
        if self.direction == "past":
            return past
        future = past if (m or 1, d or 1) == (t.month, t.day) else past + 1
        if self.direction == "future":
            return future
        # nearest: the distance from today to each occurrence (a month: to its nearest
        # day), ties go to the coming one (a plan is said before it happens)
        def gap(year: int) -> int:
            try:
                lo = date(year, m or 1, d or 1)
            except ValueError:  # Feb 29 in a common year: leave it to the caller's loop
                return 10**6
            hi = lo if d is not None else _shift(lo, "month", 1) - timedelta(days=1)
            return min(abs((lo - t).days), abs((hi - t).days))
        return future if gap(future) <= gap(past) else past

    def ymd(self, y: int | None, m: int | None, d: int | None) -> _Span:
        """A written date; a missing year follows ``direction`` (default: the latest one
        not after the reference)."""
        year = y if y is not None else self._year_for(m, d)
        while y is None and (m, d) == (2, 29) and not calendar.isleap(year):
            # "2月29日" in 2023: the latest Feb 29 that existed (2020), or the next (2024)
            year += 1 if self.direction == "future" else -1
        if m is not None and d is not None:
            day = date(year, m, d)
            return self.span(day, day + timedelta(days=1), "day", (y, m, d))
        if m is not None:
            start = date(year, m, 1)
            return self.span(start, _shift(start, "month", 1), "month", (y, m, None))
        return self.span(date(year, 1, 1), date(year + 1, 1, 1), "year", (y, None, None))


# --- rule handlers: a regex match -> a span, or None to reject the match -------------
# A bare month or year is a date only after one of these words ("in May", "since 2022").
_PRE = r"in|during|since|from|between|of|until|till|on|by|before|after|early|late|mid|end"
_MONTH_PRE = rf"{_PRE}|around|throughout|through|over"  # "over 2000 people" is no year
_MONTH_PRE_RE = re.compile(rf"\b(?:{_MONTH_PRE})[\s-]+$", re.I | re.A)
# "to/and" only for capitalised months and for years ("from April to May", "2020 to
# 2022"): lowercase "to march", "and may" are verbs.
_CAP_MONTH_PRE_RE = re.compile(rf"\b(?:{_MONTH_PRE}|to|and)[\s-]+$", re.I | re.A)
_YEAR_PRE_RE = re.compile(rf"\b(?:{_PRE}|to|and|through|year)[\s-]+$", re.I | re.A)
# Full month names that are nothing but months are dates with no context word ("October
# was busy", "Tom's October trip"), unless they name a month in general ("an October
# wedding", "every October"). May, March, April, June, August, and abbreviations such as
# Jan, Jun, Dec, are also verbs, names or adjectives, and keep needing context.
_PLAIN_MONTHS = frozenset(
    ["january", "february", "july", "september", "october", "november", "december"]
)
_GENERIC_PRE_RE = re.compile(r"\b(?:an?|every|each)\s+$", re.I | re.A)


def _context(m: re.Match[str], pattern: re.Pattern[str]) -> bool:
    """Whether the word before the match makes a bare month/year a date ("in May")."""
    return pattern.search(m.string, max(0, m.start() - 12), m.start()) is not None


def _day_word(m: re.Match[str], c: _Ctx) -> _Span:
    return c.period("day", _DAY_WORDS[" ".join(m[0].lower().split()).removeprefix("the ")])


def _relative(m: re.Match[str], c: _Ctx) -> _Span:
    unit, k = _unit(m["unit"])
    return c.period(unit, _REL[m["rel"].lower()] * k)


def _two_away(m: re.Match[str], c: _Ctx) -> _Span:
    """'the week before last' / 'the month after next': two calendar units away."""
    return c.period(m["unit"].lower(), -2 if m["dir"] else 2)


# "every Monday", "each Friday", 每周一: a recurring day, no calendar range (says_when
# still tells a when-question it answers one).
_RECURRING_PRE_RE = re.compile(r"(?:\b(?:every|each)\s+(?:other\s+)?|每个?)$", re.I)


def _weekday(m: re.Match[str], c: _Ctx) -> _Span | None:
    if _RECURRING_PRE_RE.search(m.string, max(0, m.start() - 12), m.start()):
        return None
    wd, rel = _WEEKDAYS[m["wd"][:3].lower()], (m["rel"] or "").lower()
    if rel in _REL:
        week = _shift(_floor(c.today, "week", c.week_start), "week", _REL[rel])
        day = week + timedelta(days=(wd - c.week_start) % 7)
    elif c.direction == "future":  # "dinner with Anna on Friday", said on a Wednesday
        day = c.today + timedelta(days=(wd - c.today.weekday()) % 7 or 7)
    else:
        day = c.today - timedelta(days=(c.today.weekday() - wd) % 7 or 7)
    return c.span(day, day + timedelta(days=1), "day")


def _rolling(m: re.Match[str], c: _Ctx) -> _Span | None:
    g = m.groupdict()
    if (g.get("kw") or "").lower() in ("last", "previous") and not (g.get("the") or g["n"]):
        return None  # plain "last week" is the calendar week, handled by _relative
    unit, k = _unit(m["unit"])
    return c.span(_shift(c.today, unit, -_num(g["n"] or "1") * k), c.today + timedelta(1), "range")


def _recent(m: re.Match[str], c: _Ctx) -> _Span:
    return c.span(c.today - timedelta(days=7), c.today + timedelta(days=1), "range")


def _ago(m: re.Match[str], c: _Ctx) -> _Span:
    unit, k = _unit(m["unit"])
    n = _num(m["n"]) * k * (-1 if m["dir"].lower() in ("ago", "前") else 1)
    if unit in ("hour", "minute"):
        step = timedelta(hours=1) if unit == "hour" else timedelta(minutes=1)
        base = c.ref.replace(minute=0 if unit == "hour" else c.ref.minute, second=0, microsecond=0)
        return base + n * step, base + (n + 1) * step, "instant", None
    return c.period(unit, n)


def _zh_date(m: re.Match[str], c: _Ctx) -> _Span | None:
    if not (m["y"] or m["yw"] or m["m"]) or (m["d"] and not m["m"]):
        return None  # "8号" alone is as often a number (8号线, line 8) as a date
    y = _num(m["y"]) if m["y"] else c.today.year + _YEAR_WORDS[m["yw"]] if m["yw"] else None
    return c.ymd(y, _num(m["m"]) if m["m"] else None, _num(m["d"]) if m["d"] else None)


def _en_date(m: re.Match[str], c: _Ctx) -> _Span | None:
    g, word = m.groupdict(), m["mon"]
    mon = _MONTHS.index(word[:3].lower()) + 1
    d, y = (int(g["d"]) if g.get("d") else None), (int(g["y"]) if g.get("y") else None)
    rel, yrel = (g.get("rel") or "").lower(), (g.get("yrel") or "").lower()
    plain = word.lower() in _PLAIN_MONTHS
    if yrel:  # "June of last year", "October this year", "June 5 last year"
        y = c.today.year + _REL[yrel]
    # "may"/"march" are verbs far more often than months: without a year, a preceding
    # preposition or capitalisation they are words ("I may go", "we march 5 miles").
    verb = word.islower() and word.lower() in ("may", "march", "mar")
    pre = _CAP_MONTH_PRE_RE if word[0].isupper() else _MONTH_PRE_RE
    # A written year is context; "last year" after a name is not ("I met April last year").
    has_year = g.get("y") is not None or (yrel and (plain or g.get("yof")))
    # A plain full name alone is a month, unless it means any such ("an October wedding").
    alone_ok = plain and d is None and not _context(m, _GENERIC_PRE_RE)
    if not (has_year or rel or alone_ok or _context(m, pre)) and (d is None or verb):
        return None
    if y is None and d is None and rel in ("last", "next"):
        t = c.today.year
        y = t - (mon >= c.today.month) if rel == "last" else t + (mon <= c.today.month)
    elif y is None and d is None and rel == "this":
        y = c.today.year
    return c.ymd(y, mon, d)


def _day_span(m: re.Match[str], c: _Ctx) -> _Span | None:
    """'18-21 December', '18 to 21 Dec 2026': both ends kept, one range."""
    first = _en_date(m, c)
    if first is None:
        return None
    lo, _, _, ymd = first
    last = int(m["d2"])
    if ymd is None or last <= lo.day:
        return None
    end = date(lo.year, lo.month, last) + timedelta(days=1)  # ValueError: no such day
    return lo, c.span(end, end, "day")[0], "range", None


def _weekend(m: re.Match[str], c: _Ctx) -> _Span | None:
    """'last weekend', 'this weekend', 'the weekend': a Saturday and Sunday ("at
    weekends", plural, is a habit and never matches). 'last' is the one before the
    current week's; 'the' follows ``direction``."""
    if _RECURRING_PRE_RE.search(m.string, max(0, m.start() - 12), m.start()):
        return None
    rel = (m["rel"] or "").lower()
    saturday = c.today - timedelta(days=c.today.weekday()) + timedelta(days=5)
    if rel in ("last", "past", "previous"):
        saturday -= timedelta(days=7)
    elif rel in ("next", "coming") and c.today.weekday() >= 5:
        saturday += timedelta(days=7)
    elif not rel and c.direction == "past" and c.today.weekday() < 5:
        saturday -= timedelta(days=7)
    return c.span(saturday, saturday + timedelta(days=2), "range")


def _day_of_month(m: re.Match[str], c: _Ctx) -> _Span | None:
    """'the 15th', 'Saturday the 12th': a day of a month the text does not name. A
    weekday picks the month where that date falls on it (the nearest, either way);
    without one the day follows ``direction`` (the latest not after today by default)."""
    d = int(m["d"])
    if not 1 <= d <= 31:
        return None
    months = [_shift(date(c.today.year, c.today.month, 1), "month", k) for k in range(-3, 4)]
    days = [date(x.year, x.month, d) for x in months if d <= calendar.monthrange(x.year,
                                                                                  x.month)[1]]
    if m["wd"]:
        wd = _WEEKDAYS[m["wd"][:3].lower()]
        days = [x for x in days if x.weekday() == wd]
        if not days:
            return None
        day = min(days, key=lambda x: abs((x - c.today).days))
    elif c.direction == "future":
        day = min((x for x in days if x >= c.today), default=days[-1])
    elif c.direction == "past":
        day = max((x for x in days if x <= c.today), default=days[0])
    else:
        day = min(days, key=lambda x: abs((x - c.today).days))
    return c.span(day, day + timedelta(days=1), "day", (None, day.month, d))


def _iso(m: re.Match[str], c: _Ctx) -> _Span:
    y, mo, d = int(m["y"]), int(m["m"]), int(m["d"])
    if m["H"] is None:
        return c.ymd(y, mo, d)
    lo = datetime(y, mo, d, int(m["H"]), int(m["M"]), tzinfo=c.ref.tzinfo)
    return lo, lo + timedelta(minutes=1), "instant", None


def _year(m: re.Match[str], c: _Ctx) -> _Span | None:
    # "in 2022" is a year, "2022 people" is not
    return c.ymd(int(m["y"]), None, None) if _context(m, _YEAR_PRE_RE) else None


_N_EN = r"\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_N_ZH = r"\d{1,3}|[零〇一二两三四五六七八九十]{1,3}"
_NOT_NUM = r"(?<![\d零〇一二两三四五六七八九十])"
_MON = (
    r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b\.?"
)
_YEAR_OPT = (
    r"(?:(?:,|\s+of)?\s+(?P<y>\d{4})\b"
    r"|\s+(?P<yof>of\s+)?(?P<yrel>last|this|next)\s+year\b)?"
)
_ZH_D = r"\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九]"
# "马上月底" (soon, month-end), "早上周一" (Monday morning): 上/下 after these is not "last/next".
_NOT_SHANG = r"(?<![马晚早以路身向手一留剩每])"
_RULES: list[tuple[str, Callable[[re.Match[str], _Ctx], _Span | None]]] = [
    (r"\b(?:the\s+)?day\s+(?:before\s+yesterday|after\s+tomorrow)\b"
     r"|\b(?:yesterday|today|tonight|tomorrow|last\s+night)\b"
     r"|大前天|前天|昨天|昨日|昨晚|今天|今日|今晚|明天|明日|大后天|后天", _day_word),
    (r"\b(?P<rel>last|previous|this|current|next|coming)\s+(?P<unit>week|month|year)\b", _relative),
    (r"\b(?:the\s+)?(?P<unit>week|month|year)\s+(?:(?P<dir>before)\s+last|after\s+next)\b",
     _two_away),
    # 周 in 周围/周边/周期/周年/周刊 is not "week" (but 上周到现在 is)
    (_NOT_SHANG + r"(?P<rel>上上|上|下下|下|本|这)个?(?P<unit>周|星期|礼拜|月)(?![围边期年刊])",
     _relative),
    (r"\b(?:(?P<rel>last|this|next|previous|coming)\s+)?"
     r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", _weekday),
    # 一 followed by 起/下/些... is "together/a bit/some" (星期一起 = "week together")
    (_NOT_SHANG + r"(?<![\d零〇一二两三四五六七八九十个])(?P<rel>上上|上|下下|下|本|这)?个?"
     r"(?:周|星期|礼拜)(?P<wd>[二三四五六日天]|一(?![起下些样直共般切定]))", _weekday),
    (r"\b(?P<the>the\s+)?(?P<kw>last|past|previous)\s+"
     rf"(?:(?P<n>{_N_EN})\s+)?(?P<unit>day|week|fortnight|month|year)s?\b", _rolling),
    (rf"(?<![附接将靠])(?:最近|过去|近)的?(?P<n>{_N_ZH})(?P<unit>天|日|周|个?星期|个?礼拜|个月|年)",
     _rolling),
    (r"\b(?:recently|lately)\b|最近|近期|近来", _recent),
    (rf"\b(?P<n>{_N_EN})\s+(?P<unit>day|week|fortnight|month|year|hour|minute)s?\s+"
     r"(?P<dir>ago|from\s+now|hence)\b", _ago),
    # no 日 here: "5日前" is "before the 5th" far more often than "5 days ago"
    (_NOT_NUM + rf"(?P<n>{_N_ZH})(?P<unit>天|周|个?星期|个?礼拜|个月|年|个?小时|个?钟头|分钟)"
     r"[之以]?(?P<dir>前|后)", _ago),
    (_NOT_NUM + r"(?=\d{4}年|[零〇一二三四五六七八九]{4}年|大?前年|去年|今年|明年|大?后年"
     r"|(?:\d{1,2}|十[一二]?|[一二三四五六七八九])月)"
     r"(?:(?P<y>\d{4}|[零〇一二三四五六七八九]{4})年|(?P<yw>大前年|前年|去年|今年|明年|大后年|后年))?"
     r"(?:的(?=(?:\d{1,2}|十[一二]?|[一二三四五六七八九])月))?"  # 去年的十月
     # 一月一次 is "once a month", not January
     r"(?:(?P<m>\d{1,2}|十[一二]?|[一二三四五六七八九])月(?!份?[\d一两二三四五六七八九十几]{1,3}次)份?)?"
     rf"(?:(?P<d>{_ZH_D})[日号])?",
     _zh_date),
    (rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s*(?:-|–|to|till|until|through)\s*"
     rf"(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON}{_YEAR_OPT}", _day_span),
    (rf"\b(?:the\s+)?(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON}{_YEAR_OPT}", _en_date),
    (rf"\b{_MON}\s+(?:the\s+)?(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?![:\d]){_YEAR_OPT}", _en_date),
    (r"\b(?:(?P<rel>last|this|next|coming|past|previous)\s+|the\s+|on\s+the\s+)weekend\b",
     _weekend),
    # "Saturday the 12th", "the evening of the 15th": no month named (issue 26)
    (r"\b(?:(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday),?\s+)?"
     r"the\s+(?:(?:morning|afternoon|evening|night)\s+of\s+the\s+)?"
     r"(?P<d>\d{1,2})(?:st|nd|rd|th)\b"
     r"(?!\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))", _day_of_month),
    (rf"\b(?:(?P<rel>last|this|next)\s+)?{_MON}{_YEAR_OPT}", _en_date),
    (r"(?<![\d/.-])(?P<y>\d{4})(?P<s>[-/.])(?P<m>\d{1,2})(?P=s)(?P<d>\d{1,2})"
     r"(?:(?:T|\s+)(?P<H>\d{1,2}):(?P<M>\d{2})(?::\d{2})?)?(?!\d|[-/.]\d)", _iso),
    (r"\b(?P<y>(?:19|20|21)\d{2})\b(?![-/.:]\d|\s*年)", _year),
]  # fmt: skip
_COMPILED = [(re.compile(p, re.I | re.A), h) for p, h in _RULES]  # re.A: "\b" between "May" and 去

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
# well as one with a date (hello_memory/retrieval/hybrid.py, WHEN_MISS_FACTOR).
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

