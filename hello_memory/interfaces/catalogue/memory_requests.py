"""The request models of the memory operations (:mod:`hello_memory.interfaces.catalogue.memories`):
argument names, types, defaults, bounds and descriptions, apart from the handlers so
that they load without the facade. The CLI builds its options from them when it
starts (:mod:`hello_memory.interfaces.catalogue.cli_options`; docs/ARCHITECTURE.md, Layers:
interfaces), and every name here is also importable from
:mod:`hello_memory.interfaces.catalogue.memories`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from hello_memory.interfaces.catalogue.core import Request
from hello_memory.retrieval.recipes import recipe_names

__all__ = ["AddMany", "AddMemory", "ClearRequest", "ConsolidateRequest", "ContextRequest",
           "ForgetRequest", "MemoryEntry", "MemoryId", "OnDuplicate", "RecipeName",
           "RestoreRequest", "SearchRequest", "StoredType", "SummaryRequest", "TypeName",
           "UpdateMemory"]

TypeName = Literal["working", "episodic", "semantic", "perceptual"]
StoredType = Literal["working", "episodic", "semantic"]
def _known_recipe(name: str) -> str:
    if name not in recipe_names():
        raise ValueError(f"unknown search recipe {name!r}; use one of "
                         f"{', '.join(recipe_names())}")
    return name


def _recipe_enum(schema: dict[str, Any]) -> None:
    schema["enum"] = list(recipe_names())  # read when a schema is written, not at import


# A recipe's name: those of hello_memory.retrieval.recipes.RECIPES, built-in or added
# with register_recipe (issue 31), checked when a request is read and listed in the
# REST and MCP schemas as they are when the schema is written.
RecipeName = Annotated[str, AfterValidator(_known_recipe),
                       Field(json_schema_extra=_recipe_enum)]
# What a repeated add does (issue 15); None: the memory.on_duplicate setting.
OnDuplicate = Literal["return", "update", "store"]


class MemoryEntry(Request):
    content: str = Field(description="The text to remember, one fact or event.")
    memory_type: StoredType | None = Field(
        None, description="working (this conversation), episodic (an event) or semantic "
        "(a lasting fact or preference); default: memory.default_type, or chosen from the "
        "text (auto_classify)")
    importance: float | None = Field(None, ge=0, le=1, description="0..1; estimated "
                                     "when omitted")
    metadata: dict[str, Any] | None = Field(None, description="Free-form tags.")
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    event_time: datetime | None = Field(None, description="timezone-aware ISO 8601")
    auto_classify: bool | None = Field(
        None, description="choose the type from the text; default: when memory_type is "
        "left out")


class AddMemory(MemoryEntry):
    on_duplicate: OnDuplicate | None = Field(None, description="default: "
                                             "memory.on_duplicate")


class AddMany(Request):
    memories: list[MemoryEntry] = Field(min_length=1, max_length=1000)
    on_duplicate: OnDuplicate | None = Field(None, description="default: "
                                             "memory.on_duplicate")


class SearchRequest(Request):
    query: str = Field(description="What to look for, in natural language.")
    top_k: int = Field(5, ge=1, le=100, description="How many memories to return.")
    memory_types: list[TypeName] | None = Field(None, description="Limit to these types.")
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
    min_score: float | None = Field(
        None, ge=0, le=1, description="drop hits scored under this (scores are in "
        "[0, 1]; retrieval.min_score is the measured relevance floor)")


class MemoryId(Request):
    memory_id: str = Field(description="The id returned by add or search, or its short "
                           "handle (its first 8 characters, as the context block shows it).")


class UpdateMemory(MemoryId):
    content: str | None = None
    importance: float | None = Field(None, ge=0, le=1)
    metadata: dict[str, Any] | None = None


class ForgetRequest(Request):
    ids: list[str] | None = Field(None, min_length=1, max_length=10_000,
                                  description="Forget exactly these ids.")
    strategy: Literal["importance", "time", "capacity"] | None = Field(
        None, description="default: jobs.forget_strategy")
    threshold: float | None = Field(None, ge=0, le=1, description="importance: below "
                                    "this; default: jobs.forget_threshold")
    max_age_days: float | None = Field(None, ge=0, description="time: older than this; "
                                       "default: jobs.forget_max_age_days")
    max_items: int | None = Field(None, ge=0, description="capacity: keep this many; "
                                  "default: jobs.forget_max_items")
    memory_types: list[StoredType] | None = None
    dry_run: bool = Field(False, description="Only report what would be forgotten.")
    hard: bool = Field(False, description="Delete for good (no restore); a strategy only.")


class RestoreRequest(Request):
    ids: list[str] = Field(min_length=1, max_length=10_000)


class ConsolidateRequest(Request):
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


class ContextRequest(Request):
    query: str
    max_tokens: int = Field(1500, ge=1, le=100_000)
    reference_time: datetime | None = Field(
        None, description="resolves relative times in the query ('next week'), as "
        "search does; timezone-aware, default now")
    recipe: RecipeName = Field("hybrid", description="the search recipe whose ranking "
                               "the block follows")


class SummaryRequest(Request):
    limit: int = Field(5, ge=1, le=50, description="Memories shown per type.")


class ClearRequest(Request):
    confirm: bool = Field(False, description="Must be true; nothing happens otherwise.")
