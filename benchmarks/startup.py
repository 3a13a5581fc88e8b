"""How long a fresh process takes through the commands a user types.

    python -m benchmarks.startup [--src DIR ...] [--label NAME ...] [--runs 5]
                                 [--md BENCHMARKS.md]

Each run is a new process, as a shell user or an agent framework starting
``hello-memory`` gets: ``hello-memory add`` of one memory (open the store, load the
embedder, embed, write), ``hello-memory search`` of one question (open, embed the
query, fused search), and ``hello-memory serve`` from launch until ``/healthz``
answers and then until the first ``POST /v1/search`` has answered. Every command runs
on its own fresh data directory made by one earlier ``add``, so no run profits from
another's files beyond the operating system's page cache; one unmeasured ``add``
warms that cache first.

``--src`` runs another checkout (a ``git worktree`` of an older commit, say) with the
same commands, alternating the trees run by run so that both see the same machine
load. The figure is the median wall time over ``--runs`` runs; the machines these
run on are shared and noisy, so compare trees measured in one invocation.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.report import write_section
from benchmarks.serving import free_port, start_serve

HERE = Path(__file__).resolve().parents[1]
FACT = "Ada Lovelace wrote the first program for the Analytical Engine in 1843."
QUESTION = "Who wrote the first program?"


def _env(src: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HELLO_MEMORY")}
    return {**base, "PYTHONPATH": str(src), "HELLO_MEMORY_CONFIG": "",
            "HELLO_MEMORY__API__AUTH_DISABLED": "true"}


def _cli(src: Path, data: Path, *args: str) -> float:
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "hello_memory.interfaces.cli", "--data-dir", str(data),
                    *args],
                   cwd=src, env=_env(src), check=True, capture_output=True, timeout=600)
    return time.monotonic() - t0


def _serve(src: Path, data: Path) -> tuple[float, float]:
    """Seconds from launch to the first ``/healthz`` 200, and to the first search."""
    port = free_port()
    t0 = time.monotonic()
    proc = start_serve(src, data, port, _env(src), timeout=300, poll=0.05)
    try:
        ready = time.monotonic() - t0
        r = httpx.post(f"http://127.0.0.1:{port}/v1/search", params={"namespace": "default"},
                       json={"query": QUESTION}, timeout=300)
        if r.status_code != 200:
            raise RuntimeError(f"search answered {r.status_code}: {r.text[:300]}")
        return ready, time.monotonic() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def measure(src: Path, tmp: Path, run: int) -> dict[str, float]:
    fresh = tmp / f"{src.name}-{run}"
    times = {"add": _cli(src, fresh / "a", "add", FACT)}
    _cli(src, fresh / "s", "add", FACT)
    times["search"] = _cli(src, fresh / "s", "search", QUESTION)
    times["serve ready"], times["serve first search"] = _serve(src, fresh / "s")
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, nargs="+", default=[HERE], help="checkouts to run")
    ap.add_argument("--label", nargs="+", default=None, help="one name per --src")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--md", default="", help="write the table into this file's section")
    args = ap.parse_args()
    srcs = [s.resolve() for s in args.src]
    labels = args.label or [s.name for s in srcs]
    if len(labels) != len(srcs):
        ap.error("give one --label per --src")
    results: dict[str, list[dict[str, float]]] = {label: [] for label in labels}
    with tempfile.TemporaryDirectory(prefix="hm-startup-") as tmp_dir:
        tmp = Path(tmp_dir)
        for src in srcs:  # warm the page cache; not measured
            _cli(src, tmp / f"warm-{src.name}", "add", FACT)
        for run in range(args.runs):
            for src, label in zip(srcs, labels, strict=True):
                results[label].append(measure(src, tmp, run))
                print(label, run, {k: round(v, 2) for k, v in results[label][-1].items()},
                      flush=True)
    keys = list(next(iter(results.values()))[0])
    lines = ["| tree | " + " | ".join(f"{k} s" for k in keys) + " |",
             "|---|" + "---:|" * len(keys)]
    for label, runs in results.items():
        cells = [f"{statistics.median(r[k] for r in runs):.2f}" for k in keys]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print(table)
    if args.md:
        load = os.getloadavg()[0]
        body = (
            "## Start-up through the CLI and serve\n\n"
            f"Produced by `python -m benchmarks.startup {shlex.join(sys.argv[1:])}` on "
            f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, 1-minute load "
            f"{load:.1f} at the end. Median wall seconds of fresh processes: "
            "`hello-memory add` of one memory, `hello-memory search` of one question, "
            "and `serve` from launch to the first `/healthz` answer and to the first "
            "search answered. The trees ran alternately in one invocation.\n\n" + table)
        write_section(Path(args.md), "startup", body)


if __name__ == "__main__":
    main()
