"""Concurrent clients against a real ``hello-memory serve`` (issue 27, item 3).

    python -m benchmarks.serve_load [--clients 1 4 16] [--requests 96] [--preload 1500]
                                    [--modes batching plain] [--src DIR] [--label TEXT]
                                    [--md BENCHMARKS.md] [--results benchmarks/results]
                                    [--smoke]

One server per mode starts on an empty data directory on 127.0.0.1 (loopback only,
auth off; :mod:`benchmarks.serving`), both before any load: ``batching`` is the default
server (one embedding worker that coalesces concurrent requests,
``embedding/batching.py``), ``plain`` the same server with ``api.embed_batching`` off
(each request embeds on its own thread, as before). ``--preload`` memories go into each
first (``POST /v1/memories/batch``, at most ``limits.max_batch`` a call); then, for each
client count, ``--requests`` single-memory adds (``POST /v1/memories``, every text new)
and as many searches (``POST /v1/search``, top 5), split evenly over the client
threads: bounded loops, one keep-alive HTTP connection per thread. The modes take turns
phase by phase, in alternating order, so a change in the machine's load falls on both.
Requests/s counts the answered (2xx) requests; refusals (e.g. 429) are listed as errors.
``--src`` serves another checkout (e.g. ``git archive HEAD`` unpacked), so the numbers
belong to one commit and not to whatever else a shared working tree holds.

Every server reads entities with the rule extractor (``semantic.extractor: rules``),
as a ``hello-memory[server]`` install does: the development venv also holds spaCy (the
``nlp`` extra), whose reading of each question would otherwise be measured too
(benchmarks/search_cost.py reports its cost apart).

The floor is the embedding of the same add sentences in this process, measured in the
same run while the server is idle: in batches of 64 and one at a time (sentences/s).
The issue's targets: adds at 16 clients >= 0.6x the batch-64 rate; search requests/s
at 4 clients >= 1.6x one client. The embedding floor leaves out what an add stores, so
the library's own add rate is measured too, before the servers start: the same
sentences through ``MemoryManager.add_many`` in calls of 64 in this process (this
checkout's code, whatever ``--src`` serves), on an embedded store preloaded alike.
Beside each phase's server CPU stands this process's (the client threads): what the
load generator takes from the same machine. Numbers move with the machine's load;
compare the ratios measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from benchmarks.corpus import corpus, queries
from benchmarks.report import write_section
from benchmarks.serving import free_port, server_stack, start_serve

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
NAMESPACE = "load"
# the server settings of each mode: the default server batches embeddings and writes
MODES = {"batching": "true", "plain": "false"}
# entities as `pip install hello-memory[server]` reads them (no spaCy there)
EXTRACTOR = "rules"


def pct(xs: Sequence[float], q: float) -> float:
    ys = sorted(xs)
    return ys[min(len(ys) - 1, int(round(q * (len(ys) - 1))))]


def embedding_floor(sentences: Sequence[str], batch: int = 64,
                    one_at_a_time: int = 64) -> dict[str, float]:
    """Sentences/s of the default embedder in this process: batches of ``batch``, and
    one sentence per call (the first ``one_at_a_time`` sentences)."""
    from hello_memory.embedding import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(batch_size=batch)
    embedder.embed(["warm up"])
    texts = list(sentences)
    t0 = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed(texts[i:i + batch])
    batched = len(texts) / (time.perf_counter() - t0)
    single = texts[:one_at_a_time]
    t0 = time.perf_counter()
    for t in single:
        embedder.embed([t])
    return {"batch64_per_s": batched, "single_per_s": len(single) / (time.perf_counter() - t0),
            "sentences": float(len(texts))}


def library_floor(preload: Sequence[str], sentences: Sequence[str], max_batch: int,
                  batch: int = 64) -> float:
    """Memories/s of ``MemoryManager.add_many`` in this process, ``batch`` memories a
    call (embedding and the whole store path: dedup, supersede, index), on an embedded
    store holding ``preload`` as the servers' does, with the servers' extractor: what
    the library does with the adds without HTTP, threads or coalescing."""
    from hello_memory.config import load_settings
    from hello_memory.memory.manager import MemoryManager

    def entries(texts: Sequence[str]) -> list[dict[str, Any]]:
        return [{"content": t, "memory_type": "episodic", "namespace": NAMESPACE}
                for t in texts]

    with tempfile.TemporaryDirectory(prefix="hm-serve-floor-") as tmp:
        settings = load_settings(environ={}, data_dir=Path(tmp),
                                 semantic={"extractor": EXTRACTOR})
        with MemoryManager.open(settings) as mm:
            for i in range(0, len(preload), max_batch):
                mm.add_many(entries(preload[i:i + max_batch]))
            mm.add_many(entries(["warm up: the store loads what it loads lazily"]))
            texts = list(sentences)
            t0 = time.perf_counter()
            for i in range(0, len(texts), batch):
                mm.add_many(entries(texts[i:i + batch]))
            return len(texts) / (time.perf_counter() - t0)


def cpu_seconds(pid: int | None) -> float | None:
    """CPU time (user + system, every thread) the process ``pid`` has used, from
    ``/proc`` (Linux); None where it cannot be read."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def drive(base: str, clients: int, work: list[Callable[[httpx.Client], httpx.Response]],
          pid: int | None = None) -> dict[str, Any]:
    """Run ``work`` (one callable per request) over ``clients`` threads; requests/s over
    the phase, latency p50 / p95 ms, the errors (non-2xx or transport), and the CPU the
    server process ``pid`` used over the phase, in % of one core (how much of the
    machine it could use: 2 cores are 200 %), and the CPU this process used meanwhile
    (the clients: what the load itself takes from the same machine)."""
    lat: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    shares = [work[i::clients] for i in range(clients)]
    start = threading.Barrier(clients + 1)

    def client(share: list[Callable[[httpx.Client], httpx.Response]]) -> None:
        with httpx.Client(base_url=base, timeout=300) as http:
            start.wait()
            for call in share:
                t0 = time.perf_counter()
                try:
                    r = call(http)
                    ok, why = r.status_code < 300, f"HTTP {r.status_code}: {r.text[:120]}"
                except httpx.HTTPError as exc:
                    ok, why = False, f"{type(exc).__name__}: {exc}"
                took = time.perf_counter() - t0
                with lock:
                    lat.append(took)
                    if not ok:
                        errors.append(why)

    threads = [threading.Thread(target=client, args=(s,)) for s in shares]
    for t in threads:
        t.start()
    start.wait()
    cpu0, mine0 = cpu_seconds(pid), time.process_time()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    cpu1, mine1 = cpu_seconds(pid), time.process_time()
    cpu = None if cpu0 is None or cpu1 is None else 100 * (cpu1 - cpu0) / wall
    return {"clients": clients, "requests": len(work), "errors": len(errors),
            "first_error": errors[0] if errors else None,
            "per_s": (len(work) - len(errors)) / wall,
            "p50_ms": 1000 * statistics.median(lat), "p95_ms": 1000 * pct(lat, 0.95),
            "server_cpu_pct": cpu, "client_cpu_pct": 100 * (mine1 - mine0) / wall}


