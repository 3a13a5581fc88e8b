"""Fork server for the crash-consistency tests.

Loading the embedding model costs seconds per process, so this server
loads them once and forks one child per trial; the test SIGKILLs the child after a
random delay. Protocol (one JSON or word per line):

    server -> test   ready
    test -> server   {"op": "add_many", "dir": ..., "ns": ..., "seed": 1, "log": ...,
                      "records_url": ... (optional: records elsewhere than in "dir"),
                      "settings": {...} (optional: more settings, e.g. vector.provider)}
    server -> test   pid <child pid>
    test -> server   reap            (after killing the child; the pid stays ours till now)
    server -> test   exit <raw wait status>
    test -> server   quit

``{"op": "serve", "dir": ..., "port": ..., "log": ...}`` runs the REST API (the
FastAPI app under uvicorn) on that port until it is killed: a server that starts in
well under a second, for the SIGKILL drift test.

The child writes its journal to ``log``, one JSON object per line, unbuffered:
``{"ev": "open"}`` once its stores are open, ``{"ev": "try", ...}`` before each call
and ``{"ev": "ack", ...}`` after the call returned (the write is acknowledged).
"""

from __future__ import annotations

import json
import os
import random
import sys
from datetime import timedelta
from typing import Any

# Before torch loads: one thread (no OpenMP pool to break across fork), no tokenizer
# parallelism (the Rust pool does not survive fork either).
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

_WORD_TEXT = (
    "amber anchor apple arrow autumn badge bakery bamboo banner barrel beacon bicycle "
    "blanket blossom bottle bridge bucket cabin cactus camera candle canyon carpet castle "
    "cellar cherry chimney circus cliff clock cloud compass copper cottage crystal desert "
    "diamond dolphin dragon drum eagle engine falcon feather ferry fiddle forest fountain "
    "garden garlic glacier goblet granite guitar hammer harbor helmet honey island ivory "
    "jacket jungle kettle kitten ladder lantern lemon library lighthouse magnet maple "
    "marble meadow mirror monkey mountain needle noodle oasis orchard otter paddle palace "
    "parrot pebble pepper piano pillow planet pocket pumpkin quartz rabbit radio raven "
    "ribbon river rocket saddle salmon satchel scarf shovel silver spider spoon statue "
    "tablet teapot thunder tiger tomato tractor trumpet tulip tunnel umbrella valley "
    "velvet violin volcano wagon walnut whistle willow window zebra"
)
_NAME_TEXT = ("Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy "
              "Rupert Sybil Trent Victor Walter")
WORDS = _WORD_TEXT.split()
NAMES = _NAME_TEXT.split()


def words(rng: random.Random, n: int = 6) -> str:
    return " ".join(rng.sample(WORDS, n))


def sentence(rng: random.Random) -> str:
    """A distinct sentence naming a person (so semantic ones feed the graph)."""
    return f"{rng.choice(NAMES)} packed the {words(rng)} near the {words(rng, 3)}"


def open_manager(data_dir: str, embedder: Any, records_url: str | None = None,
                 overrides: dict[str, Any] | None = None) -> Any:
    from hello_memory.config import load_settings
    from hello_memory.factory import open_stores
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.text.entities import RuleExtractor
    from hello_memory.text.links import GraphLinks

    records: dict[str, Any] = dict(overrides or {})
    if records_url:
        records["records"] = {"url": records_url}
    # opening replays what an earlier kill left pending, graph links included (as
    # MemoryManager.open does)
    extractor = RuleExtractor()
    stores = open_stores(load_settings(environ={}, data_dir=data_dir, **records),
                         embedder=embedder, extractor=GraphLinks(extractor))
    return MemoryManager(stores, extractor=extractor)


class Journal:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, **event: Any) -> None:
        os.write(self.fd, (json.dumps(event) + "\n").encode())  # one write: no torn line


