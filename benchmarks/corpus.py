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
    ``benchmarks/.cache``; a longer cached run of the same corpus serves a prefix."""
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()[:16]
    meta_path = CACHE_DIR / f"{tag}.json"
    vec_path = CACHE_DIR / f"{tag}.npy"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
    if (meta is not None and vec_path.exists() and meta["n"] >= len(texts)
            and meta["prefix_digests"].get(str(len(texts))) == digest):
        return np.load(vec_path, mmap_mode="r")[: len(texts)].astype(np.float32)
    vecs = np.asarray(model.encode(texts, batch_size=batch, normalize_embeddings=True,
                                   show_progress_bar=progress), dtype=np.float32)
    if meta is not None and meta["n"] > len(texts):
        return vecs  # never replace a longer cache with a shorter one
    digests = {str(n): hashlib.sha256("\n".join(texts[:n]).encode("utf-8")).hexdigest()[:16]
               for n in (1000, 10_000, 100_000, len(texts)) if n <= len(texts)}
    np.save(vec_path, vecs)
    meta_path.write_text(json.dumps({"n": len(texts), "prefix_digests": digests}))
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


if __name__ == "__main__":  # precompute the 100k cache: python -m benchmarks.corpus
    from hello_memory.embedding import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder(batch_size=64)
    cached_embeddings(emb._ensure_loaded(), corpus(100_000), 64, "synthetic-minilm")
    print("cached", CACHE_DIR)
