"""Index drift under concurrent HTTP writes, measured through a real ``hello-memory
serve`` (issue 16).

    python -m benchmarks.drift [--src DIR] [--label NAME] [--clients 8] [--ops 40]
                               [--kills 3] [--md BENCHMARKS.md]

One run starts a fresh server on an empty data directory (auth off, loopback), and 8
clients (4 namespaces) add, batch-add, update, delete and forget memories at once over
REST, the load of tests/reliability/load.py. With ``--kills N`` the server is
SIGKILLed mid-load N times and started again on the same directory (it replays the
outbox at open; nothing runs ``reconcile``). At the end the server is stopped and a
dry-run ``reconcile`` of every namespace, run by the same source tree, counts what it
would change: orphan vectors and graph links, stale payloads, missing vectors or links,
pending rows. 0 everywhere is an index that did not drift.

``--src`` runs another checkout (e.g. a ``git worktree`` of an older commit) with this
benchmark's load, so before and after are measured by one script on one machine.
Requests per second are wall-clock over the whole load, SIGKILLs and restarts
included; they move with the machine's load and are a rough figure only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.report import write_section
from benchmarks.serving import free_port, start_serve
from tests.reliability.load import DRIFT_FIELDS, run_load

NAMESPACES = ["drift-a", "drift-b", "drift-c", "drift-d"]
HERE = Path(__file__).resolve().parents[1]

_RECONCILE = """
import json, sys
from hello_memory.memory.manager import MemoryManager
fields = json.loads(sys.argv[2])
out = {}
with MemoryManager.open(data_dir=sys.argv[1], environ={}) as mm:
    for ns in json.loads(sys.argv[3]):
        report = mm.reconcile(namespace=ns, dry_run=True).as_dict()
        for k in fields:
            v = report.get(k)
            n = v if isinstance(v, int) else len(v or ())
            out[k] = out.get(k, 0) + n
    out["memories"] = sum(mm.stats(ns)["total"] for ns in json.loads(sys.argv[3]))
print(json.dumps(out))
"""


def _env(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(src), "HELLO_MEMORY__API__AUTH_DISABLED": "true"}


def run(src: Path, clients: int, ops: int, kills: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hm-drift-") as tmp:
        data = Path(tmp) / "data"
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        requests, errors, elapsed = 0, [], 0.0
        for round_ in range(kills + 1):
            proc = start_serve(src, data, port, _env(src))
            timer = None
            if round_ < kills:  # this round ends in a SIGKILL mid-load
                timer = threading.Timer(1.5, os.kill, args=(proc.pid, signal.SIGKILL))
                timer.start()
            t0 = time.monotonic()
            result = run_load(base, NAMESPACES, clients=clients, ops=ops, seed=round_,
                              tolerate_transport=timer is not None)
            elapsed += time.monotonic() - t0
            requests += sum(n for k, n in result.counts.items() if k != "transport")
            errors += result.errors
            if timer is not None:
                timer.join()
            else:
                proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
        found = subprocess.run(
            [sys.executable, "-c", _RECONCILE, str(data), json.dumps(DRIFT_FIELDS),
             json.dumps(NAMESPACES)],
            cwd=src, env=_env(src), capture_output=True, text=True, timeout=600, check=True)
        drift = json.loads(found.stdout.strip().splitlines()[-1])
    return {"requests": requests, "errors": errors, "seconds": elapsed, "drift": drift}


def _row(label: str, kills: int, r: dict[str, Any]) -> str:
    d = r["drift"]
    total = sum(v for k, v in d.items() if k != "memories")
    parts = ", ".join(f"{k} {v}" for k, v in d.items() if k != "memories" and v) or "none"
    return (f"| {label} | {kills} | {r['requests']} | {len(r['errors'])} | "
            f"{r['requests'] / max(r['seconds'], 1e-9):.1f} | {d['memories']} | "
            f"{total} ({parts}) |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, default=HERE, help="the checkout to serve")
    ap.add_argument("--label", default="this tree")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--ops", type=int, default=40, help="operations per client per round")
    ap.add_argument("--kills", type=int, nargs="+", default=[0, 3])
    ap.add_argument("--md", default="", help="write the rows into this file's section")
    args = ap.parse_args()
    rows = []
    for kills in args.kills:
        r = run(args.src.resolve(), args.clients, args.ops, kills)
        rows.append(_row(args.label, kills, r))
        print(rows[-1], flush=True)
        for e in r["errors"][:3]:
            print("   error:", e[:160], flush=True)
    if args.md:
        body = "\n".join(rows)
        write_section(Path(args.md), f"drift-{args.label.replace(' ', '-')}", body)


if __name__ == "__main__":
    main()
