"""The hostile-concurrency suite (issue 28, "Done when"): one live ``hello-memory serve``
and 8 clients at once, over HTTP, covering items 1 (BM25 analysis shared across
threads), 3 (consolidation racing updates), 7 (identical adds racing) and 10 (heavy
queries from one key). What must hold: no 500, no acknowledged write lost, and the
concurrent results equal a one-client run. docs/RELIABILITY.md "Concurrency" lists
each guarantee with its test here.

Each client has its own API key (a tenant each), as the admission control counts
searches per key (hello_memory/interfaces/rest/security.py ``SearchAdmission``). Everything is
checked on behaviour; the one timing check compares two latencies measured in the
same run (a ratio), never a fixed number of seconds.
"""

from __future__ import annotations

import json
import random
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from .live_server import KEY, LiveServer

pytestmark = pytest.mark.slow

CLIENTS = 8
CLIENT_KEYS = [f"hc-client-{k}" for k in range(CLIENTS)]
HEAVY_KEY, LIGHT_KEY = "hc-tenant-heavy", "hc-tenant-light"

WORDS = ("apple", "harbour", "violin", "glacier", "pepper", "tractor", "orchid", "comet",
         "lantern", "walrus", "meadow", "circuit", "saffron", "canyon", "trumpet", "velvet",
         "quartz", "ferret", "monsoon", "pretzel", "lagoon", "beacon", "cactus", "mosaic")
NAMES = ("Alice", "Bruno", "Chiara", "Dmitri", "Esther", "Farid", "Greta", "Hiroshi")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    keys = {KEY: ["*"], **{k: ["hc/*"] for k in CLIENT_KEYS},
            HEAVY_KEY: ["heavy"], LIGHT_KEY: ["light"]}
    srv = LiveServer(tmp_path_factory.mktemp("hostile-concurrency") / "data",
                     env={"HELLO_MEMORY__API__API_KEYS": json.dumps(keys)})
    srv.start()
    yield srv
    srv.stop()


class Tally:
    """Every answer of a test's clients by status; the unexpected ones kept whole."""

    def __init__(self) -> None:
        self.by_status: dict[int, int] = {}
        self.bad: list[str] = []
        self.lock = threading.Lock()

    def note(self, what: str, r: httpx.Response, ok: tuple[int, ...]) -> httpx.Response:
        with self.lock:
            self.by_status[r.status_code] = self.by_status.get(r.status_code, 0) + 1
            if r.status_code not in ok:
                self.bad.append(f"{what}: {r.status_code} {r.text[:300]}")
        return r

    def check(self) -> None:
        assert not self.bad, self.bad[:5]
        assert not any(s >= 500 for s in self.by_status), self.by_status


def client(srv: LiveServer, key: str) -> httpx.Client:
    return httpx.Client(base_url=srv.base, headers={"Authorization": f"Bearer {key}"},
                        timeout=120)


def at_once(n: int, work: Callable[[int], Any]) -> list[Any]:
    """``work(k)`` for k in range(n) on n threads started together; their results."""
    barrier = threading.Barrier(n)
    out: list[Any] = [None] * n

    def run(k: int) -> None:
        barrier.wait()
        try:
            out[k] = work(k)
        except BaseException as exc:  # noqa: BLE001 - returned to the test
            out[k] = exc

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [o for o in out if isinstance(o, BaseException)]
    assert not errors, errors
    return out


def salad(rng: random.Random, n: int = 6) -> str:
    return " ".join(rng.sample(WORDS, n)) + f" {rng.randrange(10**6)}"


