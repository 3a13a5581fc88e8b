"""The memory operations: request models (defined in :mod:`.memory_requests`, which
loads without the facade, and importable from here), one handler per operation (one
facade call), and which serialiser turns each result into JSON (``item_to_json``, ``added_to_json``,
``hit_to_json`` from :mod:`hello_memory.memory.manager`; reports through
:func:`~hello_memory.interfaces.catalogue.plain_json`).

Lifecycle fields left out (None) take the ``jobs`` settings through
``MemoryManager.lifecycle`` (ARCHITECTURE decision 9; docs/JOBS.md "Lifecycle defaults").
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.interfaces.catalogue.core import Call, NoArguments, Operation, Rest, plain_json
from hello_memory.interfaces.catalogue.memory_requests import (
    AddMany,
    AddMemory,
    ClearRequest,
    ConsolidateRequest,
    ContextRequest,
    ForgetRequest,
    MemoryEntry,
    MemoryId,
    OnDuplicate,
    RecipeName,
    RestoreRequest,
    SearchRequest,
    StoredType,
    SummaryRequest,
    TypeName,
    UpdateMemory,
)
from hello_memory.interfaces.tools.context import ContextBuilder
from hello_memory.memory.manager import added_to_json, hit_to_json, item_to_json
from hello_memory.types import MemoryItem, MemoryType

if TYPE_CHECKING:
    from hello_memory.memory.scoring import SearchHit

# the request models are re-exported: they were defined here before memory_requests.py
__all__ = ["MEMORY_OPERATIONS", "AddMany", "AddMemory", "ClearRequest", "ConsolidateRequest",
           "ContextRequest", "ForgetRequest", "MemoryEntry", "MemoryId", "OnDuplicate",
           "RecipeName", "RestoreRequest", "SearchRequest", "StoredType", "SummaryRequest",
           "TypeName", "UpdateMemory"]


def _entry(entry: MemoryEntry, namespace: str) -> dict[str, Any]:
    data = entry.model_dump(exclude_none=True, exclude={"auto_classify"})
    auto = entry.memory_type is None if entry.auto_classify is None else entry.auto_classify
    return {**data, "auto_classify": auto, "namespace": namespace}


# --- handlers: one facade call each -----------------------------------------------------
def add(call: Call, req: AddMemory) -> MemoryItem:
    entry = _entry(MemoryEntry.model_validate(req.model_dump(exclude={"on_duplicate"})),
                   call.namespace)
    return call.adder().add_many([entry], on_duplicate=req.on_duplicate)[0]


def add_many(call: Call, req: AddMany) -> list[MemoryItem]:
    return call.adder().add_many([_entry(m, call.namespace) for m in req.memories],
                                 on_duplicate=req.on_duplicate)


@dataclass(frozen=True)
class Found:
    recipe: str
    hits: list[SearchHit]


def search(call: Call, req: SearchRequest) -> Found:
    time_range = (req.since, req.until) if req.since or req.until else None
    hits = call.manager.search(
        req.query, req.memory_types, req.top_k, namespace=call.namespace,
        min_importance=req.min_importance, time_range=time_range, user_id=req.user_id,
        agent_id=req.agent_id, session_id=req.session_id,
        reference_time=req.reference_time, recipe=req.recipe, as_of=req.as_of,
        min_score=req.min_score)
    return Found(req.recipe, hits)


def get(call: Call, req: MemoryId) -> MemoryItem:
    return call.manager.get(req.memory_id, namespace=call.namespace)


def update(call: Call, req: UpdateMemory) -> MemoryItem:
    """An image or audio memory's stored file (``metadata.source``) cannot be changed:
    it is kept when left out."""
    mm, metadata = call.manager, req.metadata
    if metadata is not None:
        current = mm.browse.get_memory(call.namespace, req.memory_id)
        if current.memory_type is MemoryType.PERCEPTUAL:
            kept = current.metadata.get("source")
            if "source" in metadata and metadata["source"] != kept:
                raise InvalidInputError("metadata.source of a media memory names its stored "
                                        "file and cannot be changed; add the file again")
            if kept is not None:
                metadata = {**metadata, "source": kept}
    return mm.update(req.memory_id, namespace=call.namespace, content=req.content,
                     importance=req.importance, metadata=metadata)


def remove(call: Call, req: MemoryId) -> str:
    if not call.manager.remove(req.memory_id, namespace=call.namespace):
        raise NotFoundError(f"no memory {req.memory_id!r} in namespace {call.namespace!r}")
    return req.memory_id


def forget(call: Call, req: ForgetRequest) -> Any:
    mm = call.manager
    if req.ids is not None:
        if req.hard:
            raise InvalidInputError("hard forgetting takes a strategy, not ids; delete "
                                    "memories one by one (remove)")
        done = mm.forget_ids(req.ids, namespace=call.namespace, dry_run=req.dry_run)
        return {"strategy": "ids", "namespace": call.namespace, "ids": done,
                "count": len(done), "dry_run": req.dry_run, "hard": False}
    args = mm.lifecycle.forget_options(req.strategy, req.threshold, req.max_age_days,
                                       req.max_items)
    return mm.forget(namespace=call.namespace, memory_types=req.memory_types,
                     dry_run=req.dry_run, hard=req.hard, **args)


def restore(call: Call, req: RestoreRequest) -> int:
    return call.manager.restore(req.ids, namespace=call.namespace)


def consolidate(call: Call, req: ConsolidateRequest) -> Any:
    mm = call.manager
    args = mm.lifecycle.consolidate_options(req.from_type, req.to_type,
                                            req.importance_threshold, req.min_access_count)
    return mm.consolidate(namespace=call.namespace, dry_run=req.dry_run, **args)


def stats(call: Call, req: NoArguments) -> Any:
    return call.manager.stats(call.namespace)


def clear(call: Call, req: ClearRequest) -> Any:
    if req.confirm is not True:
        raise InvalidInputError(f"this deletes every memory and document of namespace "
                                f"{call.namespace!r}: add confirm=true")
    uploads = None
    if call.settings is not None:
        from hello_memory.services.browse import uploads_root

        uploads = uploads_root(call.settings.data_dir)
    return call.manager.clear(call.namespace, confirm=True, uploads_dir=uploads)


def context(call: Call, req: ContextRequest) -> dict[str, Any]:
    builder = ContextBuilder(call.manager, namespace=call.namespace,
                             context_tokens=max(20, req.max_tokens))
    text = builder.build(req.query, req.max_tokens, reference_time=req.reference_time,
                         recipe=req.recipe)
    return {"context": text, "tokens": builder.counter.count(text)}


@dataclass(frozen=True)
class Summary:
    stats: Any
    top: dict[str, list[MemoryItem]]


def summary(call: Call, req: SummaryRequest) -> Summary:
    from hello_memory.services.browse import ItemFilter

    mm, ns = call.manager, call.namespace
    top: dict[str, list[MemoryItem]] = {}
    for mtype in (MemoryType.SEMANTIC, MemoryType.EPISODIC):
        # ORDER BY importance DESC LIMIT n on an index: bounded by ``limit``.
        top[mtype.value] = mm.browse.list_memories(
            ns, ItemFilter(memory_types=(mtype,)), order="-importance", limit=req.limit)
    top["working"] = sorted(mm.working.list(ns),
                            key=lambda i: -i.event_time.timestamp())[:req.limit]
    return Summary(mm.stats(ns), top)


def export(call: Call, req: NoArguments) -> str:
    """The namespace as JSON lines in a temporary file (its path); the caller removes
    it once sent."""
    fd, tmp = tempfile.mkstemp(prefix="hm-export-", suffix=".jsonl")
    os.close(fd)
    try:
        call.manager.export_jsonl(tmp, namespace=call.namespace)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


# --- serialisers (one per result type) ----------------------------------------------------
def added_many_json(items: list[MemoryItem]) -> dict[str, Any]:
    return {"ids": [i.id for i in items], "memories": [added_to_json(i) for i in items],
            "duplicates": sum(1 for i in items if i.duplicate_of is not None)}


def found_json(found: Found) -> dict[str, Any]:
    return {"recipe": found.recipe, "hits": [hit_to_json(h) for h in found.hits]}


def summary_json(s: Summary) -> dict[str, Any]:
    st = plain_json(s.stats)
    return {"namespace": st["namespace"], "total": st["total"], "by_type": st["by_type"],
            "forgotten": st["forgotten"],
            "memories": {k: [item_to_json(i) for i in v] for k, v in s.top.items()}}


def report_json(report: Any) -> dict[str, Any]:
    out = plain_json(report)
    assert isinstance(out, dict)
    return out


def export_file(path: str, call: Call) -> Any:
    """REST's answer to export: the file, removed once sent."""
    from starlette.background import BackgroundTask
    from starlette.responses import FileResponse

    return FileResponse(path, media_type="application/x-ndjson",
                        filename=call.namespace.replace("/", "_") + ".jsonl",
                        background=BackgroundTask(os.unlink, path))


