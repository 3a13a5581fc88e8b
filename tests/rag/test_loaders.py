"""Loading every format to Markdown, bad files, and folder walking with links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hello_memory.rag.errors import (
    DocumentError,
    DocumentReadError,
    EmptyDocumentError,
    UnsupportedDocumentError,
)
from hello_memory.rag.loaders import collect_files, load_file

from .corpus import FACTS, write_corpus

LIMITS = {"max_bytes": 10_000_000, "max_line_chars": 100_000}


def test_every_format_converts_to_markdown(tmp_path: Path) -> None:
    files = write_corpus(tmp_path / "docs")
    for fmt, path in files.items():
        doc = load_file(path, **LIMITS)
        heading, fact = FACTS[fmt]
        assert fact in doc.markdown, fmt
        if heading:
            assert f"# {heading}" in doc.markdown, fmt
        assert len(doc.content_hash) == 64 and doc.size == path.stat().st_size
        assert doc.metadata["format"] == fmt
    assert load_file(files["html"], **LIMITS).title == "Garden notes"
    assert "<!--" not in load_file(files["pptx"], **LIMITS).markdown  # no slide-marker chunks
    assert "| Iceland | Reykjavik |" in load_file(files["csv"], **LIMITS).markdown
    assert '"birds": 5120' in load_file(files["json"], **LIMITS).markdown  # re-indented


@pytest.mark.parametrize(("name", "data", "error", "words"), [
    ("garbage.txt", bytes(range(256)) * 8, DocumentReadError, "binary"),
    ("latin1.txt", "café crème".encode("latin-1"), DocumentReadError, "not UTF-8"),
    ("garbage.pdf", os.urandom(2048), DocumentReadError, "not a valid .pdf"),
    ("broken.pdf", b"%PDF-1.4\n" + os.urandom(2048), DocumentReadError, "not a valid .pdf"),
    ("garbage.docx", b"PK\x03\x04 not really a zip", DocumentReadError, "not a valid .docx"),
    ("garbage.xlsx", os.urandom(512), DocumentReadError, "not a valid .xlsx"),
    ("blob.bin", b"\x00\x01\x02", UnsupportedDocumentError, "unsupported file type '.bin'"),
    ("empty.md", b"", EmptyDocumentError, "no text"),
    ("blank.txt", b"  \n\n \t\n", EmptyDocumentError, "no text"),
    ("bad.json", b'{"a": ', DocumentReadError, "not valid JSON"),
    ("minified.txt", b"a" * 150_000, DocumentReadError, "rag.max_line_chars"),
])
def test_bad_files_are_typed_errors_naming_the_file(
        tmp_path: Path, name: str, data: bytes, error: type[DocumentError], words: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(error) as info:
        load_file(path, **LIMITS)
    assert words in str(info.value) and str(path) in str(info.value)


def test_too_large_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("word " * 1000, encoding="utf-8")
    with pytest.raises(DocumentReadError, match="rag.max_file_mb"):
        load_file(path, max_bytes=100, max_line_chars=100_000)


def test_folder_walk_confines_links_and_skips_hidden(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret", encoding="utf-8")
    root = tmp_path / "kb"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# A\n\nalpha", encoding="utf-8")
    (root / "sub" / "b.txt").write_text("beta", encoding="utf-8")
    (root / ".git").mkdir()
    (root / ".git" / "config.txt").write_text("hidden", encoding="utf-8")
    (root / "link_out.txt").symlink_to(outside / "secret.txt")
    (root / "link_in.txt").symlink_to(root / "a.md")  # inside: fine, read once
    (root / "dir_out").symlink_to(outside, target_is_directory=True)
    (root / "sub" / "loop").symlink_to(root, target_is_directory=True)

    found = list(collect_files([root]))
    ingest = [f.resolved for f in found if f.resolved is not None]
    assert sorted(ingest) == sorted([(root / "a.md").resolve(), (root / "sub" / "b.txt").resolve()])
    reasons = {Path(f.given).name: f.problem or "" for f in found if f.resolved is None}
    assert set(reasons) == {"link_out.txt", "dir_out"}
    assert all("links out of" in r and "follow_symlinks" in r for r in reasons.values())
    assert not any(f.error for f in found)

    followed = list(collect_files([root], follow_symlinks=True))
    ingest = [f.resolved for f in followed if f.resolved is not None]
    assert sorted(ingest) == sorted([(root / "a.md").resolve(), (root / "sub" / "b.txt").resolve(),
                                     (outside / "secret.txt").resolve()])  # once, loop cut

    # A link the caller names directly is the caller's choice.
    [direct] = list(collect_files([root / "link_out.txt"]))
    assert direct.resolved == (outside / "secret.txt").resolve()

    [missing] = list(collect_files([tmp_path / "nope"]))
    assert missing.resolved is None and missing.error


def test_a_failed_conversion_says_why_not_only_that_it_failed(tmp_path: Path) -> None:
    """MarkItDown's own first line is "File conversion failed after 1 attempts:"; the
    error carries the converter's reason instead (rag/formats.py _conversion_reason)."""
    import zipfile

    path = tmp_path / "hollow.docx"
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", (
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/'
            '2006/content-types"><Override PartName="/word/document.xml" ContentType="'
            'application/vnd.openxmlformats-officedocument.wordprocessingml.document.main'
            '+xml"/></Types>'))
        archive.writestr("word/document.xml",
                         f'<?xml version="1.0"?><w:document xmlns:w="{w}"></w:document>')
    with pytest.raises(DocumentReadError) as info:
        load_file(path, **LIMITS)
    message = str(info.value)
    assert "failed after" not in message and str(path) in message
    assert "body element" in message, message
