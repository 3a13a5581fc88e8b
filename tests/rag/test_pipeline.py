"""RAGPipeline end to end on embedded stores with the real MiniLM embedder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hello_memory.config import RagSettings
from hello_memory.errors import InvalidInputError, NamespaceRequiredError
from hello_memory.memory.manager import MemoryManager
from hello_memory.rag import RAGPipeline, RAGTool
from hello_memory.rag.indexing import CHUNK_COLLECTION
from hello_memory.stores.records.documents import ChunkRecord, DocumentRecord
from hello_memory.types import new_id, utcnow

from .corpus import FACTS, write_corpus, write_pdf

pytestmark = pytest.mark.slow

QUESTIONS = {
    "docx": "how much free disk space does the installer need?",
    "pptx": "when is the zeppelin launch?",
    "xlsx": "what does saffron cost per gram?",
    "pdf": "how long is the espresso machine warranty?",
    "html": "how much sunlight do tomatoes need?",
    "md": "what is the sourdough starter fed with?",
    "txt": "when does the lighthouse keeper wind the clock?",
    "csv": "what is the capital of Iceland?",
    "json": "penguin colony census birds",
}


def counts(rag: RAGPipeline, ns: str) -> tuple[int, int, int]:
    st = rag.stats(ns)
    return st["documents"], st["chunks"], st["vectors"]


def test_mixed_folder_is_ingested_and_every_format_is_found(rag: RAGPipeline,
                                                           tmp_path: Path) -> None:
    files = write_corpus(tmp_path / "docs")
    (tmp_path / "docs" / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    report = rag.ingest([tmp_path / "docs"], namespace="kb")
    assert report.files == len(files) and report.failed == []
    assert [r for _, r in report.skipped] == ["unsupported file type '.png'"]
    assert report.chunks == counts(rag, "kb")[1] == counts(rag, "kb")[2]
    for fmt, question in QUESTIONS.items():
        [top] = rag.search(question, namespace="kb", top_k=1)
        assert top.source == str(files[fmt].resolve()), (fmt, top.citation)
        assert FACTS[fmt][1] in top.content
        assert top.views, "the hit says which views found it"
    [hit] = rag.search("disk space", namespace="kb", top_k=1)
    assert hit.heading_path == "Install Guide > Requirements"
    assert hit.citation == "guide.docx > Install Guide > Requirements"  # name, not path
    assert hit.source == str(files['docx'].resolve())


def test_reingest_unchanged_does_nothing_and_changed_replaces(rag: RAGPipeline,
                                                             tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    write_corpus(folder)
    rag.ingest([folder], namespace="kb")
    before = counts(rag, "kb")
    ids_before = rag.index.records.documents.all_chunk_ids("kb")

    again = rag.ingest([folder], namespace="kb")
    assert again.files == 0 and again.chunks == 0 and len(again.skipped) == 9
    assert {r for _, r in again.skipped} == {"unchanged"}
    assert rag.index.records.documents.all_chunk_ids("kb") == ids_before

    write_pdf(folder / "warranty.pdf", "The warranty on the espresso machine lasts five "
                                       "years since the 2025 update.")
    changed = rag.ingest([folder], namespace="kb")
    assert (changed.files, changed.replaced, len(changed.skipped)) == (1, 1, 8)
    assert counts(rag, "kb") == before  # one chunk out, one chunk in
    [top] = rag.search("espresso machine warranty", namespace="kb", top_k=1)
    assert "five years" in top.content
    hits = rag.search("warranty two years returns 30 days", namespace="kb", top_k=20)
    assert not any("two years" in h.content for h in hits), "the old chunk is gone everywhere"
    # Its vectors too: the collection holds exactly the records' chunks.
    assert rag.index.vectors.ids(CHUNK_COLLECTION, namespace="kb") == \
        rag.index.records.documents.all_chunk_ids("kb")


def test_delete_document_removes_records_vectors_and_bm25_terms(rag: RAGPipeline,
                                                                tmp_path: Path) -> None:
    files = write_corpus(tmp_path / "docs")
    rag.ingest([files["txt"], files["md"]], namespace="kb")
    lexical = rag.index.lexical.query("lighthouse keeper")
    assert lexical is not None
    hits = rag.index.vectors.nearest(CHUNK_COLLECTION, lexical, namespace="kb", using="bm25")
    assert len(hits) == 1
    assert rag.delete_document(str(files["txt"]), namespace="kb") == 1
    assert rag.index.vectors.nearest(CHUNK_COLLECTION, lexical, namespace="kb", using="bm25") == []
    assert counts(rag, "kb") == (1, 2, 2)  # kitchen.md: two sections, two chunks
    doc = rag.documents("kb")[0]
    assert rag.delete_document(doc.id, namespace="other") == 0  # another namespace: untouched
    assert rag.delete_document(doc.id, namespace="kb") == 2
    assert counts(rag, "kb") == (0, 0, 0)
    assert rag.delete_document("no-such-doc", namespace="kb") == 0


def test_bad_files_fail_alone_and_leave_nothing_half_indexed(rag: RAGPipeline,
                                                             tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nThe good file mentions kiwis.", encoding="utf-8")
    (folder / "garbage.txt").write_bytes(bytes(range(256)) * 4)
    (folder / "empty.txt").write_bytes(b"")
    (folder / "huge_line.txt").write_text("z" * 200_000, encoding="utf-8")
    (folder / "fake.pdf").write_bytes(b"%PDF-1.4 broken" + bytes(300))
    report = rag.ingest([folder, tmp_path / "missing.md"], namespace="kb")
    failed = {Path(p).name: e for p, e in report.failed}
    assert set(failed) == {"garbage.txt", "empty.txt", "huge_line.txt", "fake.pdf", "missing.md"}
    assert "binary" in failed["garbage.txt"] and "no text" in failed["empty.txt"]
    assert "rag.max_line_chars" in failed["huge_line.txt"]
    assert report.files == 1
    assert counts(rag, "kb") == (1, 1, 1)
    assert [d.source_path for d in rag.documents("kb")] == [str((folder / "good.md").resolve())]


def test_huge_single_line_is_indexed_when_the_limit_allows(manager: MemoryManager,
                                                           tmp_path: Path) -> None:
    rag = RAGPipeline.from_manager(manager, settings=RagSettings(max_line_chars=1_000_000))
    path = tmp_path / "one_line.txt"
    path.write_text(" ".join(f"token{i}" for i in range(3000)), encoding="utf-8")
    report = rag.ingest([path], namespace="kb")
    assert report.failed == [] and report.chunks > 5
    chunks = rag.index.records.documents.document_chunks("kb", report.documents[0])
    assert all(c.token_count <= 200 for c in chunks)


def test_namespaces_are_isolated(rag: RAGPipeline, tmp_path: Path) -> None:
    files = write_corpus(tmp_path / "docs")
    rag.ingest([files["txt"]], namespace="a")
    rag.ingest([files["md"]], namespace="b")
    assert {h.source for h in rag.search("lighthouse keeper clock", namespace="b", top_k=5)} \
        == {str(files["md"].resolve())}
    assert rag.clear("a", confirm=True) == {"documents": 1, "chunks": 1}
    assert counts(rag, "a") == (0, 0, 0) and counts(rag, "b") == (1, 2, 2)
    with pytest.raises(InvalidInputError):
        rag.clear("b")
    with pytest.raises(NamespaceRequiredError):
        rag.search("x", namespace="")


def test_filters_by_source_heading_and_bad_filters(rag: RAGPipeline, tmp_path: Path) -> None:
    files = write_corpus(tmp_path / "docs")
    rag.ingest([tmp_path / "docs"], namespace="kb")
    hits = rag.search("knives", namespace="kb", top_k=10, filters={"source": str(files["html"])})
    assert hits and {h.source for h in hits} == {str(files["html"].resolve())}
    hits = rag.search("anything at all", namespace="kb", top_k=10,
                      filters={"heading": "Install Guide"})
    assert hits and all(h.heading_path.startswith("Install Guide") for h in hits)
    with pytest.raises(InvalidInputError, match="unknown RAG filter"):
        rag.search("x", namespace="kb", filters={"colour": "red"})
    with pytest.raises(InvalidInputError):
        rag.search("x", namespace="kb", top_k=0)


def test_add_text_is_idempotent_and_source_replaces(rag: RAGPipeline) -> None:
    a = rag.add_text("Otters hold hands while they sleep.", namespace="kb")
    assert rag.add_text("Otters hold hands while they sleep.", namespace="kb") == a
    b = rag.add_text("Ravens can mimic human speech.", namespace="kb")
    assert a != b and counts(rag, "kb")[0] == 2
    n = rag.add_text("Version one of the notes.", namespace="kb", source="notes")
    m = rag.add_text("Version two of the notes.", namespace="kb", source="notes")
    assert n == m and counts(rag, "kb")[0] == 3
    [top] = rag.search("notes version", namespace="kb", top_k=1)
    assert top.content == "Version two of the notes." and top.source == "notes"
    with pytest.raises(InvalidInputError):
        rag.add_text("   ", namespace="kb")


def test_ask_without_llm_returns_cited_passages_under_budget(rag: RAGPipeline,
                                                             tmp_path: Path) -> None:
    files = write_corpus(tmp_path / "docs")
    rag.ingest([tmp_path / "docs"], namespace="kb")
    answer = rag.ask("how long is the espresso machine warranty?", namespace="kb")
    assert not answer.used_llm
    assert answer.citations[0].number == 1
    assert answer.citations[0].source == str(files["pdf"].resolve())
    assert FACTS["pdf"][1] in answer.text and "[1]" in answer.text
    assert all(p.content in answer.text for p in answer.passages)  # whole chunks
    floor_off = {"min_score": -1.0, "relative_score": 0.0}  # every retrieved passage
    full = rag.ask("how long is the espresso machine warranty?", namespace="kb", **floor_off)
    small = rag.ask("how long is the espresso machine warranty?", namespace="kb",
                    max_context_tokens=40, **floor_off)
    assert small.context_tokens <= 40 and len(small.passages) < len(full.passages)
    empty = rag.ask("anything", namespace="empty-kb")
    assert empty.passages == [] and not empty.used_llm


def test_crash_after_commit_is_replayed_on_open(open_manager: Callable[[Path], MemoryManager],
                                                tmp_path: Path) -> None:
    """Records committed, vectors never written (a crash): the next open indexes them."""
    data = tmp_path / "data"
    mm = open_manager(data)
    rag = RAGPipeline.from_manager(mm)
    doc = DocumentRecord(id=new_id(), namespace="kb", source_path="crash-notes",
                         content_hash="0" * 64, ingested_at=utcnow())
    chunk = ChunkRecord(id=new_id(), document_id=doc.id, namespace="kb", ordinal=0,
                        content="Flamingos stand on one leg to save heat.",
                        content_hash="1" * 64, heading_path="", start=0, end=40,
                        token_count=9)
    rag.index.records.documents.replace_document(doc, [chunk])  # the commit, then "crash"
    assert rag.search("flamingos", namespace="kb") == []  # no vector yet: nothing found
    mm.close()
    rag2 = RAGPipeline.from_manager(open_manager(data))
    assert rag2.stats("kb")["pending_index"] == 0
    [hit] = rag2.search("why do flamingos stand on one leg?", namespace="kb", top_k=1)
    assert hit.chunk_id == chunk.id
    # An orphan vector (its record gone behind the pipeline's back) is removed by reconcile.
    rag2.index.records.documents.delete_documents("kb", [doc.id])
    outbox = rag2.index.records.outbox
    outbox.mark_applied([e.seq for e in outbox.pending_outbox(kinds=["chunk"])])
    assert rag2.reconcile("kb") == {"orphan_vectors_deleted": 1, "chunks_indexed": 0}
    assert rag2.stats("kb")["vectors"] == 0


def test_rag_tool_is_bound_to_its_namespace(rag: RAGPipeline, tmp_path: Path) -> None:
    files = write_corpus(tmp_path / "docs")
    tool = RAGTool(rag, namespace="team", roots=[tmp_path / "docs"])
    other = RAGTool(rag, namespace="elsewhere")
    outside = tmp_path / "private.md"
    outside.write_text("# Private\n\nnot for the agent", encoding="utf-8")
    refused = tool.run("add_document", paths=[str(tmp_path / "docs" / ".." / "private.md")])
    assert not refused["ok"] and "outside the folders" in refused["error"]
    other.add_text("Elsewhere keeps its own notes about kiwis.")
    out = tool.run("add_document", paths=[str(files["md"])])
    assert out["ok"] and out["result"]["files"] == 1
    assert tool.run("add_text", text="The office closes at six.")["ok"]
    hits = tool.run("search", query="sourdough starter", top_k=2)["result"]["hits"]
    assert hits[0]["source"] == str(files["md"].resolve())
    ans = tool.run("ask", question="when does the office close?")["result"]
    assert "six" in ans["text"] and ans["citations"]
    assert tool.run("stats")["result"]["documents"] == 2
    assert not tool.run("clear")["ok"]  # needs confirm
    assert tool.run("clear", confirm=True)["result"] == {"documents": 2, "chunks": 3}
    assert other.stats()["documents"] == 1
    assert "unknown action" in tool.run("drop_everything")["error"]
    assert "query" in tool.run("search")["error"]  # a missing argument, named
    assert "one namespace" in tool.run("search", query="x", namespace="elsewhere")["error"]
    gone = tool.run("delete_document", document="no-such-document")
    assert not gone["ok"] and "NotFoundError" in gone["error"]
    # the actions are the catalogue's document operations, under the tool's names
    assert tool.schema()["function"]["parameters"]["properties"]["action"]["enum"] == [
        "add_text", "add_document", "search", "ask", "delete_document", "stats", "clear"]
    assert {s["function"]["name"] for s in tool.schemas()} == {
        f"knowledge_base_{a}" for a in tool.actions}
    assert tool.call("knowledge_base_stats")["result"]["documents"] == 0


class LengthReranker:
    """A real (if simple) reranker: prefers shorter passages. Any object with
    ``score(query, passages)`` plugs in, a cross-encoder included."""

    def score(self, query: str, passages: list[str]) -> list[float]:
        return [-float(len(p)) for p in passages]


def test_reranker_is_pluggable(manager: MemoryManager, tmp_path: Path) -> None:
    rag = RAGPipeline.from_manager(manager, reranker=LengthReranker())
    for text in ("Owls hunt at night.", "Owls are birds of prey that hunt small mammals at "
                 "night, using silent flight and very sharp hearing to find them."):
        rag.add_text(text, namespace="kb")
    plain = rag.search("how do owls hunt?", namespace="kb", top_k=2, rerank=False)
    ranked = rag.search("how do owls hunt?", namespace="kb", top_k=2)
    assert ranked[0].content == "Owls hunt at night." and ranked[0].rerank_score is not None
    assert all(h.rerank_score is None for h in plain)
    bare = RAGPipeline.from_manager(manager)
    with pytest.raises(InvalidInputError, match="reranker"):
        bare.search("owls", namespace="kb", rerank=True)


def test_missing_cross_encoder_names_the_setting() -> None:
    from hello_memory.errors import ModelNotFoundError
    from hello_memory.rag.search import CrossEncoderReranker

    with pytest.raises(ModelNotFoundError, match="rag.reranker"):
        CrossEncoderReranker("/no/such/cross-encoder").score("q", ["p"])


def test_chinese_documents_chunk_search_and_filter_by_language(rag: RAGPipeline,
                                                               tmp_path: Path) -> None:
    zh = tmp_path / "zh.md"
    body = "我们在杭州西湖边讨论了知识图谱的设计和实体关系的抽取方法。" * 12
    deploy = "部署时先运行数据库迁移，然后逐个重启接口服务。"
    zh.write_text(f"# 知识图谱\n\n{body}\n\n## 部署\n\n{deploy}\n", encoding="utf-8")
    en = tmp_path / "en.md"
    en.write_text("# Deploy\n\nRun the database migrations, then restart the API workers.\n",
                  encoding="utf-8")
    report = rag.ingest([zh, en], namespace="kb")
    chunks = rag.index.records.documents.document_chunks("kb", report.documents[0])
    assert len(chunks) > 2 and all(c.token_count <= 120 for c in chunks)
    assert {c.language for c in chunks} == {"zh"}
    [top] = rag.search("部署的时候先做什么？", namespace="kb", top_k=1)
    assert top.heading_path == "知识图谱 > 部署"
    hits = rag.search("database migrations", namespace="kb", top_k=5,
                      filters={"language": "zh"})
    assert hits and all(h.language == "zh" for h in hits)
