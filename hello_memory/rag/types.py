"""Results of the RAG pipeline: ingest reports, search hits, citations, answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Answer", "Citation", "IngestReport", "RAGHit", "cite"]


def cite(name: str, heading_path: str) -> str:
    """How a passage is cited: ``leave-policy.docx > Annual leave``."""
    return f"{name} > {heading_path}" if heading_path else name


@dataclass
class IngestReport:
    """What one ``ingest`` call did.

    ``files``: files indexed (new or changed), ``replaced`` of them replaced an older
    version; ``chunks``: chunks written; ``skipped``: (path, reason) for files left as
    they are (unchanged, links not followed); ``failed``: (path, error) for files that
    could not be ingested (nothing of them was written).
    """

    files: int = 0
    chunks: int = 0
    replaced: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    documents: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files, "chunks": self.chunks, "replaced": self.replaced,
            "skipped": len(self.skipped), "failed": len(self.failed),
            "skipped_files": [{"path": p, "reason": r} for p, r in self.skipped],
            "failed_files": [{"path": p, "error": e} for p, e in self.failed],
            "documents": list(self.documents), "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class RAGHit:
    """A chunk found by :meth:`RAGPipeline.search`.

    ``score`` is the reciprocal-rank-fusion score over every query variant and view;
    ``views`` maps each ranked list that found the chunk (``"query:dense"``,
    ``"mqe1:bm25"``, ``"hyde:dense"`` ...) to the chunk's 1-based rank in it;
    ``rerank_score`` is set when a reranker ordered the hits; ``similarity`` is the
    cosine similarity of the question itself to the chunk (what ``ask``'s relevance
    floor, ``rag.min_score`` / ``rag.relative_score``, compares).
    """

    chunk_id: str
    document_id: str
    source: str
    heading_path: str
    content: str
    score: float
    ordinal: int = 0
    start: int = 0
    end: int = 0
    token_count: int = 0
    language: str | None = None
    views: dict[str, int] = field(default_factory=dict)
    rerank_score: float | None = None
    name: str = ""  # the document's name for people (see DocumentRecord "name")
    similarity: float | None = None  # cosine of the question to the chunk (relevance floor)

    @property
    def citation(self) -> str:
        """``name > heading path``: the document's name (the uploaded file's original
        name, the path under the folder ingested, the text's source), then where in
        it; just the name for text without headings."""
        return cite(self.name or self.source, self.heading_path)

    def as_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id, "document_id": self.document_id, "source": self.source,
            "heading_path": self.heading_path, "content": self.content,
            "score": self.score, "ordinal": self.ordinal, "start": self.start, "end": self.end,
            "token_count": self.token_count, "language": self.language,
            "views": dict(self.views), "rerank_score": self.rerank_score,
            "similarity": self.similarity, "name": self.name or self.source,
            "citation": self.citation,
        }


@dataclass(frozen=True)
class Citation:
    """Passage ``[number]`` of an answer: where it comes from."""

    number: int
    source: str
    heading_path: str
    chunk_id: str
    document_id: str
    name: str = ""

    @property
    def label(self) -> str:
        """``[n] name > heading path``."""
        return f"[{self.number}] {cite(self.name or self.source, self.heading_path)}"

    def as_dict(self) -> dict[str, Any]:
        return {"number": self.number, "source": self.source, "heading_path": self.heading_path,
                "chunk_id": self.chunk_id, "document_id": self.document_id,
                "name": self.name or self.source, "label": self.label}


@dataclass(frozen=True)
class Answer:
    """The answer of :meth:`RAGPipeline.ask`.

    ``passages`` are the chunks given as context, numbered from 1 in that order;
    ``citations`` are the numbered passages the text cites (every passage when the
    text cites none, e.g. without an LLM); ``used_llm`` is False when the text is the
    ranked passages themselves (no LLM configured, or it failed).
    """

    text: str
    citations: list[Citation]
    passages: list[RAGHit]
    used_llm: bool
    context_tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "citations": [c.as_dict() for c in self.citations],
                "passages": [p.as_dict() for p in self.passages], "used_llm": self.used_llm,
                "context_tokens": self.context_tokens}
