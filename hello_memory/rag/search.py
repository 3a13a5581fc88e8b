"""Chunk search: dense + BM25 per query variant, fused by reciprocal rank.

The variants are the question itself, then (when an LLM is configured and the
settings switch them on) MQE paraphrases and a HyDE hypothetical answer. Every
variant is searched in both views; all the ranked lists are fused by RRF
(``score = Σ 1 / (k + rank)``), joined to the chunk records (a vector without a
record is never returned) and, optionally, reordered by a pluggable reranker.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import Any, Protocol

from hello_memory.errors import ConfigError, InvalidInputError, ModelNotFoundError
from hello_memory.llm.base import LLMClient, Message, call_or_fallback
from hello_memory.ports.vector import Condition, VectorFilter
from hello_memory.rag.indexing import CHUNK_COLLECTION, DENSE, ChunkIndex
from hello_memory.rag.types import RAGHit
from hello_memory.rrf import reciprocal_rank_fusion
from hello_memory.text.bm25 import BM25_VECTOR

__all__ = [
    "CrossEncoderReranker", "Reranker", "Variant", "expand_hyde", "expand_mqe", "rrf_fuse",
    "search_chunks", "vector_filters",
]

log = logging.getLogger(__name__)

FILTER_KEYS = {"source": "source", "document_id": "document_id", "heading": "headings",
               "language": "language"}


class Reranker(Protocol):
    """Scores passages for a query (higher is better); e.g. a cross-encoder."""

    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...


class CrossEncoderReranker:
    """A sentence-transformers cross-encoder loaded from a local directory or the
    offline cache (no hub access); loaded on first use."""

    def __init__(self, model: str, *, device: str | None = None) -> None:
        self.model_name = model
        self.device = device
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            try:
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(self.model_name, device=self.device,
                                           local_files_only=True)
            except Exception as exc:
                raise ModelNotFoundError(self.model_name, "rag.reranker", str(exc)) from exc
        return self._model

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        scores = self._load().predict([(query, p) for p in passages])
        return [float(s) for s in scores]


@dataclass(frozen=True)
class Variant:
    """One query text searched in both views; ``name`` prefixes the view names."""

    name: str
    text: str
    is_passage: bool = False  # a HyDE passage is embedded as a document, not a query


_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s*")


def parse_queries(answer: str) -> list[str]:
    """The queries of an MQE answer: one per line (list marks, quotes and a preamble
    line ending in ":" dropped), or a JSON object ``{"queries": [...]}`` / a JSON list
    when the model answered that way anyway."""
    text = answer.strip()
    if text.startswith(("{", "[")):
        try:
            data = json.loads(text)
            items = data.get("queries", []) if isinstance(data, dict) else data
            if isinstance(items, list):
                return [q.strip() for q in items if isinstance(q, str) and q.strip()]
        except (json.JSONDecodeError, ValueError):
            pass
    out = []
    for line in text.splitlines():
        line = _LIST_MARK.sub("", line).strip().strip("\"'`").strip()
        if line and not line.endswith(":") and not line.startswith(("{", "}", "[", "]")):
            out.append(line)
    return out


def expand_mqe(llm: LLMClient | None, query: str, n: int) -> list[Variant]:
    """Up to ``n`` LLM paraphrases of ``query`` (none without an LLM or on failure).
    One plain completion, one query per line: no JSON, so never a repair round trip
    (MQE costs exactly one LLM call)."""
    messages: list[Message] = [
        {"role": "system", "content": "You rewrite search queries for a document search "
                                      "engine. Answer with the queries only, one per line."},
        {"role": "user", "content": (
            f"Write {n} different search queries that would find passages answering the "
            "question below: paraphrases, synonyms, the likely technical terms. Keep the "
            "question's language. One query per line, nothing else.\n\n"
            f"Question: {query}")},
    ]

    def ask(llm: LLMClient) -> list[str]:
        return parse_queries(llm.complete(messages, max_tokens=300))

    seen = {query.strip().casefold()}
    out: list[Variant] = []
    queries: list[str] = call_or_fallback(llm, ask, lambda: [], what="multi-query expansion")
    for text in queries:
        key = text.strip().casefold()
        if key and key not in seen and len(out) < n:
            seen.add(key)
            out.append(Variant(f"mqe{len(out) + 1}", text.strip()))
    return out


def expand_hyde(llm: LLMClient | None, query: str) -> list[Variant]:
    """A hypothetical answer passage to search with (none without an LLM)."""
    messages: list[Message] = [
        {"role": "system", "content": "You write short reference passages."},
        {"role": "user", "content": (
            "Write a short passage (3 to 5 sentences) that answers the question below as "
            "a reference document would. Keep the question's language; no preamble.\n\n"
            f"Question: {query}")},
    ]
    text = call_or_fallback(llm, lambda c: c.complete(messages, max_tokens=300),
                            lambda: "", what="HyDE").strip()
    return [Variant("hyde", text, is_passage=True)] if text else []


def vector_filters(filters: Mapping[str, Any] | None) -> VectorFilter:
    """Public filter names (source, document_id, heading, language) to payload fields,
    as the vector index's filter (one value: that value; several: any of them)."""
    if not filters:
        return VectorFilter()
    if not isinstance(filters, Mapping):
        raise InvalidInputError("filters must be a mapping")
    unknown = set(filters) - set(FILTER_KEYS)
    if unknown:
        raise InvalidInputError(f"unknown RAG filter(s) {sorted(unknown)}; "
                                f"use {sorted(FILTER_KEYS)}")
    out: dict[str, Condition] = {}
    for key, value in filters.items():
        values = list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
        if not values or not all(isinstance(v, str) and v.strip() for v in values):
            raise InvalidInputError(f"filter {key!r} takes a non-empty string or list of them")
        out[FILTER_KEYS[key]] = values[0] if len(values) == 1 else tuple(values)
    return VectorFilter(out)


