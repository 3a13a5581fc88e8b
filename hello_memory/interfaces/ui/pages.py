"""What each dashboard page shows, read through the memory manager (no ranking here:
search is ``MemoryManager.search``, the graph is the graph store's own traversal)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, time, timedelta, timezone
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.memory.manager import hit_to_json
from hello_memory.services.browse import ItemFilter
from hello_memory.types import MemoryItem, MemoryStatus, MemoryType
from hello_memory.validation import DEFAULT_LIMITS, validate_importance

if TYPE_CHECKING:
    from hello_memory.config import LimitsSettings
    from hello_memory.memory.manager import MemoryManager

__all__ = ["NAMESPACE_PAGES", "SEARCH_TYPES", "ZOOMS", "documents", "graph",
           "memory_page", "namespace_overview", "run_search", "timeline",
           "visible_namespaces"]

# Pages that show one namespace (the namespace picker switches between them).
NAMESPACE_PAGES = {"search": "Search", "timeline": "Timeline", "graph": "Graph",
                   "documents": "Documents"}
SEARCH_TYPES = ("working", "episodic", "semantic", "perceptual")
ZOOMS = ("day", "week", "month")
TIMELINE_LIMIT = 1000
GRAPH_NODES = 80
OVERVIEW_LIMIT = 100
VERSION_SCAN = 5000
_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


# --- template filters ------------------------------------------------------------------
def when(value: Any) -> str:
    """A datetime (or ISO string) as ``2024-05-06 14:03 UTC``."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value
    if not isinstance(value, datetime):
        return "" if value is None else str(value)
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc)
        return value.strftime("%Y-%m-%d %H:%M UTC")
    return value.strftime("%Y-%m-%d %H:%M")


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def short(text: Any, limit: int = 140) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def plain(value: Any) -> Any:
    """A field value for display: enums by value, datetimes as text."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return when(value)
    return value


def is_memory_id(value: Any) -> bool:
    return isinstance(value, str) and bool(_ID.match(value))


def _ids_in(value: Any) -> list[str]:
    """The memory ids ``value`` names: itself, or every element of a list of ids."""
    if is_memory_id(value):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(map(is_memory_id, value)):
        return list(value)
    return []


# --- namespaces ------------------------------------------------------------------------
class SeesNamespaces(Protocol):
    """What the pages read of who is looking (``_web_base.Viewer``, which imports this
    module): the namespace patterns its key grants and the check of one namespace."""

    patterns: list[str] | None

    def may(self, namespace: str) -> bool: ...


def visible_namespaces(mm: MemoryManager, viewer: SeesNamespaces) -> list[str]:
    """The stored namespaces the viewer's key grants, and the exact names it grants
    (a namespace may hold only documents, or nothing yet)."""
    stored = [n for n in mm.browse.namespaces() if viewer.may(n)]
    exact = [p for p in (viewer.patterns or []) if "*" not in p]
    return sorted(set(stored) | set(exact))


def _job_runs(audit: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The latest audit record of each job, newest first."""
    latest: dict[str, dict[str, Any]] = {}
    for row in audit:  # newest first already
        action = str(row["action"])
        if action.startswith("job:") and action not in latest:
            details = row.get("details") or {}
            latest[action] = {"job": action[4:], "at": row["at"],
                              "dry_run": bool(details.get("dry_run")),
                              "counts": details.get("counts") or {}}
    return list(latest.values())


def namespace_overview(mm: MemoryManager, viewer: SeesNamespaces) -> list[dict[str, Any]]:
    names = visible_namespaces(mm, viewer)[:OVERVIEW_LIMIT]  # the rest: the picker
    browse = mm.browse
    pending = Counter(e.namespace for e in browse.pending_index_work(
        limit=100_000, kinds=["memory", "media"]))
    rows = []
    for ns in names:
        stats = mm.stats(ns)
        rows.append({
            "namespace": ns, "by_type": stats["by_type"], "total": stats["total"],
            "forgotten": stats["forgotten"], "graph": stats["graph"],
            "documents": browse.document_stats(ns),
            "outbox": pending.get(ns, 0),
            "rag_outbox": len(browse.pending_index_work(limit=100_000, kinds=["chunk"],
                                                        namespace=ns)),
            "jobs": _job_runs(browse.audit(ns, limit=200)),
        })
    return rows


