"""The spans behind :mod:`hello_memory.text.entities`: where a text names something.

:class:`_Span` is a named, typed stretch of the (NFKC-normalised) text. The finders here
return them in precedence order: URLs, e-mails, codes and quoted terms
(:func:`_pattern_spans`), capitalised English names (:func:`_capitalised_spans`, typed
by :func:`_proper_type`) and Chinese names and nouns from jieba
(:func:`_chinese_spans`); :class:`_Occupied` keeps the accepted ones non-overlapping,
and :func:`_pattern_relations` reads "X is a Y" / "X是一种Y" / "X的Y" between adjacent
spans. The extractors and the assembly into an ``Extraction`` stay in
:mod:`~hello_memory.text.entities`.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from hello_memory.text.tokenize import (
    EN_STOPWORDS,
    ZH_STOPWORDS,
    _get_jieba,
    contains_cjk,
    split_sentences,
)


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    name: str
    type: str
    kind: str = ""  # codes: the prefix as written ("订单号", "order")


_Triple = tuple[_Span, str, _Span]

# --- patterns -----------------------------------------------------------------------
_CONTENT_RE = re.compile(r"[^\W_]")
_URL_RE = re.compile(r"(?:https?://|www\.)[^\s<>\"'“”‘’「」，。；！？（）]+", re.I)
_EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_PREFIXED_CODE_RE = re.compile(  # the value must hold a digit: "order to" is no code
    r"(?:\b(order|ticket|invoice|case|issue|ref|reference|tracking|booking|account)"
    r"(?:\s*(?:no\.?|number|id|#))?\s*[:#]?\s*"
    r"|(订单号?|单号|工单号?|编号|运单号?|快递单号|发票号?|账号|卡号|会员号)\s*[:#]?\s*)"
    r"([A-Za-z0-9](?=[A-Za-z-]*\d)[A-Za-z0-9-]{2,})(?![A-Za-z0-9])",
    re.I,
)
# Letters/digits joined by - _ . ; a code if it mixes letters and digits (v2.0, gpt-4o,
# PRJ-1234) or is a bare number of 6+ digits (order/phone numbers; years are not).
_TOKEN_RE = re.compile(
    r"(?<![A-Za-z0-9._@/-])[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)*(?![A-Za-z0-9@/-]|\.[A-Za-z0-9])"
)
_UNIT_RE = re.compile(  # 3rd, 10am, 5kg, 2.5GB: quantities, not codes
    r"\d+(?:\.\d+)?(?:st|nd|rd|th|am|pm|s|k|m|b|x|kg|g|mg|km|cm|mm|ml|l|h|hrs?|mins?|sec"
    r"|ms|gb|mb|kb|tb|px|pt|yo)",
    re.I,
)
_QUOTE_RES = [
    re.compile(p)
    for p in (r'"([^"\n]{1,60})"', r"“([^”\n]{1,60})”", r"「([^」\n]{1,60})」",
              r"『([^』\n]{1,60})』", r"《([^》\n]{1,60})》",
              r"(?<![\w'’])['‘]([^'‘’\n]{1,60})['’](?![\w'’])")  # not "Alice's ... Bob's"
]  # fmt: skip
_CAP = r"(?:[A-Z][A-Za-z]*(?:['’-][A-Za-z]+)*|[a-z]+[A-Z][A-Za-z]*)"  # Alice, IBM, iPhone
_CONNECTORS = frozenset(["of", "&", "de", "van", "von", "der", "du", "da"])
_CAP_SPAN_RE = re.compile(
    rf"(?<![\w-]){_CAP}(?:[ \t]+(?:(?:{'|'.join(_CONNECTORS)})[ \t]+)?{_CAP})*(?![\w-])"
)
# Words capitalised by position, as titles or for emphasis: spans are split there.
_CAP_STOP = frozenset(
    """the a an i we it this that these those my our your his her its their he she they
    you me us in on at if when while but and or so then there here what who how why where
    which do does did is are was were be can could would should will may might must let
    ok okay yes no not please hi hello hey thanks thank dear also yesterday today tomorrow
    tonight last next after before every each all some any many most for from to with by
    as of just still maybe however anyway mr mrs ms dr prof sir madam never always
    important note warning urgent asap todo fyi later now soon finally first again
    meanwhile suddenly recently sometimes usually often add ask book buy call cancel check
    contact email mail find get give keep make pay put read remind remember reply save
    schedule send set show tell try update upgrade use write see look take bring install
    run stop start open close""".split()  # noqa: SIM905
)
_ORG_WORDS = frozenset(
    """inc corp corporation ltd llc gmbh co company group labs lab technologies technology
    systems university college bank institute foundation robotics motors airlines
    software studios partners capital ventures holdings industries agency ministry""".split()  # noqa: SIM905
)
_TIME_WORDS = frozenset(
    """january february march april may june july august september october november
    december monday tuesday wednesday thursday friday saturday sunday""".split()  # noqa: SIM905
)
_HONORIFIC_BEFORE_RE = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Prof|Sir|Madam)\.?[ \t]+$")
_AT_PLACE_RE = re.compile(r"\b(?:in|at|near)[ \t]+$", re.I)
_MOTION_PLACE_RE = re.compile(r"\b(?:from|to|into)[ \t]+$", re.I)
_MOTION_VERB_RE = re.compile(
    r"\b(?:mov|went|go|flew|fly|travel|relocat|drov|driv|came|come|return|arriv|left|leav"
    r"|visit|emigrat|commut)\w*",
    re.I,
)
_ABBREV_END_RE = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Prof|St|vs|etc|e\.g|i\.e|No)\.\s*$")
_IS_A_EN_RE = re.compile(
    r"[ \t]+(?:is|was)[ \t]+(?:a|an)[ \t]+(?:(?:very|really|quite|pretty)[ \t]+)?"
    r"([A-Za-z][\w-]*(?:[ \t]+[A-Za-z][\w-]*){0,2})"
)
_IS_A_ZH_RE = re.compile(r"\s*是一(?:种|个|家|款|位|名|所|座|门)\s*")

# jieba flags: nr person, ns place, nt org, nz other proper noun, n noun, vn verbal noun.
_ZH_NOUN_FLAGS = frozenset({"n", "nz", "ns", "nt", "nr", "nrt", "nrfg", "vn"})
_ZH_MERGE_FLAGS = frozenset({"n", "nz", "ns"})  # modifier + head: 蓝牙 + 耳机
# jieba tags common words nr (左耳, 过敏): a "person" must start with a surname.
_ZH_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶"
    "程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺"
    "顾毛郝龚邵万钱严覃武戴莫孔向汤欧司诸葛小老阿"
)
_ZH_NOUN_STOP = ZH_STOPWORDS | frozenset(
    """用户 问题 事情 东西 时候 情况 方面 时间 地方 样子 部分 方式 内容 信息 结果 原因 人们
    大家 别人 有人 什么 怎么 这里 那里 今天 明天 昨天 现在 以后 之前 一下""".split()  # noqa: SIM905
)


class _Occupied:
    """Accepted spans, sorted and non-overlapping; each check is a binary search."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.spans: list[_Span] = []

    def free(self, span: _Span) -> bool:
        """True if ``span`` has a real name and overlaps no accepted span."""
        if span.end <= span.start or not _CONTENT_RE.search(span.name):
            return False
        i = bisect.bisect_left(self.starts, span.start)
        if i > 0 and self.spans[i - 1].end > span.start:
            return False
        return not (i < len(self.spans) and self.spans[i].start < span.end)

    def add_all(self, spans: list[_Span]) -> None:
        for span in spans:  # earlier spans win: callers pass them in precedence order
            if self.free(span):
                i = bisect.bisect_left(self.starts, span.start)
                self.starts.insert(i, span.start)
                self.spans.insert(i, span)


