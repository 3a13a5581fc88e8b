"""Two ``hello-memory serve`` processes side by side, one load alternating between them
phase by phase: an A/B of two checkouts or two environments (issue 27).

    python -m benchmarks.serve_ab [--op add|search] [--clients 16] [--requests 192]
                                  [--rounds 6] [--preload 1500]
                                  [--a-src DIR] [--b-src DIR] [--b-env NAME=VALUE ...]
                                  [--b-without MODULE ...] [--postgres] [--label TEXT]
                                  [--section NAME] [--md BENCHMARKS.md] [--smoke]

Both servers start on empty data directories on 127.0.0.1 (auth off, entities from the
rule extractor, as :mod:`benchmarks.serve_load` runs them) and get the same
``--preload`` memories. Then ``--rounds`` phases, each ``--requests`` single-memory adds
(every text new) or searches (top 5) split over ``--clients`` threads, go to A and B in
alternating order, so a change in the machine's load falls on both. B differs from A by
its checkout (``--b-src``), its environment (``--b-env``, e.g.
``HELLO_MEMORY__API__EMBED_BATCHING=false``) or modules it runs without
(``--b-without httptools uvloop``: a ``sitecustomize`` on B's path makes them
unimportable, as on an install that lacks them). With ``--postgres`` each side keeps its
records and vectors in a database of its own on one throwaway PostgreSQL server (a
fleet's stores: ``records.url`` and ``vector.provider: pgvector``; tests/postgres_server.py)
instead of its embedded directory. The section gives each side's median
requests/s and p50 over the rounds, and B's median over A's: compare that ratio, not
the absolute numbers, which move with the machine's load.
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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.corpus import corpus, queries
from benchmarks.report import write_section
from benchmarks.serve_load import (
    add_request,
    drive,
    load,
    prepare,
    search_request,
    server_env,
    stop_server,
)
from benchmarks.serving import free_port, server_stack, start_serve

ROOT = Path(__file__).resolve().parents[1]


def side_env(src: Path, extra: Sequence[str], without: Sequence[str], tmp: Path
             ) -> dict[str, str]:
    """The environment of one side's server (serve_load.server_env): ``src`` on the
    path, ``extra`` settings (``NAME=VALUE``), and a ``sitecustomize`` that hides the
    modules ``without``."""
    settings = {}
    for item in extra:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"--b-env takes NAME=VALUE, got {item!r}")
        settings[name] = value
    env = server_env(src, **settings)
    if without:
        hide = tmp / "without"
        hide.mkdir(parents=True, exist_ok=True)
        (hide / "sitecustomize.py").write_text(
            "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in without),
            encoding="utf-8")
        env["PYTHONPATH"] = f"{hide}{os.pathsep}{env['PYTHONPATH']}"
    return env


@contextmanager
def stores_of(postgres: bool) -> Iterator[dict[str, list[str]]]:
    """Each side's settings for its stores: none (its embedded directory), or with
    ``postgres`` a database of its own on one throwaway PostgreSQL server."""
    if not postgres:
        yield {"A": [], "B": []}
        return
    sys.path.insert(0, str(ROOT / "tests"))  # the throwaway PostgreSQL server
    from postgres_server import PostgresServer

    with PostgresServer() as server:
        yield {side: [f"HELLO_MEMORY__RECORDS__URL={server.create_database()}",
                      "HELLO_MEMORY__VECTOR__PROVIDER=pgvector"] for side in ("A", "B")}


def run_ab(args: argparse.Namespace, max_batch: int) -> dict[str, list[dict[str, Any]]]:
    """Both servers up and preloaded (``max_batch`` memories a call), then
    ``args.rounds`` phases on each, alternating."""
    texts = corpus(args.preload + args.rounds * args.requests, seed=7)
    qs = queries(100, seed=11)
    rows: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    procs = {}
    with tempfile.TemporaryDirectory(prefix="hm-serve-ab-") as tmp, \
            stores_of(args.postgres) as stores:
        envs = {"A": side_env(args.a_src, stores["A"], [], Path(tmp) / "a"),
                "B": side_env(args.b_src, [*stores["B"], *args.b_env], args.b_without,
                              Path(tmp) / "b")}
        try:
            bases = {}
            for side in ("A", "B"):
                port = free_port()
                procs[side] = start_serve(getattr(args, f"{side.lower()}_src"),
                                          Path(tmp) / f"data-{side}", port, envs[side])
                bases[side] = f"http://127.0.0.1:{port}"
                prepare(bases[side], texts[:args.preload], max_batch)
            for r in range(args.rounds):
                start = args.preload + r * args.requests
                fresh = texts[start:start + args.requests]
                for side in (("A", "B") if r % 2 == 0 else ("B", "A")):
                    work = ([add_request(t) for t in fresh] if args.op == "add"
                            else [search_request(qs[i % len(qs)]) for i in range(args.requests)])
                    row = drive(bases[side], args.clients, work, procs[side].pid)
                    rows[side].append(row)
                    print(f"  round {r + 1} {side}: {row['per_s']:.1f}/s, "
                          f"p50 {row['p50_ms']:.0f} ms", flush=True)
        finally:
            for proc in procs.values():
                stop_server(proc)
    return rows


def render(meta: dict[str, Any], rows: dict[str, list[dict[str, Any]]]) -> str:
    """The section: how it was run, each side's medians, B over A."""
    med = {s: statistics.median(r["per_s"] for r in rows[s]) for s in rows}
    p50 = {s: statistics.median(r["p50_ms"] for r in rows[s]) for s in rows}
    errors = {s: sum(r["errors"] for r in rows[s]) for s in rows}
    what = "single-memory adds" if meta["op"] == "add" else "searches (top 5)"
    lines = [
        f"## {meta['label']}", "",
        f"Produced by `{meta['command']}` on {meta['date']}, {meta['cores']} cores "
        "(benchmarks/serve_ab.py). Two `hello-memory serve` on 127.0.0.1, each preloaded "
        f"with {meta['preload']} memories, then {meta['rounds']} phases of "
        f"{meta['requests']} {what} from {meta['clients']} client(s) on each, in "
        f"alternating order. Stores: {meta['stores']}. A: {meta['a']}. B: {meta['b']}. "
        "Machine load at start: "
        f"{meta['load_start']}; at the end: {meta['load_end']}. Compare the ratio, not "
        "the absolute numbers.", "",
        "| side | median req/s | median p50 ms | errors | req/s of each phase |",
        "|---|---|---|---|---|",
    ]
    for s in ("A", "B"):
        each = ", ".join(f"{r['per_s']:.1f}" for r in rows[s])
        lines.append(f"| {s} | {med[s]:.1f} | {p50[s]:.0f} | {errors[s]} | {each} |")
    lines += ["", f"B / A (median req/s): **{med['B'] / med['A']:.3f}**"]
    return "\n".join(lines) + "\n"