# --- items 1 and 7: adds and searches from 8 clients equal one client -------------------
def test_eight_clients_add_and_search_like_one_client(server: LiveServer) -> None:
    ns = {"namespace": "hc/shared"}
    tally = Tally()
    # Each client's own memories, each with one word no other memory has (its marker),
    # and the same batch of four that every client sends at once.
    own = {k: [f"{NAMES[k]} stored the {WORDS[(k * 3 + j) % len(WORDS)]} crate "
               f"behind the marker{k}x{j} shelf" for j in range(3)] for k in range(CLIENTS)}
    common = [f"Shared house rule {n}: the {WORDS[n]} stays in the hall." for n in range(4)]

    def add(k: int) -> tuple[list[str], list[str]]:
        with client(server, CLIENT_KEYS[k]) as c:
            mine = [tally.note("add", c.post("/v1/memories", params=ns, json={
                "content": text, "memory_type": "semantic"}), (201,)).json()["id"]
                for text in own[k]]
            batch = tally.note("batch", c.post("/v1/memories/batch", params=ns, json={
                "memories": [{"content": t, "memory_type": "semantic"} for t in common]}),
                (200, 201)).json()["ids"]
        return mine, batch

    added = at_once(CLIENTS, add)
    tally.check()
    # item 7: eight identical batches at once store four memories, the same for everyone
    assert len({tuple(batch) for _, batch in added}) == 1
    assert len(set(added[0][1])) == 4

    queries = [*(f"where is the {w} crate" for w in WORDS[:6]), "house rule hall",
               *(f"what did {n} store" for n in NAMES[:3])]
    recipes = ("hybrid", "bm25-only")

    def search(c: httpx.Client, q: str, recipe: str) -> list[str]:
        r = tally.note("search", c.post("/v1/search", params=ns, json={
            "query": q, "top_k": 5, "recipe": recipe}), (200,))
        return [h["id"] for h in r.json()["hits"]] if r.status_code == 200 else []

    def search_all(k: int) -> dict[tuple[str, str], list[str]]:
        order = queries[k % len(queries):] + queries[:k % len(queries)]
        with client(server, CLIENT_KEYS[k]) as c:
            return {(q, rc): search(c, q, rc) for q in order for rc in recipes}

    concurrent = at_once(CLIENTS, search_all)
    with client(server, CLIENT_KEYS[0]) as c:
        alone = {(q, rc): search(c, q, rc) for q in queries for rc in recipes}
        # item 1: every memory was indexed with its own keyword terms (a shared stemmer
        # once gave some memories another text's terms, silently)
        for k, (mine, _) in enumerate(added):
            for j, memory_id in enumerate(mine):
                assert search(c, f"marker{k}x{j}", "bm25-only")[:1] == [memory_id]
    tally.check()
    for k, got in enumerate(concurrent):
        assert got == alone, f"client {k}: concurrent results differ from one client's"
    assert all(alone[(q, "hybrid")] for q in queries)


def test_identical_adds_at_once_store_one_memory_per_user(server: LiveServer) -> None:
    ns = {"namespace": "hc/ident"}
    tally = Tally()

    def add(k: int) -> str:
        with client(server, CLIENT_KEYS[k]) as c:
            r = tally.note("add", c.post("/v1/memories", params=ns, json={
                "content": "I like green tea.", "user_id": ("ann", "bob")[k % 2]}),
                (200, 201))
            return str(r.json()["id"])

    ids = at_once(CLIENTS, add)
    tally.check()
    assert len(set(ids)) == 2  # one per user (was 8 copies, and users shared one)
    assert tally.by_status.get(201) == 2 and tally.by_status.get(200) == CLIENTS - 2


# --- item 3: updates racing consolidation -------------------------------------------------
def _export(c: httpx.Client, ns: str) -> list[dict[str, Any]]:
    r = c.get("/v1/export", params={"namespace": ns})
    assert r.status_code == 200, r.text
    return [json.loads(line) for line in r.text.splitlines() if line.strip()]


