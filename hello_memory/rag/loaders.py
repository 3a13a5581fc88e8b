"""Files to Markdown, and folders to the files inside them.

Plain UTF-8 text (``.txt``, ``.md``) is read directly; JSON is parsed and re-indented
(so a minified file gets lines to chunk on); PDF, DOCX, PPTX, XLSX, HTML and CSV go
through MarkItDown (``rag`` extra), imported on first use, in the parse worker
(:mod:`hello_memory.rag.safe_parse`). The conversion itself is
:mod:`hello_memory.rag.formats` (re-exported here). Every failure is a
:class:`~hello_memory.rag.errors.DocumentError` naming the file, so one bad file is
one line in the ingest report and the rest of the batch goes on.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hello_memory.rag.errors import (
    DocumentReadError,
    EmptyDocumentError,
    UnsupportedDocumentError,
)
from hello_memory.rag.formats import (
    MARKITDOWN_TYPES,
    SUPPORTED_SUFFIXES,
    TEXT_TYPES,
    to_markdown,
)
from hello_memory.rag.safe_parse import ParseLimits, convert  # limits, worker (PDF, Office)

__all__ = [
    "MARKITDOWN_TYPES", "SUPPORTED_SUFFIXES", "TEXT_TYPES", "FoundFile", "LoadedDocument",
    "check_text", "collect_files",
    "load_file", "to_markdown",
]


@dataclass(frozen=True)
class LoadedDocument:
    """A file read and converted: the Markdown, its title and what identifies the bytes."""

    path: Path
    markdown: str
    content_hash: str  # sha256 of the file's bytes
    modified_time: datetime
    size: int
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def load_file(path: Path, *, max_bytes: int, max_line_chars: int,
              parse_limits: ParseLimits | None = None) -> LoadedDocument:
    """Read and convert one file (already resolved) under ``parse_limits`` (the
    ``limits.document_*`` settings; default: their defaults). Raises DocumentError."""
    name = str(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise UnsupportedDocumentError(
            name, f"unsupported file type {suffix or '(no extension)'!r}; supported: "
            + ", ".join(sorted(SUPPORTED_SUFFIXES)))
    try:
        stat = path.stat()
        if stat.st_size > max_bytes:
            raise DocumentReadError(name, f"is {stat.st_size:,} bytes, more than rag.max_file_mb "
                                          f"allows ({max_bytes:,})")
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentReadError(name, f"cannot be read: {exc.strerror or exc}") from exc
    markdown, title = convert(name, suffix, data, parse_limits)
    check_text(name, markdown, max_line_chars=max_line_chars)
    return LoadedDocument(
        path=path, markdown=markdown, content_hash=hashlib.sha256(data).hexdigest(),
        modified_time=datetime.fromtimestamp(stat.st_mtime, timezone.utc), size=len(data),
        title=title, metadata={"format": suffix.lstrip("."), "bytes": len(data)})


def check_text(name: str, text: str, *, max_line_chars: int) -> None:
    """Refuse text with nothing in it, or with a line too long to be prose (a minified
    or base64 blob), before anything is chunked or written."""
    if not text.strip():
        raise EmptyDocumentError(name, "holds no text")
    longest = max((len(line) for line in text.splitlines()), default=0)
    if longest > max_line_chars:
        raise DocumentReadError(
            name, f"has a single line of {longest:,} characters (more than rag.max_line_chars "
                  f"= {max_line_chars:,}); not prose: raise the limit to index it anyway")


def _is_hidden(name: str) -> bool:
    return name.startswith(".")


@dataclass(frozen=True)
class FoundFile:
    """A path met while collecting: ``resolved`` to ingest, or ``problem`` (an error
    when ``error``, else a reason to skip it, e.g. a link not followed)."""

    given: str
    resolved: Path | None
    problem: str | None = None
    error: bool = False
    in_folder: bool = False  # met while walking a folder (not named by the caller)
    # The name citations show: the file's name when named, its path under the folder
    # given when met in a folder walk ("manuals/router.pdf").
    name: str = ""


def collect_files(
    paths: Sequence[str | os.PathLike[str]], *, follow_symlinks: bool = False
) -> Iterator[FoundFile]:
    """Files to ingest, in a stable order, each real file once.

    A path the caller names is used even if it is a link (the caller chose it). Inside
    a folder, hidden entries (``.git``, ``.env``) are left out, and links are confined
    to the folder: a link to a file inside it is fine (the file is read once), a link
    leading out of it is reported and not followed, unless ``follow_symlinks`` (then
    links to folders are walked too, with cycles cut).
    """
    seen: set[Path] = set()
    for given in paths:
        raw = Path(given).expanduser()
        try:
            root = raw.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            yield FoundFile(str(given), None, f"does not exist ({exc.__class__.__name__})",
                            error=True)
            continue
        if root.is_file():
            if root not in seen:
                seen.add(root)
                yield FoundFile(str(given), root, name=raw.name or root.name)
            continue
        if not root.is_dir():
            yield FoundFile(str(given), None, "is neither a file nor a folder", error=True)
            continue
        yield from _walk(root, follow_symlinks, seen)


def _walk(root: Path, follow_symlinks: bool, seen: set[Path]) -> Iterator[FoundFile]:
    visited: set[Path] = set()
    for current, dirs, files in os.walk(root, followlinks=follow_symlinks):
        here = Path(current)
        real = here.resolve()
        if real in visited:  # a link cycle
            dirs[:] = []
            continue
        visited.add(real)
        dirs[:] = sorted(d for d in dirs if not _is_hidden(d))
        if not follow_symlinks:  # os.walk does not enter them: report those leading out
            for d in dirs:
                link = here / d
                if link.is_symlink() and not link.resolve().is_relative_to(root):
                    yield FoundFile(str(link), None, f"links out of {root} to a folder "
                                    "(pass follow_symlinks to follow)")
        for name in sorted(files):
            if _is_hidden(name):
                continue
            entry = here / name
            try:
                target = entry.resolve(strict=True)
            except (OSError, RuntimeError) as exc:
                yield FoundFile(str(entry), None, f"cannot be resolved ({exc})", error=True)
                continue
            if not follow_symlinks and not target.is_relative_to(root):
                yield FoundFile(str(entry), None, f"links out of {root} (to {target}; pass "
                                "follow_symlinks to follow)")
                continue
            if target.is_file() and target not in seen:
                seen.add(target)
                yield FoundFile(str(entry), target, in_folder=True,
                                name=entry.relative_to(root).as_posix())
