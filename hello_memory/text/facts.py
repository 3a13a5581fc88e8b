"""Facts that update: what a memory says about one attribute of one subject.

"Tom moved from Oslo to Bergen", "I work at Equinor", "李伟搬到了杭州", "我的手机号是
138…": each states the value of an attribute that holds one value at a time (where
someone lives, works, who they are married to, a phone number, a favourite colour).
:func:`parse_fact` reads such a statement into ``Fact(subject, attribute, value)`` with
rules only (English and Chinese); :func:`fact_key` is its ``subject|attribute``, which
the record store keeps per memory (``hm_memory_items.fact_key``, schema v5) so that the
memories about the same attribute of the same subject are one indexed read away.

Subjects are read the way the entity graph reads people (:mod:`hello_memory.text.people`):
the user ("I", "the user", "我") is :data:`~hello_memory.text.people.SELF_ENTITY`, a
role ("my wife", "Tom's boss", "我老婆") is :func:`~hello_memory.text.people.role_key`,
a name is its normalised form. Only the clear cases are read: no subject (a pronoun),
a negation ("no longer lives in", "不再"), or an attribute that may hold several values
at once (sisters, friends, hobbies) give no fact, so a memory that matches nothing is
never superseded by the rules (ARCHITECTURE decision 4: the LLM is optional everywhere;
these rules are the deterministic path of hello_memory/memory/supersede.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from hello_memory.text.people import ROLE_WORDS, SELF_ENTITY, canonical_role, role_key
from hello_memory.types import normalize_entity_name

__all__ = ["Fact", "fact_key", "fact_of", "parse_fact", "same_value"]

# Longest key kept in the record store's fact_key column.
FACT_KEY_CHARS = 255


@dataclass(frozen=True)
class Fact:
    """``subject``'s ``attribute`` is ``value`` (all normalised)."""

    subject: str
    attribute: str
    value: str

    @property
    def key(self) -> str:
        return f"{self.subject}|{self.attribute}"[:FACT_KEY_CHARS]


# --- subjects ----------------------------------------------------------------------
_EN_ROLES = "|".join(sorted((w for w in ROLE_WORDS if w.isascii()), key=len, reverse=True))
_ZH_ROLES = "|".join(sorted((w for w in ROLE_WORDS if not w.isascii()), key=len, reverse=True))
_NAME = r"[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*){0,2}"
# Who a sentence is about, English: the user, "my wife", "Tom's boss", "Tom Berg".
_SUBJ = (rf"(?P<subj>(?i:the user|user)|I|(?i:my|the user's)\s+(?i:{_EN_ROLES})"
         rf"|{_NAME}['’]s\s+(?i:{_EN_ROLES})|{_NAME})")
# Leading words that are not part of a name ("Yesterday Tom moved ...").
_NOT_NAME = frozenset({
    "in", "on", "at", "since", "after", "before", "when", "then", "so", "and", "but", "also",
    "now", "today", "yesterday", "last", "this", "recently", "finally", "meanwhile", "later",
    "earlier", "the", "a", "an", "he", "she", "it", "they", "we", "you", "his", "her", "their",
    "our", "its", "there", "here", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "january", "february", "march", "april", "may", "june", "july",
    "august", "september", "october", "november", "december"
})
_ADV = (r"(?:\s+(?:now|just|recently|finally|currently|still|also|already|has|have|had|"
        r"been|is|am|are|was|were|eventually|officially|actually|then|since\s+moved))*")
_NEG = re.compile(r"\b(?:not|never|no longer|n't|longer|nor)\b|n't", re.I)
# A value: up to punctuation or a word that starts another phrase.
_VAL = (r"(?P<val>[^,.;:!?\n()]+?)(?=\s+(?:since|for|because|with|and|but|last|this|next|"
        r"from|in\s+\d{4}|in\s+(?:january|february|march|april|may|june|july|august|"
        r"september|october|november|december)|on|after|before|when|until|where|as|now|"
        r"so|which|who|years?|months?|weeks?|ago)\b|\s*[,.;:!?\n()]|\s*$)")
