"""The benchmarks cannot rot (issue 27, item 1): ``python -m benchmarks.run --smoke`` and
``python -m benchmarks.serve_load --smoke`` run end to end at tiny N and write their
BENCHMARKS sections (into a temporary file), and every script ``make bench`` runs
answers ``--help``. Nothing here looks at a timing: only that each harness runs and
writes its rows."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench_target_modules() -> list[str]:
    """The ``python -m benchmarks.X`` modules of the Makefile's ``bench`` recipe."""
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("bench:"))
    recipe = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line)
    return re.findall(r"-m (benchmarks\.\w+)", "\n".join(recipe))


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args[0]} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc


def _section(text: str, name: str) -> str:
    tag = re.escape(name)
    match = re.search(rf"<!-- section:{tag} -->\n(.*?)<!-- /section:{tag} -->", text, re.S)
    assert match is not None, f"no {name} section"
    return match.group(1)


def _rows_after(text: str, heading: str) -> list[list[str]]:
    """The body rows of the first Markdown table after ``heading``, as cells."""
    rest = text[text.index(heading):]
    table = re.search(r"^\|.*\|\n\|[-|]+\|\n((?:\|.*\|\n)+)", rest, re.M)
    assert table is not None, f"no table after {heading!r}"
    return [[c.strip() for c in row.strip().strip("|").split("|")]
            for row in table.group(1).splitlines()]


def test_the_bench_target_runs_the_harness_and_the_other_benchmarks() -> None:
    modules = _bench_target_modules()
    assert "benchmarks.run" in modules and len(modules) >= 5


@pytest.mark.parametrize("module", [*_bench_target_modules(), "benchmarks.serve_load",
                                    "benchmarks.serve_ab", "benchmarks.onnx_embedder"])
def test_each_benchmark_of_make_bench_answers_help(module: str) -> None:
    assert "usage:" in _run([module, "--help"], timeout=180).stdout


@pytest.mark.slow
def test_run_smoke_rewrites_every_table_of_its_section(tmp_path: Path) -> None:
    out, results = tmp_path / "BENCHMARKS.md", tmp_path / "results"
    out.write_text("# Benchmarks\n\n<!-- section:ingest-search -->\nstale numbers\n"
                   "<!-- /section:ingest-search -->\n\n<!-- section:other -->\nkeep me\n"
                   "<!-- /section:other -->\n", encoding="utf-8")
    _run(["benchmarks.run", "--smoke", "--out", str(out), "--results", str(results)],
         timeout=1200)
    text = out.read_text(encoding="utf-8")
    assert "keep me" in text and "stale numbers" not in text
    section = _section(text, "ingest-search")
    for heading in ("### Ingest", "### Search (top 5", "### Search on the HNSW graph",
                    "### Other namespaces' data"):
        rows = _rows_after(section, heading)
        assert [r[0] for r in rows] == ["40"], heading
        assert all(cell and cell != "n/a" for cell in rows[0]), (heading, rows[0])
    assert [r[0] for r in _rows_after(section, "### Footprint")] == ["80"]
    search_header = section[section.index("### Search (top 5"):]
    assert "| N | floor |" in search_header and "fused / floor" in search_header
    saved = json.loads((results / "run.json").read_text(encoding="utf-8"))
    row = saved["rows"][0]
    assert row["n"] == 40 and row["floor"]["vectors"] == 40
    assert row["solo_floor"]["vectors"] == 40
    assert saved["meta"]["smoke"] and saved["peer"] is None
    # A 1M row (issue 27 item 5) has no raw stack and keeps its ingest curve: the same
    # tables render it, the raw cells say n/a and the growth line gives each stretch.
    from benchmarks import tables

    big = {k: v for k, v in row.items() if not k.startswith("raw_")}
    big.update(n=1_000_000, ingest_curve=[[500_000, 1000.0], [1_000_000, 2500.0]])
    rendered = tables.render(saved["meta"], [row, big], None, [])
    ingest = _rows_after(rendered, "### Ingest")
    assert [r[0] for r in ingest] == ["40", "1000000"]
    assert ingest[1][1] == "n/a" and ingest[1][3] == "n/a" and ingest[1][2] != "n/a"
    assert "raw stack not run" in ingest[1][4]
    assert "0k-500k 500/s, 500k-1000k 333/s" in rendered
    assert _rows_after(rendered, "### Search (top 5")[1][2] == "n/a / n/a"


@pytest.mark.slow
def test_serve_load_smoke_drives_both_servers_and_writes_its_section(tmp_path: Path
                                                                      ) -> None:
    out, results = tmp_path / "BENCHMARKS.md", tmp_path / "results"
    _run(["benchmarks.serve_load", "--smoke", "--md", str(out), "--results", str(results)],
         timeout=1200)
    rows = _rows_after(_section(out.read_text(encoding="utf-8"), "serve-load"), "| op |")
    assert [(r[0], r[1]) for r in rows] == [("add", "1"), ("add", "2"), ("search", "1"),
                                            ("search", "2")]
    saved = json.loads((results / "serve_load.json").read_text(encoding="utf-8"))
    assert {(r["mode"], r["op"], r["clients"]) for r in saved["rows"]} == {
        (m, op, c) for m in ("batching", "plain") for op in ("add", "search") for c in (1, 2)}
    assert all(r["errors"] == 0 and r["requests"] == 4 for r in saved["rows"]), saved["rows"]
    # the server process's own CPU over each phase (from /proc): it answered requests,
    # so it used some, and the table shows it beside each mode's latency
    assert all(r["server_cpu_pct"] > 0 for r in saved["rows"]), saved["rows"]
    # and the client threads' (this process): the load generator's share of the machine
    assert all(r["client_cpu_pct"] > 0 for r in saved["rows"]), saved["rows"]
    assert all(float(r[c].split(" / ")[0]) > 0 and float(r[c].split(" / ")[1]) > 0
               for r in rows for c in (4, 7)), rows
    # the library's own add rate (add_many in this process) and each add row's ratio to it
    assert saved["meta"]["library_per_s"] > 0
    assert all(float(r[-1]) > 0 for r in rows if r[0] == "add"), rows
    assert all(r[-1] == "" for r in rows if r[0] == "search"), rows


