"""One set of lifecycle defaults (issue 14): the ``jobs`` settings, set here by YAML and
environment to non-default values, are what REST forget / consolidate, the admin job
route, the MemoryTool, ``MemoryManager.forget`` / ``consolidate`` and ``run_job`` use
when a call leaves a value out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgi_client import AsgiApi  # tests/ is on sys.path

from hello_memory.config import JobsSettings, load_settings
from hello_memory.interfaces.jobs import run_job
from hello_memory.interfaces.rest import create_app
from hello_memory.interfaces.tools import MemoryTool
from hello_memory.memory.manager import MemoryManager

pytestmark = pytest.mark.slow
NS = {"namespace": "n"}
KEY = {"Authorization": "Bearer k"}
YAML = """
semantic: {extractor: rules}
api: {api_keys: {k: ["*"]}}
jobs:
  consolidate_from: working
  consolidate_to: episodic
  consolidate_importance: 0.6
  forget_threshold: 0.3
"""


@pytest.fixture
def opened(tmp_path: Path, embedder: Any) -> Iterator[tuple[AsgiApi, MemoryManager]]:
    config = tmp_path / "config.yaml"
    config.write_text(YAML)
    settings = load_settings(config, environ={"HELLO_MEMORY__JOBS__FORGET_MAX_ITEMS": "2"},
                             data_dir=tmp_path / "data")
    assert (settings.jobs.forget_max_items, settings.jobs.forget_threshold) == (2, 0.3)
    mm = MemoryManager.open(settings, embedder=embedder)
    assert mm.lifecycle == settings.jobs
    yield AsgiApi(create_app(settings, manager=mm)), mm
    mm.close()


def test_every_entry_point_reads_the_configured_defaults(
        opened: tuple[AsgiApi, MemoryManager]) -> None:
    call, mm = opened
    tool = MemoryTool(mm, namespace="n")
    ids = {imp: mm.add(f"Note number {i} about the garden shed.", "episodic", imp,
                       namespace="n").id
           for i, imp in enumerate((0.05, 0.2, 0.5, 0.9))}
    low = {ids[0.05], ids[0.2]}  # below the configured 0.3 (the built-in default is 0.1)

    # forget, importance strategy, threshold left out
    rest = call("POST", "/v1/forget", params=NS, headers=KEY, json={"dry_run": True}).json()
    assert set(rest["ids"]) == low and rest["strategy"] == "importance"
    assert set(tool.forget(dry_run=True)["ids"]) == low
    assert set(tool.run({"action": "forget", "dry_run": True})["ids"]) == low
    job = run_job(mm, "forget", namespace="n", dry_run=True)
    assert set(job.details["ids"]) == low and job.details["threshold"] == 0.3
    assert set(mm.forget(namespace="n", dry_run=True).ids) == low
    admin = call("POST", "/v1/jobs/forget", headers=KEY,
                 json={"namespace": ["n"], "dry_run": True}).json()["runs"][0]
    assert set(admin["details"]["ids"]) == low

    # capacity strategy, max_items left out: keeps the configured 2 of 4
    rest = call("POST", "/v1/forget", params=NS, headers=KEY,
                json={"strategy": "capacity", "dry_run": True}).json()
    assert len(rest["ids"]) == 2
    assert sorted(tool.forget("capacity", dry_run=True)["ids"]) == sorted(rest["ids"])
    job = run_job(mm, "forget", namespace="n", dry_run=True, strategy="capacity")
    assert sorted(job.details["ids"]) == sorted(rest["ids"])
    assert job.details["max_items"] == 2

    # consolidate: the configured direction (working -> episodic) and threshold (0.6)
    mm.add("Remember the train leaves at 7:40 tomorrow.", "working", 0.65, namespace="n")
    rest = call("POST", "/v1/consolidate", params=NS, headers=KEY,
                json={"dry_run": True}).json()
    assert (rest["from_type"], rest["to_type"]) == ("working", "episodic")
    assert sum(len(v) for v in rest["merged"].values()) == 1  # 0.65 >= 0.6 (not 0.7)
    by_tool = tool.run({"action": "consolidate", "dry_run": True})
    assert by_tool["ok"] and by_tool["merged"] == rest["merged"]
    assert "working memories" in by_tool["text"]
    job = run_job(mm, "consolidate", namespace="n", dry_run=True)
    assert (job.details["from"], job.details["to"]) == ("working", "episodic")
    assert job.details["importance_threshold"] == 0.6 and job.counts["moved"] == 1
    admin = call("POST", "/v1/jobs/consolidate", headers=KEY,
                 json={"namespace": ["n"], "dry_run": True}).json()["runs"][0]
    assert admin["details"]["from"] == "working"
    rep = mm.consolidate(namespace="n", dry_run=True)
    assert rep.from_type.value == "working" and len(rep.merged) == 1
    # one end of the direction names the other
    rest = call("POST", "/v1/consolidate", params=NS, headers=KEY,
                json={"from_type": "episodic", "dry_run": True}).json()
    assert (rest["from_type"], rest["to_type"]) == ("episodic", "semantic")
    assert tool.consolidate(to_type="semantic", dry_run=True)["ok"]


def test_built_in_defaults_are_one_answer() -> None:
    """Without settings (a manager built by hand) every entry point still agrees: the
    manager's lifecycle is ``JobsSettings()``, episodic -> semantic."""
    cfg = JobsSettings()
    assert cfg.consolidate_options()["from_type"] == "episodic"
    assert cfg.consolidate_options()["to_type"] == "semantic"
    assert cfg.consolidate_options("working")["to_type"] == "episodic"
    assert cfg.forget_options() == {"strategy": "importance", "threshold": 0.1,
                                    "max_age_days": 365.0, "max_items": 10_000}
    with pytest.raises(ValueError, match="cannot consolidate working -> semantic"):
        JobsSettings(consolidate_from="working", consolidate_to="semantic")