_CAP_VAL = _VAL.replace("(?P<val>", r"(?P<val>(?=[A-Z0-9])")

# Single-valued attributes a possessive names ("my phone number is ..."), by canonical
# attribute; "favo(u)rite X" keeps X.
_EN_ATTRS: dict[str, str] = {
    "wife": "spouse", "husband": "spouse", "spouse": "spouse", "partner": "partner",
    "boyfriend": "partner", "girlfriend": "partner",
    "boss": "manager", "manager": "manager", "supervisor": "manager",
    "phone number": "phone", "phone": "phone", "mobile number": "phone",
    "email address": "email", "email": "email", "e-mail": "email",
    "address": "address", "home address": "address", "employer": "employer",
    "job": "job", "job title": "job", "occupation": "job",
    "birthday": "birthday", "age": "age", "salary": "salary", "doctor": "doctor",
    "dentist": "dentist", "hometown": "hometown", "home": "residence",
}
# Attributes whose value must look like a thing, not a judgement ("my job is a nurse",
# "my job title is Senior Engineer"; not "my job is stressful"), and "home", which
# must say where ("my home is in Bergen"; not "my home is my castle").
_NOUN_VALUED = frozenset({"job", "job title", "occupation"})
_JUDGEMENT = re.compile(r"^(?:like|so|very|really|not|too|pretty|such|quite|kind of|a bit|"
                        r"hard|tough|great|good|bad|fun|busy|boring|stressful|amazing)\b", re.I)
_EN_ATTR_RE = "|".join(sorted(map(re.escape, _EN_ATTRS), key=len, reverse=True))
_FAV = r"fav(?:ou?)?rite\s+(?P<fav>[a-z]+(?:\s+[a-z]+)?)"

_EN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("residence", re.compile(
        rf"\b{_SUBJ}(?P<adv>{_ADV})\s+(?:moved|moves|relocated|relocates|moving|"
        rf"has\s+moved)(?:\s+back)?(?:\s+from\s+[^,.;!?]+?)?\s+(?:to|into)\s+{_CAP_VAL}")),
    ("residence", re.compile(
        rf"\b{_SUBJ}(?P<adv>{_ADV})\s+(?:lives|live|lived|living|resides|reside|resided|"
        rf"is\s+based|was\s+based|based|settled|stays|stay)\s+(?:in|at)\s+{_VAL}")),
    ("employer", re.compile(
        rf"\b{_SUBJ}(?P<adv>{_ADV})\s+(?:works|work|worked|working|started\s+working|"
        rf"is\s+employed|employed)\s+(?:at|for|by)\s+{_VAL}")),
    ("employer", re.compile(
        rf"\b{_SUBJ}(?P<adv>{_ADV})\s+(?:joined|joins|has\s+joined|got\s+a\s+job\s+at|"
        rf"(?:took|accepted|started|got)\s+a\s+(?:new\s+)?job\s+at)\s+{_CAP_VAL}")),
    ("employer", re.compile(
        rf"\b{_SUBJ}(?P<adv>{_ADV})\s+(?:has|had|got)\s+a\s+(?:new\s+)?job\s+(?:at|with)\s+{_VAL}")),
    ("employer", re.compile(
        rf"\b{_SUBJ}(?P<adv>{_ADV})\s+left\s+[^,.;!?]+?\s+for\s+a\s+(?:new\s+)?"
        rf"(?:job|position|role)\s+(?:at|with)\s+{_VAL}")),
    ("residence", re.compile(
        rf"\b{_SUBJ}(?P<adv>{_ADV})\s+calls\s+(?P<val>[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*){{0,2}})"
        rf"\s+home\b")),
    ("phone", re.compile(
        rf"\b{_SUBJ}(?P<adv>{_ADV})\s+(?:changed|switched)\s+(?:(?:his|her|their|my)\s+)?"
        rf"(?:phone|mobile)(?:\s+number)?\s+to\s+{_VAL}")),
    ("phone", re.compile(
        rf"\b{_SUBJ}(?P<adv>{_ADV})\s+can\s+be\s+reached\s+(?:on|at)\s+"
        rf"(?P<val>\+?[\d][\d -]{{4,}}\d)")),
    ("spouse", re.compile(
        rf"\b(?P<subj>{_NAME})\s+and\s+(?P<val>{_NAME})\s+(?:are|got)\s+married\b(?P<adv>)")),
    ("job", re.compile(
        rf"\b{_SUBJ}(?P<adv>{_ADV})\s+(?:works|work|worked|working)\s+as\s+(?:an?\s+)?{_VAL}")),
    ("spouse", re.compile(
        rf"\b{_SUBJ}(?P<adv>{_ADV})\s+(?:(?:is|am|'m|got|was|are)\s+)?(?:married|engaged|wed)"
        rf"\s+(?:to\s+)?{_CAP_VAL}")),
    ("age", re.compile(
        rf"\b{_SUBJ}(?P<adv>{_ADV})\s*(?:is|am|'m|turned|just\s+turned)\s+(?P<val>\d{{1,3}})"
        rf"(?:\s+years?\s+old)\b")),
    ("", re.compile(
        rf"\b(?P<owner>(?i:my|the user's)|{_NAME}['’]s)\s+(?:(?P<orole>(?i:{_EN_ROLES}))['’]s\s+)?"
        rf"(?:{_FAV}|(?P<attr>(?i:{_EN_ATTR_RE})))(?P<adv>{_ADV})?\s+(?:is|has\s+become|"
        rf"became|changed\s+to|is\s+now)\s+(?:now\s+)?{_VAL}")),
)

