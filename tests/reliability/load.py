"""A concurrent HTTP load for the drift tests (issue 16): clients that add, batch-add,
update, delete and forget memories across namespaces at once, against a real server,
and the check that the derived indexes did not drift from the records."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from hello_memory.memory.manager import MemoryManager

__all__ = ["LoadResult", "drift", "run_load"]

NAMES = ("Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi")
PLACES = ("Lisbon", "Berlin", "Paris", "Oslo", "Madrid", "Vienna", "Prague", "Dublin")
THINGS = ("chess", "tea", "bees", "jazz", "sailing", "pottery", "tennis", "poetry")

# Index-side differences a dry-run reconcile reports (its "changed" count plus what
# stays pending), by name.
DRIFT_FIELDS = ("outbox_replayed", "reindexed", "orphan_vectors", "orphan_graph_links",
                "payloads_refreshed", "graph_relinked", "index_failures", "skipped")


@dataclass
class LoadResult:
    """What the clients did: requests by outcome, and the unexpected answers."""

    counts: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, what: str) -> None:
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + 1


class _Pool:
    """The memory ids each namespace's clients know of (shared: one client updates or
    deletes what another added)."""

    def __init__(self) -> None:
        self._ids: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def add(self, ns: str, ids: Sequence[str]) -> None:
        with self._lock:
            self._ids.setdefault(ns, []).extend(ids)

    def pick(self, ns: str, rng: random.Random) -> str | None:
        with self._lock:
            ids = self._ids.get(ns, [])
            return rng.choice(ids) if ids else None


def _sentence(rng: random.Random) -> str:
    """A distinct sentence naming two people (so semantic ones feed the graph)."""
    a, b = rng.sample(NAMES, 2)
    return (f"{a} met {b} in {rng.choice(PLACES)} to talk about {rng.choice(THINGS)} "
            f"(note {rng.randrange(10**9)})")


def _memory(rng: random.Random) -> dict[str, Any]:
    return {"content": _sentence(rng), "importance": round(rng.uniform(0.05, 0.95), 3),
            "memory_type": rng.choice(("semantic", "semantic", "episodic"))}


Op = Callable[[httpx.Client, str, random.Random, _Pool], httpx.Response | None]


def _add(c: httpx.Client, ns: str, rng: random.Random, pool: _Pool) -> httpx.Response:
    r = c.post("/v1/memories", params={"namespace": ns}, json=_memory(rng))
    if r.status_code in (200, 201):
        pool.add(ns, [r.json()["id"]])
    return r


def _batch(c: httpx.Client, ns: str, rng: random.Random, pool: _Pool) -> httpx.Response:
    r = c.post("/v1/memories/batch", params={"namespace": ns},
               json={"memories": [_memory(rng) for _ in range(3)]})
    if r.status_code in (200, 201):
        pool.add(ns, r.json()["ids"])
    return r


def _update(c: httpx.Client, ns: str, rng: random.Random, pool: _Pool) -> httpx.Response | None:
    memory_id = pool.pick(ns, rng)
    if memory_id is None:
        return None
    body: dict[str, Any] = {"importance": round(rng.uniform(0.05, 0.95), 3)}
    if rng.random() < 0.5:
        body["content"] = _sentence(rng)
    return c.patch(f"/v1/memories/{memory_id}", params={"namespace": ns}, json=body)


def _delete(c: httpx.Client, ns: str, rng: random.Random, pool: _Pool) -> httpx.Response | None:
    memory_id = pool.pick(ns, rng)
    if memory_id is None:
        return None
    return c.delete(f"/v1/memories/{memory_id}", params={"namespace": ns})


def _forget(c: httpx.Client, ns: str, rng: random.Random, pool: _Pool) -> httpx.Response | None:
    if rng.random() < 0.3:  # a hard forget of the least important
        return c.post("/v1/forget", params={"namespace": ns},
                      json={"strategy": "importance", "threshold": 0.1, "hard": True})
    memory_id = pool.pick(ns, rng)
    if memory_id is None:
        return None
    return c.post("/v1/forget", params={"namespace": ns}, json={"ids": [memory_id]})


# add and batch most, so there is something to update, delete and forget
OPS: tuple[tuple[str, Op, int], ...] = (
    ("add", _add, 4), ("batch", _batch, 2), ("update", _update, 4), ("delete", _delete, 2),
    ("forget", _forget, 1))


def _client_loop(base: str, headers: dict[str, str], ns: str, ops: int, seed: int,
                 pool: _Pool, result: LoadResult, tolerate_transport: bool) -> None:
    rng = random.Random(seed)
    names, funcs, weights = zip(*OPS, strict=True)
    with httpx.Client(base_url=base, headers=headers, timeout=120) as c:
        for _ in range(ops):
            k = rng.choices(range(len(funcs)), weights=weights)[0]
            try:
                r = funcs[k](c, ns, rng, pool)
            except httpx.TransportError as exc:
                if not tolerate_transport:
                    result.errors.append(f"{names[k]}: {exc!r}")
                result.count("transport")
                return  # the server was killed: this client is done
            if r is None:
                continue
            # 404: another client deleted or hard-forgot the memory first
            if r.status_code < 300 or r.status_code == 404:
                result.count(f"{names[k]} {r.status_code}")
            else:
                result.errors.append(f"{names[k]} {r.status_code}: {r.text[:300]}")


def run_load(base: str, namespaces: Sequence[str], *, clients: int = 8, ops: int = 25,
             seed: int = 0, headers: dict[str, str] | None = None,
             tolerate_transport: bool = False) -> LoadResult:
    """``clients`` threads, client k in ``namespaces[k % len(namespaces)]``, ``ops``
    random operations each, all at once; returns when every client is done."""
    pool, result = _Pool(), LoadResult()
    threads = [threading.Thread(target=_client_loop, args=(
        base, headers or {}, namespaces[k % len(namespaces)], ops, seed * 1000 + k, pool,
        result, tolerate_transport)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return result


def drift(mm: MemoryManager, namespaces: Sequence[str]) -> dict[str, Any]:
    """What a dry-run reconcile over ``namespaces`` would change, by kind of
    difference (empty: the indexes agree with the records)."""
    out: dict[str, Any] = {}
    for ns in namespaces:
        report = mm.reconcile(namespace=ns, dry_run=True).as_dict()
        found = {k: report[k] for k in DRIFT_FIELDS if report.get(k)}
        if found:
            out[ns] = found
    return out
