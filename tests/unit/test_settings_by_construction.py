"""Settings reach the parts by construction, not through module globals (issue 31;
docs/ARCHITECTURE.md, "Where settings reach the parts").

Two managers opened in one process with different ``limits`` each enforce their own:
the input checks (``validation.py``, through the record store's ``limits``), the entity
extractor's analysis size (``text/entities.py``) and the document parser's bounds
(``rag/safe_parse.py``, through the RAG pipeline). Each test opens the stricter
manager first and the lenient one second, so a setting copied into a module global at
open (the way it was) would leak the second's limits into the first; and no
``global`` statement that stores a setting may come back."""

from __future__ import annotations

import ast
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hello_memory.config import load_settings
from hello_memory.errors import PayloadTooLargeError
from hello_memory.memory.manager import MemoryManager
from hello_memory.rag import RAGPipeline, safe_parse
from hello_memory.rag.safe_parse import ParseLimits
from hello_memory.text.entities import RuleExtractor
from hello_memory.types import MemoryItem

PACKAGE = Path(__file__).resolve().parents[2] / "hello_memory"
NS = "limits"


@pytest.fixture(scope="module")
def embedder() -> Any:
    from hello_memory.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
def open_two(tmp_path: Path, embedder: Any) -> Iterator[Any]:
    """Opens managers through the composition root (``MemoryManager.open``), each on
    its own data directory with its own ``limits``; closes them all."""
    opened: list[MemoryManager] = []

    def make(name: str, **limits: Any) -> MemoryManager:
        settings = load_settings(environ={}, data_dir=tmp_path / name, limits=limits,
                                 semantic={"extractor": "rules"})
        mm = MemoryManager.open(settings, embedder=embedder)
        opened.append(mm)
        return mm

    yield make
    for mm in opened:
        mm.close()


# --- validation.py: the record store's limits -----------------------------------------
def test_two_managers_check_input_against_their_own_limits(open_two: Any) -> None:
    strict = open_two("strict", max_content_chars=200, max_query_chars=100, max_batch=2,
                      max_metadata_bytes=256)
    lenient = open_two("lenient")
    assert strict.limits.max_content_chars == 200
    assert lenient.limits.max_content_chars == 100_000
    text = "The harbour lights came on one by one as the ferry left. " * 6  # 342 chars
    batch = [{"content": f"note number {n} about the ferry", "namespace": NS} for n in range(3)]
    meta = {"blob": "x" * 400}
    query = "ferry " * 30  # 180 characters

    with pytest.raises(PayloadTooLargeError, match="200"):
        strict.add(text, namespace=NS)
    with pytest.raises(PayloadTooLargeError, match="200"):
        strict.add(text, memory_type="working", namespace=NS)  # working memory too
    with pytest.raises(PayloadTooLargeError, match="max_batch"):
        strict.add_many(batch)
    with pytest.raises(PayloadTooLargeError, match="max_metadata_bytes"):
        strict.add("a short note", metadata=meta, namespace=NS)
    with pytest.raises(PayloadTooLargeError, match="100"):
        strict.search(query, namespace=NS)

    assert lenient.add(text, namespace=NS).content == text
    assert lenient.add(text, memory_type="working", namespace=NS).content == text
    assert len(lenient.add_many(batch)) == 3
    assert lenient.add("a short note", metadata=meta, namespace=NS).metadata == meta
    assert lenient.search(query, namespace=NS)

    # the strict one still holds its own after the lenient one was opened
    with pytest.raises(PayloadTooLargeError):
        strict.add(text, namespace=NS)
    with pytest.raises(PayloadTooLargeError):  # down to its record store
        strict.stores.records.memories.add_items([MemoryItem(content=text, namespace=NS)])


# --- text/entities.py: the extractor's analysis size ----------------------------------
LONG_TEXT = ("Ada Lovelace met Charles Babbage in London. " + "filler words here. " * 500
             + "Grace Hopper lived in Arlington.")


def _names(extractor: Any) -> set[str]:
    return {e.name for e in extractor.extract(LONG_TEXT, NS).entities}


