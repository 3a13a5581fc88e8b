"""Memory routes: add / search / get / update / delete / forget / restore /
consolidate / stats / clear / context, for every memory type."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from hello_memory.api.app import Namespace, manager_of
from hello_memory.errors import InvalidInputError
from hello_memory.memory.manager import MemoryManager, added_to_json, hit_to_json, item_to_json
from hello_memory.stores.uploads import uploads_root

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["memories"])
Manager = Annotated[MemoryManager, Depends(manager_of)]
TypeName = Literal["working", "episodic", "semantic", "perceptual"]
# The recipe names of hello_memory.retrieval.recipes.RECIPES (a test keeps them equal).
RecipeName = Literal["hybrid", "per-type", "bm25-only", "dense-only", "fused",
                     "fused+symbolic", "fused+graph", "fused+context"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AddMemory(_Body):
    content: str
    memory_type: Literal["working", "episodic", "semantic"] | None = None
    importance: float | None = Field(None, ge=0, le=1)
    metadata: dict[str, Any] | None = None
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    event_time: datetime | None = Field(None, description="timezone-aware ISO 8601")
    auto_classify: bool = False


class AddMany(_Body):
    memories: list[AddMemory] = Field(min_length=1, max_length=1000)


class SearchRequest(_Body):
    query: str
    top_k: int = Field(5, ge=1, le=100)
    memory_types: list[TypeName] | None = None
    min_importance: float | None = Field(None, ge=0, le=1)
    since: datetime | None = None
    until: datetime | None = None
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    reference_time: datetime | None = Field(
        None, description="resolves relative times ('last week'); timezone-aware, "
        "default now")
    recipe: RecipeName = Field("hybrid", description="search recipe: 'hybrid' (the "
                               "default) or an ablation (docs/RETRIEVAL.md)")
    as_of: datetime | None = Field(
        None, description="what was true then (timezone-aware): memories superseded "
        "since are found, default search keeps only those still true")


class UpdateMemory(_Body):
    content: str | None = None
    importance: float | None = Field(None, ge=0, le=1)
    metadata: dict[str, Any] | None = None


# Lifecycle fields left out (None) take the server's ``jobs`` settings, the defaults
# of every lifecycle entry point (README "Lifecycle defaults").
class ForgetRequest(_Body):
    ids: list[str] | None = Field(None, min_length=1, max_length=10_000)
    strategy: Literal["importance", "time", "capacity"] | None = Field(
        None, description="default: jobs.forget_strategy")
    threshold: float | None = Field(None, ge=0, le=1, description="default: "
                                    "jobs.forget_threshold")
    max_age_days: float | None = Field(None, ge=0, description="default: "
                                       "jobs.forget_max_age_days")
    max_items: int | None = Field(None, ge=0, description="default: jobs.forget_max_items")
    memory_types: list[Literal["working", "episodic", "semantic"]] | None = None
    dry_run: bool = False
    hard: bool = False


class RestoreRequest(_Body):
    ids: list[str] = Field(min_length=1, max_length=10_000)


class ConsolidateRequest(_Body):
    from_type: Literal["working", "episodic"] | None = Field(
        None, description="default: jobs.consolidate_from (episodic); one end names "
        "the other")
    to_type: Literal["episodic", "semantic"] | None = Field(
        None, description="default: jobs.consolidate_to (semantic)")
    importance_threshold: float | None = Field(None, ge=0, le=1, description="default: "
                                               "jobs.consolidate_importance")
    min_access_count: int | None = Field(None, ge=0, description="default: "
                                         "jobs.consolidate_min_access")
    dry_run: bool = False


class ContextRequest(_Body):
    query: str
    max_tokens: int = Field(1500, ge=1, le=100_000)


# What a repeated add does (issue 15); None: the memory.on_duplicate setting.
OnDuplicate = Annotated[Literal["return", "update", "store"] | None,
                        Query(description="default: memory.on_duplicate")]


@router.post("/memories", status_code=201)
def add_memory(body: AddMemory, namespace: Namespace, mm: Manager, response: Response,
               on_duplicate: OnDuplicate = None) -> dict[str, Any]:
    """Store one memory (importance estimated when not given). The same content already
    stored in the namespace and type is returned instead (200, ``duplicate_of`` set)."""
    item = mm.add_many([{**body.model_dump(exclude_none=True), "namespace": namespace}],
                       on_duplicate=on_duplicate)[0]
    if item.duplicate_of is not None:
        response.status_code = 200
    return added_to_json(item)


@router.post("/memories/batch", status_code=201)
def add_memories(body: AddMany, namespace: Namespace, mm: Manager,
                 on_duplicate: OnDuplicate = None) -> dict[str, Any]:
    """Store many memories; one invalid entry stores none. Repeated content gives back
    the memory already stored (``duplicate_of``), in entry order."""
    items = mm.add_many([{**m.model_dump(exclude_none=True), "namespace": namespace}
                         for m in body.memories], on_duplicate=on_duplicate)
    return {"ids": [i.id for i in items], "memories": [added_to_json(i) for i in items],
            "duplicates": sum(1 for i in items if i.duplicate_of is not None)}


@router.post("/search")
def search(body: SearchRequest, namespace: Namespace, mm: Manager) -> dict[str, Any]:
    """The one search (hybrid: plan, views, fusion, profiles) over the requested memory
    types (all by default), best first; each hit carries its per-view ranks."""
    time_range = (body.since, body.until) if body.since or body.until else None
    hits = mm.search(body.query, body.memory_types, body.top_k, namespace=namespace,
                     min_importance=body.min_importance, time_range=time_range,
                     user_id=body.user_id, agent_id=body.agent_id, session_id=body.session_id,
                     reference_time=body.reference_time, recipe=body.recipe,
                     as_of=body.as_of)
    return {"recipe": body.recipe, "hits": [hit_to_json(h) for h in hits]}


@router.get("/memories/{memory_id}")
def get_memory(memory_id: str, namespace: Namespace, mm: Manager) -> dict[str, Any]:
    return item_to_json(mm.get(memory_id, namespace=namespace))


@router.patch("/memories/{memory_id}")
def update_memory(memory_id: str, body: UpdateMemory, namespace: Namespace,
                  mm: Manager) -> dict[str, Any]:
    """Change content (re-embedded), importance or metadata. An image or audio memory's
    stored file (``metadata.source``) cannot be changed: it is kept when left out."""
    metadata = body.metadata
    if metadata is not None:
        current = mm.stores.records.memories.get_item(namespace, memory_id)
        if current.memory_type.value == "perceptual":
            kept = current.metadata.get("source")
            if "source" in metadata and metadata["source"] != kept:
                raise InvalidInputError("metadata.source of a media memory names its stored "
                                        "file and cannot be changed; add the file again")
            if kept is not None:
                metadata = {**metadata, "source": kept}
    item = mm.update(memory_id, namespace=namespace, content=body.content,
                     importance=body.importance, metadata=metadata)
    return item_to_json(item)


@router.delete("/memories/{memory_id}", status_code=204)
def delete_memory(memory_id: str, namespace: Namespace, mm: Manager) -> Response:
    """Delete one memory from every store (404 if there is none)."""
    from hello_memory.errors import NotFoundError

    if not mm.remove(memory_id, namespace=namespace):
        raise NotFoundError(f"no memory {memory_id!r} in namespace {namespace!r}")
    return Response(status_code=204)


@router.post("/forget")
def forget(body: ForgetRequest, namespace: Namespace, mm: Manager) -> dict[str, Any]:
    """Soft-forget (restorable) or, with ``hard``, purge low-value memories; with
    ``ids``, soft-forget exactly those (an unknown id changes nothing: 404)."""
    if body.ids is not None:
        if body.hard:
            raise InvalidInputError("hard forgetting takes a strategy, not ids; delete "
                                    "memories one by one with DELETE /v1/memories/{id}")
        done = mm.forget_ids(body.ids, namespace=namespace, dry_run=body.dry_run)
        return {"strategy": "ids", "ids": done, "count": len(done), "dry_run": body.dry_run,
                "hard": False}
    args = mm.lifecycle.forget_options(body.strategy, body.threshold, body.max_age_days,
                                       body.max_items)
    rep = mm.forget(namespace=namespace, memory_types=body.memory_types,
                    dry_run=body.dry_run, hard=body.hard, **args)
    return {"strategy": rep.strategy, "ids": list(rep.ids), "count": rep.count,
            "dry_run": rep.dry_run, "hard": rep.hard}


@router.post("/restore")
def restore(body: RestoreRequest, namespace: Namespace, mm: Manager) -> dict[str, Any]:
    """Bring soft-forgotten memories back into search."""
    return {"restored": mm.restore(body.ids, namespace=namespace)}


@router.post("/consolidate")
def consolidate(body: ConsolidateRequest, namespace: Namespace, mm: Manager) -> dict[str, Any]:
    """Promote episodic -> semantic (the default, ``jobs.consolidate_from/_to``) or
    working -> episodic, merging near-duplicates."""
    args = mm.lifecycle.consolidate_options(body.from_type, body.to_type,
                                            body.importance_threshold, body.min_access_count)
    rep = mm.consolidate(namespace=namespace, dry_run=body.dry_run, **args)
    return {"from_type": rep.from_type.value, "to_type": rep.to_type.value,
            "dry_run": rep.dry_run, "promoted": list(rep.promoted),
            "merged": {k: list(v) for k, v in rep.merged.items()},
            "removed_sources": list(rep.removed_sources),
            "deduplicated": {k: list(v) for k, v in rep.deduplicated.items()}}


@router.get("/stats")
def stats(namespace: Namespace, mm: Manager) -> dict[str, Any]:
    return mm.stats(namespace)


@router.get("/export", response_class=Response, responses={200: {
    "content": {"application/x-ndjson": {}},
    "description": "one memory per line, as `hello-memory export` writes them"}})
def export(namespace: Namespace, mm: Manager) -> Response:
    """Every memory of the namespace (forgotten ones and working memory too) as JSON
    lines, the file ``hello-memory export`` writes and ``import`` reads (README
    "Servers": the CLI's export through a running server)."""
    import os
    import tempfile

    from starlette.background import BackgroundTask
    from starlette.responses import FileResponse

    fd, tmp = tempfile.mkstemp(prefix="hm-export-", suffix=".jsonl")
    os.close(fd)
    try:
        mm.export_jsonl(tmp, namespace=namespace)
    except BaseException:
        os.unlink(tmp)
        raise
    return FileResponse(tmp, media_type="application/x-ndjson",
                        filename=namespace.replace("/", "_") + ".jsonl",
                        background=BackgroundTask(os.unlink, tmp))


@router.delete("/namespace")
def clear(request: Request, namespace: Namespace, mm: Manager,
          confirm: Annotated[bool, Query(description="must be true")] = False
          ) -> dict[str, Any]:
    """Delete everything of the namespace (and only that namespace): memories,
    documents and chunks, vectors, graph, audit rows, uploaded files. Returns counts
    per kind."""
    if confirm is not True:  # said in HTTP's words, not the Python keyword's
        raise InvalidInputError(f"this deletes every memory and document of namespace "
                                f"{namespace!r}: add confirm=true to the query string")
    return mm.clear(namespace, confirm=True,
                    uploads_dir=uploads_root(request.app.state.settings.data_dir))


@router.post("/context")
def context(body: ContextRequest, namespace: Namespace, mm: Manager) -> dict[str, Any]:
    """A ready-to-inject block of the memories relevant to a query, under a token
    budget (progressive loader: index -> timeline -> full memories)."""
    from hello_memory.tools import MemoryTool

    tool = MemoryTool(mm, namespace=namespace, context_tokens=max(20, body.max_tokens))
    text = tool.get_context_for_query(body.query, body.max_tokens)
    return {"context": text, "tokens": tool.counter.count(text)}
