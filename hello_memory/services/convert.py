"""The JSON forms of what the facade returns, and the error perceptual memory raises
while it is off: one form for every interface (REST, MCP, the CLI's ``--json``, the
``MemoryTool``, an export file).

These functions moved here from ``hello_memory/memory/manager.py`` (issue 31), which
re-exports them, so ``from hello_memory.memory.manager import item_to_json`` keeps
working. They read and write nothing: plain conversions of the value types of
:mod:`hello_memory.types` and :mod:`hello_memory.memory.scoring`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hello_memory.errors import InvalidInputError, PerceptualNotConfiguredError
from hello_memory.memory.scoring import SearchHit
from hello_memory.types import MemoryItem, MemoryStatus, utcnow
from hello_memory.validation import validate_memory_type

__all__ = ["added_to_json", "hit_to_json", "item_from_json", "item_to_json",
           "perceptual_off_error"]


def item_to_json(item: MemoryItem) -> dict[str, Any]:
    def iso(d: datetime | None) -> str | None:
        return d.isoformat() if d else None

    return {
        "id": item.id, "namespace": item.namespace, "content": item.content,
        "memory_type": item.memory_type.value, "modality": item.modality.value,
        "user_id": item.user_id, "agent_id": item.agent_id, "session_id": item.session_id,
        "event_time": iso(item.event_time), "recorded_time": iso(item.recorded_time),
        "importance": item.importance, "access_count": item.access_count,
        "last_access": iso(item.last_access), "status": item.status.value,
        "metadata": item.metadata,
        "valid_from": iso(item.valid_from or item.event_time), "valid_to": iso(item.valid_to),
        "superseded_by": item.superseded_by,
    }


def added_to_json(item: MemoryItem) -> dict[str, Any]:
    """A memory as an add returned it (REST, MCP, the MemoryTool): :func:`item_to_json`
    plus ``duplicate_of`` (the id of the memory already stored that a repeated add gave
    back, else null) and ``near_duplicates`` (``[{"id", "similarity"}]``, cosine >=
    ``memory.dedup_threshold``), issue 15."""
    return {**item_to_json(item), "duplicate_of": item.duplicate_of,
            "near_duplicates": [{"id": i, "similarity": s} for i, s in item.near_duplicates]}


def hit_to_json(hit: SearchHit) -> dict[str, Any]:
    """One search hit as JSON, the same for every interface (REST, MCP, the CLI's
    ``--json``, ``MemoryTool``): the final score, the fused score, each view's rank and
    raw score, the neighbour context, the profile breakdown and the memory itself."""
    return {"id": hit.id, "score": round(hit.score, 6), "memory_type": hit.memory_type.value,
            "content": hit.item.content, "fused": round(hit.fused, 6),
            "context": round(hit.context, 6),
            "views": {v: {"rank": vh.rank, "score": round(vh.score, 6)}
                      for v, vh in sorted(hit.views.items(), key=lambda kv: kv[1].rank)},
            "breakdown": {k: round(v, 6) for k, v in hit.breakdown.as_dict().items()},
            "memory": item_to_json(hit.item)}


def item_from_json(data: Mapping[str, Any], namespace: str | None = None) -> MemoryItem:
    def when(v: Any) -> datetime | None:
        return datetime.fromisoformat(v) if v else None

    try:
        source_ns, memory_id = str(data["namespace"]), str(data["id"])
        target_ns = namespace or source_ns
        if target_ns != source_ns:
            # Ids are unique across namespaces: a copy into another namespace gets its
            # own id, derived from the original so that importing twice stays a no-op.
            memory_id = str(uuid.uuid5(uuid.NAMESPACE_URL,
                                       f"hello-memory:{target_ns}:{memory_id}"))
        return MemoryItem(
            id=memory_id, namespace=target_ns,
            content=data["content"], memory_type=validate_memory_type(data["memory_type"]),
            modality=data.get("modality", "text"), user_id=data.get("user_id"),
            agent_id=data.get("agent_id"), session_id=data.get("session_id"),
            event_time=when(data["event_time"]) or utcnow(),
            recorded_time=when(data.get("recorded_time")) or utcnow(),
            importance=data.get("importance", 0.5),
            access_count=int(data.get("access_count", 0)),
            last_access=when(data.get("last_access")),
            status=MemoryStatus(data.get("status", "active")),
            metadata=dict(data.get("metadata") or {}),
            valid_from=when(data.get("valid_from")), valid_to=when(data.get("valid_to")),
            superseded_by=_validity_link(data.get("superseded_by"), source_ns, target_ns),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"not a hello-memory export record: {exc}") from exc


def perceptual_off_error() -> PerceptualNotConfiguredError:
    """The error for perceptual memory used while it is off: what to install (when
    the multimodal extra is missing) and what to set."""
    from hello_memory.memory.perceptual import missing_multimodal_modules

    missing = missing_multimodal_modules()
    if missing:
        return PerceptualNotConfiguredError(
            "image and audio memory need the multimodal extra (missing: "
            f"{', '.join(missing)}): pip install 'hello-memory[multimodal]', then set "
            "perceptual.enabled: true (HELLO_MEMORY__PERCEPTUAL__ENABLED=true)")
    return PerceptualNotConfiguredError(
        "perceptual memory is off: set perceptual.enabled: true "
        "(HELLO_MEMORY__PERCEPTUAL__ENABLED=true) and the weights in "
        "perceptual.image.pretrained / perceptual.audio.checkpoint")


def _validity_link(memory_id: Any, source_ns: str, target_ns: str) -> str | None:
    """An export's ``superseded_by``, re-pointed like the ids of a copy into another
    namespace (see item_from_json)."""
    if not memory_id:
        return None
    if target_ns == source_ns:
        return str(memory_id)
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"hello-memory:{target_ns}:{memory_id}"))
