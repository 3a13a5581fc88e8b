"""Workloads shared by the benchmarks: a synthetic corpus and queries (fixed seeds), the
LoCoMo dev turns, and an on-disk cache of real MiniLM embeddings.

The cache only ever holds vectors the model computed for exactly these texts (keyed by
the model, the seed and a hash of the texts); it lets the 100k rows measure the store
path alone without re-encoding 100k texts on every run. The corpus generator consumes
the same number of random draws per item, so ``corpus(n)`` is a prefix of
``corpus(m)`` for n < m and one cached 100k matrix serves every smaller N.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

CACHE_DIR = Path(__file__).resolve().parent / ".cache"
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"

NAMES = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Hana", "Ivan", "Judy"]
PLACES = ["Berlin", "Paris", "Tokyo", "Lisbon", "Hangzhou", "Toronto", "Nairobi", "Lima"]
THINGS = ["green tea", "jazz records", "mountain bikes", "sushi", "board games", "kayaks",
          "old maps", "espresso", "sci-fi novels", "houseplants"]
EVENTS = ["moved to {p}", "flew to {p} for a conference", "bought {t} in {p}",
          "met {o} in {p}", "started learning about {t}", "lost a bag of {t} in {p}",
          "hosted a dinner for {o}", "signed a lease in {p}"]
ZH = ["{n}上周在{p}买了{t}。", "{n}喜欢{t}，预算在一千元以内。", "{n}和{o}在{p}讨论了项目进度。"]


def corpus(n: int, seed: int = 7) -> list[str]:
    """``n`` short memories, one in five in Chinese; each text is unique."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        n1, n2 = rng.sample(NAMES, 2)
        p, t = rng.choice(PLACES), rng.choice(THINGS)
        if i % 5 == 4:
            out.append(rng.choice(ZH).format(n=n1, o=n2, p=p, t=t) + f" #{i}")
        else:
            ev = rng.choice(EVENTS).format(p=p, t=t, o=n2)
            out.append(f"{n1} {ev} (note {i}).")
    return out


def queries(k: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    forms = ["Where did {n} move?", "What does {n} like?", "Who went to {p}?",
             "{n}在{p}做了什么？", "Tell me about {t}"]
    return [rng.choice(forms).format(n=rng.choice(NAMES), p=rng.choice(PLACES),
                                     t=rng.choice(THINGS)) for _ in range(k)]


def cached_embeddings(model: Any, texts: list[str], batch: int, tag: str,
                      progress: bool = True) -> npt.NDArray[np.float32]:
    """Embeddings of ``texts`` by ``model`` (normalised), computed once and kept in
    ``benchmarks/.cache``; a longer cached run of the same corpus serves a prefix.

    Long runs (the 1M corpus took 24 minutes on 2 cores) are encoded in chunks of
    :data:`CHUNK` texts into ``{tag}.partial.npy``, with a progress line per chunk, and
    an interrupted run resumes from the last whole chunk of the same texts."""
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()[:16]
    meta_path = CACHE_DIR / f"{tag}.json"
    vec_path = CACHE_DIR / f"{tag}.npy"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
    if (meta is not None and vec_path.exists() and meta["n"] >= len(texts)
            and meta["prefix_digests"].get(str(len(texts))) == digest):
        return np.load(vec_path, mmap_mode="r")[: len(texts)].astype(np.float32)
    vecs = _encode_in_chunks(model, texts, batch, tag, digest, progress)
    if meta is not None and meta["n"] > len(texts):
        return vecs  # never replace a longer cache with a shorter one
    digests = {str(n): hashlib.sha256("\n".join(texts[:n]).encode("utf-8")).hexdigest()[:16]
               for n in (1000, 10_000, 100_000, 1_000_000, len(texts)) if n <= len(texts)}
    np.save(vec_path, vecs)
    meta_path.write_text(json.dumps({"n": len(texts), "prefix_digests": digests}))
    return vecs


CHUNK = 20_000  # texts per resumable chunk of cached_embeddings


def _encode_in_chunks(model: Any, texts: list[str], batch: int, tag: str, digest: str,
                      progress: bool) -> npt.NDArray[np.float32]:
    """``model.encode`` over ``texts`` chunk by chunk into a memory-mapped partial file
    (resumed when its digest is this corpus's, removed once whole); the whole matrix
    in memory."""
    if len(texts) <= CHUNK:
        return np.asarray(model.encode(texts, batch_size=batch, normalize_embeddings=True,
                                       show_progress_bar=progress), dtype=np.float32)
    part_path = CACHE_DIR / f"{tag}.partial.npy"
    state_path = CACHE_DIR / f"{tag}.partial.json"
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    dim = len(np.asarray(model.encode(["dimension probe"], normalize_embeddings=True))[0])
    done = int(state.get("done", 0)) if state.get("digest") == digest else 0
    if done and part_path.exists():
        out = np.lib.format.open_memmap(part_path, mode="r+")
    else:
        done = 0
        out = np.lib.format.open_memmap(part_path, mode="w+", dtype=np.float32,
                                        shape=(len(texts), dim))
    t0, start = time.perf_counter(), done
    while done < len(texts):
        end = min(done + CHUNK, len(texts))
        out[done:end] = np.asarray(model.encode(texts[done:end], batch_size=batch,
                                                normalize_embeddings=True), np.float32)
        out.flush()
        done = end
        state_path.write_text(json.dumps({"digest": digest, "done": done}))
        if progress:
            rate = (done - start) / max(time.perf_counter() - t0, 1e-9)
            eta = (len(texts) - done) / max(rate, 1e-9) / 60
            print(f"  embedded {done:,} / {len(texts):,} texts ({rate:.0f}/s, "
                  f"{eta:.0f} min left)", file=sys.stderr, flush=True)
    vecs = np.array(out, dtype=np.float32)
    del out  # the memory map, before its file goes
    part_path.unlink()
    state_path.unlink()
    return vecs


class CachedEmbedder:
    """Serves cached vectors for the corpus texts and asks the real embedder for any
    other text (queries): the store path is measured without re-encoding the corpus."""

    def __init__(self, inner: Any, texts: list[str], vectors: npt.NDArray[np.float32]) -> None:
        self.inner = inner
        self.dimension = inner.dimension
        self.model_name = getattr(inner, "model_name", "all-MiniLM-L6-v2")
        self._row = {t: i for i, t in enumerate(texts)}
        self._vectors = vectors

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        rows = [self._row.get(t) for t in texts]
        if all(r is not None for r in rows):
            return self._vectors[rows]  # type: ignore[index]
        return np.asarray(self.inner.embed(texts), dtype=np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return np.asarray(self.inner.embed_query(text), dtype=np.float32)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def locomo_samples(path: Path = LOCOMO) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text(encoding="utf-8")))


def locomo_questions(sample: dict[str, Any]) -> list[str]:
    """The questions of categories 1-4 (the retrieval protocol's)."""
    return [q["question"] for q in sample.get("qa", []) if q.get("category") in (1, 2, 3, 4)]


if __name__ == "__main__":  # python -m benchmarks.corpus [N]: precompute the N cache
    from hello_memory.embedding import SentenceTransformerEmbedder

    size = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    emb = SentenceTransformerEmbedder(batch_size=64)
    cached_embeddings(emb._ensure_loaded(), corpus(size), 64, "synthetic-minilm")
    print("cached", size, "in", CACHE_DIR)