def serve(spec: dict[str, Any], embedder: Any) -> None:
    """The REST API on ``spec["port"]`` over the stores in ``spec["dir"]`` (opening
    them replays what an earlier kill left pending); runs until killed."""
    import uvicorn

    from hello_memory.config import load_settings
    from hello_memory.interfaces.rest import create_app

    journal = Journal(spec["log"])
    more = spec.get("settings") or {}
    settings = load_settings(environ={}, data_dir=spec["dir"], api={"auth_disabled": True},
                             **more)
    mm = open_manager(spec["dir"], embedder, overrides=more)
    journal.write(ev="open")
    uvicorn.run(create_app(settings, manager=mm), host="127.0.0.1", port=spec["port"],
                log_level="warning")


def run_trial(spec: dict[str, Any], embedder: Any) -> None:
    if spec["op"] == "serve":
        serve(spec, embedder)
        return
    rng = random.Random(spec["seed"])
    journal = Journal(spec["log"])
    mm = open_manager(spec["dir"], embedder, spec.get("records_url"), spec.get("settings"))
    journal.write(ev="open")
    ns, op = spec["ns"], spec["op"]
    if op == "add_many":
        for b in range(100_000):
            entries = [{"content": sentence(rng), "namespace": ns, "importance": 0.5,
                        "memory_type": "semantic" if k % 2 else "episodic",
                        "metadata": {"batch": b}} for k in range(4)]
            journal.write(ev="try", batch=b)
            items = mm.add_many(entries)
            journal.write(ev="ack", batch=b, ids=[i.id for i in items],
                          contents=[i.content for i in items])
    elif op == "update":
        ids = spec["ids"]
        for v in range(100_000):
            idx = rng.randrange(len(ids))
            content = f"revision {v}: {sentence(rng)}"
            journal.write(ev="try", id=ids[idx], content=content)
            mm.update(ids[idx], namespace=ns, content=content,
                      importance=round(rng.uniform(0.1, 0.9), 3))
            journal.write(ev="ack", id=ids[idx], content=content)
    elif op == "forget":
        for j in range(spec["n"]):
            threshold = (j + 1) / spec["n"]
            journal.write(ev="try", j=j)
            mm.forget("importance", namespace=ns, threshold=threshold, hard=True)
            journal.write(ev="ack", j=j)
    elif op == "consolidate":
        for r in range(100_000):
            base = sentence(rng)
            entries = [{"content": c, "namespace": ns, "importance": 0.9,
                        "memory_type": "episodic",
                        "event_time": mm._clock() - timedelta(minutes=r)}
                       for c in (base, base + " again", sentence(rng))]
            journal.write(ev="try", round=r, kind="add")
            items = mm.add_many(entries)
            journal.write(ev="ack", round=r, kind="add", ids=[i.id for i in items])
            journal.write(ev="try", round=r, kind="consolidate")
            mm.consolidate("episodic", "semantic", namespace=ns, importance_threshold=0.7)
            journal.write(ev="ack", round=r, kind="consolidate")
    else:
        raise ValueError(f"unknown op {op!r}")
    mm.close()
    journal.write(ev="done")


def main() -> None:
    from hello_memory.embedding import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    # one intra-op thread (ONNX Runtime's session, or torch's): no pool to break across fork
    embedder.set_threads(1)
    embedder.embed(["warm up the model before forking"])
    print("ready", flush=True)
    for line in sys.stdin:
        line = line.strip()
        if line == "quit":
            return
        spec = json.loads(line)
        pid = os.fork()
        if pid == 0:  # child: never return into the server loop
            code = 0
            try:
                out = os.open(spec["log"] + ".stderr", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
                os.dup2(out, 1)
                os.dup2(out, 2)
                run_trial(spec, embedder)
            except BaseException as exc:  # noqa: BLE001 - reported through the exit code
                import traceback

                traceback.print_exc()
                print(f"trial failed: {exc!r}", flush=True)
                code = 2
            os._exit(code)
        print(f"pid {pid}", flush=True)
        if sys.stdin.readline().strip() != "reap":
            raise SystemExit("protocol error: expected 'reap'")
        _, status = os.waitpid(pid, 0)
        print(f"exit {status}", flush=True)


if __name__ == "__main__":
    main()
