"""``MemoryTool``: the memory layer as a tool an agent can call.

Two calling styles over the same actions (add, search, summary, stats, update,
remove, forget, consolidate, clear):

- ``tool.run({"action": "search", "query": "..."})``: one entry point that takes
  a dict, as agent frameworks with a single "memory" tool call it;
- one function per action, described for OpenAI-style function calling by
  ``tool.schemas()`` and dispatched by ``tool.call(name, arguments)``.

Both return a JSON-ready dict: ``ok``, ``action``, the full memory ids (an agent needs
them to update or remove), scores, and ``text``, a compact rendering that stays under
``token_budget``. An invalid call returns ``ok: False`` with the error's type and
message (and changes nothing), so the model can read what went wrong; the direct
Python methods raise the typed error instead.

The tool is bound to ONE namespace at construction: an agent cannot reach another
namespace through it. ``get_context_for_query`` builds a ready-to-inject context block
with the progressive loader, and ``record_turn`` captures conversation turns into
working memory.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hello_memory.errors import HelloMemoryError, InvalidInputError
from hello_memory.retrieval.progressive import ProgressiveLoader, optimize_context
from hello_memory.stores.records import ItemFilter
from hello_memory.text.tokens import TokenCounter, default_token_counter, truncate_to_tokens
from hello_memory.types import MemoryItem, MemoryType
from hello_memory.validation import require_namespace, validate_content

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.memory.scoring import SearchHit

__all__ = ["ACTIONS", "MemoryTool", "memory_dict"]

TypeName = Literal["working", "episodic", "semantic"]
ROLES = ("user", "assistant", "system", "tool")
# The most of a context block's budget the standing facts may take.
STANDING_SHARE = 0.15
CONTEXT_HEADER = "Relevant memories (id, date, type: content):"
STANDING_HEADER = "Standing facts (kept in every context):"
# The block's first line when only standing facts are shown (no longer than the two).
STANDING_ONLY_HEADER = "Standing facts (id, date, type: content), kept in every context:"


def _same_text(a: str, b: str) -> bool:
    """Equal up to Unicode form, case and whitespace (the same turn, typed again)."""
    def norm(text: str) -> str:
        return " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return norm(a) == norm(b)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AddArgs(_Args):
    """Store a new memory. Returns its id."""

    content: str = Field(description="The text to remember, one fact or event.")
    memory_type: TypeName | None = Field(
        None, description="working (this conversation), episodic (an event) or semantic "
        "(a lasting fact or preference); chosen from the text when omitted.")
    importance: float | None = Field(None, ge=0, le=1,
                                     description="0..1; estimated when omitted.")
    metadata: dict[str, Any] | None = Field(None, description="Free-form tags.")


class SearchArgs(_Args):
    """Find memories relevant to a query; returns their ids, scores and text."""

    query: str = Field(description="What to look for, in natural language.")
    top_k: int = Field(5, ge=1, le=50, description="How many memories to return.")
    memory_types: list[TypeName] | None = Field(None, description="Limit to these types.")
    min_importance: float | None = Field(None, ge=0, le=1)


class SummaryArgs(_Args):
    """An overview of what is remembered: counts and the most important memories."""

    limit: int = Field(5, ge=1, le=50, description="Memories shown per type.")


class StatsArgs(_Args):
    """Counts of memories per type and store."""


class UpdateArgs(_Args):
    """Change a memory's content, importance or metadata (by its full id)."""

    memory_id: str = Field(description="The full id returned by add or search.")
    content: str | None = None
    importance: float | None = Field(None, ge=0, le=1)
    metadata: dict[str, Any] | None = None


class RemoveArgs(_Args):
    """Delete one memory for good (by its full id)."""

    memory_id: str = Field(description="The full id returned by add or search.")