# A cheap test per pattern, in the same order: a pattern runs only on a text that holds
# its key word (most memories state no such fact; each full pattern costs ~60 us).
_EN_TRIGGERS = tuple(re.compile(t, re.I) for t in (
    r"\bmov(?:ed|es|ing)\b|\brelocat", r"\b(?:live[sd]?|living|resid|based|settled|stays?)\b",
    r"\b(?:work(?:s|ed|ing)?|employed)\s+(?:at|for|by)\b", r"\bjoin|\bjob\s+at\b",
    r"\bjob\s+(?:at|with)\b", r"\bleft\b", r"\bcalls\b", r"\b(?:phone|mobile)\b",
    r"\breached\b", r"\bmarried\b", r"\bwork(?:s|ed|ing)?\s+as\b",
    r"\b(?:married|engaged|wed)\b", r"\byears?\s+old\b", r"\bmy\b|\bthe user's\b|['’]s\b"))

# --- Chinese -----------------------------------------------------------------------
_ZH_TIME = ("现在|目前|如今|已经|去年|今年|前年|明年|上个月|上周|上星期|最近|刚刚|刚|"
            "终于|一直|还|也|又|后来|年初|年底|月初|月底|下个月|当时|正式|早就|在\\d{4}年|\\d{4}年|\\d{1,2}月")
_ZH_SUBJ = (f"(?P<subj>(?:我|用户)的?(?:{_ZH_ROLES})|[\u4e00-\u9fff]{{2,4}}?的(?:{_ZH_ROLES})"
            f"|我(?!们)|用户|[\u4e00-\u9fff]{{2,4}}?)")
_ZH_ADV = f"(?P<adv>(?:{_ZH_TIME}|[,，\\s])*)"
_ZH_START = r"(?:^|(?<=[。！？；，,.!?;\s]))"
_ZH_VAL = (r"(?P<val>[\u4e00-\u9fffA-Za-z0-9·@._+-]+?)"
           r"(?=了|啦|的|已经|有|快|工作|上班|任职|就职|结婚|[,，。！？；;!?、\s]|$)")
