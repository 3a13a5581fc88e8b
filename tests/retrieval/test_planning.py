"""Rule-based planning, fusion and task detection (no model, no LLM)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from hello_memory.errors import InvalidInputError
from hello_memory.memory.scoring import ScoreBreakdown, SearchHit, ViewHit
from hello_memory.retrieval.fusion import explain, weighted_rrf
from hello_memory.retrieval.planning import (
    QueryPlanner,
    analyze_query,
    decompose,
    question_type,
)
from hello_memory.retrieval.task_aware import (
    TASK_SIGNALS,
    TASK_STRATEGIES,
    category_of,
    detect_task_type,
)
from hello_memory.types import MemoryItem, MemoryType

REF = datetime(2024, 5, 15, 10, 0, tzinfo=timezone.utc)  # a Wednesday


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


@pytest.mark.parametrize(("query", "kind"), [
    ("When did Alice move to Berlin?", "when"),
    ("Who gave Bob the book?", "who"),
    ("How many cats does Carol have?", "count"),
    ("Where did we deploy version 2?", "where"),
    ("Did Alice like the concert?", "yesno"),
    ("What did Bob cook?", "what"),
    ("张三什么时候去的上海？", "when"),
    ("谁修复了这个问题", "who"),
    ("李四有几只猫", "count"),
    ("你喜欢茶吗？", "yesno"),
])
def test_question_type(query: str, kind: str) -> None:
    assert question_type(query) == kind


def test_analysis_resolves_calendar_true_time_ranges() -> None:
    a = analyze_query("What did Alice buy last week?", REF)
    assert a.time_ranges == [(utc(2024, 5, 6), utc(2024, 5, 13))]  # Mon..Mon, not ±7 days
    assert "Alice" in a.persons
    assert "buy" in a.keywords and "what" not in a.keywords
    zh = analyze_query("去年五月张三在上海做了什么？", REF)
    assert zh.time_ranges == [(utc(2023, 5, 1), utc(2023, 6, 1))]
    may = analyze_query("What happened in May 2023?", REF)
    assert may.time_ranges == [(utc(2023, 5, 1), utc(2023, 6, 1))]
    assert analyze_query("what is the capital?", REF).has_constraints is False


def test_analysis_uses_known_persons() -> None:
    a = analyze_query("what did caroline research", REF, known_persons=["Caroline", "Mel"])
    assert a.persons == ["Caroline"]


def test_decompose_conjunctive_questions() -> None:
    parts = decompose("What did Alice buy and where did Bob go on holiday?")
    assert parts[0] == "What did Alice buy and where did Bob go on holiday?"
    assert parts[1:] == ["What did Alice buy", "where did Bob go on holiday"]
    zh = decompose("张三去了哪里旅游以及李四买了什么东西")
    assert len(zh) == 3 and zh[1].startswith("张三") and zh[2].startswith("李四")
    # "and" inside one clause is not a conjunction of questions
    assert decompose("What did Alice and Bob eat?") == ["What did Alice and Bob eat?"]
    many = "a b? and what c d, and what e f, and what g h, and what i j"
    assert len(decompose(many, max_parts=4)) == 4


def test_planner_without_llm_is_deterministic() -> None:
    planner = QueryPlanner(None)
    q = "What did Alice buy and where did Bob go?"
    plan = planner.analyze_information_requirements(q)
    assert plan.required_info[0].info_type == "general"
    assert planner.generate_targeted_queries(q, plan)[0] == q
    verdict = planner.analyze_completeness(q, plan, [])
    assert verdict.assessment == "no_results"
    assert planner.generate_missing_info_queries(q, verdict, ["x"]) == []


def test_weighted_rrf_keeps_each_views_rank_and_score() -> None:
    fused = weighted_rrf({"semantic": [("a", 0.9), ("b", 0.8)],
                          "lexical": [("b", 7.0), ("c", 3.0), ("b", 1.0)]},
                         {"semantic": 1.0, "lexical": 2.0}, k=10)
    assert fused["b"][1] == {"semantic": ViewHit(2, 0.8), "lexical": ViewHit(1, 7.0)}
    assert fused["b"][0] == pytest.approx(1 / 12 + 2 / 11)
    assert fused["c"][0] == pytest.approx(2 / 12)  # the duplicate "b" did not take rank 3
    order = sorted(fused, key=lambda m: -fused[m][0])
    assert order == ["b", "c", "a"]
    # a weight of zero keeps the evidence, not the vote
    zero = weighted_rrf({"semantic": [("a", 0.9)], "graph": [("a", 1.0)]}, {"graph": 0.0})
    assert set(zero["a"][1]) == {"semantic", "graph"} and zero["a"][0] == pytest.approx(1 / 61)
    with pytest.raises(InvalidInputError):
        weighted_rrf({"x": []}, {}, k=0)
    with pytest.raises(InvalidInputError):
        weighted_rrf({"x": [("a", 1.0)]}, {"x": -1.0})


def test_explain_names_every_view() -> None:
    item = MemoryItem(content="Alice bought a red bike", namespace="ns")
    hit = SearchHit(item=item, score=0.5, fused=0.03,
                   views={"lexical": ViewHit(1, 4.2), "semantic": ViewHit(3, 0.61)},
                   context=0.001, breakdown=ScoreBreakdown(similarity=1.0, importance=0.5),
                   queries=("what did Alice buy",))
    text = explain(hit)
    assert "lexical   rank   1" in text and "semantic  rank   3" in text
    assert "Alice bought a red bike" in text and "neighbouring" in text
    assert text.index("lexical") < text.index("semantic")  # best rank first


@pytest.mark.parametrize(("context", "task"), [
    ({"goal": "Fix login bug", "phase": "debugging", "action_type": "run_test"}, "debugging"),
    ({"goal": "Implement user authentication feature", "action_type": "write_file"},
     "implementation"),
    ({"goal": "Refactor database access layer", "phase": "refactoring"}, "refactoring"),
    ({"goal": "review the pull request", "action_type": "review"}, "review"),
    ({"goal": "understand how the cache works", "phase": "exploration"}, "exploration"),
    ({"goal": "修复登录报错"}, "debugging"),
    ({"goal": "something else entirely"}, "implementation"),
    ({}, "implementation"),
])
def test_detect_task_type(context: dict[str, str], task: str) -> None:
    assert detect_task_type(context) == task


def test_phase_outweighs_keywords() -> None:
    # two debugging keywords (2 x 2) lose to one refactoring phase (4) plus one keyword (2)
    ctx = {"goal": "fix the error while we refactor", "phase": "refactoring"}
    assert detect_task_type(ctx) == "refactoring"


def test_strategies_cover_every_task_and_category() -> None:
    assert set(TASK_STRATEGIES) == set(TASK_SIGNALS) == {
        "exploration", "implementation", "debugging", "review", "refactoring"}
    for weights in TASK_STRATEGIES.values():
        assert set(weights) == {"episodic", "semantic", "skills", "anti_patterns"}
        assert sum(weights.values()) == pytest.approx(1.0)
    assert TASK_STRATEGIES["debugging"]["anti_patterns"] > TASK_STRATEGIES[
        "implementation"]["anti_patterns"]


def test_category_of() -> None:
    def item(mt: MemoryType, **meta: str) -> MemoryItem:
        return MemoryItem(content="x", namespace="ns", memory_type=mt, metadata=dict(meta))

    assert category_of(item(MemoryType.EPISODIC)) == "episodic"
    assert category_of(item(MemoryType.SEMANTIC)) == "semantic"
    assert category_of(item(MemoryType.WORKING)) == "episodic"
    assert category_of(item(MemoryType.SEMANTIC, category="procedure")) == "skills"
    assert category_of(item(MemoryType.EPISODIC, category="Lesson")) == "anti_patterns"
    assert category_of(item(MemoryType.EPISODIC, category="unknown")) == "episodic"
    assert category_of(item(MemoryType.EPISODIC, category="docs"),
                       ("episodic", "docs")) == "docs"


def test_retrieval_settings_from_env_and_unknown_keys() -> None:
    from hello_memory.config import load_settings
    from hello_memory.errors import UnknownConfigKeyError

    s = load_settings(environ={
        "HELLO_MEMORY__RETRIEVAL__RRF_K": "10",
        "HELLO_MEMORY__RETRIEVAL__ENABLE_REFLECTION": "false",
        "HELLO_MEMORY__RETRIEVAL__TASK_STRATEGIES": '{"testing": {"anti_patterns": 1}}'})
    assert s.retrieval.rrf_k == 10 and s.retrieval.enable_reflection is False
    assert s.retrieval.task_strategies == {"testing": {"anti_patterns": 1.0}}
    assert s.retrieval.max_reflection_rounds == 2 and s.retrieval.enable_planning is True
    with pytest.raises(UnknownConfigKeyError):
        load_settings(environ={"HELLO_MEMORY__RETRIEVAL__RRFK": "10"})