def prepare(base: str, preload: list[str], max_batch: int) -> None:
    """Preload the namespace and warm the server up (one add, one search)."""
    with httpx.Client(base_url=base, timeout=600) as http:
        for i in range(0, len(preload), max_batch):
            r = http.post("/v1/memories/batch", params={"namespace": NAMESPACE},
                          json={"memories": [{"content": t, "memory_type": "episodic"}
                                             for t in preload[i:i + max_batch]]})
            r.raise_for_status()
        warm = "warm up: the server loads what it loads lazily"
        http.post("/v1/memories", params={"namespace": NAMESPACE},
                  json={"content": warm}).raise_for_status()
        http.post("/v1/search", params={"namespace": NAMESPACE},
                  json={"query": warm}).raise_for_status()


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=60)


def server_env(src: Path, **settings: str) -> dict[str, str]:
    """The environment of a measured ``serve`` of checkout ``src``: auth off, the server
    install's extractor (whatever else this venv holds), then ``settings`` (environment
    names to values)."""
    return {**os.environ, "PYTHONPATH": str(src), "HELLO_MEMORY__API__AUTH_DISABLED": "true",
            "HELLO_MEMORY__SEMANTIC__EXTRACTOR": EXTRACTOR, **settings}


def run_modes(src: Path, modes: Sequence[str], clients: Sequence[int], requests: int,
              preload: list[str], adds: list[str], qs: list[str], max_batch: int
              ) -> list[dict[str, Any]]:
    """Both servers up, then every (client count, op) phase on each, modes alternating."""
    rows: list[dict[str, Any]] = []
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="hm-serve-load-") as tmp:
        try:
            bases = {}
            pids: dict[str, int] = {}
            for mode in modes:
                env = server_env(src, HELLO_MEMORY__API__EMBED_BATCHING=MODES[mode],
                                 HELLO_MEMORY__API__WRITE_BATCHING=MODES[mode])
                port = free_port()
                procs.append(start_serve(src, Path(tmp) / mode, port, env))
                pids[mode] = procs[-1].pid
                bases[mode] = f"http://127.0.0.1:{port}"
                print(f"  {mode}: serve on port {port}, preloading {len(preload)}", flush=True)
                prepare(bases[mode], preload, max_batch)
            fresh = iter(adds)
            turn = 0
            for c in clients:
                texts = [next(fresh) for _ in range(requests)]
                for op in ("add", "search"):
                    order = list(modes) if turn % 2 == 0 else list(reversed(modes))
                    turn += 1
                    for mode in order:
                        work = ([add_request(t) for t in texts] if op == "add"
                                else [search_request(qs[i % len(qs)]) for i in range(requests)])
                        print(f"  {mode}: {op} x {requests} from {c} client(s)", flush=True)
                        rows.append({"mode": mode, "op": op,
                                     **drive(bases[mode], c, work, pids[mode])})
        finally:
            for proc in procs:
                stop_server(proc)
    return rows


