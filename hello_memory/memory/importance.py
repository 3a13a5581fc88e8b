"""Transparent heuristics: how important a new memory is, and which type it is.

Both are cheap, deterministic, bilingual (English + Chinese) rules driven by the
module-level tables below, so a surprising result can be traced to a table row. They
are defaults only: an explicit ``importance`` / ``priority`` in the metadata, or an
explicit memory type from the caller, always takes precedence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from hello_memory.text.attributes import attributes_of, single_valued, states_now
from hello_memory.types import MemoryType

__all__ = [
    "BASE_IMPORTANCE",
    "EPISODIC_PATTERNS",
    "IMPORTANCE_MARKERS",
    "MEMORY_TYPE_CUES",
    "PRIORITY_LEVELS",
    "classify_memory_type",
    "estimate_importance",
]

BASE_IMPORTANCE = 0.5
MARKER_BONUS = 0.1  # per distinct marker ...
MARKER_CAP = 0.3  # ... but at most this much in total, so repetition cannot max it out
SHORT_CHARS, SHORT_PENALTY = 10, -0.1  # "ok", "好的": rarely worth remembering
LONG_CHARS, LONG_BONUS = 200, 0.05  # a long, detailed note usually carries more
EXCLAMATION_BONUS = 0.05

# metadata["priority"]: words, or a number 1 (lowest) .. 5 (highest) mapped linearly to
# 0.1 .. 0.9 so that 3 == "normal" == the base. The extremes 0 and 1 are left to an
# explicit metadata["importance"].
PRIORITY_LEVELS: dict[str, float] = {
    "low": 0.3, "normal": 0.5, "medium": 0.5, "high": 0.7, "critical": 0.9, "urgent": 0.9,
    "低": 0.3, "普通": 0.5, "中": 0.5, "高": 0.7, "紧急": 0.9,
}  # fmt: skip

# One row per marker: (label, pattern). English rows match whole words, ignoring case;
# Chinese rows match as substrings (no word boundaries in Chinese). Each row counts once
# however often it occurs.
_EN = re.IGNORECASE
IMPORTANCE_MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (label, re.compile(pattern, _EN if label.isascii() else 0))
    for label, pattern in (
        ("important", r"\bimportant(?:ly)?\b"),
        ("must", r"\bmust\b"),
        ("never", r"\bnever\b"),
        ("always", r"\balways\b"),
        ("critical", r"\bcritical(?:ly)?\b"),
        ("urgent", r"\burgent(?:ly)?\b|\basap\b"),
        ("remember", r"\bremember\b|\bdo(?:n't| not) forget\b"),
        ("deadline", r"\bdeadlines?\b|\bdue (?:by|on|date)\b"),
        ("allergic", r"\ballerg(?:ic|y|ies)\b"),
        ("password", r"\bpasswords?\b"),
        ("essential", r"\bessential\b|\bcrucial\b"),
        ("重要", "重要"),
        ("关键", "关键"),
        ("必须", "必须"),
        ("务必", "务必"),
        ("一定", "一定"),
        ("千万", "千万"),
        ("紧急", "紧急"),
        ("记住", "记住|记得"),
        ("截止", "截止"),
        ("过敏", "过敏"),
        ("密码", "密码"),
        ("别忘", "别忘|不要忘"),
    )
)


def _finite(value: object) -> float | None:
    """``value`` as a float if it is a finite real number (bools are not numbers here)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond float range, e.g. 10**400
        return None
    return number if math.isfinite(number) else None


def _metadata_override(metadata: Mapping[str, Any] | None) -> float | None:
    """metadata["importance"] in [0, 1] wins outright, then metadata["priority"].

    Invalid values (out of range, NaN, bools, unknown words) are ignored rather than
    raised: this is an estimate, and validating explicit input is the caller's job.
    """
    if not metadata:
        return None
    value = _finite(metadata.get("importance"))
    if value is not None and 0.0 <= value <= 1.0:
        return value
    priority = metadata.get("priority")
    if isinstance(priority, str):
        key = priority.strip().casefold()
        if key in PRIORITY_LEVELS:
            return PRIORITY_LEVELS[key]
        try:
            priority = float(key)  # "4" from a form or a CLI flag
        except ValueError:
            return None
    level = _finite(priority)
    if level is not None and 1.0 <= level <= 5.0:
        return round(0.1 + 0.2 * (level - 1.0), 4)
    return None


