"""The client's translations of what a server answers: JSON back into the library's
types (:func:`item_from_json`, :func:`hit_from_json`, :func:`job_run_from_json`, the
reports), a problem document back into the error the server raised
(:func:`error_from_problem`), and the check of a server URL before a key is sent
(:func:`check_server_url`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hello_memory import errors
from hello_memory.errors import (
    BackendUnavailableError,
    ConfigError,
    HelloMemoryError,
    InvalidInputError,
    NotFoundError,
    StoreError,
)
from hello_memory.memory.reports import ConsolidateReport, ForgetReport
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType, Modality

if TYPE_CHECKING:
    from hello_memory.interfaces.jobs import JobRun
    from hello_memory.memory.scoring import SearchHit


# --- JSON -> the library's types --------------------------------------------------------
def _when(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def item_from_json(data: Mapping[str, Any]) -> MemoryItem:
    """A memory back from its JSON (``item_to_json``; ``added_to_json``'s
    ``duplicate_of`` and ``near_duplicates`` too)."""
    item = MemoryItem(
        content=str(data["content"]), namespace=str(data.get("namespace", "")),
        memory_type=MemoryType(data["memory_type"]), id=str(data["id"]),
        user_id=data.get("user_id"), agent_id=data.get("agent_id"),
        session_id=data.get("session_id"), modality=Modality(data.get("modality", "text")),
        importance=float(data.get("importance", 0.5)),
        access_count=int(data.get("access_count", 0)),
        last_access=_when(data.get("last_access")),
        status=MemoryStatus(data.get("status", "active")),
        metadata=dict(data.get("metadata") or {}),
        valid_from=_when(data.get("valid_from")), valid_to=_when(data.get("valid_to")),
        superseded_by=data.get("superseded_by"))
    for name in ("event_time", "recorded_time"):
        when = _when(data.get(name))
        if when is not None:
            setattr(item, name, when)
    item.duplicate_of = data.get("duplicate_of")
    item.near_duplicates = tuple((str(n["id"]), float(n["similarity"]))
                                 for n in data.get("near_duplicates") or ())
    return item


def hit_from_json(data: Mapping[str, Any]) -> SearchHit:
    """A search hit back from its JSON (``hit_to_json``): the memory, the final and
    fused scores, the breakdown and each view's rank and score (the sub-queries that
    found it are not in the JSON). A hit without its ``memory`` (an older server) keeps
    the id, type and text."""
    from hello_memory.memory.scoring import ScoreBreakdown, SearchHit, ViewHit

    breakdown = data.get("breakdown") or {}
    memory = data.get("memory")
    item = (item_from_json(memory) if isinstance(memory, Mapping) and "content" in memory
            else MemoryItem(content=str(data["content"]), namespace="",
                            memory_type=MemoryType(data["memory_type"]), id=str(data["id"])))
    return SearchHit(
        item=item, score=float(data["score"]),
        breakdown=ScoreBreakdown(**{k: float(v) for k, v in breakdown.items()
                                    if k in ScoreBreakdown.__dataclass_fields__}),
        fused=float(data.get("fused", 0.0)),
        views={name: ViewHit(int(v["rank"]), float(v["score"]))
               for name, v in (data.get("views") or {}).items()},
        context=float(data.get("context", 0.0)))


def job_run_from_json(data: Mapping[str, Any]) -> JobRun:
    """A job run back from its JSON (``JobRun.as_dict``)."""
    from hello_memory.interfaces.jobs import JobRun

    return JobRun(str(data["job"]), str(data["namespace"]), bool(data["dry_run"]),
                  datetime.fromisoformat(data["started"]),
                  datetime.fromisoformat(data["finished"]),
                  {str(k): int(v) for k, v in (data.get("counts") or {}).items()},
                  dict(data.get("details") or {}))


def _forget_report(data: Mapping[str, Any]) -> ForgetReport:
    return ForgetReport(str(data["strategy"]), str(data["namespace"]),
                        tuple(data.get("ids") or ()), bool(data["dry_run"]),
                        bool(data.get("hard", False)))


def _consolidate_report(data: Mapping[str, Any]) -> ConsolidateReport:
    def groups(value: Any) -> dict[str, tuple[str, ...]]:
        return {str(k): tuple(v) for k, v in (value or {}).items()}

    return ConsolidateReport(
        str(data["namespace"]), MemoryType(data["from_type"]), MemoryType(data["to_type"]),
        bool(data["dry_run"]), tuple(data.get("promoted") or ()), groups(data.get("merged")),
        tuple(data.get("removed_sources") or ()), groups(data.get("deduplicated")))


# --- problem documents -> the library's errors ------------------------------------------
# What a problem's ``error`` names besides the classes of hello_memory.errors.
_OTHER_ERRORS: dict[str, type[HelloMemoryError]] = {
    "RequestValidationError": InvalidInputError, "TooManyRequests": BackendUnavailableError,
    "AccessDenied": ConfigError, "HostNotAllowed": ConfigError}
# A status without a known ``error`` name (a proxy in between, an older server).
_BY_STATUS: dict[int, type[HelloMemoryError]] = {
    400: InvalidInputError, 404: NotFoundError, 409: errors.JobBusyError,
    413: errors.PayloadTooLargeError, 422: InvalidInputError, 429: BackendUnavailableError,
    501: ConfigError, 502: BackendUnavailableError, 503: BackendUnavailableError,
    507: errors.InsufficientStorageError}


def _error_class(name: Any) -> type[HelloMemoryError] | None:
    if not isinstance(name, str):
        return None
    found = getattr(errors, name, None)
    if found is None and name.startswith("LLM"):
        from hello_memory.llm import base as llm_base

        found = getattr(llm_base, name, None)
    if isinstance(found, type) and issubclass(found, HelloMemoryError):
        return found
    return _OTHER_ERRORS.get(name)


def error_from_problem(status: int, body: Any, *, url: str, text: str = "",
                       reason: str = "") -> HelloMemoryError:
    """The error a problem document (RFC 9457, :mod:`hello_memory.interfaces.rest.problems`) stands
    for: the class its ``error`` field names, else the one its status stands for; the
    message is the server's ``detail``. The error has ``status`` and ``problem``."""
    problem = body if isinstance(body, dict) else {}
    detail = str(problem.get("detail") or text[:300] or reason or f"HTTP {status}")
    if status in (401, 403):
        cls: type[HelloMemoryError] = ConfigError
        message = (f"the server at {url} refused the request ({status}): {detail}; give a "
                   "key (Client(api_key=...), the CLI's --api-key or HELLO_MEMORY_API_KEY; "
                   "jobs need an admin key, one granted '*' in api.api_keys)")
    else:
        cls = (_error_class(problem.get("error")) or _BY_STATUS.get(status)
               or (StoreError if status >= 500 else InvalidInputError))
        message = f"{detail} (server {url})"
    # Some classes take other arguments (a key, a value): the message is the server's.
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    exc.status = status  # type: ignore[attr-defined]
    exc.problem = problem  # type: ignore[attr-defined]
    return exc


def check_server_url(url: str, *, key: bool, allow_insecure_key: bool = False) -> None:
    """Refuse (:class:`ConfigError`, one line) a server URL that is not ``http(s)://``,
    and one a key would cross in plain text: ``http://`` to an address that is not this
    machine's, unless ``allow_insecure_key``."""
    from urllib.parse import urlsplit

    from hello_memory.server_info import loopback_url

    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        host = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise ConfigError(f"the server URL {url!r} is not an http:// or https:// address")
    if key and parts.scheme == "http" and not loopback_url(url) and not allow_insecure_key:
        raise ConfigError(
            f"refusing to send the API key to {url} in plain text (http:// to another "
            "machine): use https://, or pass allow_insecure_key=True (the CLI's "
            "--allow-insecure-key) if the network is trusted")

