"""Importance heuristic and memory-type classification."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hello_memory.memory.importance import (
    BASE_IMPORTANCE,
    IMPORTANCE_MARKERS,
    MEMORY_TYPE_CUES,
    PRIORITY_LEVELS,
    classify_memory_type,
    estimate_importance,
)
from hello_memory.types import MemoryType

NEUTRAL = "The meeting room is on the third floor of the building."  # 10..200 chars, no cue


# Each row: content, expected, which rules apply (hand-computed).
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (NEUTRAL, 0.5),  # base only
        ("ok", 0.4),  # short: -0.1
        ("好的", 0.4),  # short (2 chars): -0.1
        ("   ok       ", 0.4),  # length is measured stripped
        ("x" * 10, 0.5),  # exactly 10 chars: not short
        ("x" * 200, 0.5),  # exactly 200 chars: not long
        ("x" * 201, 0.55),  # long: +0.05
        (NEUTRAL + "!", 0.55),  # "!": +0.05
        (NEUTRAL + "！", 0.55),  # full-width "！": +0.05
        (NEUTRAL + "!!!", 0.55),  # counted once
        ("This is important for the team.", 0.6),  # one marker
        ("IMPORTANT: the server password rotates.", 0.7),  # two markers, any case
        ("important important important notes", 0.6),  # a marker counts once
        ("Remember: Bob is allergic to peanuts!", 0.75),  # 2 markers + "!"
        ("You must never share it, always remember, it's critical.", 0.8),  # 5 -> +0.3 cap
        ("这个很重要，请记住。", 0.7),  # 重要 + 记住 (10 chars: not short)
        ("我对花生过敏，务必记住！", 0.85),  # 过敏 + 务必 + 记住, "！"
        ("重要!", 0.55),  # 0.5 + 0.1 - 0.1 (short) + 0.05
        ("mustard and forever are not markers", 0.5),  # whole words only
        ("Urgent!" + " details" * 30, 0.7),  # 0.5 + 0.1 + 0.05 (long) + 0.05 ("!")
    ],
)
def test_importance_table(content: str, expected: float) -> None:
    assert estimate_importance(content) == pytest.approx(expected)


def test_base_and_marker_table_are_exposed() -> None:
    assert BASE_IMPORTANCE == 0.5
    labels = {label for label, _ in IMPORTANCE_MARKERS}
    assert {"important", "must", "deadline", "重要", "截止", "过敏"} <= labels


def test_results_are_rounded_exactly() -> None:
    # 0.5 + 0.1 + 0.1 is 0.7000000000000001 in floats; the result is rounded
    assert estimate_importance("important and urgent work to do") == 0.7


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"importance": 0.9}, 0.9),
        ({"importance": 0}, 0.0),
        ({"importance": 1}, 1.0),
        ({"importance": 0.2, "priority": "critical"}, 0.2),  # importance beats priority
        ({"priority": "low"}, 0.3),
        ({"priority": "normal"}, 0.5),
        ({"priority": "High"}, 0.7),
        ({"priority": " critical "}, 0.9),
        ({"priority": "紧急"}, 0.9),
        ({"priority": 1}, 0.1),
        ({"priority": 2}, 0.3),
        ({"priority": 3}, 0.5),
        ({"priority": 4}, 0.7),
        ({"priority": 5}, 0.9),
        ({"priority": 4.5}, 0.8),
        ({"priority": "4"}, 0.7),
    ],
)
def test_explicit_metadata_wins(metadata: dict[str, Any], expected: float) -> None:
    # content alone would score 0.85: metadata must override it completely
    assert estimate_importance("我对花生过敏，务必记住！", metadata) == pytest.approx(expected)


@pytest.mark.parametrize(
    "metadata",
    [
        None,
        {},
        {"importance": 1.5},
        {"importance": -0.1},
        {"importance": math.nan},
        {"importance": True},
        {"importance": "0.9"},
        {"priority": 0},
        {"priority": 6},
        {"priority": math.inf},
        {"priority": 10**400},  # beyond float range
        {"importance": -(10**400)},
        {"priority": "nan"},
        {"priority": "whenever"},
        {"priority": True},
        {"priority": None},
        {"other": 1},
    ],
)
def test_invalid_metadata_is_ignored(metadata: dict[str, Any] | None) -> None:
    assert estimate_importance("Remember: Bob is allergic to peanuts!", metadata) == 0.75


def test_priority_levels_table() -> None:
    assert PRIORITY_LEVELS["low"] < PRIORITY_LEVELS["normal"] < PRIORITY_LEVELS["high"]
    assert PRIORITY_LEVELS["high"] < PRIORITY_LEVELS["critical"] <= 1.0
    assert PRIORITY_LEVELS["normal"] == BASE_IMPORTANCE


def test_clamped_to_unit_interval() -> None:
    assert estimate_importance("", None) == 0.4
    assert estimate_importance("x" * 300 + " must never always critical urgent!") == 0.9
    for text in ("", "!", "重要紧急必须务必千万！" * 40):
        assert 0.0 <= estimate_importance(text) <= 1.0


def test_rejects_non_text() -> None:
    with pytest.raises(TypeError):
        estimate_importance(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        classify_memory_type(42)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=400),
    st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {},
            optional={
                "importance": st.one_of(st.floats(), st.integers(), st.text(max_size=5)),
                "priority": st.one_of(st.floats(), st.integers(), st.text(max_size=8)),
            },
        ),
    ),
)
def test_importance_is_always_finite_in_unit_interval(
    content: str, metadata: dict[str, Any] | None
) -> None:
    value = estimate_importance(content, metadata)
    assert isinstance(value, float)
    assert math.isfinite(value)
    assert 0.0 <= value <= 1.0


# --- classification ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        # semantic: facts, preferences, rules, definitions
        ("Bob prefers green tea over coffee.", MemoryType.SEMANTIC),
        ("Alice is a vegetarian.", MemoryType.SEMANTIC),
        ("The refund policy is a strict rule.", MemoryType.SEMANTIC),
        ("用户喜欢喝绿茶", MemoryType.SEMANTIC),
        ("机器学习是一种人工智能方法", MemoryType.SEMANTIC),
        ("公司规则：报销总是需要发票", MemoryType.SEMANTIC),
        # durable facts about the user and their people, added without a type (issue
        # 26, failure class 4: they were stored as episodic)
        ("I live in Leith with my partner.", MemoryType.SEMANTIC),
        ("I work at Philips as a data engineer.", MemoryType.SEMANTIC),
        ("My sister is Anna Berg.", MemoryType.SEMANTIC),
        ("我住在杭州滨江区。", MemoryType.SEMANTIC),
        ("姐姐在上海一家律师事务所当律师。", MemoryType.SEMANTIC),
        # episodic: events with time or action cues
        ("Yesterday I met Alice at the station.", MemoryType.EPISODIC),
        ("We went to the concert on Friday.", MemoryType.EPISODIC),
        ("The outage happened on 2024-05-03 at 3pm.", MemoryType.EPISODIC),
        ("昨天我去了上海见了李雷", MemoryType.EPISODIC),
        ("上周发生了一次服务器故障", MemoryType.EPISODIC),
        ("5月3日我们参加了发布会", MemoryType.EPISODIC),
        # working: transient task context
        ("Currently drafting the report; next step is review.", MemoryType.WORKING),
        ("TODO: fix the login bug right now", MemoryType.WORKING),
        ("正在处理订单，下一步退款", MemoryType.WORKING),
        ("当前任务：整理会议纪要", MemoryType.WORKING),
        # no cue, or a tie: episodic
        ("The sky.", MemoryType.EPISODIC),
        ("", MemoryType.EPISODIC),
        ("It is a nice day today.", MemoryType.EPISODIC),  # semantic 1 vs episodic 1
        ("用户喜欢的餐厅今天关门", MemoryType.EPISODIC),  # 喜欢 vs 今天
    ],
)
def test_classification(content: str, expected: MemoryType) -> None:
    assert classify_memory_type(content) is expected


def test_cues_match_whole_english_words_only() -> None:
    # "met" in "metric", "rule" in "ruler", "went" in "twenty": no cue
    assert classify_memory_type("The metric ruler has twenty marks.") is MemoryType.EPISODIC
    assert classify_memory_type("The metric ruler has twenty marks. Rules!") is (
        MemoryType.EPISODIC
    )
    assert classify_memory_type("The RULE: tea only.") is MemoryType.SEMANTIC


def test_cue_table_covers_three_types_and_never_perceptual() -> None:
    assert set(MEMORY_TYPE_CUES) == {MemoryType.SEMANTIC, MemoryType.EPISODIC, MemoryType.WORKING}
    for cues in MEMORY_TYPE_CUES.values():
        assert any(c.isascii() for c in cues) and any(not c.isascii() for c in cues)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_classification_is_total(content: str) -> None:
    assert classify_memory_type(content) in {
        MemoryType.SEMANTIC,
        MemoryType.EPISODIC,
        MemoryType.WORKING,
    }
