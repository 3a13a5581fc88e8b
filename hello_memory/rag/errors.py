"""Errors of the RAG pipeline, a branch of the one tree in :mod:`hello_memory.errors`::

    InvalidInputError
    └── DocumentError               a file that cannot be ingested (per-file, in reports)
        ├── UnsupportedDocumentError    a type no loader handles
        ├── DocumentReadError           unreadable, not UTF-8, binary, corrupt, too large
        └── EmptyDocumentError          no text at all
"""

from __future__ import annotations

from hello_memory.errors import InvalidInputError

__all__ = ["DocumentError", "DocumentReadError", "EmptyDocumentError", "UnsupportedDocumentError"]


class DocumentError(InvalidInputError):
    """A document could not be ingested; nothing of it was written."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class UnsupportedDocumentError(DocumentError):
    """No loader handles this file type."""


class DocumentReadError(DocumentError):
    """The file could not be read or converted (binary, corrupt, too large)."""


class EmptyDocumentError(DocumentError):
    """The document holds no text."""
