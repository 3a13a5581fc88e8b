"""A file's bytes to Markdown, format by format: the one conversion.

Plain UTF-8 text (``.txt``, ``.md``) is decoded directly; JSON is parsed and
re-indented (so a minified file gets lines to chunk on); PDF, DOCX, PPTX, XLSX, HTML
and CSV go through MarkItDown (``rag`` extra), imported on first use. Every failure is
a :class:`~hello_memory.rag.errors.DocumentError` naming the file.

Its own module so that both callers import it without importing each other:
:mod:`hello_memory.rag.loaders` (reading files and folders) and
:mod:`hello_memory.rag.safe_parse` (the limits and the parse worker, which runs
:func:`to_markdown` in a child process; docs/ARCHITECTURE.md "Known debts": no import
cycle). :mod:`hello_memory.rag.loaders` re-exports the public names.
"""

from __future__ import annotations

import io
import json
import re
import threading
import zipfile
from pathlib import Path
from typing import Any

from hello_memory.rag.errors import DocumentReadError, UnsupportedDocumentError

__all__ = ["MARKITDOWN_TYPES", "SUPPORTED_SUFFIXES", "TEXT_TYPES", "to_markdown"]

TEXT_TYPES = frozenset({".txt", ".md", ".markdown", ".text", ".rst"})
MARKITDOWN_TYPES = frozenset({".pdf", ".docx", ".pptx", ".xlsx", ".html", ".htm", ".csv"})
SUPPORTED_SUFFIXES = TEXT_TYPES | MARKITDOWN_TYPES | {".json"}

_COMMENT_LINE_RE = re.compile(r"^[ \t]*<!--.*?-->[ \t]*$", re.MULTILINE)

_markitdown: Any = None
_markitdown_lock = threading.Lock()


def _converter(path: str, suffix: str) -> Any:
    """The shared MarkItDown instance; without the ``rag`` extra the file is one
    per-file error (plain text, Markdown and JSON still load)."""
    global _markitdown
    if _markitdown is None:
        with _markitdown_lock:
            if _markitdown is None:
                try:
                    from markitdown import MarkItDown
                except ImportError as exc:
                    raise UnsupportedDocumentError(
                        path, f"{suffix} files need MarkItDown: pip install "
                              f"'hello-memory[rag]' ({exc})") from exc
                _markitdown = MarkItDown(enable_plugins=False)
    return _markitdown


def _decode_text(path: str, data: bytes) -> str:
    if b"\x00" in data:
        raise DocumentReadError(path, "holds NUL bytes: a binary file, not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentReadError(path, f"is not UTF-8 text ({exc.reason} at byte {exc.start})"
                                ) from None
    if _control_share(text) > 0.01 and len(text) > 8:
        raise DocumentReadError(path, "holds control characters: a binary file, not text")
    return text


def _check_container(path: str, suffix: str, data: bytes) -> None:
    """Binary formats must look like themselves: otherwise MarkItDown may guess another
    converter (plain text) and index garbage."""
    if suffix in (".docx", ".pptx", ".xlsx"):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                names = set(archive.namelist())
        except (zipfile.BadZipFile, OSError, ValueError):
            raise DocumentReadError(path, f"is not a valid {suffix} file (not a ZIP container)"
                                    ) from None
        if "[Content_Types].xml" not in names:
            raise DocumentReadError(path, f"is not a valid {suffix} file (no Office content)")
    elif suffix == ".pdf":
        if b"%PDF-" not in data[:1024]:
            raise DocumentReadError(path, "is not a valid .pdf file (no %PDF header)")
        _check_pdf_structure(path, data)


def _check_pdf_structure(path: str, data: bytes) -> None:
    """A header alone proves little: parse the document catalogue with pdfminer (the
    library MarkItDown reads PDFs with), so a damaged file is refused here instead of
    reaching MarkItDown's plain-text fallback."""
    try:
        from pdfminer.pdfdocument import PDFDocument
        from pdfminer.pdfparser import PDFParser
        from pdfminer.psexceptions import PSException
    except ImportError:  # converting will report the missing extra
        return
    try:
        PDFDocument(PDFParser(io.BytesIO(data)))
    except (PSException, ValueError, KeyError, TypeError) as exc:
        raise DocumentReadError(path, f"is not a valid .pdf file ({exc})") from None


def to_markdown(path: str, suffix: str, data: bytes) -> tuple[str, str | None]:
    """Markdown text and title (when the format has one) of a file's bytes."""
    if suffix in TEXT_TYPES:
        return _decode_text(path, data), None
    if suffix == ".json":
        text = _decode_text(path, data)
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False), None
        except json.JSONDecodeError as exc:
            raise DocumentReadError(path, f"is not valid JSON ({exc})") from None
    if suffix not in MARKITDOWN_TYPES:
        raise UnsupportedDocumentError(
            path, f"unsupported file type {suffix or '(no extension)'!r}; supported: "
            + ", ".join(sorted(SUPPORTED_SUFFIXES)))
    _check_container(path, suffix, data)
    if suffix in (".html", ".htm"):  # navigation, header, footer, menus out (rag/html.py)
        from hello_memory.rag.html import strip_boilerplate

        data = strip_boilerplate(data)
    if suffix == ".pdf":  # headings from the text layer's fonts (rag/pdf.py), when it has them
        from hello_memory.rag.pdf import pdf_markdown

        headed = pdf_markdown(data)
        if headed is not None and "\x00" not in headed and _control_share(headed) <= 0.01:
            return headed, None
    converter = _converter(path, suffix)
    from markitdown import StreamInfo

    try:
        result = converter.convert_stream(
            io.BytesIO(data), stream_info=StreamInfo(extension=suffix, filename=Path(path).name))
    except Exception as exc:  # MarkItDown wraps each converter's own exceptions
        raise DocumentReadError(
            path, f"cannot convert {suffix} file: {_conversion_reason(exc)}") from exc
    # Comment-only lines (PPTX slide markers) carry no text; left in they become
    # chunks of their own.
    markdown = _COMMENT_LINE_RE.sub("", result.markdown or "")
    if "\x00" in markdown or _control_share(markdown) > 0.01:
        # MarkItDown tries its other converters when the right one fails, and the
        # plain-text one accepts anything: a broken PDF would come back as its bytes.
        raise DocumentReadError(path, f"cannot convert {suffix} file: it is damaged (the "
                                      "conversion gave binary data)")
    return markdown, (result.title or None)


def _conversion_reason(exc: BaseException) -> str:
    """The first line of what went wrong, from the converter that failed.

    MarkItDown's ``FileConversionException`` says only "File conversion failed after
    1 attempts:" on its first line; the converter's own exception, the useful part,
    sits in ``attempts[i].exc_info``.
    """
    for attempt in getattr(exc, "attempts", None) or ():
        info = getattr(attempt, "exc_info", None)
        if info and len(info) > 1 and isinstance(info[1], BaseException):
            exc = info[1]
            break
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _control_share(text: str) -> float:
    control = sum(1 for ch in text if ord(ch) < 32 and ch not in "\n\r\t\f\v")
    return control / max(1, len(text))