# --- search ----------------------------------------------------------------------------
def recipe_names() -> list[str]:
    from hello_memory.retrieval.recipes import RECIPES

    return list(RECIPES)


def _day(text: str, what: str, *, end: bool = False) -> datetime | None:
    """A ``YYYY-MM-DD`` form field as an aware UTC datetime (the day's start, or for
    ``end`` the next day's start)."""
    if not text.strip():
        return None
    try:
        day = date.fromisoformat(text.strip())
    except ValueError:
        raise InvalidInputError(f"{what} must be a date like 2024-05-06, got {text!r}") \
            from None
    start = datetime.combine(day, time(), tzinfo=timezone.utc)
    if not end:
        return start
    if day == date.max:  # 9999-12-31 has no next day: the end of time instead
        return datetime.max.replace(tzinfo=timezone.utc)
    return start + timedelta(days=1)


def run_search(mm: MemoryManager, ns: str, form: Mapping[str, Any]) -> dict[str, Any]:
    """``MemoryManager.search`` with the form's filters, each hit as the REST API
    returns it (views, fused score, profile breakdown), and the question's plan."""
    since = _day(form["since"], "since")
    until = _day(form["until"], "until", end=True)
    importance = None
    if str(form["min_importance"]).strip():
        try:
            importance = validate_importance(float(form["min_importance"]))
        except ValueError:
            raise InvalidInputError("minimum importance must be a number in [0, 1]") \
                from None
    types = [t for t in form["types"] if t in SEARCH_TYPES] or None
    query = str(form["q"])
    # Looking at memories in the dashboard is not the agent using them: no access is
    # recorded (touch=False), so the inspector does not change what it inspects.
    hits = mm.search(query, types, int(form["top_k"]), namespace=ns,
                     min_importance=importance,
                     time_range=(since, until) if since or until else None,
                     session_id=str(form["session"]).strip() or None,
                     recipe=str(form["recipe"]) or None, touch=False)
    return {"hits": [{**hit_to_json(h), "queries": list(h.queries)} for h in hits],
            "plan": query_plan(mm, ns, query)}


def query_plan(mm: MemoryManager, ns: str, query: str) -> dict[str, Any]:
    """The search's planning stage for ``query``: keywords, people (with the roles
    resolved from the namespace's graph), entities, places, time ranges, queries run.
    With an LLM configured only the rule-based part is shown (no second LLM call); the
    queries each hit was found by are on the hit."""
    retriever = mm.retriever
    plan = retriever.plan(query, enable_planning=False if mm.llm is not None else None)
    plan = retriever.about_whom(ns, plan)
    a = plan.analysis
    return {"question_type": a.question_type, "keywords": a.keywords, "persons": a.persons,
            "entities": a.entities, "locations": a.locations,
            "time_expressions": a.time_expressions,
            "time_ranges": [(when(s), when(e)) for s, e in a.time_ranges],
            "first_person": a.first_person, "self_names": a.self_names,
            "resolved": a.resolved, "resolved_roles": a.resolved_roles,
            "queries": list(plan.queries), "llm": mm.llm is not None}


# --- one memory ------------------------------------------------------------------------
def memory_page(mm: MemoryManager, ns: str, memory_id: str) -> dict[str, Any]:
    item = mm.get(memory_id, namespace=ns)
    fields = [(f.name, plain(getattr(item, f.name))) for f in dataclasses.fields(item)
              if f.name not in ("content", "metadata")]
    # fields that name other memories (superseded_by, duplicate_of, ...) link to them
    links = {name: ids for name, value in fields if name != "id"
             for ids in [_ids_in(value)] if ids}
    meta_links = {k: ids for k, v in item.metadata.items() if k != "id"
                  for ids in [_ids_in(v)] if ids}
    entities, relations = _entities(mm, item)
    newer, older = _versions(mm, ns, item)
    audit = [row for row in mm.browse.audit(ns, limit=500)
             if memory_id in json.dumps(row.get("details"), default=str)]
    return {"item": item, "fields": fields, "links": links, "meta_links": meta_links,
            "metadata": pretty(item.metadata), "entities": entities,
            "relations": relations, "audit": audit[:50], "newer": newer, "older": older,
            "forgotten": item.status == MemoryStatus.FORGOTTEN,
            "working": item.memory_type == MemoryType.WORKING,
            "feeds_graph": item.memory_type == MemoryType.SEMANTIC}