# Lifecycle arguments left out (None) take the manager's lifecycle defaults (the
# ``jobs`` settings), as the REST API and the jobs do.
class ForgetArgs(_Args):
    """Forget memories (soft: they leave search and can be restored): the given ids,
    or else the low-value ones chosen by a strategy (left out: the configured one)."""

    memory_ids: list[str] | None = Field(None, description="Forget exactly these ids.")
    strategy: Literal["importance", "time", "capacity"] | None = None
    threshold: float | None = Field(None, ge=0, le=1, description="importance: below this.")
    max_age_days: float | None = Field(None, ge=0, description="time: older than this.")
    max_items: int | None = Field(None, ge=0, description="capacity: keep this many.")
    dry_run: bool = Field(False, description="Only report what would be forgotten.")


class ConsolidateArgs(_Args):
    """Promote important memories: episodic -> semantic (left out: the configured
    direction) or working -> episodic (from_type working)."""

    from_type: Literal["working", "episodic"] | None = None
    to_type: Literal["episodic", "semantic"] | None = None
    importance_threshold: float | None = Field(None, ge=0, le=1)
    dry_run: bool = False


class ClearArgs(_Args):
    """Delete EVERY memory of this namespace. Needs confirm=true."""

    confirm: bool = Field(False, description="Must be true; nothing happens otherwise.")


ACTIONS: dict[str, type[_Args]] = {
    "add": AddArgs, "search": SearchArgs, "summary": SummaryArgs, "stats": StatsArgs,
    "update": UpdateArgs, "remove": RemoveArgs, "forget": ForgetArgs,
    "consolidate": ConsolidateArgs, "clear": ClearArgs,
}


def _strip_titles(schema: Any) -> Any:
    """JSON schema without pydantic's ``title`` noise (function-calling APIs ignore it
    and it costs prompt tokens)."""
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def memory_dict(item: MemoryItem, score: float | None = None) -> dict[str, Any]:
    """The fields an agent needs about one memory (full id included)."""
    out: dict[str, Any] = {"id": item.id, "memory_type": item.memory_type.value,
                           "content": item.content, "importance": round(item.importance, 4),
                           "event_time": _iso(item.event_time)}
    if score is not None:
        out["score"] = round(score, 4)
    if item.metadata:
        out["metadata"] = item.metadata
    return out


