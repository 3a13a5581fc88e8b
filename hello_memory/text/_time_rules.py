"""The rules behind :mod:`hello_memory.text.timeparse`: the date and number vocabulary
(English and Chinese), the calendar context a match is resolved in, and the rule table,
each regex with the handler that turns its match into a span (or rejects it).

:mod:`~hello_memory.text.timeparse` scans a text with :data:`_COMPILED`, resolves
overlaps, joins ranges and hands out :class:`~hello_memory.text.timeparse.TimeRange`
values; the expressions understood are tabled in its docstring.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Literal, cast

Granularity = Literal["day", "week", "month", "year", "range", "instant"]
# Which occurrence a date written without a year (or a bare weekday) means: the latest
# not after the reference ("past"), the first not before it ("future"), or, for a month
# or a day, whichever of the two is nearer ("nearest"; issue 26, time that points the
# right way).
Direction = Literal["past", "future", "nearest"]
_YMD = tuple[int | None, int | None, int | None]  # the calendar fields written in the text
_Span = tuple[datetime, datetime, Granularity, _YMD | None]


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
