"""Maintenance jobs: audit records, dry runs, idempotence, loop mode, fail-closed scope."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from hello_memory.config import JobsSettings
from hello_memory.errors import InvalidInputError, NamespaceRequiredError
from hello_memory.interfaces.jobs import JobRun, namespaces_for, parse_duration, run_every, run_job
from hello_memory.memory.manager import MemoryManager
from hello_memory.types import MemoryStatus, MemoryType


def test_parse_duration() -> None:
    assert [parse_duration(t) for t in ("90", "30s", "15m", "1.5h", "1d")] == [
        90, 30, 900, 5400, 86400]
    for bad in ("", "soon", "5w", "0.5s", "-1m"):
        with pytest.raises(InvalidInputError):
            parse_duration(bad)


def test_run_every_counts_rounds_without_waiting() -> None:
    slept: list[float] = []
    seen: list[int] = []

    def once() -> list[JobRun]:
        now = datetime.now(timezone.utc)
        return [JobRun("forget", "n", True, now, now)]

    rounds = run_every(60, once, max_runs=3, on_runs=lambda runs: seen.append(len(runs)),
                       sleep=slept.append)
    assert rounds == 3 and seen == [1, 1, 1]
    assert len(slept) == 2 and all(0 < s <= 60 for s in slept)  # no sleep after the last


@pytest.mark.slow
def test_forget_job_is_soft_audited_and_idempotent(manager: MemoryManager) -> None:
    low = manager.add("The vending machine was out of cola.", "episodic", 0.05, namespace="n")
    high = manager.add("The server room code is 4417.", "semantic", 0.9, namespace="n")
    other = manager.add("Unrelated low note.", "episodic", 0.05, namespace="other")
    cfg = JobsSettings(forget_threshold=0.2)

    dry = run_job(manager, "forget", namespace="n", dry_run=True, settings=cfg)
    assert dry.counts == {"forgotten": 1} and not dry.changed
    assert manager.get(low.id, namespace="n").status is MemoryStatus.ACTIVE

    first = run_job(manager, "forget", namespace="n", settings=cfg)
    assert first.changed and first.details["ids"] == [low.id]
    assert manager.stores.records.memories.get_item("n", low.id).status is MemoryStatus.FORGOTTEN
    assert manager.get(high.id, namespace="n").status is MemoryStatus.ACTIVE
    assert manager.get(other.id, namespace="other").status is MemoryStatus.ACTIVE

    second = run_job(manager, "forget", namespace="n", settings=cfg)
    assert second.counts == {"forgotten": 0} and not second.changed

    audit = [a for a in manager.stores.records.audit.list("n") if a["action"] == "job:forget"]
    assert len(audit) == 3  # every run leaves a record, dry runs included
    newest = audit[0]["details"]
    assert newest["counts"] == {"forgotten": 0} and newest["dry_run"] is False
    assert newest["details"]["threshold"] == 0.2 and "started" in newest
    assert manager.restore([low.id], namespace="n") == 1


@pytest.mark.slow
def test_consolidate_job_promotes_once(manager: MemoryManager) -> None:
    base = datetime(2024, 1, 1, tzinfo=timezone.utc)
    manager.add_many([
        {"content": "Carol always takes the 7:10 train to work.", "importance": 0.9,
         "memory_type": "episodic", "namespace": "n", "event_time": base},
        {"content": "Carol always takes the 7:10 train to work!", "importance": 0.8,
         "memory_type": "episodic", "namespace": "n", "event_time": base + timedelta(days=1)},
        {"content": "A pigeon landed on the balcony.", "importance": 0.3,
         "memory_type": "episodic", "namespace": "n", "event_time": base},
    ])
    first = run_job(manager, "consolidate", namespace="n",
                    settings=JobsSettings(consolidate_importance=0.7))
    assert first.counts == {"moved": 2, "new_targets": 1, "removed": 2}
    st = manager.stats("n")["by_type"]
    assert st[MemoryType.SEMANTIC.value] == 1 and st[MemoryType.EPISODIC.value] == 1
    again = run_job(manager, "consolidate", namespace="n",
                    settings=JobsSettings(consolidate_importance=0.7))
    assert not again.changed and manager.stats("n")["by_type"] == st


@pytest.mark.slow
def test_reconcile_job_and_scope(manager: MemoryManager) -> None:
    manager.add("Dana owns a red kayak.", "semantic", namespace="a")
    manager.add("Eli owns a blue canoe.", "semantic", namespace="b")
    assert namespaces_for(manager, [], True) == ["a", "b"]
    with pytest.raises(InvalidInputError, match="--namespace"):
        namespaces_for(manager, [], False)
    with pytest.raises(InvalidInputError, match="not both"):
        namespaces_for(manager, ["a"], True)
    with pytest.raises(NamespaceRequiredError):
        run_job(manager, "reconcile", namespace="")
    run = run_job(manager, "reconcile", namespace="a")
    assert not run.changed and run.namespace == "a"
    assert any(a["action"] == "job:reconcile" for a in manager.stores.records.audit.list("a"))
    assert not any(a["action"] == "job:reconcile"
                   for a in manager.stores.records.audit.list("b"))
    with pytest.raises(InvalidInputError, match="takes no option"):
        run_job(manager, "reconcile", namespace="a", threshold=0.3)
    with pytest.raises(InvalidInputError, match="unknown job"):
        run_job(manager, "defragment", namespace="a")
