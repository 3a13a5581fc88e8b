"""Documents parsed under limits: PDF and Office files are converted in a worker
process with a memory limit and a deadline, after cheap checks of the container.

One hostile file must not take the server with it: a 1 MB DOCX that inflates to
gigabytes, a 0.5 MB PDF whose content stream is a flate bomb, a PDF of 1,500 pages.
So, for the formats MarkItDown reads (:data:`~hello_memory.rag.formats.MARKITDOWN_TYPES`):

- ZIP containers (DOCX, PPTX, XLSX) are refused before any member is inflated when the
  members declare more than ``limits.document_max_expanded_mb`` in all, or a member
  over 1 MB (or the whole archive) inflates more than ``limits.document_max_ratio``
  times (``zipfile`` never reads past a member's declared size);
- the conversion runs in a child process (``forkserver``: forked from a clean,
  single-threaded process that has MarkItDown loaded) whose address space is capped at
  ``limits.document_memory_mb`` (``RLIMIT_AS``); a PDF of more than
  ``limits.document_max_pages`` pages is refused there before its text is read;
- the parent waits at most ``limits.document_timeout_s``, and stops waiting (killing
  the child) as soon as the HTTP client that asked has gone away (:data:`client_gone`,
  set by the REST API's body middleware);
- the converted text is capped at ``limits.document_max_chars`` characters, so what
  comes back cannot swell the server either.

Every refusal is a :class:`~hello_memory.rag.errors.DocumentReadError` naming the file
and the limit: one failed file in the ingest report, nothing written. Plain text,
Markdown and JSON are read in-process (their size is already bounded by
``rag.max_file_mb``).
"""

from __future__ import annotations

import io
import multiprocessing
import os
import re
import threading
import time
import zipfile
import zlib
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from hello_memory.rag.errors import (
    DocumentError,
    DocumentReadError,
    EmptyDocumentError,
    UnsupportedDocumentError,
)
from hello_memory.rag.formats import MARKITDOWN_TYPES, to_markdown

__all__ = ["ParseLimits", "check_zip", "client_gone", "convert"]

# Set (by hello_memory.interfaces.rest.security.BodyLimit) to an Event that fires when the HTTP
# client of the current request disconnects; None outside a request.
client_gone: ContextVar[threading.Event | None] = ContextVar("client_gone", default=None)

_ZIP_TYPES = frozenset({".docx", ".pptx", ".xlsx"})
_MB = 1_048_576


@dataclass(frozen=True)
class ParseLimits:
    """The bounds of one parse; the defaults are the ``limits`` section's. The RAG
    pipeline builds its own from its settings (:meth:`from_settings`) and passes it to
    every :func:`convert` (docs/ARCHITECTURE.md, "Where settings reach the parts")."""

    max_pages: int = 500
    max_expanded_bytes: int = 200 * _MB
    max_ratio: float = 100.0
    timeout_s: float = 20.0
    memory_bytes: int = 2048 * _MB
    max_chars: int = 10_000_000

    @classmethod
    def from_settings(cls, limits: Any) -> ParseLimits:
        """The ``document_*`` fields of a :class:`~hello_memory.config.LimitsSettings`."""
        return cls(
            max_pages=limits.document_max_pages,
            max_expanded_bytes=int(limits.document_max_expanded_mb * _MB),
            max_ratio=limits.document_max_ratio, timeout_s=limits.document_timeout_s,
            memory_bytes=limits.document_memory_mb * _MB,
            max_chars=limits.document_max_chars)


