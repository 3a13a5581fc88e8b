"""Input checks that run before anything is written (so bad input loses nothing)."""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from datetime import datetime, timezone
from typing import Any

from hello_memory.config import LimitsSettings
from hello_memory.errors import (
    EmptyContentError,
    InvalidImportanceError,
    InvalidInputError,
    NamespaceRequiredError,
    PayloadTooLargeError,
)
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, Modality

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_CONTENT_CHARS",
    "check_text",
    "content_hash",
    "normalized_length",
    "require_namespace",
    "validate_batch",
    "validate_content",
    "validate_importance",
    "validate_item",
    "validate_memory_type",
    "validate_metadata",
    "validate_query",
    "validate_time",
    "validate_time_range",
    "validate_top_k",
]

# A memory is a thought, not a document: larger texts belong in the RAG pipeline,
# which chunks them. 1 MiB of text is far past any useful single memory.
# Counted after NFKC normalisation, the form text analysis sees. The per-memory and
# per-query limits of ``limits`` (LimitsSettings) are lower; this one holds for any text.
MAX_CONTENT_CHARS = 1_000_000

# The ``limits`` section's defaults. A check that is given no ``limits`` uses these;
# the parts that validate hold their own (the record store's ``limits``, set from the
# settings by open_stores), so two managers in one process keep theirs apart
# (docs/ARCHITECTURE.md, "Where settings reach the parts").
DEFAULT_LIMITS = LimitsSettings()


def normalized_length(text: str) -> int:
    """Characters of ``text`` after NFKC (what entity extraction and spaCy count)."""
    if text.isascii():
        return len(text)
    return len(unicodedata.normalize("NFKC", text))


def require_namespace(namespace: object) -> str:
    """Return the namespace, or raise: a store call without one is an error."""
    if not isinstance(namespace, str) or not namespace.strip():
        raise NamespaceRequiredError(f"a non-empty namespace is required, got {namespace!r}")
    if "\x00" in namespace:
        raise InvalidInputError("namespace must not contain NUL characters")
    check_text("namespace", namespace)
    return namespace