class MemoryTool:
    """An agent's memory, bound to one namespace (see module doc)."""

    name = "memory"
    description = ("Long-term memory: store facts and events, search them, update or remove "
                   "them by id, summarise, forget and consolidate.")

    def __init__(
        self,
        manager: MemoryManager,
        *,
        namespace: str,
        user_id: str | None = None,
        session_id: str | None = None,
        token_budget: int = 600,
        context_tokens: int = 1500,
        token_counter: TokenCounter | None = None,
        loader: ProgressiveLoader | None = None,
        prefix: str = "memory_",
    ) -> None:
        self.manager = manager
        self.namespace = require_namespace(namespace)
        self.user_id = user_id
        self.session_id = session_id
        if token_budget < 20 or context_tokens < 20:
            raise InvalidInputError("token budgets must be at least 20 tokens")
        self.token_budget = token_budget
        self.context_tokens = context_tokens
        self.counter = token_counter or default_token_counter()
        # A lower relevance bar than the loader's default: MiniLM cosines of clearly
        # related sentences often sit between 0.25 and 0.5 (on the project's assistant
        # set, benchmarks/assistant.py, 0.3 left 9 of 76 answers out of the block, 0.25
        # leaves 7; unrelated questions stay under it). A context block also keeps a
        # small share for the standing facts (allergies, preferences, who the user is):
        # they shape answers to questions that never name them.
        self.loader = loader or ProgressiveLoader(manager, token_counter=self.counter,
                                                  relevance_threshold=0.25,
                                                  default_max_tokens=context_tokens,
                                                  standing_share=STANDING_SHARE)
        self.prefix = prefix

    # --- the dict protocol -------------------------------------------------------------
    def run(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``{"action": name, **arguments}`` -> result dict (errors as ``ok: False``)."""
        if not isinstance(params, Mapping):
            return self._error("?", InvalidInputError("params must be an object"))
        args = dict(params)
        action = args.pop("action", None)
        return self._dispatch(str(action), args)

    # --- function calling --------------------------------------------------------------
    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI function-calling descriptions, one per action (``memory_add``, ...)."""
        return [{"type": "function", "function": {
                    "name": f"{self.prefix}{action}",
                    "description": (model.__doc__ or "").strip(),
                    "parameters": _strip_titles(model.model_json_schema())}}
                for action, model in ACTIONS.items()]

    def call(self, name: str, arguments: str | Mapping[str, Any] | None = None
             ) -> dict[str, Any]:
        """Run the function ``name`` (as in :meth:`schemas`) with JSON or dict arguments."""
        action = name[len(self.prefix):] if name.startswith(self.prefix) else name
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except json.JSONDecodeError as exc:
                return self._error(action, InvalidInputError(f"arguments are not JSON: {exc}"))
        if arguments is not None and not isinstance(arguments, Mapping):
            return self._error(action, InvalidInputError("arguments must be a JSON object"))
        return self._dispatch(action, dict(arguments or {}))

    def _dispatch(self, action: str, args: dict[str, Any]) -> dict[str, Any]:
        model = ACTIONS.get(action)
        if model is None:
            return self._error(action, InvalidInputError(
                f"unknown action {action!r}; use one of {', '.join(ACTIONS)}"))
        try:
            parsed = model.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or action}: {e['msg']}"
                                 for e in exc.errors())
            return self._error(action, InvalidInputError(problems))
        handler: Callable[..., dict[str, Any]] = getattr(self, action)
        try:
            return handler(**parsed.model_dump())
        except HelloMemoryError as exc:
            return self._error(action, exc)

    def _error(self, action: str, exc: Exception) -> dict[str, Any]:
        return {"ok": False, "action": action, "namespace": self.namespace,
                "error": {"type": type(exc).__name__, "message": str(exc)},
                "text": f"error ({type(exc).__name__}): {exc}"}

    def _ok(self, action: str, text: str, **data: Any) -> dict[str, Any]:
        return {"ok": True, "action": action, "namespace": self.namespace, **data,
                "text": text}

    def _render(self, header: str, lines: Sequence[str]) -> str:
        """``header`` plus as many whole ``lines`` as fit ``token_budget``."""
        budget = max(0, self.token_budget - self.counter.count(header) - 8)
        plan = optimize_context(list(lines), budget, token_counter=self.counter)
        text = "\n".join([header, *[str(x) for x in plan.included]])
        if plan.left_out:
            text += f"\n(+{len(plan.left_out)} more not shown)"
        return text

    def _line(self, item: MemoryItem, score: float | None = None) -> str:
        head = f"- id={item.id} {item.memory_type.value}"
        if score is not None:
            head += f" score={score:.3f}"
        body = truncate_to_tokens(" ".join(item.content.split()), 80, self.counter)
        return f"{head} imp={item.importance:.2f} {item.event_time.date().isoformat()}: {body}"

    # --- actions (typed Python API; these raise instead of returning errors) ----------
    def add(self, content: str, memory_type: str | None = None, importance: float | None = None,
            metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        item = self.manager.add(content, memory_type, importance, metadata,
                                namespace=self.namespace, user_id=self.user_id,
                                session_id=self.session_id,
                                auto_classify=memory_type is None)
        near = [{"id": i, "similarity": s} for i, s in item.near_duplicates]
        if item.duplicate_of is not None:  # a repeated add (issue 15): nothing stored
            return self._ok("add", f"already remembered as {item.memory_type.value} memory "
                            f"id={item.id}", id=item.id, memory=memory_dict(item),
                            duplicate_of=item.duplicate_of, near_duplicates=near)
        return self._ok("add", f"stored {item.memory_type.value} memory id={item.id}",
                        id=item.id, memory=memory_dict(item), duplicate_of=None,
                        near_duplicates=near)

    def search(self, query: str, top_k: int = 5, memory_types: Sequence[str] | None = None,
               min_importance: float | None = None) -> dict[str, Any]:
        hits = self.manager.search(query, memory_types, top_k, namespace=self.namespace,
                                   min_importance=min_importance)
        return self._hits("search", f"{len(hits)} memories for {query!r}:", hits)

    def _hits(self, action: str, header: str, hits: Sequence[SearchHit]) -> dict[str, Any]:
        memories = [{**memory_dict(h.item, h.score), "breakdown": h.breakdown.as_dict(),
                     "views": {v: vh.rank for v, vh in h.views.items()}} for h in hits]
        text = self._render(header, [self._line(h.item, h.score) for h in hits])
        return self._ok(action, text, memories=memories, ids=[h.id for h in hits])

    def summary(self, limit: int = 5) -> dict[str, Any]:
        stats = self.manager.stats(self.namespace)
        records = self.manager.stores.records
        sections: list[str] = []
        shown: dict[str, list[dict[str, Any]]] = {}
        for mtype in (MemoryType.SEMANTIC, MemoryType.EPISODIC):
            # ORDER BY importance DESC LIMIT n on an index: bounded by ``limit``.
            top = records.memories.list_items(self.namespace, ItemFilter(memory_types=(mtype,)),
                                              order="-importance", limit=limit)
            shown[mtype.value] = [memory_dict(i) for i in top]
            sections += [self._line(i) for i in top]
        working = sorted(self.manager.working.list(self.namespace),
                         key=lambda i: -i.event_time.timestamp())[:limit]
        shown["working"] = [memory_dict(i) for i in working]
        sections += [self._line(i) for i in working]
        by_type = ", ".join(f"{k} {v}" for k, v in stats["by_type"].items())
        header = f"{stats['total']} memories ({by_type}); most important:"
        return self._ok("summary", self._render(header, sections), counts=stats["by_type"],
                        total=stats["total"], memories=shown)

    def stats(self) -> dict[str, Any]:
        st = self.manager.stats(self.namespace)
        by_type = ", ".join(f"{k} {v}" for k, v in st["by_type"].items())
        return self._ok("stats", f"{st['total']} memories: {by_type}; "
                        f"{st['forgotten']} forgotten", stats=st)

    def update(self, memory_id: str, content: str | None = None,
               importance: float | None = None,
               metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        item = self.manager.update(memory_id, namespace=self.namespace, content=content,
                                   importance=importance, metadata=metadata)
        return self._ok("update", f"updated id={item.id}", id=item.id,
                        memory=memory_dict(item))

    def remove(self, memory_id: str) -> dict[str, Any]:
        removed = self.manager.remove(memory_id, namespace=self.namespace)
        return self._ok("remove", f"removed id={memory_id}" if removed
                        else f"no memory id={memory_id} in this namespace",
                        id=memory_id, removed=removed)

    def forget(self, strategy: str | None = None, threshold: float | None = None,
               max_age_days: float | None = None, max_items: int | None = None,
               dry_run: bool = False, memory_ids: Sequence[str] | None = None
               ) -> dict[str, Any]:
        """Forget ``memory_ids``, or else by a strategy; what is left out (None) comes
        from ``manager.lifecycle`` (the ``jobs`` settings)."""
        verb = "would forget" if dry_run else "forgot"
        if memory_ids is not None:
            ids = self.manager.forget_ids(memory_ids, namespace=self.namespace, dry_run=dry_run)
            return self._ok("forget", f"{verb} {len(ids)} memories by id", ids=ids,
                            count=len(ids), dry_run=dry_run)
        args = self.manager.lifecycle.forget_options(strategy, threshold, max_age_days,
                                                     max_items)
        rep = self.manager.forget(namespace=self.namespace, dry_run=dry_run, **args)
        return self._ok("forget", f"{verb} {rep.count} memories ({args['strategy']})",
                        ids=list(rep.ids), count=rep.count, dry_run=dry_run)

    def consolidate(self, from_type: str | None = None, to_type: str | None = None,
                    importance_threshold: float | None = None, dry_run: bool = False
                    ) -> dict[str, Any]:
        """Promote important memories; what is left out (None) comes from
        ``manager.lifecycle`` (default episodic -> semantic)."""
        args = self.manager.lifecycle.consolidate_options(from_type, to_type,
                                                          importance_threshold)
        rep = self.manager.consolidate(namespace=self.namespace, dry_run=dry_run, **args)
        merged = {k: list(v) for k, v in rep.merged.items()}
        moved = sum(len(v) for v in merged.values())
        verb = "would move" if dry_run else "moved"
        return self._ok("consolidate", f"{verb} {moved} {rep.from_type.value} memories "
                        f"into {len(merged)} {rep.to_type.value} memories", merged=merged,
                        promoted=list(rep.promoted), dry_run=dry_run)

    def clear(self, confirm: bool = False) -> dict[str, Any]:
        done = self.manager.clear(self.namespace, confirm=confirm)
        return self._ok("clear", f"cleared namespace {self.namespace!r}: "
                        f"{done['records']} stored and {done['working']} working memories",
                        removed=done)

    # --- context for a prompt and conversation capture ------------------------------
    def get_context_for_query(self, query: str, max_tokens: int | None = None) -> str:
        """A block of the memories relevant to ``query`` to put in a prompt, at most
        ``max_tokens`` tokens (default ``context_tokens``); empty when nothing is.

        One line per memory, ``- [id] date type: content``. The turn being answered
        (a working-memory turn with the query's text, as :meth:`record_turn` keeps it)
        is left out, and stored memories come before the conversation's own turns.
        The loader's standing facts (the most important semantic memories, a small
        share of the budget) follow under a header of their own."""
        validate_content(query)
        budget = self.context_tokens if max_tokens is None else max_tokens
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise InvalidInputError(f"max_tokens must be a non-negative integer, got {budget!r}")
        # Header lines and their newlines are paid before the loader packs the lines.
        room = (budget - self.counter.count(CONTEXT_HEADER) - self.counter.count(STANDING_HEADER)
                - 4)
        if room <= 0:
            return ""
        turn = [i.id for i in self.manager.working.list(self.namespace)
                if _same_text(i.content, query)]
        entries, _ = self.loader.load_relevant_context(
            query, room, namespace=self.namespace, exclude=turn, working_last=True,
            render=self._context_line, charge_index=False)  # the block shows no index
        rendered = [(e["layer"], self._context_line(e)) for e in entries]
        # The loader charged these very lines; this pass only guards the budget against
        # a counter that counts a line differently from its parts.
        kept = set(optimize_context([line for _, line in rendered], room,
                                    token_counter=self.counter).included)
        relevant = [line for layer, line in rendered if line in kept and layer != "standing"]
        standing = [line for layer, line in rendered if line in kept and layer == "standing"]
        if not relevant:
            return "\n".join([STANDING_ONLY_HEADER, *standing]) if standing else ""
        return "\n".join([CONTEXT_HEADER, *relevant,
                          *([STANDING_HEADER, *standing] if standing else [])])

    def _context_line(self, entry: Mapping[str, Any]) -> str:
        content = " ".join(str(entry["content"]).split())
        if entry["layer"] != "timeline":  # a timeline line already starts "date type: "
            content = (f"{entry['event_time'].date().isoformat()} {entry['type']}: "
                       f"{content}")
        return f"- [{entry['id']}] {content}"

    def record_turn(self, role: str, content: str, *, importance: float | None = None
                    ) -> dict[str, Any]:
        """Keep one conversation turn in working memory (``metadata.role``). With
        ``memory.extract_facts`` on and an LLM configured, the lasting facts of a user or
        assistant turn are also stored (``facts``: their ids; memory/extraction.py);
        without, or when the LLM fails, the turn kept is the fallback."""
        if role not in ROLES:
            raise InvalidInputError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        # Every turn is kept, a repeated "ok" too: turns are a transcript, not facts.
        item = self.manager.add(content, MemoryType.WORKING, importance, {"role": role},
                                namespace=self.namespace, user_id=self.user_id,
                                session_id=self.session_id, on_duplicate="store")
        facts: list[str] = []
        if self.manager.extract_facts and role in ("user", "assistant"):
            from hello_memory.memory.extraction import extract_facts

            stored = extract_facts(self.manager, [(role, content)], namespace=self.namespace,
                                   user_id=self.user_id, session_id=self.session_id)
            facts = [f.id for f in stored or []]
        text = f"recorded {role} turn id={item.id}"
        if facts:
            text += f"; {len(facts)} fact(s) kept: {', '.join(facts)}"
        return self._ok("record_turn", text, id=item.id, facts=facts)
