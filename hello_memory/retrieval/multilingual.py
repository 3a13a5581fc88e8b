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
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from hello_memory.text import contains_cjk
from hello_memory.types import MemoryItem

__all__ = ["CACHE_SIZE", "MultilingualReader"]

log = logging.getLogger(__name__)

# Vectors kept per process (512 floats each: about 2 KB, so 20,000 is about 40 MB).
CACHE_SIZE = 20_000
# A memory's text beyond this is not read again (the embedder truncates long text too).
_MAX_CHARS = 2000
# Stacked listing vectors kept (rank's ``listing``): 2,000 x 512 floats are 4 MB each.
LISTINGS = 8


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
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        # mark -> (row of each listed id, the text each row read, their stacked vectors)
        self._listings: OrderedDict[Hashable, tuple[dict[str, int], list[str], np.ndarray]] = (
            OrderedDict())

    def _model(self) -> Any:
        if self._embedder is not None or self._missing:
            return self._embedder
        with self._load_lock:
            if self._embedder is None and not self._missing:
                from hello_memory.config import EmbeddingSettings
                from hello_memory.errors import ModelNotFoundError
                from hello_memory.factory import build_embedder

                try:
                    self._embedder = build_embedder(EmbeddingSettings(preset=self.preset))
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
        return contains_cjk(query) or any(contains_cjk(i.content[:_MAX_CHARS])
                                          for i in items.values())

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

    def _listed(self, mark: Hashable, listed: Sequence[str], text_of: Mapping[str, str]
                ) -> tuple[dict[str, int], list[str], np.ndarray]:
        """The ``listed`` ids with their texts and vectors, stacked, kept under ``mark``."""
        with self._cache_lock:
            kept = self._listings.get(mark)
            if kept is not None:
                self._listings.move_to_end(mark)
                return kept
        texts = [text_of[m] for m in listed]
        kept = ({m: n for n, m in enumerate(listed)}, texts, self._vectors(texts))
        with self._cache_lock:
            self._listings[mark] = kept
            while len(self._listings) > LISTINGS:
                self._listings.popitem(last=False)
        return kept

    def _matrix(self, ids: Sequence[str], texts: Sequence[str],
                listing: tuple[Hashable, Sequence[str]] | None) -> np.ndarray:
        """The vectors of ``texts`` (one per id), in order: a kept listing's row where
        it read the same text (a mark that outlived an edit only costs a lookup, never
        an old vector), the rest from the cache."""
        if listing is None or not listing[1]:
            return self._vectors(list(texts))
        text_of = dict(zip(ids, texts, strict=True))
        rows, kept, stacked = self._listed(listing[0], listing[1], text_of)
        picks: list[int] = []
        rest: list[str] = []
        for m, text in zip(ids, texts, strict=True):
            row = rows.get(m)
            if row is not None and kept[row] == text:
                picks.append(row)
            else:
                picks.append(len(kept) + len(rest))
                rest.append(text)
        if rest:
            stacked = np.concatenate([stacked, self._vectors(rest)])
        return stacked[picks]

    def rank(self, query: str, items: Mapping[str, MemoryItem], *, limit: int | None = None,
             listing: tuple[Hashable, Sequence[str]] | None = None
             ) -> list[tuple[str, float]]:
        """(memory id, cosine) for every item (the best ``limit``), best first; [] when
        the model is not installed or there is nothing to rank. ``listing``: (mark,
        ids among ``items``) whose vectors are kept stacked under ``mark`` for the next
        call with it (the caller's write generation of a namespace read whole; a row
        is reused only for the text it read)."""
        if not items or self._model() is None:
            return []
        ids = list(items)
        matrix = self._matrix(ids, [items[m].content[:_MAX_CHARS] for m in ids], listing)
        with self._call_lock:
            q = np.asarray(self._model().embed_query(query[:_MAX_CHARS]), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(q) or 1.0)
        cosines = matrix @ q / np.where(norms == 0, 1.0, norms)
        order = np.argsort(-cosines, kind="stable")[:limit]
        return [(ids[i], float(cosines[i])) for i in order]