def test_two_managers_extract_within_their_own_analysis_size(open_two: Any) -> None:
    short = open_two("short", analysis_chars=2_000)
    full = open_two("full", analysis_chars=20_000)
    assert short.extractor.max_chars == 2_000 and full.extractor.max_chars == 20_000
    assert "Ada Lovelace" in _names(short.extractor)
    assert not any("Grace" in n for n in _names(short.extractor))
    assert any("Grace" in n for n in _names(full.extractor))
    assert not any("Grace" in n for n in _names(short.extractor))  # still its own


def test_two_extractors_in_one_process_keep_their_own_size() -> None:
    short, full = RuleExtractor(2_000), RuleExtractor()
    assert not any("Grace" in n for n in _names(short))
    assert any("Grace" in n for n in _names(full))


# --- rag/safe_parse.py: the document parser's bounds ----------------------------------
def _inflating_docx(path: Path) -> Path:
    """A .docx whose one member inflates to 2 MiB (a zip bomb by 1 MiB limits)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\0" * (2 * 1_048_576))
    path.write_bytes(buf.getvalue())
    return path


def test_two_pipelines_parse_under_their_own_limits(open_two: Any, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[ParseLimits] = []

    def worker(path: str, suffix: str, data: bytes, limits: ParseLimits
               ) -> tuple[str, str | None]:  # the parse itself is not under test here
        seen.append(limits)
        return "# Ferry notes\n\nThe ferry leaves at nine from the harbour.\n", None

    monkeypatch.setattr(safe_parse, "_in_worker", worker)
    strict = RAGPipeline.from_manager(open_two("strict", document_max_expanded_mb=1))
    lenient = RAGPipeline.from_manager(open_two("lenient", document_max_ratio=1_000_000))
    assert strict.parse_limits.max_expanded_bytes == 1_048_576
    assert lenient.parse_limits == ParseLimits.from_settings(load_settings(
        environ={}, limits={"document_max_ratio": 1_000_000}).limits)
    doc = _inflating_docx(tmp_path / "bomb.docx")

    refused = strict.ingest([doc], namespace=NS)
    assert refused.files == 0 and "zip bomb" in refused.failed[0][1]
    taken = lenient.ingest([doc], namespace=NS)
    assert taken.files == 1 and not taken.failed
    assert seen == [lenient.parse_limits]
    again = strict.ingest([doc], namespace=NS)  # still its own after the lenient one
    assert again.files == 0 and "zip bomb" in again.failed[0][1]


def test_convert_takes_the_limits_it_is_given(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.setattr(safe_parse, "_in_worker", lambda *a: ("text", None))
    data = _inflating_docx(tmp_path / "bomb.docx").read_bytes()
    with pytest.raises(Exception, match="zip bomb"):
        safe_parse.convert("bomb.docx", ".docx", data, ParseLimits(max_expanded_bytes=1_048_576))
    assert safe_parse.convert("bomb.docx", ".docx", data, ParseLimits(max_ratio=1e9)) == (
        "text", None)


# --- no settings in module globals ----------------------------------------------------
# The ``global`` statements left in hello_memory/, none of which holds a setting:
# (file, name) -> why it is a module global.
ALLOWED_GLOBALS: dict[tuple[str, str], str] = {
    ("text/tokenize.py", "_jieba"): "jieba imported on first use (a lazy import, the "
                                    "same module for every caller)",
    ("rag/formats.py", "_markitdown"): "MarkItDown imported on first use (a lazy import)",
    ("rag/safe_parse.py", "_ctx"): "the process's one multiprocessing context for the "
                                   "parse worker's fork server, made on first use",
}


def _global_statements() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                found.update((rel, name) for name in node.names)
    return found


def test_no_global_statement_stores_a_setting() -> None:
    found = _global_statements()
    extra = found - set(ALLOWED_GLOBALS)
    assert not extra, (
        f"global statements {sorted(extra)}: a setting reaches the part that uses it by "
        "construction (docs/ARCHITECTURE.md, 'Where settings reach the parts'); a global "
        "that is no setting joins ALLOWED_GLOBALS with its reason")
    assert not set(ALLOWED_GLOBALS) - found, "an allowed global is gone: drop its entry"