def _commit(src: Path) -> str:
    """The commit checked out at ``src`` (short), or '' outside a git checkout."""
    try:
        out = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def _dirty(src: Path) -> bool:
    """Whether the checkout at ``src`` has uncommitted changes to tracked files."""
    out = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no"],
                         capture_output=True, text=True, timeout=30, check=False)
    return bool(out.stdout.strip())


def _describe(src: Path, env: Sequence[str], without: Sequence[str]) -> str:
    tree = "this checkout" if src == ROOT else f"`{src}`"
    commit = _commit(src)
    if commit:
        tree += f" at {commit}" + (" with uncommitted changes" if _dirty(src) else "")
    parts = [tree, server_stack(without)]
    parts += [f"`{item}`" for item in env]
    return ", ".join(parts)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--op", choices=("add", "search"), default="add")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=192, help="requests per phase")
    ap.add_argument("--rounds", type=int, default=6, help="phases on each side")
    ap.add_argument("--preload", type=int, default=1500)
    ap.add_argument("--a-src", type=Path, default=ROOT)
    ap.add_argument("--b-src", type=Path, default=ROOT)
    ap.add_argument("--b-env", nargs="*", default=[], metavar="NAME=VALUE")
    ap.add_argument("--b-without", nargs="*", default=[], metavar="MODULE")
    ap.add_argument("--postgres", action="store_true",
                    help="each side's records and vectors in PostgreSQL (pgvector)")
    ap.add_argument("--label", default="A/B of two servers")
    ap.add_argument("--section", default="serve-ab", help="the BENCHMARKS section's name")
    ap.add_argument("--md", default="", help="the BENCHMARKS file to write ('' to skip)")
    ap.add_argument("--smoke", action="store_true", help="tiny run: 2 rounds of 4")
    args = ap.parse_args(argv)
    if args.smoke:
        args.rounds, args.requests, args.preload, args.clients = 2, 4, 20, 2
    meta: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "op": args.op,
        "clients": args.clients, "requests": args.requests, "rounds": args.rounds,
        "preload": args.preload, "label": args.label, "load_start": load(),
        "a": _describe(args.a_src, [], []),
        "b": _describe(args.b_src, args.b_env, args.b_without),
        "stores": ("records and vectors in PostgreSQL (pgvector), a database each"
                   if args.postgres else "the embedded stores (SQLite, Qdrant Edge)"),
        "command": "python -m benchmarks.serve_ab " + shlex.join(
            argv if argv is not None else sys.argv[1:])}
    from hello_memory.config import load_settings

    rows = run_ab(args, int(load_settings(environ={}).limits.max_batch))
    meta["load_end"] = load()
    text = render(meta, rows)
    print(text)
    if args.md:
        write_section(Path(args.md), args.section, text)


if __name__ == "__main__":
    main()
