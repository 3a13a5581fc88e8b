"""The assistant benchmark v2 runner (benchmarks/assistant_v2.py) works end to end over
REST on a small slice: it adds, asks with every recipe, and writes its rows and JSON.
Structure only; the numbers are the benchmark's business, never asserted here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is a top-level package of the repository
    sys.path.insert(0, str(ROOT))

from benchmarks import assistant_v2 as v2  # noqa: E402


@pytest.mark.slow
def test_runner_on_a_slice(tmp_path: Path) -> None:
    out, md = tmp_path / "v2.json", tmp_path / "BENCHMARKS.md"
    v2.main(["--memories", "24", "--limit", "6", "--json", str(out), "--md", str(md)])

    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["memories"] == 24 and 1 <= result["questions"] <= 6
    assert set(result["runs"]) == set(v2.RECIPES)
    assert "reference_time" in result["sent"]["search"] and "recipe" in result["sent"]["search"]
    known = {m["id"] for m in v2.load(v2.DEFAULT_DATA)["memories"][:24]}
    for recipe, run in result["runs"].items():
        rows = run["per_question"]
        assert len(rows) == result["questions"] == run["overall"]["n"]
        assert sum(c["n"] for c in run["per_category"].values()) == len(rows)
        for row in rows:
            assert {"top1", "top3", "mrr", "stale_above", "ranked", "category"} <= set(row)
            assert len(row["ranked"]) <= v2.TOP_K and set(row["ranked"]) <= known
            if recipe == "hybrid" or "recipe" in result["sent"]["context"]:
                assert {"in_context", "id_in_context", "tokens", "shown"} <= set(row)
    stored = result["stored"]
    assert sum(stored["untyped_stored_as"].values()) == sum(
        1 for m in v2.load(v2.DEFAULT_DATA)["memories"][:24] if "memory_type" not in m)
    text = md.read_text(encoding="utf-8")
    assert "<!-- section:assistant-v2 -->" in text and "| recipe | top-1 |" in text
    assert all(len(line) <= 100 for line in v2.table(result).splitlines()
               if line.startswith("|"))
