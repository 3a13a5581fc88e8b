"""BM25 as a Qdrant sparse vector (ARCHITECTURE decision 2).

A document's sparse vector holds, per term, the BM25 term-frequency part

    w(t, d) = tf · (k1 + 1) / (tf + k1 · (1 − b + b · |d| / avgdl))

and the collection's sparse vector is created with Qdrant's IDF modifier, so the
server (or embedded Qdrant) multiplies in idf(t) over the namespace's collection at
query time. A query's sparse vector is 1.0 per distinct term: the dot product is then
the BM25 score. Terms come from :func:`hello_memory.text.tokenize` (jieba words for
Chinese, lower-cased words and numbers otherwise, stopwords out), and map to indices
by a stable 31-bit hash (the same term gets the same index in every process; two terms
colliding in 2^31 slots is rare enough to ignore for ranking).

``avgdl`` cannot be known when a memory is written (the corpus keeps growing), so it is
a constant: 16 terms, about the length of a chat turn or a short note.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from functools import lru_cache
from typing import Any

from hello_memory.text import tokenize
from hello_memory.types import SparseVector

__all__ = ["ANALYZER_VERSION", "BM25_VECTOR", "LexicalEncoder", "term_index"]

BM25_VECTOR = "bm25"
# Bumped whenever documents indexed before would no longer share terms with queries
# analysed now (2: possessives folded, English stemmed); see stores/lexical_version.py.
ANALYZER_VERSION = "2"


def term_index(term: str) -> int:
    digest = hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


class _Stemmers(threading.local):
    """One Snowball stemmer per thread. A stemmer keeps the word it is stemming in its
    own fields (``current``, ``cursor``, ``limit``), so one shared by threads stems a
    mix of two words: IndexError, or silently wrong terms (issue 28; docs/RELIABILITY.md
    "Threads"). Building one costs microseconds, once per thread."""

    stemmer: Any = None

    def get(self) -> Any:
        if self.stemmer is None:
            import snowballstemmer

            self.stemmer = snowballstemmer.stemmer("english")
        return self.stemmer


_stemmers = _Stemmers()


@lru_cache(maxsize=1 << 16)
def _stem_word(word: str) -> str:
    """One English word's stem; a pure function of the word, so cached: the search
    reads the terms of every lexical hit again and again, and an ingest stems the same
    words memory after memory (issue 27, docs/PERFORMANCE.md "Other fast paths")."""
    return str(_stemmers.get().stemWord(word))


def _stem(words: list[str]) -> list[str]:
    """English words stemmed with Snowball (``plays`` / ``play``, ``intolerance`` /
    ``intolerant``); Chinese words, numbers and identifiers as they are. Thread-safe:
    each thread stems with its own stemmer (the cache holds finished stems only)."""
    return [_stem_word(w) if w.isascii() and w.isalpha() else w for w in words]


class LexicalEncoder:
    """BM25 document and query vectors (see the module doc). ``stem`` stems English
    terms so a question's "play" finds a memory's "plays"."""

    def __init__(self, *, k1: float = 1.2, b: float = 0.75, avgdl: float = 16.0,
                 stem: bool = True) -> None:
        self.k1, self.b, self.avgdl, self.stem = k1, b, avgdl, stem

    def terms(self, text: str) -> list[str]:
        words = tokenize(text, remove_stopwords=True) or tokenize(text)
        return _stem(words) if self.stem else words

    def document(self, text: str) -> SparseVector | None:
        """The document vector, or None when the text has no terms at all."""
        terms = self.terms(text)
        if not terms:
            return None
        counts = Counter(term_index(t) for t in terms)
        norm = self.k1 * (1 - self.b + self.b * len(terms) / self.avgdl)
        indices = sorted(counts)
        return SparseVector(tuple(indices),
                            tuple(counts[i] * (self.k1 + 1) / (counts[i] + norm) for i in indices))

    def query(self, text: str) -> SparseVector | None:
        indices = sorted({term_index(t) for t in self.terms(text)})
        return SparseVector(tuple(indices), tuple(1.0 for _ in indices)) if indices else None
