"""The ``hello-memory`` command through typer's CliRunner on ``hello_memory.interfaces.cli:app``
and, for exit codes and tracebacks, through its console entry point."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hello_memory.interfaces.cli import app

pytestmark = pytest.mark.slow
ENV = {"HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules", "HELLO_MEMORY_CONFIG": ""}


def cli(data: Path, *args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(app, ["--data-dir", str(data), *args], env=ENV)
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    return result


def test_memory_commands_round_trip(tmp_path: Path) -> None:
    data = tmp_path / "d"
    added = json.loads(cli(data, "add", "Frank keeps his spare keys under the blue pot.",
                           "--type", "semantic", "-n", "frank", "--importance", "0.9",
                           "--json").stdout)
    mid = added["id"]
    assert added["duplicate_of"] is None
    # the same text again: the stored memory back, said so (issue 15), same JSON as REST
    again = cli(data, "add", "Frank keeps his spare keys under the blue pot.",
                "--type", "semantic", "-n", "frank", "--json")
    assert json.loads(again.stdout)["duplicate_of"] == mid == json.loads(again.stdout)["id"]
    plain = cli(data, "add", "Frank keeps his spare keys under the blue pot.",
                "--type", "semantic", "-n", "frank")
    assert plain.stdout.strip() == mid and "already stored" in plain.stderr
    cli(data, "add", "Frank fed the cat at 8.", "--type", "episodic", "-n", "frank",
        "--importance", "0.05")
    found = json.loads(cli(data, "search", "where are Frank's spare keys?", "-n", "frank",
                           "--json").stdout)
    hits = found["hits"]  # the catalogue's search JSON, as POST /v1/search answers
    assert found["recipe"] == "hybrid" and hits[0]["id"] == mid
    assert hits[0]["score"] > hits[1]["score"]
    table = cli(data, "search", "where are Frank's spare keys?", "-n", "frank").stdout
    assert mid in table  # the table shows full ids
    assert json.loads(cli(data, "show", mid, "-n", "frank", "--json").stdout)["content"] == (
        "Frank keeps his spare keys under the blue pot.")
    # --json prints the catalogue's forget JSON, the answer of POST /v1/forget (issue 16)
    assert json.loads(cli(data, "forget", mid, "-n", "frank", "--dry-run", "--json").stdout
                      ) == {"strategy": "ids", "namespace": "frank", "ids": [mid], "count": 1,
                            "dry_run": True, "hard": False}
    assert mid in cli(data, "forget", mid, "-n", "frank").stdout
    hits = json.loads(cli(data, "search", "spare keys", "-n", "frank", "--json").stdout)["hits"]
    assert mid not in [h["id"] for h in hits]
    assert "restored 1 of 1" in cli(data, "restore", mid, "-n", "frank").stdout
    export = tmp_path / "frank.jsonl"
    assert "exported 2" in cli(data, "export", str(export), "-n", "frank").stdout
    other = tmp_path / "d2"  # ids are global: an export moves to another store
    assert "imported 2, skipped 0" in cli(other, "import", str(export)).stdout
    assert "imported 0, skipped 2" in cli(other, "import", str(export)).stdout
    st = json.loads(cli(other, "stats", "-n", "frank", "--json").stdout)
    assert st["by_type"]["semantic"] == 1 and st["by_type"]["episodic"] == 1


def test_jobs_commands(tmp_path: Path) -> None:
    data = tmp_path / "d"
    cli(data, "add", "The printer on floor 2 jams on A3 paper.", "--type", "episodic",
        "-n", "ops", "--importance", "0.9")
    low = cli(data, "add", "Someone left an umbrella.", "--type", "episodic", "-n", "ops",
              "--importance", "0.05").stdout.strip()
    # --json: the catalogue's run_job JSON, as POST /v1/jobs/{name} answers
    dry = json.loads(cli(data, "jobs", "forget", "-n", "ops", "--threshold", "0.1",
                         "--dry-run", "--json").stdout)
    assert dry["job"] == "forget" and len(dry["runs"]) == 1
    assert dry["runs"][0]["details"]["ids"] == [low] and dry["runs"][0]["dry_run"] is True
    rounds = [json.loads(line) for line in cli(
        data, "jobs", "forget", "-n", "ops", "--threshold", "0.1", "--every", "1s",
        "--max-runs", "2", "--json").stdout.splitlines()]
    # one object per round; the second run: a no-op
    assert [r["runs"][0]["counts"]["forgotten"] for r in rounds] == [1, 0]
    out = cli(data, "jobs", "consolidate", "--all-namespaces", "--threshold", "0.8").stdout
    assert "consolidate [ops]: moved 1, new_targets 1, removed 1" in out
    again = cli(data, "jobs", "consolidate", "--all-namespaces", "--threshold", "0.8").stdout
    assert "moved 0" in again
    rec = json.loads(cli(data, "jobs", "reconcile", "-n", "ops", "--json").stdout)
    assert rec["job"] == "reconcile" and rec["runs"][0]["namespace"] == "ops"
    assert "restored 1 of 1" in cli(data, "restore", low, "-n", "ops").stdout
    err = cli(data, "jobs", "forget", code=2).stderr
    assert "--namespace" in err
    cli(data, "jobs", "forget", "-n", "ops", "--max-runs", "2", code=2)


def test_errors_exit_codes_and_debug(tmp_path: Path) -> None:
    data = tmp_path / "d"
    missing = cli(data, "show", "no-such-id", "-n", "x", code=3)
    assert "no memory" in missing.stderr and "Traceback" not in missing.stderr
    cli(data, "add", "   ", "-n", "x", code=2)
    exe = shutil.which("hello-memory", path=str(Path(sys.executable).parent))
    assert exe, "the console script is installed next to the interpreter"
    env = {**os.environ, **ENV, "HELLO_MEMORY__VECTOR__URLL": "http://x"}
    out = subprocess.run([exe, "--data-dir", str(data), "stats"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "vector.urll" in out.stderr
    assert "Traceback" not in out.stderr
    env = {**os.environ, **ENV, "HELLO_MEMORY__VECTOR__URL": "http://127.0.0.1:9",
           "HELLO_MEMORY__VECTOR__TIMEOUT": "1"}
    down = subprocess.run([exe, "--data-dir", str(data), "stats", "-n", "x"], env=env,
                          capture_output=True, text=True, timeout=180)
    assert down.returncode == 4, down.stderr
    assert "error:" in down.stderr and "Traceback" not in down.stderr
    debug = subprocess.run([exe, "--debug", "--data-dir", str(data), "show", "nope", "-n", "x"],
                           env={**os.environ, **ENV}, capture_output=True, text=True,
                           timeout=120)
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_init_writes_a_loadable_config(tmp_path: Path) -> None:
    data, conf = tmp_path / "d", tmp_path / "hm.yaml"
    cli(data, "init", str(conf))
    assert (data / "records.db").exists()
    cli(data, "init", str(conf), code=2)  # no silent overwrite
    shown = CliRunner().invoke(app, ["--config", str(conf), "config"], env=ENV)
    assert shown.exit_code == 0 and str(data) in shown.stdout
    bench = cli(data, "bench", "--n", "10", "--queries", "2").stdout
    assert "search p50 ms" in bench and "bench: 10 memories, 2 searches" in bench


def test_optimize_job_builds_the_index_once(tmp_path: Path) -> None:
    data = tmp_path / "d"
    # the write path's own build off (vector.hnsw.auto_index): the job does it here
    small = {**ENV, "HELLO_MEMORY__VECTOR__HNSW__INDEXING_THRESHOLD_KB": "1",
             "HELLO_MEMORY__VECTOR__HNSW__FULL_SCAN_THRESHOLD_KB": "1",
             "HELLO_MEMORY__VECTOR__HNSW__AUTO_INDEX": "false"}

    def run(*args: str) -> Any:
        result = CliRunner().invoke(app, ["--data-dir", str(data), *args], env=small)
        assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
        return result

    ids = [run("add", text, "-n", "ops").stdout.strip() for text in (
        "The printer on floor 2 jams on A3 paper.", "The lift is serviced on Mondays.",
        "Badge readers reset at midnight.", "The kitchen kettle was replaced in May.")]
    first = json.loads(run("jobs", "optimize", "--json").stdout)
    assert first["job"] == "optimize" and first["runs"][0]["namespace"] == "*"
    # only the collections this store ever created; a graph was built for the memories
    details = first["runs"][0]["details"]
    assert details["collections"] == {"memories": True} and details["changed"] == 1
    assert "nothing to do" in run("jobs", "optimize").stdout  # idempotent
    hits = json.loads(run("search", "when is the lift serviced?", "-n", "ops",
                          "--json").stdout)["hits"]
    assert hits[0]["id"] == ids[1]  # search answers from the graph
