"""The assistant benchmark v2 set (benchmarks/data/assistant_v2.json) holds what issue 26
asks of it; benchmarks/assistant_v2.check() says so, and says what is wrong when it is not.
Fast: no model, no store."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is a top-level package of the repository
    sys.path.insert(0, str(ROOT))

from benchmarks import assistant_v2 as v2  # noqa: E402


@pytest.fixture(scope="module")
def data() -> dict:
    return v2.load(v2.DEFAULT_DATA)


def test_the_set_passes_its_check(data: dict) -> None:
    assert v2.check(data) == []


def test_the_counts_the_issue_asks_for(data: dict) -> None:
    s = v2.stats(data)
    assert s["memories"] >= 150 and s["questions"] >= 120
    assert 0.33 <= s["untyped"] / s["memories"] <= 0.47
    assert s["changed_pairs"] >= 30 and s["changed_pairs_chinese"] * 3 >= s["changed_pairs"]
    assert set(s["categories"]) == set(v2.CATEGORIES)
    assert min(s["cross_directions"].values()) >= 3
    assert set(data) == {"about", "license", "namespace", "memories", "questions"}
    assert "our own" in data["about"] or "written by" in data["about"]


def test_check_reports_problems(data: dict) -> None:
    bad = copy.deepcopy(data)
    bad["memories"].append(dict(bad["memories"][0]))
    bad["memories"][1]["event_time"] = "2026-06-01T10:00:00"
    bad["memories"][2]["memory_type"] = "working"
    bad["questions"][0]["answers"] = ["no_such_key"]
    bad["questions"][1]["category"] = "misc"
    changed = next(q for q in bad["questions"] if q.get("stale"))
    changed["stale"], changed["answers"] = changed["answers"], changed["stale"][:1]
    problems = "\n".join(v2.check(bad))
    assert "duplicate memory ids" in problems
    assert "timezone-aware" in problems
    assert "semantic|episodic" in problems
    assert "no_such_key" in problems
    assert "'misc'" in problems
    assert "must come before" in problems


def test_requirements_are_counted(data: dict) -> None:
    small = {**data, "memories": data["memories"][:40],
             "questions": [q for q in data["questions"] if q["category"] != "plan"]}
    small = v2.sliced(small, memories=40)
    problems = "\n".join(v2.check(small))
    assert "at least 150 memories" in problems and "at least 120 questions" in problems
    assert v2.check(small, counts=False) == []


def test_scoring_helpers() -> None:
    assert v2.stale_above(["old", "new"], ["new"], ["old"])
    assert not v2.stale_above(["new", "old"], ["new"], ["old"])
    assert v2.stale_above(["old", "x"], ["new"], ["old"])  # found while the answer is not
    assert not v2.stale_above(["x"], ["new"], ["old"])
    q = {"answers": ["a"], "stale": ["s"]}
    row = v2.context_row(q, "- [id-a] 2026-06-01 semantic: I live   in Utrecht.",
                         {"a": "I live in Utrecht.", "s": "I live in Leiden."},
                         {"a": "id-a", "s": "id-s"}, 12)
    assert row["in_context"] == 1.0 and row["id_in_context"] == 1.0
    assert row["stale_in_context"] == 0.0
    cut = v2.context_row(q, "- [id-a] 2026-06-01 semantic: I live in Ut",
                         {"a": "I live in Utrecht.", "s": "x"}, {"a": "id-a", "s": "id-s"}, 9)
    assert cut["in_context"] == 0.0 and cut["id_in_context"] == 1.0
    assert v2.chinese("我一直在Twijnstraat的阿May那里剪头发。")
    assert not v2.chinese("My name is Lin Yue (林悦); at work everyone just calls me Yue.")
