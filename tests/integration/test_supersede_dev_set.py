"""The supersession dev set (benchmarks/supersede_dev.py, issue 26 item 2): the data set
is consistent and as the issue asks, and the runner works end to end on a small slice
(structure only; precision and recall are the benchmark's job)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is a top-level package of the repository
    sys.path.insert(0, str(ROOT))

from benchmarks import supersede_dev  # noqa: E402


@pytest.fixture(scope="module")
def data() -> dict:
    return supersede_dev.load(supersede_dev.DEFAULT_DATA)


def test_data_set_is_consistent(data: dict) -> None:
    assert supersede_dev.check(data) == []
    pairs = data["pairs"]
    assert len(pairs) >= 80
    langs = Counter(p["lang"] for p in pairs)
    assert 3 * langs["zh"] >= len(pairs)  # a third Chinese
    labels = Counter(p["label"] for p in pairs)
    assert labels["change"] >= 30 and labels["no_change"] >= 30
    for lang in ("en", "zh"):
        assert {p["label"] for p in pairs if p["lang"] == lang} == {"change", "no_change"}
    # every hard no-change kind the issue names is there
    assert {p["kind"] for p in pairs if p["label"] == "no_change"} == set(
        supersede_dev.NO_CHANGE_KINDS)
    # changes about the user and about named people, over many attributes
    subjects = {p["subject"] for p in pairs if p["label"] == "change"}
    assert "user" in subjects and len(subjects) >= 5
    assert len({p["attribute"] for p in pairs if p["label"] == "change"}) >= 12
    # most pairs carry event times, some leave them out
    timed = sum("event_time" in p["old"] for p in pairs)
    assert len(pairs) // 2 < timed < len(pairs)
    assert "written by hand" in data["description"].lower()


def test_check_reports_problems(data: dict) -> None:
    bad = json.loads(json.dumps(data))
    bad["pairs"].append(dict(bad["pairs"][0]))
    bad["pairs"][1]["label"] = "maybe"
    bad["pairs"][2]["new"]["event_time"] = "2020-01-01T00:00:00+00:00"
    bad["pairs"][3]["old"] = {"content": "我住在北京。"}
    bad["pairs"][5]["new"]["event_time"] = "2026-06-01T10:00:00"
    problems = "\n".join(supersede_dev.check(bad))
    assert "duplicate pair ids" in problems
    assert "label must be" in problems
    assert "not after the old one's" in problems
    assert "does not look like lang en" in problems
    assert "no timezone" in problems


def test_prf_counts_changes() -> None:
    rows = [{"label": "change", "predicted": True}, {"label": "change", "predicted": False},
            {"label": "no_change", "predicted": True},
            {"label": "no_change", "predicted": False}]
    s = supersede_dev.prf(rows)
    assert (s["tp"], s["fp"], s["fn"], s["tn"]) == (1, 1, 1, 1)
    assert s["precision"] == s["recall"] == s["f1"] == 0.5
    assert supersede_dev.prf(rows[1:2])["precision"] is None


@pytest.mark.slow
def test_runner_on_the_first_pairs(tmp_path: Path) -> None:
    out, md = tmp_path / "result.json", tmp_path / "BENCHMARKS.md"
    supersede_dev.main(["--limit", "4", "--json", str(out), "--md", str(md)])
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["pairs"] == 4 and result["settings"]["memory.supersede"] == "rules"
    for mode in supersede_dev.MODES:
        rows = result["modes"][mode]["rows"]
        assert [r["id"] for r in rows] == ["p001", "p002", "p003", "p004"]
        assert all(isinstance(r["predicted"], bool) for r in rows)
        assert result["modes"][mode]["overall"]["pairs"] == 4
    assert {r["new_type"] for r in result["modes"]["semantic"]["rows"]} == {"semantic"}
    text = md.read_text(encoding="utf-8")
    assert "<!-- section:supersede_dev -->" in text
    assert max(len(line) for line in text.splitlines() if line.startswith("|")) <= 80