def _versions(mm: MemoryManager, ns: str, item: MemoryItem
              ) -> tuple[list[MemoryItem], list[MemoryItem]]:
    """The memories that replaced this one (its ``superseded_by`` chain, newest last)
    and those it replaced (among the namespace's latest ``VERSION_SCAN`` memories)."""
    browse = mm.browse
    newer: list[MemoryItem] = []
    seen = {item.id}
    current = item
    while current.superseded_by and current.superseded_by not in seen and len(newer) < 20:
        try:
            current = browse.get_memory(ns, current.superseded_by)
        except NotFoundError:
            break
        seen.add(current.id)
        newer.append(current)
    older = [i for i in browse.list_memories(ns, ItemFilter(status=None), order="-event_time",
                                             limit=VERSION_SCAN) if i.superseded_by == item.id]
    return newer, older


def _entities(mm: MemoryManager, item: MemoryItem
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The entities and relations the manager links this memory to (semantic
    memories feed the graph), each entity marked with whether the graph holds it."""
    if item.memory_type != MemoryType.SEMANTIC:
        return [], []
    ents, rels = mm.extract_links(item)
    stored = {e.id for e in mm.browse.find_entities(
        item.namespace, [e.name for e in ents])} if ents else set()
    names = {e.id: e.name for e in ents}
    return ([{"name": e.name, "type": e.type, "in_graph": e.id in stored} for e in ents],
            [{"source": names.get(r.source_id, r.source_id), "type": r.type,
              "target": names.get(r.target_id, r.target_id)} for r in rels])


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def json_depth(text: str) -> int:
    """How deep the arrays and objects of a JSON text nest, counted without parsing
    it: ``json.loads`` recurses once per level, and 30,000 levels raise RecursionError
    (issue 28, item 9). Brackets inside strings do not count."""
    depth = deepest = 0
    for char in _JSON_STRING.sub('""', text):
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def parse_edit(importance: str, metadata: str, limits: LimitsSettings | None = None
               ) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if importance.strip():
        try:
            changes["importance"] = validate_importance(float(importance))
        except ValueError:
            raise InvalidInputError("importance must be a number in [0, 1]") from None
    if metadata.strip():
        depth, limit = json_depth(metadata), (limits or DEFAULT_LIMITS).max_metadata_depth
        if depth > limit:
            raise InvalidInputError(f"metadata is nested {depth} levels deep, more than "
                                    f"limits.max_metadata_depth ({limit}) allows")
        try:
            value = json.loads(metadata)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"metadata is not JSON: {exc.msg} (line {exc.lineno}, "
                                    f"column {exc.colno})") from None
        if not isinstance(value, dict):
            raise InvalidInputError("metadata must be a JSON object ({...})")
        changes["metadata"] = value
    if not changes:
        raise InvalidInputError("nothing to save: give an importance or metadata")
    return changes


# --- timeline --------------------------------------------------------------------------
def _bucket(moment: datetime, zoom: str) -> tuple[str, str]:
    d = moment.astimezone(timezone.utc) if moment.tzinfo else moment
    if zoom == "month":
        return d.strftime("%Y-%m"), d.strftime("%B %Y")
    if zoom == "week":
        monday = d.date() - timedelta(days=d.weekday())
        year, week, _ = monday.isocalendar()
        return f"{year}-W{week:02d}", f"Week {week}, {year} (from {monday:%a %d %b})"
    return d.strftime("%Y-%m-%d"), d.strftime("%a %d %b %Y")


def timeline(mm: MemoryManager, ns: str, zoom: str, session: str | None) -> dict[str, Any]:
    """Active memories by event time, newest first, grouped by day, week or month."""
    # superseded memories stay on the timeline (marked): they were true then
    stored = mm.browse.list_memories(
        ns, ItemFilter(session_id=session, current=False), order="-event_time",
        limit=TIMELINE_LIMIT)
    working = [i for i in mm.working.list(ns) if session is None or i.session_id == session]
    items = sorted([*stored, *working], key=lambda i: i.event_time, reverse=True)
    buckets: dict[str, dict[str, Any]] = {}
    for item in items:
        key, label = _bucket(item.event_time, zoom)
        buckets.setdefault(key, {"key": key, "label": label, "memories": []})["memories"].append(
            item)
    sessions = sorted({i.session_id for i in items if i.session_id} | (
        {session} if session else set()))
    most = max((len(b["memories"]) for b in buckets.values()), default=0)
    return {"buckets": list(buckets.values()), "count": len(items), "max": most,
            "sessions": sessions, "truncated": len(stored) >= TIMELINE_LIMIT}


# --- entity graph ----------------------------------------------------------------------
def graph(mm: MemoryManager, ns: str, entity: str | None,
          link: Callable[[str], str]) -> dict[str, Any]:
    """An entity's neighbourhood (two hops), or without one the entities of the
    namespace's latest semantic memories and their neighbours (one hop); edges join
    entities that the same memory mentions. ``link`` makes an entity's page URL."""
    browse = mm.browse
    if entity:
        start = browse.find_entities(ns, [entity], aliases=True)
        if not start:
            raise NotFoundError(f"no entity {entity!r} in the graph of namespace {ns!r}")
    else:
        recent = browse.list_memories(
            ns, ItemFilter(memory_types=(MemoryType.SEMANTIC,)), order="-event_time",
            limit=30)
        names: list[str] = []
        for item in recent:
            names += [e.name for e in mm.extract_links(item)[0]]
        start = browse.find_entities(ns, list(dict.fromkeys(names))[:200])[:12]
    hits = browse.neighbours(ns, [e.id for e in start], max_hops=2 if entity else 1,
                             limit=GRAPH_NODES) if start else []
    start_ids = {e.id for e in start}
    nodes = [{"id": h.entity_id, "name": h.name, "type": h.type, "hops": h.hops,
              "mentions": len(h.memory_ids), "start": h.entity_id in start_ids,
              "href": link(h.name)} for h in hits]
    edges = []
    for i, a in enumerate(hits):
        for b in hits[i + 1:]:
            shared = len(a.memory_ids & b.memory_ids)
            if shared:
                edges.append({"source": a.entity_id, "target": b.entity_id,
                              "shared": shared, "names": (a.name, b.name)})
    memories: list[MemoryItem] = []
    if entity:
        ids = sorted({m for h in hits if h.entity_id in start_ids for m in h.memory_ids})
        memories = browse.get_memories(ns, ids[:100])
    cy = {"nodes": [{"data": {"id": n["id"], "label": n["name"], "type": n["type"],
                              "hops": n["hops"], "mentions": n["mentions"],
                              "start": n["start"], "href": n["href"]}} for n in nodes],
          "edges": [{"data": {"id": f"e{k}", "source": e["source"], "target": e["target"],
                              "shared": e["shared"]}} for k, e in enumerate(edges)]}
    return {"nodes": nodes, "edges": edges, "memories": memories, "cy": cy,
            "stats": browse.graph_stats(ns)}


# --- documents -------------------------------------------------------------------------
def _doc_name(source_path: str) -> str:
    return source_path.replace("\\", "/").rsplit("/", 1)[-1] or source_path


def documents(mm: MemoryManager, ns: str) -> dict[str, Any]:
    browse = mm.browse
    docs = browse.documents(ns)
    return {"documents": [{"id": d.id, "name": d.metadata.get("original_name")
                           or _doc_name(d.source_path), "source": d.source_path,
                           "title": d.title, "ingested": d.ingested_at,
                           "language": d.language} for d in docs],
            "stats": browse.document_stats(ns)}


def document(mm: MemoryManager, ns: str, document_id: str) -> dict[str, Any]:
    browse = mm.browse
    doc = browse.find_document(ns, document_id)
    if doc is None:
        raise NotFoundError(f"no document {document_id!r} in namespace {ns!r}")
    chunks = browse.document_chunks(ns, doc.id)
    return {"id": doc.id, "name": doc.metadata.get("original_name") or _doc_name(
                doc.source_path), "source": doc.source_path, "title": doc.title,
            "ingested": doc.ingested_at, "language": doc.language,
            "metadata": pretty(doc.metadata), "chunks": chunks}


# --- jobs ------------------------------------------------------------------------------
def job_rows(scheduler: Any) -> list[dict[str, Any]]:
    return list(scheduler.status())
