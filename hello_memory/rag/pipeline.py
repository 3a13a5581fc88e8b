"""``RAGPipeline``: ingest documents into a namespace (one knowledge base), search
them, and answer questions from them with citations.

>>> from hello_memory import MemoryManager                              # doctest: +SKIP
>>> from hello_memory.rag import RAGPipeline                            # doctest: +SKIP
>>> with MemoryManager.open() as mm:                                    # doctest: +SKIP
...     rag = RAGPipeline.from_manager(mm)
...     rag.ingest(["docs/"], namespace="kb", progress=True)
...     print(rag.ask("How do I install it?", namespace="kb").text)

It shares the memory layer's record store, vector store, lexical encoder settings and
embedder; chunks live in their own Qdrant collection (``rag_chunks``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hello_memory import telemetry
from hello_memory.config import RagSettings
from hello_memory.errors import InvalidInputError
from hello_memory.llm.base import LLMClient
from hello_memory.rag.ask import answer_question
from hello_memory.rag.chunker import MarkdownChunker
from hello_memory.rag.errors import DocumentError
from hello_memory.rag.indexing import CHUNK_COLLECTION, ChunkIndex, Progress
from hello_memory.rag.loaders import (
    SUPPORTED_SUFFIXES,
    LoadedDocument,
    check_text,
    collect_files,
    load_file,
)
from hello_memory.rag.safe_parse import ParseLimits
from hello_memory.rag.search import (
    CrossEncoderReranker,
    Reranker,
    Variant,
    expand_hyde,
    expand_mqe,
    search_chunks,
)
from hello_memory.rag.types import Answer, IngestReport, RAGHit
from hello_memory.stores.records.documents import ChunkRecord, DocumentRecord
from hello_memory.text import detect_language
from hello_memory.text.bm25 import LexicalEncoder
from hello_memory.text.tokens import TokenCounter, default_token_counter
from hello_memory.types import new_id, utcnow
from hello_memory.validation import (
    content_hash,
    require_namespace,
    validate_content,
    validate_top_k,
)

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.stores.bundle import Stores

__all__ = ["RAGPipeline"]


class RAGPipeline:
    """Documents -> chunks -> records + vectors -> fused search -> cited answers."""

    def __init__(self, stores: Stores, *, settings: RagSettings | None = None,
                 llm: LLMClient | None = None, reranker: Reranker | None = None,
                 counter: TokenCounter | None = None) -> None:
        self.settings = settings or RagSettings()
        s = self.settings
        # the ``limits`` the stores were opened with: texts and queries are checked
        # against them, documents parsed under their ``document_*`` bounds
        # (docs/ARCHITECTURE.md, "Where settings reach the parts")
        self.limits = stores.limits
        self.parse_limits = ParseLimits.from_settings(stores.limits)
        self.llm = llm
        self.counter = counter or default_token_counter()
        self.chunker = MarkdownChunker(s.chunk_size, s.chunk_overlap, self.counter)
        self.reranker = reranker if reranker is not None else (
            CrossEncoderReranker(s.reranker) if s.reranker else None)
        base = stores.lexical
        # Same tokenizer, term hashing and BM25 parameters as memories; only the
        # average length differs (a chunk holds ~half as many terms as tokens).
        lexical = LexicalEncoder(k1=base.k1, b=base.b, avgdl=max(16.0, s.chunk_size * 0.5))
        # the stores' one index engine (shared key locks; reconcile replays chunks too)
        self.index = ChunkIndex(stores.records, stores.vectors, stores.embedder, lexical,
                                batch_size=s.batch_size, engine=stores.engine,
                                disk=stores.disk)
        self._opened = False

    @classmethod
    def from_manager(cls, manager: MemoryManager, *, llm: LLMClient | None = None,
                     settings: RagSettings | None = None, reranker: Reranker | None = None
                     ) -> RAGPipeline:
        """A pipeline over ``manager``'s stores and embedder, opened. ``llm`` defaults
        to the manager's LLM client when it has one."""
        client = llm if llm is not None else getattr(manager, "llm", None)
        pipeline = cls(manager.stores, settings=settings, llm=client, reranker=reranker)
        pipeline.open()
        return pipeline

    def open(self) -> None:
        """Create the chunk collection if needed and replay pending chunk index work."""
        self.index.open()
        self._opened = True

    def _ready(self, namespace: str) -> str:
        ns = require_namespace(namespace)
        if not self._opened:
            self.open()
        return ns

    @property
    def signature(self) -> str:
        """What a stored document was indexed with; a change re-indexes on ingest."""
        s = self.settings
        return f"chunks={s.chunk_size}/{s.chunk_overlap};embedder={self.index.embedder.name}"

    # --- ingestion ------------------------------------------------------------------
    def ingest(self, paths: Sequence[str | os.PathLike[str]], *, namespace: str,
               follow_symlinks: bool = False, progress: bool = False,
               names: Mapping[str, str] | None = None) -> IngestReport:
        """Index files and folders into ``namespace``. Unchanged files are skipped, a
        changed file's chunks are replaced atomically, and a file that cannot be read
        (or a named file of an unsupported type) is one entry in ``report.failed``
        while the rest go on; files of other types met inside a folder are skipped.

        Citations name a document by its file name (a named file) or its path under
        the folder given (a folder walk); ``names`` maps a path as given to the name
        to show instead (the REST upload passes the uploaded file's original name)."""
        ns = self._ready(namespace)
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        self.index.disk.check()  # under the floor: 507 before any file is read
        report = IngestReport()
        t0 = time.perf_counter()
        found = list(collect_files(paths, follow_symlinks=follow_symlinks))
        with _progress(progress, len(found)) as (advance_file, advance_chunks):
            for f in found:
                if f.resolved is not None and f.in_folder \
                        and f.resolved.suffix.lower() not in SUPPORTED_SUFFIXES:
                    # A folder walk meets images, archives, ...: not errors of the caller's.
                    report.skipped.append((str(f.resolved), "unsupported file type "
                                           f"{f.resolved.suffix or '(no extension)'!r}"))
                elif f.resolved is not None:
                    name = (names or {}).get(f.given) or f.name or f.resolved.name
                    self._ingest_one(ns, f.resolved, report, advance_chunks, name)
                else:
                    (report.failed if f.error else report.skipped).append(
                        (f.given, f.problem or "skipped"))
                advance_file()
        report.seconds = time.perf_counter() - t0
        return report

    def _ingest_one(self, ns: str, path: Path, report: IngestReport,
                    progress: Progress | None, name: str) -> None:
        s = self.settings
        source = str(path)
        try:
            loaded = load_file(path, max_bytes=int(s.max_file_mb * 1024 * 1024),
                               max_line_chars=s.max_line_chars,
                               parse_limits=self.parse_limits)
        except DocumentError as exc:
            report.failed.append((source, exc.reason))
            return
        existing = self.index.records.documents.find_document(ns, source)
        if existing is not None and existing.content_hash == loaded.content_hash \
                and existing.metadata.get("index_signature") == self.signature \
                and existing.metadata.get("name") == name:
            report.skipped.append((source, "unchanged"))
            return
        loaded = replace(loaded, metadata={**loaded.metadata, "name": name})
        try:
            doc_id, n = self._index_document(ns, source, loaded, existing, progress)
        except DocumentError as exc:
            report.failed.append((source, exc.reason))
            return
        report.files += 1
        report.chunks += n
        report.replaced += existing is not None
        report.documents.append(doc_id)

    def _index_document(self, ns: str, source: str, loaded: LoadedDocument,
                        existing: DocumentRecord | None, progress: Progress | None
                        ) -> tuple[str, int]:
        pieces = self.chunker.chunk(loaded.markdown)
        if not pieces:
            raise DocumentError(source, "holds no text")
        doc_id = existing.id if existing is not None else new_id()
        doc = DocumentRecord(
            id=doc_id, namespace=ns, source_path=source, content_hash=loaded.content_hash,
            ingested_at=utcnow(), title=loaded.title or _first_heading(pieces[0].heading_path),
            modified_time=loaded.modified_time, language=detect_language(loaded.markdown),
            metadata={**loaded.metadata, "index_signature": self.signature,
                      "chunks": len(pieces)})
        chunks = [ChunkRecord(
            id=new_id(), document_id=doc_id, namespace=ns, ordinal=i, content=p.content,
            content_hash=content_hash(p.content), heading_path=p.heading_path, start=p.start,
            end=p.end, token_count=p.token_count, language=detect_language(p.content),
            source_path=source) for i, p in enumerate(pieces)]
        vectors = self.index.embed(chunks, progress)  # before any write: a failure writes nothing
        self.index.write(doc, chunks, vectors)
        return doc_id, len(chunks)

    def add_text(self, text: str, *, namespace: str, source: str = "text",
                 metadata: Mapping[str, Any] | None = None) -> str:
        """Index ``text`` as a document; returns its id. ``source`` names the document:
        text added again under the same source replaces it (the same text is a no-op).
        With the default ``"text"`` each distinct text is its own document."""
        ns = self._ready(namespace)
        validate_content(text, limits=self.limits)
        if not isinstance(source, str) or not source.strip():
            raise InvalidInputError("source must be a non-empty string")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidInputError("metadata must be a mapping")
        check_text(source, text, max_line_chars=self.settings.max_line_chars)
        self.index.disk.check(8 * len(text) + 4096)  # before chunking and embedding
        digest = content_hash(text)
        key = f"text:{digest[:16]}" if source == "text" else source
        existing = self.index.records.documents.find_document(ns, key)
        if existing is not None and existing.content_hash == digest \
                and existing.metadata.get("index_signature") == self.signature:
            return existing.id
        now = utcnow()
        loaded = LoadedDocument(path=Path(key), markdown=text, content_hash=digest,
                                modified_time=now, size=len(text.encode("utf-8", "replace")),
                                metadata={"format": "text", **dict(metadata or {}),
                                          "name": source})
        return self._index_document(ns, key, loaded, existing, None)[0]

    # --- reads ----------------------------------------------------------------------
    @telemetry.traced("retrieval", name="retrieval hello-memory", count=len, query_arg=1)
    def search(self, query: str, *, namespace: str, top_k: int = 5,
               filters: dict[str, Any] | None = None, mqe: bool | None = None,
               hyde: bool | None = None, rerank: bool | None = None,
               llm_calls: int | None = None) -> list[RAGHit]:
        """Fused dense + BM25 search over the variants of ``query``. ``filters``:
        ``source`` (path or list), ``document_id``, ``heading`` (a heading path or any
        prefix of one, "Guide > Install"), ``language``. ``mqe`` / ``hyde`` / ``rerank``
        override the settings for this call; MQE and HyDE need an LLM, one call each,
        and run only while ``llm_calls`` (default ``rag.llm_calls``) allows: HyDE
        first, then MQE."""
        ns = self._ready(namespace)
        validate_content(query, limits=self.limits)
        validate_top_k(top_k)
        s = self.settings
        calls = self._llm_budget(llm_calls)
        use_hyde = self.llm is not None and (s.hyde if hyde is None else hyde) and calls >= 1
        use_mqe = self.llm is not None and (s.mqe if mqe is None else mqe) \
            and calls >= 1 + use_hyde
        variants = [Variant("query", query)]
        if use_mqe:
            variants += expand_mqe(self.llm, query, s.mqe_variants)
        if use_hyde:
            variants += expand_hyde(self.llm, query)
        reranker = self.reranker if rerank is not False else None
        if rerank and reranker is None:
            raise InvalidInputError("rerank=True needs a reranker (rag.reranker or reranker=)")
        return search_chunks(self.index, ns, variants, top_k=top_k, candidates=s.candidates,
                             rrf_k=s.rrf_k, filters=self._filters(filters), reranker=reranker,
                             rerank_query=query)

    def _filters(self, filters: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """Source filters given as paths match the resolved paths stored on ingest."""
        if not filters or "source" not in filters:
            return dict(filters) if filters else None
        raw = filters["source"]
        values = list(raw) if isinstance(raw, (list, tuple, set)) else [raw]
        fixed = list(values)
        for v in values:  # a path matches as given (text sources) or resolved (files)
            if isinstance(v, str) and v.strip() and "\x00" not in v:
                resolved = str(Path(v).expanduser().resolve())
                if resolved not in fixed:
                    fixed.append(resolved)
        return {**filters, "source": fixed}

    @telemetry.traced("retrieval", name="ask hello-memory", query_arg=1)
    def ask(self, question: str, *, namespace: str, max_context_tokens: int | None = None,
            top_k: int | None = None, filters: dict[str, Any] | None = None,
            llm_calls: int | None = None, min_score: float | None = None,
            relative_score: float | None = None) -> Answer:
        """Answer ``question`` from the namespace's documents with numbered citations
        (the ranked passages themselves when there is no LLM).

        Passages under the relevance floor are left out: a question's cosine similarity
        to a passage below ``min_score`` (``rag.min_score``), or below ``relative_score``
        times the best passage's (``rag.relative_score``). ``llm_calls`` (default
        ``rag.llm_calls``) caps the LLM calls: the answer first, then HyDE, then MQE;
        0 makes none (the passages are the answer)."""
        s = self.settings
        budget = s.context_tokens if max_context_tokens is None else max_context_tokens
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise InvalidInputError(f"max_context_tokens must be a positive int, got {budget!r}")
        calls = self._llm_budget(llm_calls)
        answer_llm = self.llm if calls >= 1 else None
        hits = self.search(question, namespace=namespace, top_k=top_k or s.ask_top_k,
                           filters=filters, llm_calls=max(0, calls - 1))
        kept = relevance_floor(hits, s.min_score if min_score is None else min_score,
                               s.relative_score if relative_score is None else relative_score)
        why = None if self.llm is None or answer_llm is not None else \
            "rag.llm_calls is 0, so no LLM was asked."
        if hits and not kept:
            why = (f"No passage is close enough to the question (rag.min_score "
                   f"{s.min_score if min_score is None else min_score:g}).")
        return answer_question(question, kept, llm=answer_llm, budget=budget,
                               counter=self.counter, no_answer=why)

    def _llm_budget(self, llm_calls: int | None) -> int:
        calls = self.settings.llm_calls if llm_calls is None else llm_calls
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 0:
            raise InvalidInputError(f"llm_calls must be an int >= 0, got {calls!r}")
        return calls

    # --- management -----------------------------------------------------------------
    def find_document(self, document: str, *, namespace: str) -> DocumentRecord | None:
        """A document of ``namespace`` by id or source path (as stored, or a file path
        as the caller wrote it); None when there is none."""
        ns = self._ready(namespace)
        if not isinstance(document, str) or not document.strip():
            raise InvalidInputError("document must be a document id or a source path")
        doc = self.index.records.documents.find_document(ns, document)
        if doc is None and "\x00" not in document:  # a file path as the caller wrote it
            try:
                path = str(Path(document).expanduser().resolve())
            except (RuntimeError, OSError):  # "~nosuchuser": no home to expand, no path
                path = None
            doc = self.index.records.documents.find_document(ns, path) if path else None
        return doc

    def delete_document(self, document: str, *, namespace: str) -> int:
        """Delete a document (by id or source path) with its chunk records, vectors and
        BM25 terms; returns the number of chunks removed (0: no such document)."""
        doc = self.find_document(document, namespace=namespace)
        if doc is None:
            return 0
        return self.index.delete_documents(doc.namespace, [doc.id])[1]

    def remove_uploads(self, data_dir: str | os.PathLike[str], namespace: str,
                       sources: Sequence[str]) -> int:
        """Delete the files kept in ``data_dir``'s upload area for deleted documents of
        ``namespace`` (by their source paths); a file the server was only pointed at is
        never touched (stores/uploads.py). How many went. The interfaces call this
        after :meth:`delete_document` or :meth:`clear` (docs/ARCHITECTURE.md, Layers)."""
        from hello_memory.stores.uploads import remove_upload

        ns = self._ready(namespace)
        return sum(remove_upload(Path(data_dir), "documents", ns, source) for source in sources)

    def documents(self, namespace: str) -> list[DocumentRecord]:
        return self.index.records.documents.list_documents(self._ready(namespace))

    def stats(self, namespace: str) -> dict[str, Any]:
        ns = self._ready(namespace)
        counts = self.index.records.documents.document_stats(ns)
        return {"namespace": ns, **counts,
                "vectors": self.index.vectors.count(CHUNK_COLLECTION, namespace=ns),
                "pending_index": len(self.index.records.outbox.pending_outbox(
                    kinds=["chunk"], namespace=ns)),
                "llm": self.llm is not None}

    def clear(self, namespace: str, *, confirm: bool = False) -> dict[str, int]:
        """Delete every document of ONE namespace (records and vectors)."""
        ns = self._ready(namespace)
        if confirm is not True:
            raise InvalidInputError(f"clear({ns!r}) deletes every document of that namespace; "
                                    "pass confirm=True")
        ids = [d.id for d in self.index.records.documents.list_documents(ns)]
        docs, chunks = self.index.delete_documents(ns, ids) if ids else (0, 0)
        self.index.vectors.clear(CHUNK_COLLECTION, namespace=ns)
        self.index.records.audit.add(ns, "rag_clear", {"documents": docs, "chunks": chunks})
        return {"documents": docs, "chunks": chunks}

    def reconcile(self, namespace: str) -> dict[str, int]:
        """Bring the chunk vectors of ``namespace`` in line with the chunk records."""
        return self.index.reconcile(self._ready(namespace))


def relevance_floor(hits: Sequence[RAGHit], min_score: float, relative_score: float
                    ) -> list[RAGHit]:
    """The hits whose question similarity is at least ``min_score`` and at least
    ``relative_score`` times the best one's (a hit without a similarity is kept)."""
    sims = [h.similarity for h in hits if h.similarity is not None]
    if not sims:
        return list(hits)
    bar = max(min_score, relative_score * max(sims)) if max(sims) > 0 else min_score
    return [h for h in hits if h.similarity is None or h.similarity >= bar]


def _first_heading(path: str) -> str | None:
    return path.split(" > ")[0] if path else None


@contextmanager
def _progress(enabled: bool, files: int) -> Iterator[tuple[Any, Progress | None]]:
    """(advance one file, advance n chunks) callbacks over a rich progress display."""
    if not enabled:
        yield (lambda: None), None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  transient=False) as bar:
        file_task = bar.add_task("files", total=files)
        chunk_task = bar.add_task("chunks embedded", total=None)
        yield (lambda: bar.advance(file_task)), (lambda n: bar.advance(chunk_task, n))
