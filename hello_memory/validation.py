"""Input checks that run before anything is written (so bad input loses nothing)."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime
from typing import Any

from hello_memory.errors import (
    EmptyContentError,
    InvalidImportanceError,
    InvalidInputError,
    NamespaceRequiredError,
)
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, Modality

__all__ = [
    "MAX_CONTENT_CHARS",
    "content_hash",
    "require_namespace",
    "validate_content",
    "validate_importance",
    "validate_item",
    "validate_top_k",
]

# A memory is a thought, not a document: larger texts belong in the RAG pipeline,
# which chunks them. 1 MiB of text is far past any useful single memory.
MAX_CONTENT_CHARS = 1_000_000


def require_namespace(namespace: object) -> str:
    """Return the namespace, or raise: a store call without one is an error."""
    if not isinstance(namespace, str) or not namespace.strip():
        raise NamespaceRequiredError(f"a non-empty namespace is required, got {namespace!r}")
    if "\x00" in namespace:
        raise InvalidInputError("namespace must not contain NUL characters")
    return namespace


def validate_content(content: object) -> str:
    if not isinstance(content, str):
        raise InvalidInputError(f"content must be a str, got {type(content).__name__}")
    if not content.strip():
        raise EmptyContentError("content is empty or whitespace only")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: decoded from invalid UTF-8
        raise InvalidInputError(
            f"content is not valid Unicode text (unpaired surrogate at position {exc.start}); "
            "decode the input with errors='replace' or fix its encoding"
        ) from None
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidInputError(
            f"content has {len(content):,} characters, more than the {MAX_CONTENT_CHARS:,} "
            "allowed for one memory; ingest long texts as documents (RAG) instead"
        )
    return content


def validate_importance(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidImportanceError(value)
    f = float(value)
    if not math.isfinite(f) or not 0.0 <= f <= 1.0:
        raise InvalidImportanceError(value)
    return f


def _aware(name: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{name} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(
            f"{name} is a naive datetime; pass a timezone-aware one (e.g. tzinfo=timezone.utc)"
        )


def validate_top_k(top_k: object) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise InvalidInputError(f"top_k must be a positive int, got {top_k!r}")
    return top_k


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


def validate_item(item: MemoryItem) -> MemoryItem:
    """Check every field of ``item`` and normalise enums in place; returns it."""
    require_namespace(item.namespace)
    validate_content(item.content)
    item.importance = validate_importance(item.importance)
    try:
        item.memory_type = MemoryType(item.memory_type)
        item.modality = Modality(item.modality)
        item.status = MemoryStatus(item.status)
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from exc
    for name in ("event_time", "recorded_time", "last_access"):
        _aware(name, getattr(item, name))
    if not isinstance(item.metadata, dict):
        raise InvalidInputError("metadata must be a dict")
    try:  # the record store keeps metadata as JSON: refuse what it cannot hold
        json.dumps(item.metadata)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata must be JSON-serialisable: {exc}") from None
    for name in ("user_id", "agent_id", "session_id"):
        v = getattr(item, name)
        if v is not None and not isinstance(v, str):
            raise InvalidInputError(f"{name} must be a str or None")
    if item.content_hash is None:
        item.content_hash = content_hash(item.content)
    return item
