"""The client's operations, each defined once for both clients: a plan per operation
(``_add``, ``_search``, ...) that checks its arguments, yields its requests and returns
its result in the library's types. :data:`SHARED_OPERATIONS` are those with
:class:`~hello_memory.MemoryManager`'s names, arguments and return types."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from hello_memory import errors
from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.interfaces.client.convert import (
    _consolidate_report,
    _forget_report,
    hit_from_json,
    item_from_json,
    job_run_from_json,
)
from hello_memory.interfaces.client.engine import _NO_LIMIT, Plan, _Engine, _given, _Request
from hello_memory.memory.reports import (
    ClearReport,
    ConsolidateReport,
    ForgetReport,
    MemoryStats,
)
from hello_memory.types import MemoryItem, MemoryType
from hello_memory.validation import check_search_filters

if TYPE_CHECKING:
    from hello_memory.interfaces.jobs import JobRun
    from hello_memory.memory.scoring import SearchHit


# --- the operations: each defined once, for both clients --------------------------------
def _add(c: _Engine, content: str, memory_type: MemoryType | str | None = None,
         importance: float | None = None, metadata: Mapping[str, Any] | None = None, *,
         namespace: str | None = None, user_id: str | None = None,
         agent_id: str | None = None, session_id: str | None = None,
         event_time: datetime | None = None, auto_classify: bool = False,
         on_duplicate: str | None = None) -> Plan[MemoryItem]:
    """Store one memory (``MemoryManager.add``); a repeated add returns the stored
    memory with ``duplicate_of`` set."""
    data = yield c._operation("add", _given(
        content=content, memory_type=memory_type, importance=importance,
        metadata=dict(metadata) if metadata is not None else None, user_id=user_id,
        agent_id=agent_id, session_id=session_id, event_time=event_time,
        auto_classify=bool(auto_classify), on_duplicate=on_duplicate), namespace)
    return item_from_json(data)


_ENTRY_FIELDS = frozenset({"content", "memory_type", "importance", "metadata", "namespace",
                           "user_id", "agent_id", "session_id", "event_time",
                           "auto_classify"})


def _add_many(c: _Engine, entries: Iterable[Mapping[str, Any]], *,
              on_duplicate: str | None = None) -> Plan[list[MemoryItem]]:
    """Store many memories (``MemoryManager.add_many``), returned in entry order. Every
    entry is checked before anything is sent; the entries of one namespace go in one
    request (one bad entry stores none of them)."""
    entries = list(entries)
    groups: dict[str, list[int]] = {}
    bodies: list[dict[str, Any]] = []
    for n, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise InvalidInputError(f"entry {n}: not a mapping")
        unknown = set(entry) - _ENTRY_FIELDS
        if unknown:
            raise InvalidInputError(f"entry {n}: unknown field(s) {sorted(unknown)}")
        body = _given(**{k: v for k, v in entry.items() if k != "namespace"})
        body["auto_classify"] = bool(entry.get("auto_classify", False))
        bodies.append(body)
        groups.setdefault(c._ns(entry.get("namespace")), []).append(n)
    if not entries:
        raise InvalidInputError("add_many needs at least one entry")
    requests = [(ns, idx, c._operation("add_batch", _given(
        memories=[bodies[i] for i in idx], on_duplicate=on_duplicate), ns))
        for ns, idx in groups.items()]
    out: list[MemoryItem | None] = [None] * len(entries)
    for _ns, idx, request in requests:
        data = yield request
        for i, memory in zip(idx, data["memories"], strict=True):
            out[i] = item_from_json(memory)
    return [item for item in out if item is not None]


_NOT_OVER_REST = ("views", "view_weights", "neighbor_weight", "enable_planning",
                  "enable_reflection")


def _search(c: _Engine, query: str, memory_types: Sequence[MemoryType | str] | None = None,
            top_k: int = 5, *, namespace: str | None = None,
            min_importance: float | None = None,
            time_range: tuple[datetime | None, datetime | None] | None = None,
            user_id: str | None = None, agent_id: str | None = None,
            session_id: str | None = None, filters: Mapping[str, Any] | None = None,
            reference_time: datetime | None = None, recipe: str | None = None,
            views: Sequence[str] | None = None,
            view_weights: Mapping[str, float] | None = None,
            neighbor_weight: float | None = None, enable_planning: bool | None = None,
            enable_reflection: bool | None = None, touch: bool = True,
            as_of: datetime | None = None, min_score: float | None = None
            ) -> Plan[list[SearchHit]]:
    """The one hybrid search (``MemoryManager.search``), best first. ``views``,
    ``view_weights``, ``neighbor_weight`` and the LLM switches are the server's
    settings: giving them is an InvalidInputError; ``touch`` is always on."""
    local = {"views": views, "view_weights": view_weights,
             "neighbor_weight": neighbor_weight, "enable_planning": enable_planning,
             "enable_reflection": enable_reflection}
    given = [k for k in _NOT_OVER_REST if local[k] is not None] + ([] if touch else ["touch"])
    if given:
        raise InvalidInputError(f"{', '.join(given)}: the server's settings decide this; "
                                "a client cannot set it per call")
    if recipe is not None and not isinstance(recipe, str):
        raise InvalidInputError("recipe: give a recipe's name (a client cannot send a "
                                "SearchRecipe object)")
    if filters:
        check_search_filters(filters)
        merged = {"min_importance": min_importance, "time_range": time_range,
                  "user_id": user_id, "agent_id": agent_id, "session_id": session_id,
                  "as_of": as_of, **filters}
        min_importance, time_range = merged["min_importance"], merged["time_range"]
        user_id, agent_id = merged["user_id"], merged["agent_id"]
        session_id, as_of = merged["session_id"], merged["as_of"]
    since, until = time_range if time_range is not None else (None, None)
    data = yield c._operation("search", _given(
        query=query, top_k=top_k, memory_types=list(memory_types) if memory_types else None,
        min_importance=min_importance, since=since, until=until, user_id=user_id,
        agent_id=agent_id, session_id=session_id, reference_time=reference_time,
        recipe=recipe, as_of=as_of, min_score=min_score), namespace)
    return [hit_from_json(h) for h in data["hits"]]


def _get(c: _Engine, memory_id: str, *, namespace: str | None = None) -> Plan[MemoryItem]:
    """One memory by id (``MemoryManager.get``; NotFoundError for an unknown one)."""
    data = yield c._operation("get", {"memory_id": memory_id}, namespace)
    return item_from_json(data)


def _update(c: _Engine, memory_id: str, *, namespace: str | None = None,
            content: str | None = None, importance: float | None = None,
            metadata: Mapping[str, Any] | None = None) -> Plan[MemoryItem]:
    """Change a memory's content, importance or metadata (``MemoryManager.update``)."""
    data = yield c._operation("update", _given(
        memory_id=memory_id, content=content, importance=importance,
        metadata=dict(metadata) if metadata is not None else None), namespace)
    return item_from_json(data)