def _pattern_spans(text: str) -> list[_Span]:
    """URLs, e-mails, codes and quoted terms, in precedence order."""
    out: list[_Span] = []
    for m in _URL_RE.finditer(text):
        url = m.group().rstrip(".,;:!?)]}")
        out.append(_Span(m.start(), m.start() + len(url), url, "url"))
    out += [_Span(m.start(), m.end(), m.group(), "contact") for m in _EMAIL_RE.finditer(text)]
    for m in _PREFIXED_CODE_RE.finditer(text):
        kind = (m.group(1) or "").lower() or m.group(2)  # "Order" and "order" alike
        out.append(_Span(m.start(), m.end(), m.group(3), "code", kind))
    for m in _TOKEN_RE.finditer(text):
        tok = m.group()
        mixed = any(c.isdigit() for c in tok) and any(c.isalpha() for c in tok)
        if (tok.isdigit() and len(tok) >= 6) or (
            mixed and len(tok) >= 3 and not _UNIT_RE.fullmatch(tok)
        ):
            out.append(_Span(m.start(), m.end(), tok, "code"))
    for regex in _QUOTE_RES:
        for m in regex.finditer(text):
            term = m.group(1).strip()
            if len(term.split()) <= 6:  # longer: reported speech, not a term
                out.append(_Span(m.start(), m.end(), term, "term"))
    return out


def _proper_type(text: str, start: int, words: list[str], sentence_start: int) -> str:
    """Cheap typing of a capitalised span from its words and the text before it."""
    before = text[max(0, start - 40) : start]
    if any(w.lower().rstrip(".") in _ORG_WORDS for w in words):
        return "org"
    if len(words) == 1 and words[0].lower() in _TIME_WORDS:
        return "time"
    if _HONORIFIC_BEFORE_RE.search(before):
        return "person"
    if _AT_PLACE_RE.search(before) or (
        _MOTION_PLACE_RE.search(before) and _MOTION_VERB_RE.search(text[sentence_start:start])
    ):
        return "place"
    return "name"


