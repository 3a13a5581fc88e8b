"""Crash consistency: a child process runs batched add_many / update / forget(hard) /
consolidate and is SIGKILLed after a random delay, 20 times per operation. After each
kill the test reopens the stores, runs ``reconcile`` and checks that every
acknowledged write is present and searchable, that no vector or graph link lacks its
record, that no record lacks its vector, and that the counts agree.

The children are forked from one server process (crash_worker.py) that loads torch
and the model once, which keeps a trial well under a second of CPU.

Each test runs with the records in SQLite and in PostgreSQL, and with records and
vectors both in PostgreSQL (``vector.provider: pgvector``, issue 30; the ``store_stack``
fixture). PostgreSQL gets fewer trials: what is killed is the client, whose kill
points the SQLite trials already explore; on PostgreSQL the trials check that the
server rolls back what a dead client left open, and that reconcile works there.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.bundle import DENSE, MEMORY_COLLECTION
from hello_memory.types import MemoryType

from .fork_server import ForkServer
from .support import all_items, assert_consistent, make_manager

pytestmark = [pytest.mark.slow, pytest.mark.crash, pytest.mark.timeout(900)]

TRIALS = 20
PG_TRIALS = 2


@pytest.fixture
def stack(store_stack: dict[str, Any]) -> dict[str, Any]:
    """The stores under test (tests/conftest.py ``store_stack``)."""
    return store_stack


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    srv = ForkServer()
    yield srv
    srv.close()


def _acks(journal: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in journal if e["ev"] == "ack"]


def _in_flight(journal: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last ``try`` with no ``ack`` after it (the call the kill interrupted)."""
    tries = [e for e in journal if e["ev"] in ("try", "ack")]
    return tries[-1] if tries and tries[-1]["ev"] == "try" else None


def _assert_found(mm: MemoryManager, ns: str, pairs: list[tuple[str, str]]) -> None:
    """Each (id, content) is the top dense hit for its own content (so its vector is
    present, current and in the right namespace), and the manager's search finds it."""
    if not pairs:
        return
    vecs = mm.stores.embedder.embed([c for _, c in pairs])
    for (memory_id, _content), vec in zip(pairs, vecs, strict=True):
        hits = mm.stores.vectors.nearest(MEMORY_COLLECTION, vec.tolist(), namespace=ns,
                                        using=DENSE, limit=1)
        assert [h.id for h in hits] == [memory_id]
        assert hits[0].score > 0.99, "vector is stale: it does not match the record"
    memory_id, content = pairs[-1]
    assert memory_id in [h.id for h in mm.search(content, top_k=5, namespace=ns)]


def _trials(stack: dict[str, Any]) -> int:
    return TRIALS if stack["records"]["url"].startswith("sqlite") else PG_TRIALS


def _reopen_and_reconcile(data: Path, embedder: Any, stack: dict[str, Any]) -> MemoryManager:
    mm = make_manager(data, embedder, **stack)  # replays the outbox
    report = mm.reconcile()
    assert report.skipped == {}
    if report.changed:  # shown with -s: what the crash left for reconcile to repair
        repaired = {k: v for k, v in report.as_dict().items()
                    if v and k not in ("namespaces", "dry_run")}
        print(f"reconcile repaired: {repaired}")
    for ns in report.namespaces:
        assert_consistent(mm, ns)
    assert mm.reconcile().changed == 0
    return mm


def _run(server: ForkServer, tmp_path: Path, op: str, window: float,
         seed: Any, check: Any, embedder: Any, stack: dict[str, Any]) -> int:
    """``_trials`` kills of ``op``, each in a fresh namespace of one growing directory
    (and record database); the next trial's namespace is seeded before the stores are
    closed for the child."""
    rng = random.Random(f"crash-{op}")
    data = tmp_path / "data"
    killed = 0
    mm = make_manager(data, embedder, **stack)
    extra = seed(mm, "trial-0", 0)
    mm.close()
    trials = _trials(stack)
    for t in range(trials):
        ns = f"trial-{t}"
        spec = {"op": op, "dir": str(data), "ns": ns, "seed": t, "settings": stack,
                "log": str(tmp_path / f"{op}-{t}.jsonl"), **extra}
        after_open = t % 5 != 0  # every fifth kill may land while the stores open
        journal, was_killed = server.trial(spec, rng.uniform(0, window), after_open)
        killed += was_killed
        mm = _reopen_and_reconcile(data, embedder, stack)
        try:
            check(mm, ns, journal, extra)
            if t + 1 < trials:
                extra = seed(mm, f"trial-{t + 1}", t + 1)
        finally:
            mm.close()
    return killed


def _no_seed(mm: MemoryManager, ns: str, t: int) -> dict[str, Any]:
    return {}


