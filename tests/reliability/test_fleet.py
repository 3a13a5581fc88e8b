"""A fleet under load and SIGKILL (issue 30; docs/DEPLOY.md, "Deploy for a team"):
three ``hello-memory serve`` processes share one PostgreSQL database (records, pgvector
vectors, the SQL graph; no SQLite file, no Qdrant), 8 HTTP clients add, batch-add,
update, delete, forget and search across them while random servers are SIGKILLed and
restarted. Afterwards:

* no acknowledged write is lost: every memory whose last acknowledged request wrote
  it holds that content (or the content of a later request the kill left unanswered),
  and is found by its own text;
* no acknowledged delete comes back: neither the record nor its vector;
* no drift: a dry-run reconcile of every namespace has nothing to repair;
* the scheduled job (``optimize`` every second on all three) ran at most once per
  slot: its audit runs number between the slots claimed by processes never killed and
  all slots claimed (three processes running it on their own would make about three
  runs per slot).

Each client owns the memories it added (its ledger is exact) and also updates a few
memories every client shares, so the same keys are written through different
processes at once. Bounded: 8 clients x 24 requests, 3 kills.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from hello_memory.stores.bundle import MEMORY_COLLECTION

from .live_server import free_port
from .load import drift
from .support import make_manager

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(600)]

SERVERS = 3
CLIENTS = 8
OPS = 24
KILLS = 3
NAMESPACES = ["fleet-a", "fleet-b", "fleet-c", "fleet-d"]
CLI = Path(sys.executable).with_name("hello-memory")


class Fleet:
    """``SERVERS`` real ``hello-memory serve`` processes on one database and one data
    directory (vectors in pgvector hold none), each on a fixed port, restartable after
    a kill."""

    def __init__(self, tmp: Path, url: str) -> None:
        self.tmp = tmp
        self.env = {**os.environ, "HELLO_MEMORY__RECORDS__URL": url,
                    "HELLO_MEMORY__VECTOR__PROVIDER": "pgvector",
                    "HELLO_MEMORY__API__AUTH_DISABLED": "true",
                    "HELLO_MEMORY__JOBS__SCHEDULE": json.dumps({"optimize": "every 1s"}),
                    "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
        self.ports = [free_port() for _ in range(SERVERS)]
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * SERVERS
        self.killed_pids: set[int] = set()
        self.starts = 0

    def start(self, k: int) -> None:
        log = (self.tmp / f"serve-{k}-{self.starts}.log").open("wb")
        self.starts += 1
        self.procs[k] = subprocess.Popen(
            [str(CLI), "--data-dir", str(self.tmp / "shared"), "serve", "--host", "127.0.0.1",
             "--port", str(self.ports[k])], env=self.env, stdout=log, stderr=subprocess.STDOUT)

    def wait_up(self, k: int) -> None:
        deadline = time.monotonic() + 240
        while True:
            proc = self.procs[k]
            assert proc is not None and proc.poll() is None, f"server {k} exited"
            try:
                if httpx.get(f"{self.base(k)}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"server {k} did not answer"
            time.sleep(0.1)

    def base(self, k: int) -> str:
        return f"http://127.0.0.1:{self.ports[k]}"

    def kill(self, k: int) -> None:
        proc = self.procs[k]
        assert proc is not None
        self.killed_pids.add(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # graceful: a running job finishes
        for proc in self.procs:
            if proc is not None:
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)


@dataclass
class Ledger:
    """What the clients were told. ``contents[id]``: the contents the memory may hold
    (the last acknowledged one, plus those of later requests left unanswered);
    ``deleted``: acknowledged deletes; ``maybe_deleted``: deletes left unanswered."""

    contents: dict[str, tuple[str, set[str]]] = field(default_factory=dict)
    deleted: dict[str, str] = field(default_factory=dict)
    maybe_deleted: set[str] = field(default_factory=set)
    acked: int = 0
    transport: int = 0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _sentence(rng: random.Random, who: int) -> str:
    names = ("Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi")
    things = ("chess", "tea", "bees", "jazz", "sailing", "pottery", "tennis", "poetry")
    return (f"{rng.choice(names)} told client {who} about {rng.choice(things)} "
            f"in note {rng.randrange(10**9)}")


def _client(fleet: Fleet, k: int, ledger: Ledger, shared: list[str], stop: threading.Event
            ) -> None:
    rng = random.Random(1000 + k)
    ns = NAMESPACES[k % len(NAMESPACES)]
    mine: list[str] = []
    with httpx.Client(timeout=120) as c:
        for _ in range(OPS):
            base = fleet.base(rng.randrange(SERVERS))
            roll = rng.random()
            try:
                if roll < 0.3 or not mine:
                    content = _sentence(rng, k)
                    r = c.post(f"{base}/v1/memories", params={"namespace": ns},
                               json={"content": content, "memory_type": "semantic"})
                    if r.status_code in (200, 201):
                        with ledger.lock:
                            ledger.contents[r.json()["id"]] = (ns, {content})
                        mine.append(r.json()["id"])
                elif roll < 0.45:
                    batch = [_sentence(rng, k) for _ in range(3)]
                    r = c.post(f"{base}/v1/memories/batch", params={"namespace": ns},
                               json={"memories": [{"content": t} for t in batch]})
                    if r.status_code in (200, 201):
                        with ledger.lock:
                            for i, t in zip(r.json()["ids"], batch, strict=True):
                                ledger.contents[i] = (ns, {t})
                        mine.extend(r.json()["ids"])
                elif roll < 0.65:
                    target = rng.choice(mine)
                    content = _sentence(rng, k)
                    with ledger.lock:  # may hold it if the answer never comes
                        ledger.contents[target][1].add(content)
                    r = c.patch(f"{base}/v1/memories/{target}", params={"namespace": ns},
                                json={"content": content})
                    if r.status_code == 200:
                        with ledger.lock:
                            ledger.contents[target] = (ns, {content})
                elif roll < 0.75 and shared:
                    target = rng.choice(shared)
                    r = c.patch(f"{base}/v1/memories/{target}",
                                params={"namespace": NAMESPACES[0]},
                                json={"importance": round(rng.uniform(0.2, 0.9), 2)})
                elif roll < 0.85:
                    target = mine.pop(rng.randrange(len(mine)))
                    with ledger.lock:
                        ledger.maybe_deleted.add(target)
                    r = c.delete(f"{base}/v1/memories/{target}", params={"namespace": ns})
                    if r.status_code in (200, 204):
                        with ledger.lock:
                            ledger.deleted[target] = ledger.contents.pop(target)[0]
                elif roll < 0.9:
                    r = c.post(f"{base}/v1/forget", params={"namespace": ns},
                               json={"ids": [rng.choice(mine)]})
                else:
                    r = c.post(f"{base}/v1/search", params={"namespace": ns},
                               json={"query": _sentence(rng, k), "top_k": 5})
            except httpx.TransportError:
                with ledger.lock:
                    ledger.transport += 1
                time.sleep(0.2)  # the server was killed: the next request goes elsewhere
                continue
            with ledger.lock:
                if r.status_code < 300:
                    ledger.acked += 1
                else:
                    ledger.errors.append(f"{r.request.method} {r.request.url.path} "
                                         f"{r.status_code}: {r.text[:300]}")


@pytest.fixture
def fleet(tmp_path: Path, postgres_server: Any) -> Iterator[Fleet]:
    url = postgres_server.create_database()
    fleet = Fleet(tmp_path, url)
    try:
        yield fleet
    finally:
        fleet.stop_all()
        postgres_server.drop_database(url)


def test_three_servers_under_load_and_sigkill_lose_nothing(fleet: Fleet, embedder: Any,
                                                          tmp_path: Path) -> None:
    for k in range(SERVERS):
        fleet.start(k)
    for k in range(SERVERS):
        fleet.wait_up(k)
    with httpx.Client(timeout=120) as c:
        r = c.post(f"{fleet.base(0)}/v1/memories/batch", params={"namespace": NAMESPACES[0]},
                   json={"memories": [{"content": f"Shared note {i} about the harbour"}
                                      for i in range(4)]})
        assert r.status_code in (200, 201), r.text
        shared = r.json()["ids"]

    ledger, stop = Ledger(), threading.Event()
    clients = [threading.Thread(target=_client, args=(fleet, k, ledger, shared, stop))
               for k in range(CLIENTS)]
    for t in clients:
        t.start()
    rng = random.Random(30)
    for _ in range(KILLS):
        # wait for some acknowledged work, then kill a random server mid-load
        seen = ledger.acked
        while ledger.acked < seen + 8 and any(t.is_alive() for t in clients):
            time.sleep(0.05)
        victim = rng.randrange(SERVERS)
        fleet.kill(victim)
        fleet.start(victim)
        fleet.wait_up(victim)  # its open replays what the kill left pending
    for t in clients:
        t.join()
    assert ledger.errors == []
    assert len(fleet.killed_pids) == KILLS
    fleet.stop_all()  # graceful: every server's running work and job finish

    mm = make_manager(tmp_path / "check", embedder,
                      records={"url": fleet.env["HELLO_MEMORY__RECORDS__URL"]},
                      vector={"provider": "pgvector"})
    try:
        st = mm.stores

        def get(ns: str, memory_id: str) -> Any:
            found = st.records.memories.get_items(ns, [memory_id])
            return found[0] if found else None

        # 0 lost acknowledged writes
        assert ledger.contents, "no write was acknowledged"
        for memory_id, (ns, allowed) in ledger.contents.items():
            item = get(ns, memory_id)
            if item is None:
                assert memory_id in ledger.maybe_deleted, f"acknowledged {memory_id} lost"
                continue
            assert item.content in allowed, (memory_id, item.content, allowed)
        # 0 resurrected deletes: no record, no vector
        for memory_id, ns in ledger.deleted.items():
            assert get(ns, memory_id) is None, memory_id
            assert st.vectors.retrieve(MEMORY_COLLECTION, [memory_id], namespace=ns) == []
        # searchable by its own text (the vector is present and current)
        sample = random.Random(1).sample(sorted(ledger.contents), min(12, len(ledger.contents)))
        for memory_id in sample:
            ns, _ = ledger.contents[memory_id]
            item = get(ns, memory_id)
            if item is not None and item.status.value == "active":
                hits = mm.search(item.content, namespace=ns, top_k=5)
                assert memory_id in [h.id for h in hits], memory_id
        # 0 drift: `jobs reconcile` dry run has nothing to repair
        assert drift(mm, NAMESPACES) == {}
        # the scheduled job ran at most once per slot across the fleet
        engine = st.records.engine
        with engine.connect() as conn:
            holders = [r[0] for r in conn.exec_driver_sql(
                "SELECT holder FROM hm_job_leases WHERE job = 'optimize'").all()]
            runs = int(conn.exec_driver_sql(
                "SELECT count(*) FROM hm_audit_log WHERE action = 'job:optimize'").scalar() or 0)
        unkilled = [h for h in holders
                    if int(h.rsplit(":", 1)[1]) not in fleet.killed_pids]
        assert len(holders) >= 2
        assert len(unkilled) <= runs <= len(holders)
    finally:
        mm.close()
