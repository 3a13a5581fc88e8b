"""The MemoryTool's compact view of an operation's JSON (the JSON every interface
returns, :mod:`hello_memory.interfaces.catalogue`), and its one-line text renderings.

The view is built on the JSON, not beside it: a memory (``item_to_json``) keeps the
fields an agent needs (full id, type, content, importance, event time, tags), a hit
(``hit_to_json``) adds its score, profile breakdown and per-view ranks (and what an
operation added beside them: a media hit's modality, source, caption...), and a list
of hits also gives ``ids``; everything else passes through. An operation without a
rendering of its own is rendered generically, so a new operation needs none.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

__all__ = ["HIT_OPERATIONS", "RECALL_TEXT_CHARS", "TEXTS", "brief", "brief_hit", "brief_text",
           "compact", "compact_memory", "render_text"]

# The operations whose answer is a list of memory hits: a model gets them brief (id,
# text, date, type, score) unless it asks for ``detail`` (issue 29, item 4).
HIT_OPERATIONS = frozenset({"search", "search_media"})
# A brief hit's text is cut here (get / get_memory returns the memory whole).
RECALL_TEXT_CHARS = 1000
DETAIL_DESCRIPTION = ("true: each hit with its full memory record and score breakdown "
                      "(per-view ranks, profile parts); default: id, text, date, type, "
                      "score")

_MEMORY_KEYS = frozenset({"id", "namespace", "content", "memory_type", "status",
                          "recorded_time"})
_ITEM_KEYS = _MEMORY_KEYS | {"modality", "user_id", "agent_id", "session_id", "event_time",
                             "importance", "access_count", "last_access", "metadata",
                             "valid_from", "valid_to", "superseded_by"}


def _is_memory(value: Mapping[str, Any]) -> bool:
    return value.keys() >= _MEMORY_KEYS


def _is_hit(value: Mapping[str, Any]) -> bool:
    return {"id", "score", "memory", "views"} <= value.keys() and isinstance(
        value["memory"], Mapping)


def compact_memory(memory: Mapping[str, Any], score: float | None = None) -> dict[str, Any]:
    """The fields an agent needs about one memory (full id included), and whatever
    the operation added beside the memory's own fields (``duplicate_of``, ...)."""
    out: dict[str, Any] = {"id": memory["id"], "memory_type": memory["memory_type"],
                           "content": memory["content"],
                           "importance": round(float(memory.get("importance") or 0.0), 4),
                           "event_time": memory.get("event_time")}
    if score is not None:
        out["score"] = round(score, 4)
    if memory.get("metadata"):
        out["metadata"] = memory["metadata"]
    out.update({k: compact(v) for k, v in memory.items() if k not in _ITEM_KEYS})
    return out


# hit_to_json's own keys; anything else on a hit is the operation's (media fields)
_HIT_KEYS = frozenset({"id", "score", "memory_type", "content", "fused", "context", "views",
                       "breakdown", "memory"})


def _compact_hit(hit: Mapping[str, Any]) -> dict[str, Any]:
    return {**compact_memory(hit["memory"], float(hit["score"])),
            "breakdown": hit.get("breakdown", {}),
            "views": {v: vh["rank"] for v, vh in hit["views"].items()},
            **{k: compact(v) for k, v in hit.items() if k not in _HIT_KEYS}}


def brief_hit(hit: Mapping[str, Any]) -> dict[str, Any]:
    """One search hit as a model needs it: ``id``, ``text`` (cut at
    RECALL_TEXT_CHARS, then ``truncated``), ``date`` (the event's day), ``type`` and
    ``score``; what an operation added beside ``hit_to_json``'s keys (a media hit's
    modality, source, caption...) stays."""
    memory = hit.get("memory") or {}
    text = str(hit.get("content", memory.get("content", "")))
    out: dict[str, Any] = {"id": hit["id"], "text": text[:RECALL_TEXT_CHARS],
                           "date": str(memory.get("event_time") or "")[:10] or None,
                           "type": hit.get("memory_type", memory.get("memory_type")),
                           "score": round(float(hit["score"]), 3)}
    if len(text) > RECALL_TEXT_CHARS:
        out["text"] += "…"
        out["truncated"] = True
    out.update({k: v for k, v in hit.items() if k not in _HIT_KEYS and v is not None})
    return out


def brief(data: Mapping[str, Any]) -> dict[str, Any]:
    """A search answer (``found_json``) for a model: brief hits, and the recipe only
    when it is not the default one."""
    out: dict[str, Any] = {"hits": [brief_hit(h) for h in data.get("hits", [])]}
    if data.get("recipe") not in (None, "hybrid"):
        out["recipe"] = data["recipe"]
    return out