def _remove(c: _Engine, memory_id: str, *, namespace: str | None = None) -> Plan[bool]:
    """Delete one memory for good (``MemoryManager.remove``); False if there is none."""
    try:
        yield c._operation("remove", {"memory_id": memory_id}, namespace)
    except NotFoundError:
        return False
    return True


def _stats(c: _Engine, namespace: str | None = None) -> Plan[MemoryStats]:
    """Counts of one namespace (``MemoryManager.stats``)."""
    data = yield c._operation("stats", {}, namespace)
    return cast(MemoryStats, data)


def _clear(c: _Engine, namespace: str, *, confirm: bool = False,
           uploads_dir: str | Path | None = None) -> Plan[ClearReport]:
    """Delete everything of ONE namespace (``MemoryManager.clear``; needs
    ``confirm=True``). The server removes its own uploaded files: ``uploads_dir`` is
    not a client's to give."""
    if uploads_dir is not None:
        raise InvalidInputError("uploads_dir: the server removes the files it keeps; a "
                                "client cannot name a folder")
    if not namespace:
        raise errors.NamespaceRequiredError("clear needs a namespace")
    data = yield c._operation("clear", {"confirm": confirm}, namespace)
    return cast(ClearReport, data)


def _export_jsonl(c: _Engine, path: str | Path, *, namespace: str | None = None
                  ) -> Plan[int]:
    """Write every memory of a namespace as JSON lines into ``path`` (a file on this
    machine; ``MemoryManager.export_jsonl``); the number of memories written."""
    count = yield _Request("GET", "/v1/export", {"namespace": c._ns(namespace)}, retry=True,
                           save_to=Path(path), timeout=_NO_LIMIT)
    return int(count)