def _capitalised_spans(text: str, sentences: list[tuple[int, int]]) -> list[_Span]:
    out: list[_Span] = []
    for s_start, s_end in sentences:
        first = re.search(r"[A-Za-z]", text[s_start:s_end])
        sentence_first = s_start + first.start() if first else -1
        for m in _CAP_SPAN_RE.finditer(text, s_start, s_end):
            # Split at stop words ("Yesterday Alice", "When Bob"), trim loose connectors.
            parts: list[list[re.Match[str]]] = [[]]
            for w in re.finditer(r"\S+", m.group()):
                if w.group()[0].isupper() and w.group().lower().strip(".") in _CAP_STOP:
                    parts.append([])
                else:
                    parts[-1].append(w)
            for part in parts:
                while part and part[0].group() in _CONNECTORS:
                    part.pop(0)
                while part and part[-1].group() in _CONNECTORS:
                    part.pop()
                if not part:
                    continue
                start = m.start() + part[0].start()
                name = re.sub(r"['’]s$", "", text[start : m.start() + part[-1].end()])
                low = name.lower()
                # A lone first word of a sentence is a name only if nothing suggests a
                # common word: an -ing/-ly/-ed ending or a lowercase use elsewhere.
                if " " not in name and (
                    low in EN_STOPWORDS
                    or start == sentence_first
                    and (
                        low.endswith(("ing", "ly", "ed"))
                        or re.search(rf"(?<![A-Za-z]){re.escape(low)}(?![A-Za-z])", text)
                    )
                ):
                    continue
                ptype = _proper_type(text, start, name.split(), s_start)
                out.append(_Span(start, start + len(name), name, ptype))
    return out


def _zh_type(word: str, flag: str) -> str | None:
    if flag not in _ZH_NOUN_FLAGS or len(word) < 2 or word in _ZH_NOUN_STOP:
        return None
    if not contains_cjk(word):
        return None
    if flag in ("nr", "nrfg"):
        return "person" if word[0] in _ZH_SURNAMES and len(word) <= 4 else "concept"
    return {"ns": "place", "nt": "org", "nrt": "name"}.get(flag, "concept")


def _chinese_spans(text: str, sentences: list[tuple[int, int]]) -> list[_Span]:
    """Names and nouns (2+ characters) from jieba.posseg. Two adjacent plain nouns make a
    compound (蓝牙 + 耳机 -> 蓝牙耳机), kept together with its head noun (耳机)."""
    _get_jieba()  # initialise the shared dictionary quietly, once
    import jieba.posseg as pseg

    out: list[_Span] = []
    for s_start, s_end in sentences:
        if not contains_cjk(text[s_start:s_end]):
            continue
        words: list[tuple[int, int, str, str]] = []
        pos = s_start
        for pair in pseg.cut(text[s_start:s_end]):
            start = text.find(pair.word, pos, s_end)
            if start >= 0:
                pos = start + len(pair.word)
                words.append((start, pos, pair.word, pair.flag))
        i = 0
        while i < len(words):
            start, end, word, flag = words[i]
            etype = _zh_type(word, flag)
            nxt = words[i + 1] if i + 1 < len(words) else None
            if etype and nxt and flag in _ZH_MERGE_FLAGS and nxt[3] in _ZH_MERGE_FLAGS:
                head_type = _zh_type(nxt[2], nxt[3])
                if head_type and nxt[0] == end:
                    out.append(_Span(start, nxt[1], word + nxt[2], "concept"))
                    out.append(_Span(nxt[0], nxt[1], nxt[2], head_type))
                    i += 2
                    continue
            if etype:
                out.append(_Span(start, end, word, etype))
            i += 1
    return out


def _sentence_bounds(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence; "Dr. Smith" stays in one sentence."""
    bounds: list[tuple[int, int]] = []
    pos = 0
    for piece in split_sentences(text):
        if bounds and _ABBREV_END_RE.search(text, bounds[-1][0], bounds[-1][1]):
            bounds[-1] = (bounds[-1][0], pos + len(piece))
        else:
            bounds.append((pos, pos + len(piece)))
        pos += len(piece)
    return bounds


def _pattern_relations(text: str, spans: list[_Span]) -> list[_Triple]:
    """is_a ("X is a Y", "X是一种Y") and has ("X的Y"), between adjacent spans only."""
    by_end: dict[int, _Span] = {}
    by_start: dict[int, _Span] = {}
    for s in sorted(spans, key=lambda s: s.end - s.start):  # the longest span wins
        by_end[s.end] = by_start[s.start] = s
    out: list[_Triple] = []
    for end, subj in by_end.items():
        obj: _Span | None = None
        if m := _IS_A_EN_RE.match(text, end):
            cut: list[str] = []
            for word in m.group(1).split():  # "a doctor who ..." -> "doctor"
                if word.lower() in EN_STOPWORDS:
                    break
                cut.append(word)
            name = " ".join(cut)
            obj = by_start.get(m.start(1)) or _Span(m.start(1), m.end(1), name, "concept")
            out += [(subj, "is_a", obj)] if cut else []
        elif (m := _IS_A_ZH_RE.match(text, end)) and (obj := by_start.get(m.end())):
            out.append((subj, "is_a", obj))
        elif text.startswith("的", end) and (obj := by_start.get(end + 1)):
            out.append((subj, "has", obj))
    return out