def brief_text(op_name: str, data: Mapping[str, Any]) -> str:
    """A brief hit answer's ``text``: how many hits there are, not the hits again.

    The hits are already in the answer (``brief``), and a model handed the answer reads
    both: rendering them a second time doubled a recall of 5 hits (issue 29). The
    rendering of every hit under ``token_budget`` comes with ``detail``."""
    n = len(data.get("hits", []))
    what = _memories(n, "media " if op_name == "search_media" else "")
    return f"{n} {what}: in hits, best first" if n else f"no {what} found"


def _memories(n: int, kind: str = "") -> str:
    return f"{kind}memory" if n == 1 else f"{kind}memories"


def compact(value: Any) -> Any:
    """The compact view of any operation's JSON (module doc)."""
    if isinstance(value, Mapping):
        if _is_hit(value):
            return _compact_hit(value)
        if _is_memory(value):
            return compact_memory(value)
        out = {str(k): compact(v) for k, v in value.items()}
        hits = value.get("hits")
        if isinstance(hits, list) and all(isinstance(h, Mapping) and _is_hit(h) for h in hits):
            out["ids"] = [h["id"] for h in hits]
        return out
    if isinstance(value, list):
        return [compact(v) for v in value]
    return value


class Renderer(Protocol):
    """What a rendering needs from the tool: its budgeted block and its memory line."""

    namespace: str

    def _render(self, header: str, lines: Sequence[str]) -> str: ...

    def _json_line(self, memory: Mapping[str, Any], score: float | None = None) -> str: ...


def _verb(data: Mapping[str, Any], done: str, would: str) -> str:
    return would if data.get("dry_run") else done


def _add(r: Renderer, d: Mapping[str, Any]) -> str:
    if d.get("duplicate_of"):  # a repeated add (issue 15): nothing stored
        return f"already remembered as {d['memory_type']} memory id={d['id']}"
    return f"stored {d['memory_type']} memory id={d['id']}"


def _add_batch(r: Renderer, d: Mapping[str, Any]) -> str:
    return (f"stored {len(d['ids']) - d['duplicates']} memories ({d['duplicates']} already "
            f"remembered): " + ", ".join(d["ids"]))


def _search(r: Renderer, d: Mapping[str, Any]) -> str:
    hits = d["hits"]
    return r._render(f"{len(hits)} {_memories(len(hits))}:",
                     [r._json_line(h["memory"], float(h["score"])) for h in hits])


def _search_media(r: Renderer, d: Mapping[str, Any]) -> str:
    hits = d["hits"]
    return r._render(f"{len(hits)} {_memories(len(hits), 'media ')}:",
                     [f"{r._json_line(h['memory'], float(h['score']))} [{h['modality']}"
                      + (f" {h['source']}]" if h.get("source") else "]") for h in hits])


def _forget(r: Renderer, d: Mapping[str, Any]) -> str:
    verb = _verb(d, "deleted" if d.get("hard") else "forgot", "would forget")
    how = "by id" if d.get("strategy") == "ids" else f"({d.get('strategy')})"
    return f"{verb} {d['count']} memories {how}"


def _consolidate(r: Renderer, d: Mapping[str, Any]) -> str:
    moved = sum(len(v) for v in d["merged"].values())
    return (f"{_verb(d, 'moved', 'would move')} {moved} {d['from_type']} memories into "
            f"{len(d['merged'])} {d['to_type']} memories")


def _by_type(d: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in d["by_type"].items())


def _summary(r: Renderer, d: Mapping[str, Any]) -> str:
    lines = [r._json_line(m) for kind in ("semantic", "episodic", "working")
             for m in d["memories"].get(kind, [])]
    return r._render(f"{d['total']} memories ({_by_type(d)}); most important:", lines)


def _clear(r: Renderer, d: Mapping[str, Any]) -> str:
    return (f"cleared namespace {r.namespace!r}: {d['records']} stored and {d['working']} "
            "working memories")


def render_text(r: Renderer, op_name: str, data: Mapping[str, Any]) -> str:
    """The operation's own rendering, else the JSON itself under the budget."""
    text = TEXTS.get(op_name)
    if text is not None:
        return text(r, data)
    return r._render(f"{op_name}:", [json.dumps(compact(data), ensure_ascii=False,
                                                default=str)])


TEXTS: dict[str, Callable[[Renderer, Mapping[str, Any]], str]] = {
    "add": _add,
    "add_batch": _add_batch,
    "search": _search,
    "search_media": _search_media,
    "add_media_path": lambda r, d: f"stored {d['modality']} memory id={d['id']}",
    "get": lambda r, d: r._render("memory:", [r._json_line(d)]),
    "update": lambda r, d: f"updated id={d['id']}",
    "remove": lambda r, d: f"removed id={d['id']}",
    "forget": _forget,
    "restore": lambda r, d: f"restored {d['restored']} memories",
    "consolidate": _consolidate,
    "stats": lambda r, d: f"{d['total']} memories: {_by_type(d)}; {d['forgotten']} forgotten",
    "summary": _summary,
    "context": lambda r, d: str(d["context"]) or "no relevant memories",
    "clear": _clear,
}