def check_text(name: str, value: str) -> str:
    """``value`` when it can be stored and returned as UTF-8 (no lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: decoded from invalid UTF-8
        raise InvalidInputError(
            f"{name} is not valid Unicode text (unpaired surrogate at position {exc.start}); "
            "decode the input with errors='replace' or fix its encoding"
        ) from None
    return value


def _bounded(name: str, text: str, limit: int, hint: str) -> None:
    # Raw length first: normalising a huge text is itself work to avoid.
    n = len(text) if len(text) > limit else normalized_length(text)
    if n > limit:
        raise PayloadTooLargeError(
            f"{name} has {n:,} characters (after Unicode NFKC normalisation), more than "
            f"the {limit:,} allowed{hint}")


def validate_content(content: object, *, max_chars: int | None = None,
                     name: str = "content", limits: LimitsSettings | None = None) -> str:
    """``content`` when it is non-blank valid Unicode text of at most ``max_chars``
    characters after NFKC (default: :data:`MAX_CONTENT_CHARS`, or
    ``limits.max_content_chars`` when that is set higher)."""
    if max_chars is None:
        max_chars = max(MAX_CONTENT_CHARS, (limits or DEFAULT_LIMITS).max_content_chars)
    if not isinstance(content, str):
        raise InvalidInputError(f"{name} must be a str, got {type(content).__name__}")
    if not content.strip():
        raise EmptyContentError(f"{name} is empty or whitespace only")
    check_text(name, content)
    _bounded(name, content, max_chars,
             "; ingest long texts as documents (RAG) instead" if name == "content" else "")
    return content


def validate_query(query: object, limits: LimitsSettings | None = None) -> str:
    """A search query: text, within ``limits.max_query_chars``."""
    max_chars = (limits or DEFAULT_LIMITS).max_query_chars
    return validate_content(query, max_chars=max_chars, name="query")


def validate_batch(n: int, limits: LimitsSettings | None = None) -> None:
    max_batch = (limits or DEFAULT_LIMITS).max_batch
    if n > max_batch:
        raise PayloadTooLargeError(f"a batch of {n:,} memories is more than limits.max_batch "
                                   f"({max_batch:,}) allows")


def validate_metadata(metadata: object, name: str = "metadata",
                      limits: LimitsSettings | None = None) -> dict[str, Any]:
    """``metadata`` when the record store can hold it and give it back unchanged: JSON
    values only (finite numbers, valid Unicode strings), nested at most
    ``limits.max_metadata_depth`` deep and at most ``limits.max_metadata_bytes`` as JSON.
    Walked without recursion, so 100,000 levels are a typed error, not RecursionError."""
    if not isinstance(metadata, dict):
        raise InvalidInputError(f"{name} must be a dict")
    limits = limits or DEFAULT_LIMITS
    max_depth = limits.max_metadata_depth
    stack: list[tuple[Any, int, str]] = [(metadata, 1, name)]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, (dict, list, tuple)):
            if depth > max_depth:
                raise InvalidInputError(f"{name} is nested more than {max_depth} levels deep "
                                        f"(limits.max_metadata_depth) at {where}")
            if isinstance(value, dict):
                for key, child in value.items():
                    if isinstance(key, str):
                        check_text(f"{where} key", key)
                    elif not (key is None or isinstance(key, (int, float, bool))):
                        raise InvalidInputError(f"{where}: key {key!r} is not a string")
                    elif isinstance(key, float) and not math.isfinite(key):
                        raise InvalidInputError(f"{where}: key {key!r} is not a finite number")
                    stack.append((child, depth + 1, f"{where}.{key}"))
            else:
                stack.extend((child, depth + 1, f"{where}[{i}]") for i, child in
                             enumerate(value))
        elif isinstance(value, str):
            check_text(where, value)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidInputError(f"{where} is {value!r}: JSON holds finite numbers only "
                                        "(it would come back as null)")
        elif not (value is None or isinstance(value, (bool, int))):
            raise InvalidInputError(f"{name} must be JSON-serialisable: {where} is a "
                                    f"{type(value).__name__}")
    size = len(json.dumps(metadata, ensure_ascii=False, allow_nan=False).encode("utf-8"))
    if size > limits.max_metadata_bytes:
        raise PayloadTooLargeError(f"{name} is {size:,} bytes as JSON, more than "
                                   f"limits.max_metadata_bytes ({limits.max_metadata_bytes:,})")
    return metadata


def validate_time(name: str, value: datetime) -> datetime:
    """``value`` when it is timezone-aware and its UTC instant is representable (year 1
    at +14:00 is before datetime.min in UTC)."""
    _aware(name, value)
    try:
        value.astimezone(timezone.utc)
    except (OverflowError, ValueError):
        raise InvalidInputError(f"{name} {value.isoformat()} is outside the representable "
                                "range once converted to UTC (years 1-9999)") from None
    return value


def validate_memory_type(value: MemoryType | str) -> MemoryType:
    """``value`` as a MemoryType (its name or itself); the error names every type."""
    try:
        return MemoryType(value)
    except ValueError:
        names = ", ".join(t.value for t in MemoryType)
        raise InvalidInputError(f"unknown memory type {value!r}; use one of {names}") from None


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


def validate_time_range(time_range: object) -> tuple[datetime | None, datetime | None]:
    """A search's ``time_range`` as ``(start, end)``: None is no bound at all, a bound
    of None an open end; both bounds timezone-aware, start not after end. The one check
    of the memory search, working memory and every interface that passes a range on."""
    if time_range is None:
        return None, None
    if not isinstance(time_range, (tuple, list)) or len(time_range) != 2:
        raise InvalidInputError("time_range must be a (start, end) tuple; None = open end")
    start, end = _bound("start", time_range[0]), _bound("end", time_range[1])
    if start is not None and end is not None and start > end:
        raise InvalidInputError("time_range start is after its end")
    return start, end


def _bound(which: str, value: object) -> datetime | None:
    _aware(f"time_range {which}", value)
    return value if isinstance(value, datetime) else None


def validate_top_k(top_k: object) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise InvalidInputError(f"top_k must be a positive int, got {top_k!r}")
    return top_k


def content_hash(content: str) -> str:
    """The identity of a text (issue 15, idempotent add): SHA-256 of its NFC form with
    runs of whitespace made one space and the ends trimmed, so "Alice likes tea" and
    "Alice  likes tea\n" are the same memory; case and punctuation still count."""
    key = " ".join(unicodedata.normalize("NFC", content).split())
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def validate_item(item: MemoryItem, limits: LimitsSettings | None = None) -> MemoryItem:
    """Check every field of ``item`` against ``limits`` (default :data:`DEFAULT_LIMITS`)
    and normalise enums in place; returns it."""
    limits = limits or DEFAULT_LIMITS
    require_namespace(item.namespace)
    validate_content(item.content, max_chars=limits.max_content_chars)
    item.importance = validate_importance(item.importance)
    try:
        item.memory_type = MemoryType(item.memory_type)
        item.modality = Modality(item.modality)
        item.status = MemoryStatus(item.status)
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from exc
    for name in ("event_time", "recorded_time", "last_access"):
        if getattr(item, name) is not None:
            validate_time(name, getattr(item, name))
    # the record store keeps metadata as JSON: refuse what it cannot hold or give back
    validate_metadata(item.metadata, limits=limits)
    for name in ("user_id", "agent_id", "session_id"):
        v = getattr(item, name)
        if v is not None and not isinstance(v, str):
            raise InvalidInputError(f"{name} must be a str or None")
        if v is not None:
            check_text(name, v)
    if item.content_hash is None:
        item.content_hash = content_hash(item.content)
    return item


# The keys of search's ``filters`` mapping, beside its keyword filters: one list for
# MemoryManager.search and the HTTP client's search (hello_memory/interfaces/client/operations.py).
SEARCH_FILTERS = frozenset({"user_id", "agent_id", "session_id", "min_importance",
                            "time_range", "as_of"})


def check_search_filters(filters: Any) -> None:
    """InvalidInputError naming any key of ``filters`` that is no search filter."""
    unknown = set(filters) - SEARCH_FILTERS
    if unknown:
        raise InvalidInputError(f"unknown search filter(s) {sorted(unknown)}; use "
                                f"{sorted(SEARCH_FILTERS)}")