def _added_status(item: MemoryItem) -> int:
    return 200 if item.duplicate_of is not None else 201


_FILE_ONLY = "a whole namespace as a JSON-lines file: a download, not a tool answer"

# The MemoryTool's first nine actions keep the order they had before the catalogue.
MEMORY_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "add", "Store one memory (importance estimated when not given).",
        AddMemory, add, added_to_json, "write",
        Rest("POST", "/memories", 201, query=("on_duplicate",), status_of=_added_status),
        description="The same content already stored in the namespace and type is "
        "returned instead (``duplicate_of`` set; REST answers 200).",
        names={"mcp": "remember"}, cli="add", batched=True),
    Operation(
        "search", "Find memories relevant to a query (the one hybrid search), best first.",
        SearchRequest, search, found_json, "read", Rest("POST", "/search"),
        description="Plan, views, fusion, profiles over the requested memory types (all "
        "by default); each hit carries its ids, scores and per-view ranks.",
        names={"mcp": "recall"}, cli="search"),
    Operation(
        "summary", "An overview of what is remembered: counts and the most important "
        "memories of each type.",
        SummaryRequest, summary, summary_json, "read", Rest("GET", "/summary")),
    Operation(
        "stats", "Counts of memories per type and store for the namespace.",
        NoArguments, stats, report_json, "read", Rest("GET", "/stats"), cli="stats"),
    Operation(
        "update", "Change a memory's content (re-embedded), importance or metadata.",
        UpdateMemory, update, item_to_json, "write", Rest("PATCH", "/memories/{memory_id}"),
        description="An image or audio memory's stored file (metadata.source) cannot be "
        "changed: it is kept when left out."),
    Operation(
        "remove", "Delete one memory for good from every store (by its full id).",
        MemoryId, remove, lambda mid: {"id": mid, "removed": True}, "write",
        Rest("DELETE", "/memories/{memory_id}", 204),
        description="An unknown id is an error (NotFoundError; REST 404)."),
    Operation(
        "forget", "Forget memories: the given ids, or the low-value ones a strategy picks.",
        ForgetRequest, forget, report_json, "write", Rest("POST", "/forget"),
        description="Soft (restorable) unless hard; with ids, exactly those (an unknown "
        "id changes nothing: NotFoundError).", cli="forget"),
    Operation(
        "consolidate", "Promote important memories: episodic -> semantic (the default) or "
        "working -> episodic, merging near-duplicates.",
        ConsolidateRequest, consolidate, report_json, "write", Rest("POST", "/consolidate")),
    Operation(
        "clear", "Delete EVERYTHING of the namespace (and only it): memories, documents, "
        "vectors, graph, audit rows, uploaded files. Needs confirm=true.",
        ClearRequest, clear, report_json, "write",
        Rest("DELETE", "/namespace", query=("confirm",)),
        description="Returns counts per kind."),
    Operation(
        "add_batch", "Store many memories; one invalid entry stores none.",
        AddMany, add_many, added_many_json, "write",
        Rest("POST", "/memories/batch", 201, query=("on_duplicate",)),
        description="Repeated content gives back the memory already stored "
        "(``duplicate_of``), in entry order.", batched=True),
    Operation(
        "get", "One memory by its full id, with every field.",
        MemoryId, get, item_to_json, "read", Rest("GET", "/memories/{memory_id}"),
        names={"mcp": "get_memory"}, cli="show"),
    Operation(
        "restore", "Bring soft-forgotten memories back into search.",
        RestoreRequest, restore, lambda n: {"restored": n}, "write", Rest("POST", "/restore")),
    Operation(
        "context", "A ready-to-inject block of the memories relevant to a query, under a "
        "token budget (progressive loader: index -> timeline -> full memories).",
        ContextRequest, context, report_json, "read", Rest("POST", "/context")),
    Operation(
        "export", "Every memory of the namespace (forgotten and working ones too) as JSON "
        "lines, the file `hello-memory export` writes and `import` reads.",
        NoArguments, export, lambda path: {"path": path}, "read",
        Rest("GET", "/export", respond=export_file, respond_type="application/x-ndjson"),
        not_on={"mcp": _FILE_ONLY, "tool": _FILE_ONLY}),
)
