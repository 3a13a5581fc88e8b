"""The assistant benchmark (benchmarks/assistant.py): its data set is consistent, and the
runner works end to end on a small slice (structure only; quality is the benchmark's job)."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is a top-level package of the repository
    sys.path.insert(0, str(ROOT))

from benchmarks import assistant  # noqa: E402


@pytest.fixture(scope="module")
def data() -> dict:
    return assistant.load(assistant.DEFAULT_DATA)


def test_data_set_is_consistent(data: dict) -> None:
    mems, qs = data["memories"], data["questions"]
    assert len(mems) >= 60 and len(qs) >= 50
    keys = [m["id"] for m in mems]
    assert len(set(keys)) == len(keys)
    assert all(a in set(keys) for q in qs for a in q["answers"])
    assert sum(assistant.is_chinese(m["content"]) for m in mems) >= 10
    assert sum(assistant.is_chinese(q["text"]) for q in qs) >= 5
    for m in mems:
        assert m["memory_type"] in ("semantic", "episodic") and m["content"].strip()
        if "event_time" in m:
            assert datetime.fromisoformat(m["event_time"]).tzinfo is not None, m["id"]
    assert any(m["memory_type"] == "episodic" and "event_time" in m for m in mems)
    assert datetime.fromisoformat(data["reference_time"]).tzinfo is not None
    assert {"fact", "preference", "event-time", "multi-hop", "zh", "indirect"} <= {
        q["category"] for q in qs}
    assert "our own" in data["about"] or "written by" in data["about"]
    assert assistant.check(data) == []


def test_check_reports_problems(data: dict) -> None:
    bad = json.loads(json.dumps(data))
    bad["memories"].append(dict(bad["memories"][0]))
    bad["memories"][1]["event_time"] = "2025-03-01T10:00:00"
    bad["questions"][0]["answers"] = ["no_such_key"]
    problems = "\n".join(assistant.check(bad))
    assert "duplicate memory ids" in problems
    assert "no timezone" in problems
    assert "no_such_key" in problems


def test_score_counts_every_answer_for_top_k() -> None:
    assert assistant.score(["a", "b", "c"], ["a"]) == {
        "top1": 1.0, "top3": 1.0, "top5": 1.0, "mrr": 1.0}
    two = assistant.score(["x", "a", "y", "b"], ["a", "b"])
    assert two["top1"] == 0.0 and two["top3"] == 0.0 and two["top5"] == 1.0
    assert two["mrr"] == 0.5
    assert assistant.score([], ["a"])["mrr"] == 0.0


@pytest.mark.slow
def test_runner_on_a_slice(data: dict, tmp_path: Path) -> None:
    by_cat: dict[str, dict] = {}
    for q in data["questions"]:
        if len(q["answers"]) > 1 and "multi" not in by_cat:
            by_cat["multi"] = q
        by_cat.setdefault(q["category"], q)
    picked = list(by_cat.values())[:5]
    assert any(len(q["answers"]) > 1 for q in picked)
    path = tmp_path / "slice.json"
    path.write_text(json.dumps({**data, "questions": picked}, ensure_ascii=False),
                    encoding="utf-8")

    result = assistant.run(path, modes=("api", "context"))

    assert result["memories"] == len(data["memories"]) and result["questions"] == 5
    api = result["modes"]["api"]
    assert api["questions"] == 5 and len(api["per_question"]) == 5
    assert set(api["overall"]) == {"top1", "top3", "top5", "mrr"}
    assert all(0.0 <= v <= 1.0 for v in api["overall"].values())
    assert sum(c["n"] for c in api["per_category"].values()) == 5
    known = {m["id"] for m in data["memories"]}
    for row in api["per_question"]:
        assert 1 <= len(row["ranked"]) <= assistant.TOP_K
        assert set(row["ranked"]) <= known  # every hit maps back to a memory of the set
    assert api["p50_ms"] > 0
    ctx = result["modes"]["context"]
    assert set(ctx["overall"]) == {"in_context", "any_in_context", "tokens"}
    assert all(row["tokens"] <= result["context_budget_tokens"] for row in ctx["per_question"])
    assert set(result["reference_time_sent"]) == {"api", "context"}
    text = assistant.table(result) + assistant.failures(result)
    assert "top-1" in text and "in the block" in text