def test_add_many_survives_sigkill(server: ForkServer, tmp_path: Path, embedder: Any,
                                   stack: dict[str, Any]) -> None:
    def check(mm: MemoryManager, ns: str, journal: list[Any], _: Any) -> None:
        items = all_items(mm, ns)
        by_batch: dict[int, int] = {}
        for item in items:
            by_batch[item.metadata["batch"]] = by_batch.get(item.metadata["batch"], 0) + 1
        assert set(by_batch.values()) <= {4}, "a batch was half-written"
        acked = _acks(journal)
        assert {a["batch"] for a in acked} <= set(by_batch)
        present = {i.id for i in items}
        pairs = [(i, c) for a in acked for i, c in zip(a["ids"], a["contents"], strict=True)]
        assert {i for i, _ in pairs} <= present, "an acknowledged write was lost"
        _assert_found(mm, ns, pairs)

    killed = _run(server, tmp_path, "add_many", 0.8, _no_seed, check, embedder, stack)
    assert killed == _trials(stack)  # the loop never ends on its own: every trial was killed


def test_update_survives_sigkill(server: ForkServer, tmp_path: Path, embedder: Any,
                                 stack: dict[str, Any]) -> None:
    def seed(mm: MemoryManager, ns: str, t: int) -> dict[str, Any]:
        items = mm.add_many([{"content": f"original note {k} of trial {t}", "namespace": ns,
                              "memory_type": "semantic" if k % 2 else "episodic"}
                             for k in range(6)])
        return {"ids": [i.id for i in items],
                "original": {i.id: i.content for i in items}}

    def check(mm: MemoryManager, ns: str, journal: list[Any], extra: Any) -> None:
        expected = dict(extra["original"])
        for a in _acks(journal):
            expected[a["id"]] = a["content"]
        flight = _in_flight(journal)
        items = {i.id: i for i in all_items(mm, ns)}
        assert set(items) == set(expected), "an update lost or added a memory"
        for memory_id, content in expected.items():
            allowed = {content}
            if flight is not None and flight["id"] == memory_id:
                allowed.add(flight["content"])  # interrupted: old or new, never torn
            assert items[memory_id].content in allowed
        _assert_found(mm, ns, [(i, items[i].content) for i in sorted(items)])

    killed = _run(server, tmp_path, "update", 0.8, seed, check, embedder, stack)
    assert killed == _trials(stack)


def test_hard_forget_survives_sigkill(server: ForkServer, tmp_path: Path,
                                      embedder: Any, stack: dict[str, Any]) -> None:
    n = 16

    def seed(mm: MemoryManager, ns: str, t: int) -> dict[str, Any]:
        # importance (k + 0.5) / n: the j-th forget (threshold (j + 1) / n) removes k <= j
        items = mm.add_many([{"content": f"Person{k} noted item {k} in trial {t}",
                              "namespace": ns, "importance": (k + 0.5) / n,
                              "memory_type": "semantic" if k % 2 else "episodic"}
                             for k in range(n)])
        return {"n": n, "ids": [i.id for i in items],
                "contents": [i.content for i in items]}

    def check(mm: MemoryManager, ns: str, journal: list[Any], extra: Any) -> None:
        acked = [a["j"] for a in _acks(journal)]
        last = max(acked, default=-1)
        flight = _in_flight(journal)
        present = {i.id for i in all_items(mm, ns)}
        for k, memory_id in enumerate(extra["ids"]):
            if k <= last:
                assert memory_id not in present, "an acknowledged forget came back"
            elif flight is not None and k == flight["j"]:
                continue  # interrupted: either is fine
            else:
                assert memory_id in present, "forget removed more than it was asked to"
        _assert_found(mm, ns, [(i, c) for i, c in zip(extra["ids"], extra["contents"],
                                                      strict=True) if i in present])

    _run(server, tmp_path, "forget", 1.5, seed, check, embedder, stack)


def test_consolidate_survives_sigkill(server: ForkServer, tmp_path: Path,
                                      embedder: Any, stack: dict[str, Any]) -> None:
    def check(mm: MemoryManager, ns: str, journal: list[Any], _: Any) -> None:
        items = all_items(mm, ns)
        merged = {s for i in items if i.memory_type == MemoryType.SEMANTIC
                  for s in i.metadata.get("merged_from", [])}
        episodic = {i.id for i in items if i.memory_type == MemoryType.EPISODIC}
        added = [mid for a in _acks(journal) if a["kind"] == "add" for mid in a["ids"]]
        for memory_id in added:  # never lost: still a source, or inside a target
            assert memory_id in episodic or memory_id in merged
        acked_rounds = [a["round"] for a in _acks(journal) if a["kind"] == "consolidate"]
        if acked_rounds:
            done = [mid for a in _acks(journal) if a["kind"] == "add"
                    and a["round"] <= max(acked_rounds) for mid in a["ids"]]
            assert not set(done) & episodic, "an acknowledged consolidation left a source"
        # A rerun finishes an interrupted one: no source is left beside its target.
        mm.consolidate("episodic", "semantic", namespace=ns, importance_threshold=0.7)
        after = all_items(mm, ns)
        merged = {s for i in after for s in i.metadata.get("merged_from", [])}
        assert not {i.id for i in after if i.memory_type == MemoryType.EPISODIC} & merged
        assert set(added) <= merged
        assert_consistent(mm, ns)
        _assert_found(mm, ns, [(i.id, i.content) for i in after])

    killed = _run(server, tmp_path, "consolidate", 1.5, _no_seed, check, embedder,
                  stack)
    assert killed == _trials(stack)