def add_request(text: str) -> Callable[[httpx.Client], httpx.Response]:
    return lambda http: http.post("/v1/memories", params={"namespace": NAMESPACE},
                                  json={"content": text, "memory_type": "episodic"})


def search_request(query: str) -> Callable[[httpx.Client], httpx.Response]:
    return lambda http: http.post("/v1/search", params={"namespace": NAMESPACE},
                                  json={"query": query, "top_k": 5})


def _rate(by: dict[tuple[str, str, int], dict[str, Any]], mode: str, op: str, c: int
          ) -> float | None:
    row = by.get((mode, op, c))
    return None if row is None else float(row["per_s"])


def _ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or not b else f"{a / b:.2f}"


def render(meta: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    fl = meta["floor"]
    by = {(r["mode"], r["op"], r["clients"]): r for r in rows}
    modes = [m for m in MODES if any(r["mode"] == m for r in rows)]
    lines = [
        "## The server under concurrent clients (issue 27)", "",
        f"Produced by `{meta['command']}` on {meta['date']} in {meta['minutes']:.1f} min, "
        f"{meta['cores']} cores, all-MiniLM-L6-v2 on {meta.get('engine', 'the CPU')} "
        "(benchmarks/serve_load.py), "
        f"serving {meta.get('label', 'this checkout')}. A "
        f"real `hello-memory serve` on 127.0.0.1 ({meta.get('server', 'uvicorn')}, embedded "
        "stores, auth off, entities from the rule extractor as in the `server` install) per "
        "mode, both "
        "running throughout, the modes taking turns phase by phase in alternating order, "
        f"{meta['preload']} memories preloaded in one namespace, then per client count "
        f"{meta['requests']} single-memory adds (`POST /v1/memories`, each text new) and "
        f"{meta['requests']} searches (`POST /v1/search`, top 5), split over the client "
        "threads. `batching` = the default server (one embedding worker coalescing "
        "concurrent requests, `embedding/batching.py`, and one writer storing concurrent "
        "adds together, `memory/write_batching.py`); `plain` = `api.embed_batching: "
        "false` and `api.write_batching: false` (each request embeds and stores alone). "
        "Requests/s counts answered requests; refused "
        "ones are listed as errors. Server / client CPU % = the CPU time the server "
        "process used over the phase, over its wall time (100 = one core; this machine "
        f"has {meta['cores']}), then the same for the benchmark process driving the "
        "clients: while the two leave a core's share idle, a server that cannot use it "
        "is bound by the interpreter lock, not by the machine (docs/PERFORMANCE.md, "
        "\"Threads that spin, and what holds the interpreter in a search\"). Machine "
        "load at start: "
        f"{meta['load_start']}; at the end: {meta['load_end']}. The machine is shared and "
        "noisy: compare the ratios of one run, not the absolute numbers.", "",
        "Embedding floor, this run, same add sentences, in the benchmark process while the "
        f"server idles: **{fl['batch64_per_s']:.0f} sentences/s in batches of 64**, "
        f"**{fl['single_per_s']:.0f}/s one at a time** (measured before and after the "
        f"servers: {meta['floor_before']['batch64_per_s']:.0f} / "
        f"{meta['floor_after']['batch64_per_s']:.0f} and "
        f"{meta['floor_before']['single_per_s']:.0f} / "
        f"{meta['floor_after']['single_per_s']:.0f}; their means are used). The "
        "library's own rate, before the servers, on a store preloaded alike: "
        f"**{meta['library_per_s']:.0f} memories/s** through `MemoryManager.add_many` "
        "in calls of 64 (embedding and the whole store path: duplicate check, "
        "supersede rules, index), which the embedding floor leaves out.", "",
        "| op | clients | " + " | ".join(
            f"{m} req/s | {m} p50 / p95 ms | {m} server / client CPU %" for m in modes)
        + (" | batching / plain req/s" if len(modes) == 2 else "")
        + " | batching req/s / floor (adds: batch-64 rate; searches: one-at-a-time rate)"
        " | adds / library rate |",
        "|---|---|" + "---|---|---|" * len(modes) + ("---|" if len(modes) == 2 else "")
        + "---|---|",
    ]
    for op in ("add", "search"):
        for c in meta["clients"]:
            cells = []
            for m in modes:
                r = by.get((m, op, c))
                if r is None:
                    cells += ["n/a", "n/a", "n/a"]
                    continue
                errs = f" ({r['errors']} errors)" if r["errors"] else ""
                cpu, mine = r.get("server_cpu_pct"), r.get("client_cpu_pct")
                cells += [f"{r['per_s']:.1f}{errs}", f"{r['p50_ms']:.0f} / {r['p95_ms']:.0f}",
                          ("n/a" if cpu is None else f"{cpu:.0f}") + " / "
                          + ("n/a" if mine is None else f"{mine:.0f}")]
            if len(modes) == 2:
                cells.append(_ratio(_rate(by, "batching", op, c), _rate(by, "plain", op, c)))
            floor = fl["batch64_per_s"] if op == "add" else fl["single_per_s"]
            cells.append(_ratio(_rate(by, modes[0], op, c), floor))
            cells.append(_ratio(_rate(by, modes[0], op, c), meta.get("library_per_s"))
                         if op == "add" else "")
            lines.append(f"| {op} | {c} | " + " | ".join(cells) + " |")
    lines += [""]
    for m in modes:
        adds = {c: by.get((m, "add", c)) for c in meta["clients"]}
        searches = {c: by.get((m, "search", c)) for c in meta["clients"]}
        top, one = max(meta["clients"]), min(meta["clients"])
        four = 4 if 4 in searches else top
        a, s1, s4 = adds.get(top), searches.get(one), searches.get(four)
        if a and s1 and s4:
            lines.append(
                f"- {m}: adds at {top} clients = **{a['per_s'] / fl['batch64_per_s']:.2f}x** "
                f"the batch-64 floor (target >= 0.6); searches at {four} clients = "
                f"**{s4['per_s'] / s1['per_s']:.2f}x** {one} client (target >= 1.6); "
                f"adds at {top} clients = **{_ratio(a['per_s'], meta.get('library_per_s'))}x** "
                "the library's own add rate.")
    return "\n".join(lines) + "\n"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} / {fifteen:.1f} (1 / 5 / 15 min)"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--requests", type=int, default=96,
                    help="adds and searches per client count (split over the clients)")
    ap.add_argument("--preload", type=int, default=1500)
    ap.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    ap.add_argument("--src", type=Path, default=ROOT,
                    help="the checkout whose `hello-memory serve` runs (default: this one)")
    ap.add_argument("--label", default=None,
                    help="names the served tree in the section (e.g. 'HEAD abc1234')")
    ap.add_argument("--md", default=str(ROOT / "BENCHMARKS.md"),
                    help="the BENCHMARKS file whose serve-load section is rewritten "
                         "('' to skip)")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--smoke", action="store_true",
                    help="1 and 2 clients, 4 requests, 20 preloaded: checks the harness runs "
                         "and writes its section, not how fast")
    args = ap.parse_args(argv)
    if args.smoke:
        args.clients, args.requests, args.preload = [1, 2], 4, 20
    from benchmarks.run import engine
    from hello_memory.config import load_settings

    max_batch = int(load_settings(environ={}).limits.max_batch)
    started = time.time()
    preload = corpus(args.preload, seed=7)
    adds = [f"{t} (added under load)" for t in
            corpus(args.requests * len(args.clients), seed=31)]
    qs = queries(max(8, args.requests), seed=11)
    meta: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "load_start": load(),
        "clients": args.clients, "requests": args.requests, "preload": args.preload,
        "engine": engine(), "server": server_stack(),
        "modes": args.modes, "label": args.label or ("this checkout" if args.src == ROOT
                                                     else str(args.src)),
        "command": "python -m benchmarks.serve_load" + (" --smoke" if args.smoke else "")
        + (f" --requests {args.requests}" if not args.smoke and args.requests != 96 else "")
        + (f" --src {args.src} --label '{args.label}'" if args.src != ROOT else "")}
    print("embedding floor ...", flush=True)
    sample = adds[:max(64, min(len(adds), 256))]
    meta["floor_before"] = embedding_floor(sample)
    print("library add rate ...", flush=True)
    meta["library_per_s"] = library_floor(preload, sample, max_batch)
    rows = run_modes(args.src, args.modes, args.clients, args.requests, preload, adds, qs,
                     max_batch)
    meta["floor_after"] = embedding_floor(sample)
    meta["floor"] = {k: (meta["floor_before"][k] + meta["floor_after"][k]) / 2
                     for k in ("batch64_per_s", "single_per_s")}
    meta["load_end"] = load()
    meta["minutes"] = (time.time() - started) / 60
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "serve_load.json").write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=1))
    body = render(meta, rows)
    print(body)
    if args.md:
        write_section(Path(args.md), "serve-load", body)


if __name__ == "__main__":
    main()
