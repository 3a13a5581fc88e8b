"""The Chinese everyday set (benchmarks/zh_everyday.py, issue 26 item 7): the data set
is consistent and as the issue asks, and the runner works end to end on a small slice
(structure only; recall is the benchmark's job)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is a top-level package of the repository
    sys.path.insert(0, str(ROOT))

from benchmarks import zh_everyday  # noqa: E402


@pytest.fixture(scope="module")
def data() -> dict:
    return zh_everyday.load(zh_everyday.DEFAULT_DATA)


def test_data_set_is_consistent(data: dict) -> None:
    assert zh_everyday.check(data) == []
    msgs, qs = data["messages"], data["questions"]
    assert len(msgs) >= 300
    assert sum(q["lang"] == "zh" for q in qs) >= 60
    assert 3 <= sum(bool(q.get("cross_language")) for q in qs) < len(qs) // 5
    # some messages mix in English words or brands
    assert sum(any(c.isascii() and c.isalpha() for c in m["content"]) for m in msgs) >= 30
    # event times over months
    months = {datetime.fromisoformat(m["event_time"]).month for m in msgs}
    assert len(months) >= 6
    # questions over the themes, no theme dominating
    cats = Counter(q["category"] for q in qs)
    assert len(cats) >= 7 and max(cats.values()) < len(qs) // 3
    # paraphrases, not copies: a Chinese question shares few of its character bigrams
    # with its gold message(s) (names and short words like 什么 are shared anyway)
    by_id = {m["id"]: m["content"] for m in msgs}

    def bigrams(text: str) -> set[str]:
        return {text[i:i + 2] for i in range(len(text) - 1)}

    shares = []
    for q in qs:
        if q["lang"] == "zh":
            gold = set().union(*(bigrams(by_id[g]) for g in q["gold"]))
            own = bigrams(q["text"].rstrip("？?"))
            shares.append(len(own & gold) / len(own))
            assert shares[-1] < 0.75, q["text"]
    assert sum(shares) / len(shares) < 0.3
    assert "written by hand" in data["description"].lower()


def test_check_reports_problems(data: dict) -> None:
    bad = json.loads(json.dumps(data))
    bad["messages"].append(dict(bad["messages"][0]))
    bad["messages"][1]["event_time"] = "2026-03-02T09:15:00"
    bad["messages"][2]["content"] = "English only"
    bad["questions"][0]["gold"] = ["no_such_id"]
    bad["questions"][1]["lang"] = "en"
    problems = "\n".join(zh_everyday.check(bad))
    assert "duplicate message ids" in problems
    assert "timezone-aware" in problems
    assert "not Chinese" in problems
    assert "no_such_id" in problems
    assert "cross_language" in problems


def test_score_is_recall_and_mrr() -> None:
    assert zh_everyday.score(["a", "b"], ["a"]) == {
        "recall@1": 1.0, "recall@5": 1.0, "recall@10": 1.0, "mrr": 1.0}
    two = zh_everyday.score(["x", "a"] + ["y"] * 8 + ["b"], ["a", "b"])
    assert two["recall@1"] == 0.0 and two["recall@5"] == 0.5 and two["recall@10"] == 0.5
    assert two["mrr"] == 0.5
    assert zh_everyday.score([], ["a"])["mrr"] == 0.0


@pytest.mark.slow
def test_runner_on_a_slice(tmp_path: Path) -> None:
    out, md = tmp_path / "result.json", tmp_path / "BENCHMARKS.md"
    zh_everyday.main(["--limit", "3", "--json", str(out), "--md", str(md)])
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["questions"] == 3 and len(result["runs"]) == 1
    run = result["runs"][0]
    assert run["messages"] == result["messages"] >= 300 and run["ingest_per_s"] > 0
    assert set(run["recipes"]) == set(zh_everyday.RECIPES)
    for recipe in run["recipes"].values():
        assert len(recipe["per_question"]) == 3
        assert all(len(q["ranked"]) <= zh_everyday.TOP_K for q in recipe["per_question"])
    text = md.read_text(encoding="utf-8")
    assert "<!-- section:zh_everyday -->" in text
    assert max(len(line) for line in text.splitlines() if line.startswith("|")) <= 80