def test_serve_ab_smoke_runs_both_sides_and_b_without_the_c_parser(tmp_path: Path) -> None:
    """Both servers answer every phase; B, started without httptools and uvloop, is
    described as running on h11 and asyncio's loop, A on the pair this venv holds."""
    out = tmp_path / "BENCHMARKS.md"
    _run(["benchmarks.serve_ab", "--smoke", "--op", "search", "--b-without", "httptools",
          "uvloop", "--label", "parser and loop", "--section", "ab", "--md", str(out)],
         timeout=900)
    section = _section(out.read_text(encoding="utf-8"), "ab")
    rows = _rows_after(section, "| side |")
    assert [r[0] for r in rows] == ["A", "B"]
    assert all(float(r[1]) > 0 and r[3] == "0" and len(r[4].split(", ")) == 2
               for r in rows), rows
    checkout = r"this checkout( at [0-9a-f]{7,}( with uncommitted changes)?)?, uvicorn"
    assert re.search("B: " + checkout, section) and "asyncio's loop and h11" in section
    assert re.search("A: " + checkout, section) and "on uvloop and httptools" in section
    assert re.search(r"B / A \(median req/s\): \*\*\d+\.\d{3}\*\*", section)


@pytest.mark.postgres
def test_serve_ab_smoke_on_postgresql_adds_through_both_sides(tmp_path: Path) -> None:
    """``--postgres``: each side's records and vectors in a database of its own on one
    throwaway PostgreSQL server; every add of every phase is answered on both."""
    out = tmp_path / "BENCHMARKS.md"
    _run(["benchmarks.serve_ab", "--smoke", "--op", "add", "--postgres", "--section", "pg",
          "--md", str(out)], timeout=900)
    section = _section(out.read_text(encoding="utf-8"), "pg")
    assert "Stores: records and vectors in PostgreSQL (pgvector), a database each" in section
    rows = _rows_after(section, "| side |")
    assert [r[0] for r in rows] == ["A", "B"]
    assert all(float(r[1]) > 0 and r[3] == "0" for r in rows), rows


@pytest.mark.slow
def test_search_cost_smoke_writes_every_row_with_its_floor(tmp_path: Path) -> None:
    out = tmp_path / "BENCHMARKS.md"
    _run(["benchmarks.search_cost", "--n", "40", "--queries", "3", "--out", str(out)],
         timeout=600)
    section = _section(out.read_text(encoding="utf-8"), "search-cost")
    assert "| p50 / floor p50 |" in section
    rows = _rows_after(section, "| search |")
    assert [r[0].split(":")[0] for r in rows][:1] == ["floor"] and len(rows) == 8
    # the second pass, after jobs optimize, with the dense view's recall beside it
    assert sum(r[0].startswith("after `jobs optimize`") for r in rows) == 3
    assert "of the exact ones" in section
    assert all(len(r) == 5 and all(cell for cell in r) for r in rows), rows


@pytest.mark.slow
def test_vector_conditions_smoke_writes_both_modes(tmp_path: Path) -> None:
    out = tmp_path / "BENCHMARKS.md"
    _run(["benchmarks.vector_conditions", "--n", "60", "--queries", "3", "--rounds", "2",
          "--md", str(out)], timeout=600)
    section = _section(out.read_text(encoding="utf-8"), "vector-conditions")
    rows = _rows_after(section, "| N |")
    assert [r[1] for r in rows] == ["dense", "BM25", "the one search, p50 / p95",
                                    "the floor, p50", "the one search's p50 / the floor's"]
    assert all(len(r) == 5 and all(r[:4]) for r in rows), rows
    assert all(float(r[i]) > 0 for r in rows[3:] for i in (2, 3)), rows
    # leaving out the conditions every point meets changes no result
    assert "3 of 3 questions' top 5 the same both ways" in section


@pytest.mark.slow
def test_context_latency_smoke_ingests_past_the_batch_limit_and_writes_its_floor(
        tmp_path: Path) -> None:
    # more memories than limits.max_batch (1,000): the build must split its add_many
    # (it once sent 10,000 in one call and crashed before writing anything)
    out = tmp_path / "BENCHMARKS.md"
    _run(["benchmarks.context_latency", "--n", "1200", "--queries", "3", "--out", str(out),
          "--json", str(tmp_path / "context_latency.json")], timeout=900)
    section = _section(out.read_text(encoding="utf-8"), "context-latency")
    rows = _rows_after(section, "| N |")
    assert [r[0] for r in rows] == ["1200"]
    assert len(rows[0]) == 11 and all(rows[0]), rows
    assert float(rows[0][9]) > 0  # the floor's p50
    assert rows[0][8] == "0"  # no query embedded in the timed pass