def test_updates_racing_consolidation_lose_no_acknowledged_update(
        server: LiveServer) -> None:
    ns = {"namespace": "hc/consolidate"}
    tally = Tally()
    rng = random.Random(28)
    with client(server, CLIENT_KEYS[0]) as c:
        ids = tally.note("seed", c.post("/v1/memories/batch", params=ns, json={"memories": [
            {"content": salad(rng), "memory_type": "episodic", "importance": 0.9}
            for _ in range(16)]}), (201,)).json()["ids"]
    # Per memory, every acknowledged update as (sent, answered, text). Two clients may
    # update one memory at once, and the order they note their answers in need not be the
    # order the server applied them: only an update no other one began after it answered
    # is a candidate for the memory's last word.
    acked: dict[str, list[tuple[float, float, str]]] = {}
    lock = threading.Lock()
    rounds = {"left": 6}

    def work(k: int) -> None:
        r = random.Random(k)
        with client(server, CLIENT_KEYS[k]) as c:
            if k < 2:  # two clients consolidate, three times each
                for _ in range(3):
                    tally.note("consolidate", c.post("/v1/consolidate", params=ns, json={
                        "from_type": "episodic", "to_type": "semantic",
                        "min_access_count": 0}), (200,))
                    with lock:
                        rounds["left"] -= 1
                return
            while True:  # six update until the consolidations are done
                with lock:
                    if rounds["left"] <= 0:
                        return
                memory_id, text = r.choice(ids), f"client {k} says " + salad(r)
                sent = time.monotonic()
                got = tally.note("update", c.patch(f"/v1/memories/{memory_id}", params=ns,
                                                   json={"content": text}), (200, 404))
                if got.status_code == 200:  # acknowledged; 404: consolidated already
                    with lock:
                        acked.setdefault(memory_id, []).append(
                            (sent, time.monotonic(), text))

    at_once(CLIENTS, work)
    with client(server, CLIENT_KEYS[0]) as c:
        tally.note("consolidate", c.post("/v1/consolidate", params=ns, json={
            "from_type": "episodic", "to_type": "semantic", "min_access_count": 0}), (200,))
        stored = {m["content"] for m in _export(c, "hc/consolidate")}
    tally.check()
    lost = [i for i, updates in acked.items()
            if not any(text in stored for _, answered, text in updates
                       if not any(other > answered for other, _, _ in updates))]
    assert acked and not lost, f"{len(lost)} of {len(acked)} acknowledged updates lost"


# --- item 10: heavy queries from one key, a small one from another ------------------------
def _heavy_query(rng: random.Random) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < 9_990:
        words.append(rng.choice(NAMES) if rng.random() < 0.25 else rng.choice(WORDS))
    return " ".join(words)[:9_990]


def test_heavy_queries_of_one_key_do_not_hold_up_another_key(server: LiveServer) -> None:
    tally = Tally()
    rng = random.Random(10)
    heavy, light = client(server, HEAVY_KEY), client(server, LIGHT_KEY)
    try:
        for c, ns in ((heavy, "heavy"), (light, "light")):
            tally.note("seed", c.post("/v1/memories/batch", params={"namespace": ns},
                                      json={"memories": [
                {"content": f"{rng.choice(NAMES)} and {rng.choice(NAMES)}: " + salad(rng),
                 "memory_type": "semantic"} for _ in range(30)]}), (201,))

        def small() -> float:
            started = time.perf_counter()
            tally.note("small", light.post("/v1/search", params={"namespace": "light"},
                                           json={"query": "where is the violin"}), (200,))
            return time.perf_counter() - started

        small_alone = statistics.median(small() for _ in range(3))
        started = time.perf_counter()
        tally.note("heavy alone", heavy.post("/v1/search", params={"namespace": "heavy"},
                                             json={"query": _heavy_query(rng)}), (200,))
        heavy_alone = time.perf_counter() - started

        queries = [_heavy_query(random.Random(n)) for n in range(CLIENTS)]
        answers: list[httpx.Response] = []

        def burst(k: int) -> None:
            with client(server, HEAVY_KEY) as c:
                r = c.post("/v1/search", params={"namespace": "heavy"},
                           json={"query": queries[k]})
                answers.append(tally.note("heavy", r, (200, 429)))

        during: list[float] = []
        runner = threading.Thread(target=at_once, args=(CLIENTS, burst))
        runner.start()
        time.sleep(0.05)  # the burst is in
        during += [small() for _ in range(3)]
        runner.join()
    finally:
        heavy.close()
        light.close()
    tally.check()
    refused = [r for r in answers if r.status_code == 429]
    assert len(answers) == CLIENTS and refused, "admission control did not engage"
    assert all(r.headers.get("retry-after") and r.json()["status"] == 429 for r in refused)
    assert CLIENTS - len(refused) >= 2  # the key's share ran
    # The other key's small search waits for no pool worker, only for its share of the
    # CPU beside this key's two admitted queries: within a few heavy queries' time of
    # one run (measured: 2.4 s against 1.2 s alone, load 8 on 2 cores; before issue 28
    # it queued behind all eight, 9.4 s against 1.5 s).
    assert max(during) <= max(3 * heavy_alone, 10 * small_alone), (during, heavy_alone,
                                                                   small_alone)

