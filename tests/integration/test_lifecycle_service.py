"""The lifecycle service (hello_memory/services/lifecycle.py, issue 16) works on the
stores and the working memory alone, with no MemoryManager: forget, restore and
consolidate return their typed reports; the facade's ``lifecycle`` defaults are the
service's. Real embedded stores and MiniLM."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hello_memory.config import JobsSettings, load_settings
from hello_memory.factory import open_stores
from hello_memory.memory.manager import MemoryManager
from hello_memory.memory.reports import ConsolidateReport, ForgetReport
from hello_memory.memory.working import WorkingMemory
from hello_memory.services.lifecycle import Lifecycle
from hello_memory.stores.bundle import Stores
from hello_memory.types import MemoryItem, MemoryType

pytestmark = pytest.mark.slow

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def embedder() -> Any:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
def stores(tmp_path: Path, embedder: Any) -> Iterator[Stores]:
    s = open_stores(load_settings(environ={}, data_dir=tmp_path / "data"), embedder=embedder)
    yield s
    s.close()


@pytest.fixture
def mm(stores: Stores) -> Iterator[MemoryManager]:
    """A facade over the same stores, only to read what the service wrote."""
    manager = MemoryManager(stores, clock=lambda: T0)
    yield manager
    manager.retriever.close()  # the stores are the other fixture's to close


def _add(stores: Stores, content: str, importance: float, event_time: datetime = T0
         ) -> MemoryItem:
    [item] = stores.add([MemoryItem(content=content, namespace="u", importance=importance,
                                    memory_type=MemoryType.EPISODIC, event_time=event_time)])
    return item


def test_forget_and_restore_on_the_stores_alone(stores: Stores) -> None:
    life = Lifecycle(stores, WorkingMemory(clock=lambda: T0), clock=lambda: T0,
                     defaults=JobsSettings(forget_threshold=0.3))
    low = _add(stores, "The printer on floor two jams on Mondays.", 0.1)
    _add(stores, "Alice's passport expires in March.", 0.9)
    dry = life.forget(namespace="u", dry_run=True)  # strategy and threshold: the defaults
    assert isinstance(dry, ForgetReport)
    assert (dry.strategy, dry.ids, dry.dry_run) == ("importance", (low.id,), True)
    done = life.forget(namespace="u")
    assert done.as_dict()["ids"] == [low.id]
    assert life.forget(namespace="u", dry_run=True).ids == ()  # forgotten: not chosen again
    assert life.restore([low.id], namespace="u") == 1  # it was forgotten, now it is back
    assert life.restore([low.id], namespace="u") == 0
    assert life.forget_ids([low.id], namespace="u") == [low.id]
    assert life.forget_ids([low.id], namespace="u") == []  # already forgotten: skipped


def test_consolidate_on_the_stores_alone(stores: Stores, mm: MemoryManager) -> None:
    life = Lifecycle(stores, WorkingMemory(clock=lambda: T0), clock=lambda: T0)
    a = _add(stores, "Alice prefers green tea in the morning.", 0.9)
    b = _add(stores, "Alice prefers green tea in the morning!", 0.8)
    report = life.consolidate(namespace="u")  # episodic -> semantic, the defaults
    assert isinstance(report, ConsolidateReport)
    [target] = report.promoted
    assert set(report.merged[target]) == {a.id, b.id}  # one fact, promoted once
    assert set(report.removed_sources) == {a.id, b.id}
    assert report.as_dict()["to_type"] == "semantic"
    again = life.consolidate(namespace="u")
    assert (again.promoted, again.merged) == ((), {})  # a second run finds nothing to do
    fact = mm.get(target, namespace="u")
    assert fact.memory_type is MemoryType.SEMANTIC and fact.importance == 0.9


def test_the_facade_reads_the_services_defaults(stores: Stores) -> None:
    jobs = JobsSettings(forget_strategy="time", forget_max_age_days=7)
    mm = MemoryManager(stores, lifecycle=jobs, clock=lambda: T0)
    mm.retriever.close()  # no search here; the stores are the fixture's to close
    assert mm.lifecycle is jobs is mm.lifecycle_service.defaults
    old = _add(stores, "The old office was on Elm Street.", 0.5, T0 - timedelta(days=8))
    _add(stores, "The new office is on Oak Street.", 0.5, T0 - timedelta(days=6))
    assert mm.forget(namespace="u", dry_run=True).ids == (old.id,)  # older than 7 days