def estimate_importance(content: str, metadata: Mapping[str, Any] | None = None) -> float:
    """Heuristic importance of a memory, always a finite number in [0, 1].

    Explicit metadata decides alone when present and valid:

    ==============================  =================================================
    ``metadata["importance"]``      a number in [0, 1]: returned as is
    ``metadata["priority"]``        low 0.3, normal/medium 0.5, high 0.7,
                                    critical/urgent 0.9 (also 低/普通/中/高/紧急), or
                                    1..5 -> 0.1 + 0.2 * (n - 1): 1 0.1 ... 5 0.9
    ==============================  =================================================

    Otherwise the score is built from the content:

    ==============================  =================================================
    base                            0.5
    each distinct marker            +0.1, at most +0.3 in total (IMPORTANCE_MARKERS:
                                    important, must, never, always, critical, urgent,
                                    remember, deadline, allergic, password, essential;
                                    重要 关键 必须 务必 一定 千万 紧急 记住 截止 过敏
                                    密码 别忘)
    stripped length < 10 chars      -0.1
    stripped length > 200 chars     +0.05
    contains "!" or "！"            +0.05
    ==============================  =================================================

    The sum is clamped to [0, 1] and rounded to 4 decimals (so 0.5 + 0.1 + 0.1 is
    exactly 0.7). Example: "Remember: Bob is allergic to peanuts!" is
    0.5 + 0.2 + 0.05 = 0.75.
    """
    if not isinstance(content, str):
        raise TypeError(f"content must be a str, got {type(content).__name__}")
    override = _metadata_override(metadata)
    if override is not None:
        return override
    markers = sum(1 for _, pattern in IMPORTANCE_MARKERS if pattern.search(content))
    score = BASE_IMPORTANCE + min(MARKER_BONUS * markers, MARKER_CAP)
    length = len(content.strip())
    if length < SHORT_CHARS:
        score += SHORT_PENALTY
    elif length > LONG_CHARS:
        score += LONG_BONUS
    if "!" in content or "！" in content:
        score += EXCLAMATION_BONUS
    return round(min(1.0, max(0.0, score)), 4)


# --- memory type ---------------------------------------------------------------------
# Cues per type. A cue with Chinese characters matches as a substring; any other cue
# matches as whole words, ignoring case. The type with the most distinct cues wins.
MEMORY_TYPE_CUES: dict[MemoryType, tuple[str, ...]] = {
    MemoryType.SEMANTIC: (
        # facts, preferences, rules, definitions: true beyond one moment
        "prefers", "prefer", "preference", "likes", "i like", "loves", "enjoys", "hates",
        "dislikes", "favorite", "favourite", "is a", "is an", "always", "never", "usually",
        "rule", "policy", "definition", "defined as", "means", "refers to", "allergic",
        "定义", "喜欢", "偏好", "规则", "总是", "是一种", "从不", "讨厌", "习惯", "原则",
        "政策", "意思是", "指的是", "属于", "过敏",
    ),
    MemoryType.EPISODIC: (
        # something that happened at a time
        "yesterday", "today", "tonight", "this morning", "last week", "last month",
        "last year", "last night", "ago", "met", "went", "visited", "happened", "attended",
        "called", "bought", "arrived", "said", "told", "had", "finished", "took", "flew",
        "ate", "saw", "celebrated",
        "昨天", "今天", "前天", "上周", "上个月", "去年", "刚才", "发生", "去了", "见了",
        "参加了", "买了", "那天", "当时",
    ),
    MemoryType.WORKING: (
        # transient context of the task at hand
        "currently", "right now", "todo", "to-do", "next step", "in progress", "working on",
        "at the moment", "for now", "pending",
        "正在", "当前", "目前", "下一步", "待办", "进行中", "暂时",
    ),
}  # fmt: skip

# Dates and times count as one more episodic cue each.
EPISODIC_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b"),  # 2024-05-03
    re.compile(r"\b\d{1,2}/\d{1,2}/\d{2,4}\b"),  # 5/3/2024
    re.compile(r"\bon (?:mon|tues|wednes|thurs|fri|satur|sun)day\b", re.IGNORECASE),
    re.compile(r"\b\d{1,2}(?::\d{2})? ?[ap]\.?m\b", re.IGNORECASE),  # 3pm, 10:30 am
    re.compile(r"\d{1,2}月\d{1,2}[日号]|\d{4}年|(?:周|星期)[一二三四五六日天]"),
    # "on 9 December", "December 18-21": a dated event or plan
    re.compile(r"\b\d{1,2}(?:st|nd|rd|th)?(?:\s*-\s*\d{1,2})?\s+(?:of\s+)?(?:jan|feb|mar|apr|"
               r"may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|\b(?:jan|feb|mar|apr|jun|jul|aug|sep|"
               r"oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?\b", re.IGNORECASE),
)