_ZH_ATTRS: dict[str, str] = {
    "妻子": "spouse", "老婆": "spouse", "太太": "spouse", "丈夫": "spouse", "老公": "spouse",
    "爱人": "spouse", "先生": "spouse", "男朋友": "partner", "女朋友": "partner",
    "老板": "manager", "经理": "manager", "上司": "manager", "领导": "manager",
    "电话号码": "phone", "手机号码": "phone", "手机号": "phone", "电话": "phone",
    "邮箱": "email", "地址": "address", "住址": "address", "生日": "birthday",
    "职业": "job", "工作": "job", "职位": "job", "年龄": "age", "工资": "salary",
    "车": "car", "医生": "doctor",
}
_ZH_ATTR_RE = "|".join(sorted(_ZH_ATTRS, key=len, reverse=True))

_ZH_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("residence", re.compile(
        f"{_ZH_START}{_ZH_SUBJ}{_ZH_ADV}(?:从[\u4e00-\u9fff]{{1,8}}?)?"
        f"(?:搬到了|搬到|搬去了|搬去|搬家到|迁居到|定居在|定居|住在|现居|居住在)(?:了)?{_ZH_VAL}")),
    ("employer", re.compile(
        f"{_ZH_START}{_ZH_SUBJ}{_ZH_ADV}(?:在|于)(?P<val>[\u4e00-\u9fffA-Za-z0-9·]+?)"
        f"(?:工作|上班|任职|就职)")),
    ("employer", re.compile(
        f"{_ZH_START}{_ZH_SUBJ}{_ZH_ADV}(?:入职了|入职|跳槽到了|跳槽到|跳槽去了|跳槽去|任职于|就职于)"
        f"{_ZH_VAL}")),
    ("residence", re.compile(
        f"{_ZH_START}{_ZH_SUBJ}{_ZH_ADV}(?:人在|的家在|家住在|家在){_ZH_VAL}")),
    ("employer", re.compile(
        f"{_ZH_START}{_ZH_SUBJ}{_ZH_ADV}(?:换了(?:份|个)?工作|跳槽)[，,]?(?:去了|到了|进了){_ZH_VAL}")),
    ("spouse", re.compile(
        f"{_ZH_START}{_ZH_SUBJ}{_ZH_ADV}(?:和|跟|与)(?P<val>[\u4e00-\u9fffA-Za-z·]{{1,8}}?)"
        f"是夫妻")),
    ("spouse", re.compile(
        f"{_ZH_START}{_ZH_SUBJ}{_ZH_ADV}(?:和|跟|与)(?P<val>[\u4e00-\u9fffA-Za-z·]{{1,8}}?)"
        f"(?:结婚|领证|成婚)")),
    ("spouse", re.compile(f"{_ZH_START}{_ZH_SUBJ}{_ZH_ADV}(?:嫁给了|嫁给|娶了){_ZH_VAL}")),
    ("age", re.compile(f"{_ZH_START}{_ZH_SUBJ}{_ZH_ADV}(?P<val>\\d{{1,3}})岁")),
    ("", re.compile(
        f"{_ZH_START}(?P<owner>(?:我|用户)|[\u4e00-\u9fff]{{2,4}}?)"
        f"(?:的?最喜欢的(?P<fav>[\u4e00-\u9fff]{{1,4}}?)|的(?P<attr>{_ZH_ATTR_RE}))"
        f"{_ZH_ADV}(?:是|叫|改成了|改成|换成了|换成|变成了|变成|改为){_ZH_VAL}")),
)
_ZH_TRIGGERS = tuple(re.compile(t) for t in (
    "住|搬|迁|定居|现居", "工作|上班|任职|就职", "入职|跳槽|任职于|就职于", "人在|家在|家住",
    "换了|跳槽", "是夫妻", "结婚|领证|成婚", "嫁给|娶了", "岁", "的|最喜欢"))