def _forget(c: _Engine, strategy: str | None = None, *, namespace: str | None = None,
            threshold: float | None = None, max_age_days: float | None = None,
            max_items: int | None = None,
            memory_types: Sequence[MemoryType | str] | None = None,
            dry_run: bool = False, hard: bool = False) -> Plan[ForgetReport]:
    """Forget by a strategy (``MemoryManager.forget``); what is left out comes from the
    server's ``jobs`` settings."""
    data = yield c._operation("forget", _given(
        strategy=strategy, threshold=threshold, max_age_days=max_age_days,
        max_items=max_items, memory_types=list(memory_types) if memory_types else None,
        dry_run=dry_run, hard=hard), namespace)
    return _forget_report(data)


def _forget_ids(c: _Engine, ids: Sequence[str], *, namespace: str | None = None,
                dry_run: bool = False) -> Plan[list[str]]:
    """Soft-forget these memories (``MemoryManager.forget_ids``); the ids forgotten."""
    data = yield c._operation("forget", {"ids": list(ids), "dry_run": dry_run}, namespace)
    return [str(i) for i in data["ids"]]


def _restore(c: _Engine, ids: Sequence[str], *, namespace: str | None = None) -> Plan[int]:
    """Bring soft-forgotten memories back (``MemoryManager.restore``); how many."""
    data = yield c._operation("restore", {"ids": list(ids)}, namespace)
    return int(data["restored"])


def _consolidate(c: _Engine, from_type: MemoryType | str | None = None,
                 to_type: MemoryType | str | None = None, *, namespace: str | None = None,
                 importance_threshold: float | None = None,
                 min_access_count: int | None = None, dry_run: bool = False
                 ) -> Plan[ConsolidateReport]:
    """Promote important memories one step (``MemoryManager.consolidate``)."""
    data = yield c._operation("consolidate", _given(
        from_type=from_type, to_type=to_type, importance_threshold=importance_threshold,
        min_access_count=min_access_count, dry_run=dry_run), namespace)
    return _consolidate_report(data)


# --- beyond MemoryManager: the server's own operations ----------------------------------
def _invoke(c: _Engine, operation: str, arguments: Mapping[str, Any] | None = None, *,
            namespace: str | None = None) -> Plan[dict[str, Any]]:
    """Any catalogue operation with a JSON route (documents, media by path, jobs...) by
    name: its JSON, as REST answers it ({} for an answer without content)."""
    data = yield c._operation(operation, dict(arguments or {}), namespace,
                              timeout=_NO_LIMIT if operation == "run_job" else None)
    return data if isinstance(data, dict) else {}


def _context(c: _Engine, query: str, max_tokens: int = 1500, *,
             namespace: str | None = None, reference_time: datetime | None = None,
             recipe: str | None = None) -> Plan[str]:
    """The ready-to-inject context block for ``query`` (``MemoryTool.
    get_context_for_query``; ``POST /v1/context``), at most ``max_tokens`` tokens."""
    data = yield c._operation("context", _given(
        query=query, max_tokens=max_tokens, reference_time=reference_time, recipe=recipe),
        namespace)
    return str(data["context"])


def _run_job(c: _Engine, job: str, namespaces: Sequence[str] = (), *,
             all_namespaces: bool = False, dry_run: bool = False, **options: Any
             ) -> Plan[list[JobRun]]:
    """Run one maintenance job now on the server (an admin key): one run per namespace.
    ``options`` are those of ``POST /v1/jobs/{name}`` (threshold, min_access, strategy,
    max_age_days, max_items, hard, retry_failed, drop_failed)."""
    data = yield c._operation("run_job", _given(
        name=job, namespace=list(namespaces) or None, all_namespaces=all_namespaces,
        dry_run=dry_run, **options), None, timeout=_NO_LIMIT)
    return [job_run_from_json(r) for r in data["runs"]]


def _namespaces(c: _Engine) -> Plan[list[str]]:
    """Every namespace that holds memories (an admin key)."""
    data = yield c._operation("list_namespaces", {}, None)
    return [str(n) for n in data["namespaces"]]


def _health(c: _Engine) -> Plan[dict[str, Any]]:
    """``GET /healthz``: ``{"status": "ok", "version": ...}`` once the server serves."""
    data = yield _Request("GET", "/healthz", retry=True)
    return dict(data or {})


# The operations shared with MemoryManager (same names, arguments and return types).
SHARED_OPERATIONS = ("add", "add_many", "search", "get", "update", "remove", "stats",
                     "clear", "export_jsonl", "forget", "forget_ids", "restore",
                     "consolidate")