# A standing attribute or state of someone, said in the present: where they live or
# work, what they are, have or do not eat; each pattern found counts as one more
# semantic cue (issue 26: a durable fact added without a type is semantic, en + zh).
SEMANTIC_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\b(?:lives?|living|based)\s+in\b|\bworks?\s+(?:at|for|as|in)\b"
               r"|\b(?:i|we|he|she|they)\s+(?:own|drive|speak|use|have|has|need|eat|am|are)\b"
               r"|\b(?:doesn't|don't|does not|do not|never|can't|cannot)\s+(?:eat|drink)\b"
               r"|\b(?:he|she|(?-i:(?!It\b|This\b|That\b|There\b|The\b)[A-Z][a-z]+))\s+(?:lives|works|drives|owns|speaks|uses|has|eats|"
               r"prefers|is\s+(?:vegetarian|vegan|allergic|married|single|engaged|pregnant))\b",
               re.IGNORECASE),
    re.compile(r"\b(?:my|his|her|our|their)\s+(?:\w+\s+){0,2}(?:is|are)\b"
               r"|\b(?-i:(?!It\b|This\b|That\b|There\b|The\b)[A-Z][a-z]+)(?:'s)?\s+(?:\w+\s+)?"
               r"(?:is|are)\s+(?:a|an|my|our|his|her|the)\b"
               r"|\b(?:i'm|i am|he's|he is|she's|she is|we're|we are)\s+(?:a|an|allergic|"
               r"vegetarian|vegan|married|single|engaged|pregnant|based|from|lactose)\b",
               re.IGNORECASE),
    re.compile(r"住在|在.{1,12}(?:工作|上班|读书|上学)|我是|他是|她是|的.{1,6}是|我有|不吃|不喝|"
               r"对.{1,8}过敏|素食|吃素|开的是|养了"),
    # a new value of an attribute: "started my new job at Adyen", "moved to Leith"
    re.compile(r"\bnew (?:job|place|flat|house|home|car|number|phone|mobile|team lead|manager|"
               r"boss|school|team|gym|doctor|dentist|address|email)\b|\bmoved (?:in)?to\b|"
               r"\b(?:switched|changed) (?:jobs?|teams?|schools?|dentists?|doctors?|gyms?)\b|"
               r"换工作|换了工作|搬到|搬去|新家|新号码|跳槽", re.IGNORECASE),
)


def _cue_regex(cue: str) -> re.Pattern[str]:
    if re.search(r"[\u3400-\u9fff]", cue):
        return re.compile(re.escape(cue))
    return re.compile(rf"(?<!\w){re.escape(cue)}(?!\w)", re.IGNORECASE)


_CUE_REGEXES: dict[MemoryType, tuple[re.Pattern[str], ...]] = {
    mtype: tuple(_cue_regex(c) for c in cues) for mtype, cues in MEMORY_TYPE_CUES.items()
}


def classify_memory_type(content: str) -> MemoryType:
    """Guess working / episodic / semantic from cue words (MEMORY_TYPE_CUES).

    Each type scores the number of its distinct cues found (dates and times in
    EPISODIC_PATTERNS count for episodic, standing attributes and states in
    SEMANTIC_PATTERNS for semantic: "I live in Leith", "Anna is vegetarian"). The highest
    score wins; a tie for the top, or no cue at all, gives EPISODIC - an event is the
    safest reading of a statement.
    Never returns PERCEPTUAL: that type follows from the modality, not the words.
    """
    if not isinstance(content, str):
        raise TypeError(f"content must be a str, got {type(content).__name__}")
    scores = {m: sum(1 for r in regs if r.search(content)) for m, regs in _CUE_REGEXES.items()}
    scores[MemoryType.EPISODIC] += sum(1 for p in EPISODIC_PATTERNS if p.search(content))
    scores[MemoryType.SEMANTIC] += sum(1 for p in SEMANTIC_PATTERNS if p.search(content))
    # a present statement of a single-valued attribute (text/attributes.py: "Lotte is
    # seeing Bram", "嘉怡的男朋友叫周磊") is a standing fact
    if states_now(content[:2000]) and any(
            single_valued(a) for a in attributes_of(content[:2000], strong_only=True)):
        scores[MemoryType.SEMANTIC] += 1
    best = max(scores.values())
    winners = [m for m, s in scores.items() if s == best]
    return winners[0] if best > 0 and len(winners) == 1 else MemoryType.EPISODIC