_ZH_NEG = re.compile("不再|没有|没|不|未|离开|离婚|辞职")
_ZH_PRONOUNS = re.compile("^(?:他|她|它|他们|她们|我们|你|您|大家|这|那)")


def _strip_zh_time(text: str) -> str:
    return re.sub(f"^(?:{_ZH_TIME})+|(?:{_ZH_TIME})+$", "", text)


def _subject_en(raw: str) -> str | None:
    low = raw.casefold().replace("’", "'")
    if raw == "I" or low in ("the user", "user", "i'm", "i've", "i'd"):
        return SELF_ENTITY
    m = re.fullmatch(rf"(?i:my|the user's)\s+(?P<role>{_EN_ROLES})", raw, re.I)
    if m:
        return role_key(SELF_ENTITY, canonical_role(m.group("role")) or m.group("role"))
    m = re.fullmatch(rf"(?P<owner>.+?)['’]s\s+(?P<role>{_EN_ROLES})", raw, re.I)
    if m:
        owner = _name(m.group("owner"))
        role = canonical_role(m.group("role"))
        return role_key(owner, role) if owner and role else None
    return _name(raw)


def _name(raw: str) -> str | None:
    words = raw.split()
    while words and words[0].casefold().strip("'’") in _NOT_NAME:
        words.pop(0)
    if not words or canonical_role(words[0]) or words[0].casefold() in ("i", "my"):
        return None
    return normalize_entity_name(" ".join(words))


def _subject_zh(raw: str) -> str | None:
    raw = _strip_zh_time(raw)
    if not raw or _ZH_PRONOUNS.match(raw):
        return None
    if raw in ("我", "用户"):
        return SELF_ENTITY
    m = re.fullmatch(f"(?P<owner>.+?)的?(?P<role>{_ZH_ROLES})", raw)
    if m:
        owner = m.group("owner")
        role = canonical_role(m.group("role"))
        if role is None:
            return None
        if owner in ("我", "用户"):
            return role_key(SELF_ENTITY, role)
        if len(owner) >= 2 and not _ZH_PRONOUNS.match(owner):
            return role_key(owner, role)
        return None
    if len(raw) < 2 or canonical_role(raw):
        return None
    return normalize_entity_name(raw)


def _value(raw: str) -> str:
    value = re.sub(r"^(?:in|at)\s+", "", raw.strip(), flags=re.I)  # "home is in Bergen"
    value = re.sub(r"^(?:the|a|an|my|our)\s+", "", value, flags=re.I)
    value = re.sub(r"[\s'\"“”‘’]+$", "", value)
    return normalize_entity_name(value.strip("了啦"))


def _facts_en(text: str) -> list[tuple[int, Fact]]:
    out: list[tuple[int, Fact]] = []
    for (attribute, pattern), trigger in zip(_EN_PATTERNS, _EN_TRIGGERS, strict=True):
        if not trigger.search(text):
            continue
        for m in pattern.finditer(text):
            groups = m.groupdict()
            if _NEG.search(groups.get("adv") or "") or _NEG.search(m.group(0)[: m.start("val")
                                                                       - m.start()]):
                continue
            if attribute:
                subject = _subject_en(groups["subj"])
                attr = attribute
            else:
                owner = groups["owner"]
                base = (SELF_ENTITY if owner.casefold() in ("my", "the user's")
                        else _name(re.sub(r"['’]s$", "", owner)))
                if base is None:
                    continue
                orole = groups.get("orole")
                subject = role_key(base, canonical_role(orole) or orole) if orole else base
                named = (groups.get("attr") or "").casefold()
                attr = (f"favorite {groups['fav'].casefold()}" if groups.get("fav")
                        else _EN_ATTRS[named])
                raw = groups["val"].strip()
                if _JUDGEMENT.match(raw) or (named == "home" and not raw.lower().startswith(
                        "in ")) or (named in _NOUN_VALUED and not re.match(
                        r"(?:an?\s|[A-Z])", raw)):
                    continue
            value = _value(groups["val"])
            if subject and value:
                out.append((m.start(), Fact(subject, attr, value)))
    return out


