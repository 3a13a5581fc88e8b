"""RAG chunks keep to their namespace and to the paths they were given: searching,
clearing and deleting documents in one namespace never returns or touches another's
chunks or memories, reconcile / reindex of memories leave chunks alone, ingest does not
follow a link out of the given folder, and bad documents are typed failures that
write nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hello_memory.errors import EmptyContentError, NamespaceRequiredError
from hello_memory.memory.manager import MemoryManager

from .support import fingerprint, make_manager

pytestmark = pytest.mark.slow

DOC_A = "# Alpha handbook\n\nThe alpha team deploys on Tuesdays from the blue pipeline."
DOC_B = "# Beta handbook\n\nThe beta team deploys on Fridays from the red pipeline."
SECRET = "the launch code is 0000 and must never be indexed"


@pytest.fixture
def env(tmp_path: Path, embedder: Any) -> Iterator[tuple[MemoryManager, Any]]:
    from hello_memory.rag import RAGPipeline

    mm = make_manager(tmp_path / "d", embedder, vector={"location": ":memory:"})
    rag = RAGPipeline.from_manager(mm)
    mm.add("alpha memory: Tuesday deploys are risky", namespace="a")
    mm.add("beta memory: Friday deploys are risky", namespace="b")
    rag.add_text(DOC_A, namespace="a", source="alpha.md")
    rag.add_text(DOC_B, namespace="b", source="beta.md")
    yield mm, rag
    mm.close()


def _rag_state(rag: Any, ns: str) -> tuple[Any, ...]:
    docs = sorted((d.id, d.content_hash) for d in rag.documents(ns))
    stats = rag.stats(ns)
    return docs, stats["vectors"], stats["pending_index"]


def test_rag_search_and_clear_stay_in_their_namespace(env: tuple[MemoryManager, Any]) -> None:
    mm, rag = env
    b_docs = {d.id for d in rag.documents("b")}
    hits = rag.search("which team deploys on Fridays", namespace="a", top_k=10)
    assert hits and {h.document_id for h in hits} <= {d.id for d in rag.documents("a")}
    assert not {h.document_id for h in hits} & b_docs
    assert "beta" not in " ".join(h.content for h in hits).lower()
    b_before, mem_before = _rag_state(rag, "b"), fingerprint(mm, ["a", "b"])
    rag.clear("a", confirm=True)
    assert rag.documents("a") == [] and rag.search("deploys", namespace="a") == []
    assert _rag_state(rag, "b") == b_before
    assert fingerprint(mm, ["a", "b"]) == mem_before  # memories untouched by a RAG clear
    # Clearing a namespace takes its documents too (issue 20), and only its own.
    a_after = _rag_state(rag, "a")
    mm.clear("b", confirm=True)
    assert rag.documents("b") == [] and rag.search("Fridays", namespace="b") == []
    assert _rag_state(rag, "b") == ([], 0, 0) and _rag_state(rag, "a") == a_after


def test_memory_maintenance_leaves_chunks_alone(env: tuple[MemoryManager, Any]) -> None:
    mm, rag = env
    before = {ns: _rag_state(rag, ns) for ns in ("a", "b")}
    assert mm.reconcile().changed == 0
    mm.reindex()
    assert {ns: _rag_state(rag, ns) for ns in ("a", "b")} == before


def test_rag_bad_input_is_typed_and_writes_nothing(env: tuple[MemoryManager, Any],
                                                   tmp_path: Path) -> None:
    mm, rag = env
    before = {ns: _rag_state(rag, ns) for ns in ("a", "b")}
    with pytest.raises(EmptyContentError):
        rag.add_text("  ", namespace="a")
    with pytest.raises(NamespaceRequiredError):
        rag.search("deploys", namespace="")
    weird = tmp_path / "data.xyz"
    weird.write_bytes(b"\x00\x01binary blob")
    empty = tmp_path / "empty.md"
    empty.write_text("  \n\n ")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(bytes(range(256)) * 64)
    report = rag.ingest([weird, empty, binary], namespace="a")
    assert report.files == 0 and len(report.failed) == 3, report
    assert {ns: _rag_state(rag, ns) for ns in ("a", "b")} == before


def test_ingest_does_not_follow_links_out_of_the_given_folder(
    env: tuple[MemoryManager, Any], tmp_path: Path,
) -> None:
    _, rag = env
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(SECRET)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\nInstall with pip and run the demo.")
    (folder / "leak.md").symlink_to(outside / "secret.md")
    (folder / "leakdir").symlink_to(outside, target_is_directory=True)
    report = rag.ingest([folder], namespace="c")
    assert report.files == 1
    assert len(report.skipped) >= 1
    texts = " ".join(h.content for h in rag.search("launch code", namespace="c", top_k=10))
    assert "launch code" not in texts


def test_a_corrupt_pdf_is_a_failure_not_a_document(env: tuple[MemoryManager, Any],
                                                    tmp_path: Path) -> None:
    _, rag = env
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7 this is not really a pdf")
    report = rag.ingest([broken], namespace="a")
    assert report.files == 0 and len(report.failed) == 1