def rrf_fuse(lists: Mapping[str, Sequence[str]], k: int) -> list[tuple[str, float, dict[str, int]]]:
    """Fuse ranked id lists: ``(id, Σ 1/(k + rank), {list: rank})``, best first (ties
    broken by the best single rank, then by id, so the order is deterministic). The
    project's one fusion (:func:`hello_memory.rrf.reciprocal_rank_fusion`), every list
    with weight 1."""
    fused = reciprocal_rank_fusion({name: [(i, 0.0) for i in ids] for name, ids in lists.items()},
                                   k=k)
    out = [(i, s, {name: hit.rank for name, hit in hits.items()})
           for i, (s, hits) in fused.items()]
    return sorted(out, key=lambda t: (-t[1], min(t[2].values()), t[0]))


def default_name(source: str) -> str:
    """A document's name when it was stored without one: a file's name, else the
    source as given (text added under a source name)."""
    return PurePath(source).name if PurePath(source).is_absolute() else source


def document_names(index: ChunkIndex, namespace: str, document_ids: Collection[str]
                   ) -> dict[str, str]:
    """The ``name`` of each document (stored with it on ingest), by id."""
    out: dict[str, str] = {}
    for doc_id in sorted(document_ids):
        doc = index.records.documents.find_document(namespace, doc_id)
        name = doc.metadata.get("name") if doc is not None else None
        if isinstance(name, str) and name:
            out[doc_id] = name
    return out


def search_chunks(
    index: ChunkIndex,
    namespace: str,
    variants: Sequence[Variant],
    *,
    top_k: int,
    candidates: int,
    rrf_k: int,
    filters: Mapping[str, Any] | None = None,
    reranker: Reranker | None = None,
    rerank_query: str | None = None,
) -> list[RAGHit]:
    """Search every variant in both views, fuse, join to records, rerank."""
    payload_filters = vector_filters(filters)
    limit = max(candidates, top_k)
    lists: dict[str, list[str]] = {}
    similarity: dict[str, float] = {}  # cosine of the question (first variant) to a chunk
    question: list[float] = []
    for v in variants:
        vector = (index.embedder.embed([v.text])[0] if v.is_passage
                  else index.embedder.embed_query(v.text))
        hits = index.vectors.nearest(CHUNK_COLLECTION, vector.tolist(), namespace=namespace,
                                    using=DENSE, limit=limit, filters=payload_filters)
        lists[f"{v.name}:dense"] = [h.id for h in hits]
        if not question:
            question = vector.tolist()
            similarity = {h.id: float(h.score) for h in hits}
        sparse = index.lexical.query(v.text)
        if sparse is not None:
            hits = index.vectors.nearest(CHUNK_COLLECTION, sparse, namespace=namespace,
                                        using=BM25_VECTOR, limit=limit, filters=payload_filters)
            lists[f"{v.name}:bm25"] = [h.id for h in hits]
    fused = rrf_fuse(lists, rrf_k)[:limit]
    chunks = {c.id: c for c in index.records.documents.get_chunks(namespace, [f[0] for f in fused])}
    names = document_names(index, namespace, {c.document_id for c in chunks.values()})
    hits_out = [
        RAGHit(chunk_id=c.id, document_id=c.document_id, source=c.source_path,
               heading_path=c.heading_path, content=c.content, score=score,
               ordinal=c.ordinal, start=c.start, end=c.end, token_count=c.token_count,
               language=c.language, views=views,
               name=names.get(c.document_id) or default_name(c.source_path))
        for cid, score, views in fused if (c := chunks.get(cid)) is not None
    ]
    missing = [h.chunk_id for h in hits_out if h.chunk_id not in similarity]
    if missing and question:  # found by BM25 or an expansion only: score them too
        for h in index.vectors.nearest(CHUNK_COLLECTION, question, namespace=namespace,
                                       using=DENSE, limit=len(missing), ids=missing):
            similarity[h.id] = float(h.score)
    hits_out = [replace(h, similarity=similarity.get(h.chunk_id)) for h in hits_out]
    if reranker is not None and hits_out:
        scores = reranker.score(rerank_query or variants[0].text, [h.content for h in hits_out])
        if len(scores) != len(hits_out):
            raise ConfigError(f"reranker returned {len(scores)} scores for {len(hits_out)} "
                              "passages")
        hits_out = [replace(h, rerank_score=s) for h, s in zip(hits_out, scores, strict=True)]
        hits_out.sort(key=lambda h: -(h.rerank_score or 0.0))
    return hits_out[:top_k]