def check_zip(path: str, data: bytes, limits: ParseLimits) -> None:
    """Refuse a ZIP container that would inflate past the limits (reads the central
    directory only)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return  # not a ZIP: the loader's own container check names that
    total = sum(i.file_size for i in infos)
    packed = sum(i.compress_size for i in infos)
    if total > limits.max_expanded_bytes:
        raise DocumentReadError(path, f"would inflate to {total:,} bytes, more than "
                                      f"limits.document_max_expanded_mb allows "
                                      f"({limits.max_expanded_bytes:,}): refused as a zip bomb")
    for info in infos:
        ratio = info.file_size / max(1, info.compress_size)
        if info.file_size > _MB and ratio > limits.max_ratio:
            raise DocumentReadError(
                path, f"member {info.filename!r} inflates {ratio:,.0f} times, more than "
                      f"limits.document_max_ratio ({limits.max_ratio:g}): refused as a zip bomb")
    if total > 10 * _MB and total > limits.max_ratio * max(1, packed):
        raise DocumentReadError(path, f"inflates {total / max(1, packed):,.0f} times, more "
                                      f"than limits.document_max_ratio ({limits.max_ratio:g})")


def convert(path: str, suffix: str, data: bytes, limits: ParseLimits | None = None
            ) -> tuple[str, str | None]:
    """Markdown and title of a file's bytes, as :func:`formats.to_markdown` gives them,
    under ``limits`` (see the module doc; default: the settings' defaults). Raises
    DocumentError."""
    if suffix not in MARKITDOWN_TYPES:
        return to_markdown(path, suffix, data)
    limits = limits or ParseLimits()
    if suffix in _ZIP_TYPES:
        check_zip(path, data, limits)
    return _in_worker(path, suffix, data, limits)


# --- the worker ------------------------------------------------------------------------
_ctx_lock = threading.Lock()
_ctx: Any = None


def _context() -> Any:
    global _ctx
    with _ctx_lock:
        if _ctx is None:
            if "forkserver" in multiprocessing.get_all_start_methods():
                server = multiprocessing.get_context("forkserver")
                server.set_forkserver_preload(["hello_memory.rag._parse_preload"])
                _ctx = server
            else:  # pragma: no cover - not on Linux
                _ctx = multiprocessing.get_context("spawn")
        return _ctx


def _in_worker(path: str, suffix: str, data: bytes, limits: ParseLimits
               ) -> tuple[str, str | None]:
    ctx = _context()
    parent_end, child_end = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child_end, path, suffix, data, limits),
                       daemon=True, name="hello-memory-parse")
    proc.start()
    child_end.close()
    gone = client_gone.get()
    deadline = time.monotonic() + limits.timeout_s
    try:
        while True:
            if parent_end.poll(0.1):
                try:
                    outcome = parent_end.recv()
                except (EOFError, OSError):
                    outcome = None
                break
            if not proc.is_alive() and not parent_end.poll(0):
                outcome = None
                break
            if gone is not None and gone.is_set():
                raise DocumentReadError(path, "parsing was stopped: the client went away")
            if time.monotonic() > deadline:
                raise DocumentReadError(path, f"took longer than limits.document_timeout_s "
                                              f"({limits.timeout_s:g} s) to parse: refused")
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        parent_end.close()
    if outcome is None:
        code = proc.exitcode
        raise DocumentReadError(path, "the parser ran out of memory or crashed (exit "
                                      f"{code}; limits.document_memory_mb = "
                                      f"{limits.memory_bytes // _MB}): refused")
    if outcome[0] == "ok":
        return outcome[1], outcome[2]
    error = _ERRORS.get(outcome[1], DocumentReadError)
    raise error(path, outcome[2])


_ERRORS: dict[str, type[DocumentError]] = {
    cls.__name__: cls for cls in (DocumentReadError, EmptyDocumentError,
                                  UnsupportedDocumentError)}


def _child(conn: Any, path: str, suffix: str, data: bytes, limits: ParseLimits) -> None:
    """Runs in the worker: limits on, then the ordinary conversion."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        cpu = int(limits.timeout_s) + 5
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    except (ImportError, ValueError, OSError):  # pragma: no cover - not on Linux
        pass
    try:
        if suffix == ".pdf":
            _check_pdf_streams(path, data, limits.max_expanded_bytes)
            _check_pages(path, data, limits.max_pages)
        markdown, title = to_markdown(path, suffix, data)
        if len(markdown) > limits.max_chars:
            raise DocumentReadError(path, f"converts to {len(markdown):,} characters, more "
                                          f"than limits.document_max_chars "
                                          f"({limits.max_chars:,})")
        conn.send(("ok", markdown, title))
    except DocumentError as exc:
        conn.send(("error", type(exc).__name__, exc.reason))
    except MemoryError:
        conn.send(("error", "DocumentReadError", "needs more memory than "
                   f"limits.document_memory_mb ({limits.memory_bytes // _MB}) to parse: refused"))
    except RecursionError:
        conn.send(("error", "DocumentReadError", "is nested too deeply to parse"))
    except Exception as exc:  # a parser's own error: one line, typed by the parent
        conn.send(("error", "DocumentReadError",
                   f"cannot convert {suffix} file: {type(exc).__name__}: {exc}"))
    finally:
        conn.close()
        os._exit(0)  # no atexit work in a forked child


_STREAM_RE = re.compile(rb"stream\r?\n")


def _check_pdf_streams(path: str, data: bytes, max_expanded: int) -> None:
    """Inflate every deflate stream of a PDF piece by piece, keeping nothing, and refuse
    the file when they expand past ``max_expanded`` bytes in all (a flate bomb)."""
    total = 0
    for match in _STREAM_RE.finditer(data):
        inflater = zlib.decompressobj()
        pending = data[match.end():match.end() + 4 * _MB]
        offset = match.end() + len(pending)
        try:
            while pending and not inflater.eof:
                total += len(inflater.decompress(pending, _MB))
                pending = inflater.unconsumed_tail
                if not pending and not inflater.eof and offset < len(data):
                    pending = data[offset:offset + 4 * _MB]
                    offset += len(pending)
                if total > max_expanded:
                    raise DocumentReadError(
                        path, f"has streams that inflate past {max_expanded:,} bytes "
                              "(limits.document_max_expanded_mb): refused as a flate bomb")
        except zlib.error:
            continue  # not deflate data (or not a stream): pdfminer judges it


def _check_pages(path: str, data: bytes, max_pages: int) -> None:
    try:
        from pdfminer.pdfdocument import PDFDocument
        from pdfminer.pdfpage import PDFPage
        from pdfminer.pdfparser import PDFParser
    except ImportError:
        return
    try:
        document = PDFDocument(PDFParser(io.BytesIO(data)))
        pages = 0
        for _ in PDFPage.create_pages(document):
            pages += 1
            if pages > max_pages:
                break
    except MemoryError:
        raise
    except Exception:
        return  # damaged: the conversion reports it
    if pages > max_pages:
        raise DocumentReadError(path, f"has more than {max_pages:,} pages "
                                      "(limits.document_max_pages): refused")