def _facts_zh(text: str) -> list[tuple[int, Fact]]:
    out: list[tuple[int, Fact]] = []
    for (attribute, pattern), trigger in zip(_ZH_PATTERNS, _ZH_TRIGGERS, strict=True):
        if not trigger.search(text):
            continue
        for m in pattern.finditer(text):
            groups = m.groupdict()
            if _ZH_NEG.search(m.group(0)[: m.start("val") - m.start()]):
                continue
            if attribute:
                subject = _subject_zh(groups["subj"])
                attr = attribute
            else:
                owner = _strip_zh_time(groups["owner"])
                subject = SELF_ENTITY if owner in ("我", "用户") else _subject_zh(owner)
                attr = f"favorite {groups['fav']}" if groups.get("fav") else _ZH_ATTRS[
                    groups["attr"]]
            value = _value(groups["val"])
            if subject and value:
                out.append((m.start(), Fact(subject, attr, value)))
    return out


@lru_cache(maxsize=4096)  # one add reads its text here two or three times
def parse_fact(text: str) -> Fact | None:
    """The first single-valued fact ``text`` states, or None (see the module doc)."""
    if not text:
        return None
    sample = text[:600]  # a fact is stated early; reading on costs regex time only
    found = _facts_en(sample) if re.search("[A-Za-z]", sample) else []
    if re.search("[\u4e00-\u9fff]", sample):
        found += _facts_zh(sample)
    if not found:
        return None
    return min(found, key=lambda t: t[0])[1]


# Metadata naming who wrote or said a memory (the retrieval views read the same keys).
_SPEAKER_KEYS = ("speaker", "author", "person")
_SELF_ROLE = f"role:{SELF_ENTITY}:"


def fact_of(text: str, metadata: Mapping[str, Any] | None = None,
            user_id: str | None = None) -> Fact | None:
    """:func:`parse_fact` for a memory: "I" and "my wife" are its speaker's
    (``metadata.speaker`` / ``author`` / ``person``, else its ``user_id``), so that in a
    conversation of several people one person's "I live in Oslo" never supersedes
    another's, and Tom's "I moved to Bergen" is about the same Tom as "Tom lives in
    Oslo". An assistant's, system's or tool's first person states no fact about anyone."""
    fact = parse_fact(text)
    if fact is None:
        return None
    meta = metadata or {}
    if fact.subject != SELF_ENTITY and not fact.subject.startswith(_SELF_ROLE):
        return fact
    if meta.get("role") in ("assistant", "system", "tool"):
        return None
    who = next((str(meta[k]) for k in _SPEAKER_KEYS
                if isinstance(meta.get(k), str) and str(meta[k]).strip()), None) or user_id
    if not who:
        return fact
    owner = normalize_entity_name(who)
    subject = owner if fact.subject == SELF_ENTITY else role_key(
        owner, fact.subject[len(_SELF_ROLE):])
    return Fact(subject, fact.attribute, fact.value)


def fact_key(text: str, metadata: Mapping[str, Any] | None = None,
             user_id: str | None = None) -> str | None:
    """``subject|attribute`` of :func:`fact_of`, or None."""
    fact = fact_of(text, metadata, user_id)
    return fact.key if fact is not None else None


def same_value(a: str, b: str) -> bool:
    """Whether two values of one attribute say the same ("Bergen" and "bergen",
    "New York" and "New York City", "杭州" and "杭州市")."""
    a, b = normalize_entity_name(a), normalize_entity_name(b)
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    if not short:
        return False
    if re.search("[\u4e00-\u9fff]", short):
        return long_.startswith(short) and len(long_) - len(short) <= 2
    return long_.startswith(short + " ")
