"""``MemoryTool``: the memory layer as a tool an agent can call.

Two calling styles over the same actions, the operations of the catalogue
(:mod:`hello_memory.interfaces.catalogue`: add, add_batch, search, get, update, remove, forget,
restore, consolidate, stats, summary, context, clear, and with perceptual memory
add_media_path and search_media; the same argument names and defaults as the REST API
and the MCP tools):

- ``tool.run({"action": "search", "query": "..."})``: one entry point that takes
  a dict, as agent frameworks with a single "memory" tool call it;
- one function per action, described for OpenAI-style function calling by
  ``tool.schemas()`` and dispatched by ``tool.call(name, arguments)``.

Both return a JSON-ready dict: ``ok``, ``action``, the operation's JSON in the tool's
compact view (:mod:`hello_memory.interfaces.tools.views`: full memory ids, which an agent needs to
update or remove, scores), and ``text``, a rendering that stays under ``token_budget``.
A search's hits come brief (id, text, date, type and score) and its ``text`` only says
how many there are, so a model reads each hit once; ``detail`` gives each hit's fields,
breakdown and per-view ranks and renders the hits in ``text``. The media actions are
offered only when perceptual memory is on.
An invalid call returns ``ok: False`` with the error's type and message (and changes
nothing), so the model can read what went wrong; the direct Python methods raise the
typed error instead.

The tool is bound to ONE namespace at construction: an agent cannot reach another
namespace through it, nor read a file outside its ``roots`` (add_media_path; none
by default: the tool then reads no paths). ``get_context_for_query`` builds a
ready-to-inject context block with the progressive loader, and ``record_turn``
captures conversation turns into working memory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hello_memory.errors import HelloMemoryError, InvalidInputError
from hello_memory.interfaces.catalogue import Call, Catalogue, Operation, default_catalogue
from hello_memory.interfaces.tools.context import ContextBuilder
from hello_memory.interfaces.tools.views import (
    DETAIL_DESCRIPTION,
    HIT_OPERATIONS,
    brief,
    brief_text,
    compact,
    compact_memory,
    render_text,
)
from hello_memory.memory.manager import item_to_json
from hello_memory.retrieval.progressive import ProgressiveLoader, optimize_context
from hello_memory.text.tokens import TokenCounter, default_token_counter, truncate_to_tokens
from hello_memory.types import MemoryItem, MemoryType
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

__all__ = ["ACTIONS", "MemoryTool", "memory_dict"]

ROLES = ("user", "assistant", "system", "tool")
def _given(**arguments: Any) -> dict[str, Any]:
    """The arguments a Python caller gave (None: left out, the operation's default)."""
    return {k: list(v) if isinstance(v, (tuple, set)) else v
            for k, v in arguments.items() if v is not None}


def _tool_catalogue(catalogue: Catalogue | None) -> Catalogue:
    return catalogue if catalogue is not None else default_catalogue()


def _actions(catalogue: Catalogue, media: bool = True) -> dict[str, Operation]:
    """The tool's operations: those of the memories area, and of the media area when
    ``media`` (perceptual memory is on: a media action could not work otherwise)."""
    return {op.name_on("tool"): op for area in ("memories", "media")
            if media or area != "media" for op in catalogue.on("tool", area)}


# action -> request model, of the default catalogue
ACTIONS = {action: op.request for action, op in _actions(default_catalogue()).items()}


def memory_dict(item: MemoryItem, score: float | None = None) -> dict[str, Any]:
    """The fields an agent needs about one memory (full id included): the tool's
    compact view of ``item_to_json``."""
    return compact_memory(item_to_json(item), score)


def _with_detail(op: Operation) -> dict[str, Any]:
    """The function's parameters: the request model's, and ``detail`` for the actions
    that answer hits."""
    params = op.parameters()
    if op.name in HIT_OPERATIONS:
        params = {**params, "properties": {**params.get("properties", {}), "detail": {
            "type": "boolean", "default": False, "description": DETAIL_DESCRIPTION}}}
    return params


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
        catalogue: Catalogue | None = None,
        roots: Sequence[str | Path] = (),
    ) -> None:
        self.manager = manager
        # the folders add_media_path may read files under (resolved; none: no paths)
        self.roots = tuple(str(Path(r).expanduser().resolve()) for r in roots)
        # action -> operation: the catalogue's operations the tool carries
        self.actions = _actions(_tool_catalogue(catalogue),
                                media=bool(getattr(manager, "has_perceptual", False)))
        self.namespace = require_namespace(namespace)
        self.user_id = user_id
        self.session_id = session_id
        if token_budget < 20 or context_tokens < 20:
            raise InvalidInputError("token budgets must be at least 20 tokens")
        self.token_budget = token_budget
        self.context_tokens = context_tokens
        self.counter = token_counter or default_token_counter()
        # get_context_for_query's builder (tools/context.py), with its loader
        self.context = ContextBuilder(manager, namespace=self.namespace,
                                      context_tokens=context_tokens,
                                      token_counter=self.counter, loader=loader)
        self.loader = self.context.loader
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
        """OpenAI function-calling descriptions, one per action (``memory_add``, ...):
        the catalogue's request models, the tool's namespace left out (it is fixed)."""
        return [{"type": "function", "function": {
                    "name": f"{self.prefix}{action}", "description": op.doc,
                    "parameters": _with_detail(op)}}
                for action, op in self.actions.items()]

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
        try:
            return self.invoke(action, args)
        except HelloMemoryError as exc:
            return self._error(action, exc)

    def invoke(self, action: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Run one action on the tool's namespace: the catalogue operation's handler,
        its JSON, the tool's compact view of it and a ``text`` rendering. Raises the
        typed error (an unknown action or bad arguments: InvalidInputError)."""
        op = self.actions.get(action)
        if op is None:
            raise InvalidInputError(f"unknown action {action!r}; use one of "
                                    f"{', '.join(self.actions)}")
        args = dict(arguments)
        # hits come brief (id, text, date, type, score) unless detail is asked for
        detail = bool(args.pop("detail", False)) if op.name in HIT_OPERATIONS else True
        if op.scope == "write":  # what this tool writes carries its user and session
            for key, value in (("user_id", self.user_id), ("session_id", self.session_id)):
                if key in op.request.model_fields and args.get(key) is None and value:
                    args[key] = value
        data = op.run(Call(self.manager, self.namespace, read_dirs=self.roots),
                      op.parse(args))
        if not detail:  # the hits once, brief; text does not repeat them
            return self._ok(action, brief_text(op.name, data), **brief(data))
        return self._ok(action, render_text(self, op.name, data), **compact(data))

    def _error(self, action: str, exc: Exception) -> dict[str, Any]:
        return {"ok": False, "action": action, "namespace": self.namespace,
                "error": {"type": type(exc).__name__, "message": str(exc)},
                "text": f"error ({type(exc).__name__}): {exc}"}

    def _ok(self, action: str, text: str, **data: Any) -> dict[str, Any]:
        return {**data, "ok": True, "action": action, "namespace": self.namespace,
                "text": text}

    def _render(self, header: str, lines: Sequence[str]) -> str:
        """``header`` plus as many whole ``lines`` as fit ``token_budget``."""
        budget = max(0, self.token_budget - self.counter.count(header) - 8)
        plan = optimize_context(list(lines), budget, token_counter=self.counter)
        text = "\n".join([header, *[str(x) for x in plan.included]])
        if plan.left_out:
            text += f"\n(+{len(plan.left_out)} more not shown)"
        return text

    def _json_line(self, memory: Mapping[str, Any], score: float | None = None) -> str:
        """One memory (its JSON) on one line: full id, type, score, importance, date."""
        head = f"- id={memory['id']} {memory['memory_type']}"
        if score is not None:
            head += f" score={score:.3f}"
        body = truncate_to_tokens(" ".join(str(memory["content"]).split()), 80, self.counter)
        day = str(memory.get("event_time") or "")[:10]
        return f"{head} imp={float(memory.get('importance') or 0):.2f} {day}: {body}"

    # --- actions (typed Python API; these raise instead of returning errors) ----------
    def add(self, content: str, memory_type: str | None = None, importance: float | None = None,
            metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self.invoke("add", _given(content=content, memory_type=memory_type,
                                         importance=importance, metadata=metadata))

    def search(self, query: str, top_k: int = 5, memory_types: Sequence[str] | None = None,
               min_importance: float | None = None, detail: bool = False
               ) -> dict[str, Any]:
        """Hits as id, text, date, type, score (``text``: how many); ``detail``: with
        each memory's fields, the score breakdown and per-view ranks, and ``text``
        rendering them under ``token_budget``."""
        return self.invoke("search", _given(query=query, top_k=top_k,
                                            memory_types=memory_types,
                                            min_importance=min_importance,
                                            detail=detail or None))

    def summary(self, limit: int = 5) -> dict[str, Any]:
        return self.invoke("summary", {"limit": limit})

    def stats(self) -> dict[str, Any]:
        return self.invoke("stats", {})

    def update(self, memory_id: str, content: str | None = None,
               importance: float | None = None,
               metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self.invoke("update", _given(memory_id=memory_id, content=content,
                                            importance=importance, metadata=metadata))

    def remove(self, memory_id: str) -> dict[str, Any]:
        return self.invoke("remove", {"memory_id": memory_id})

    def forget(self, strategy: str | None = None, threshold: float | None = None,
               max_age_days: float | None = None, max_items: int | None = None,
               dry_run: bool = False, ids: Sequence[str] | None = None) -> dict[str, Any]:
        """Forget ``ids``, or else by a strategy; what is left out (None) comes from
        ``manager.lifecycle`` (the ``jobs`` settings)."""
        return self.invoke("forget", _given(strategy=strategy, threshold=threshold,
                                            max_age_days=max_age_days, max_items=max_items,
                                            dry_run=dry_run, ids=ids))

    def consolidate(self, from_type: str | None = None, to_type: str | None = None,
                    importance_threshold: float | None = None, dry_run: bool = False
                    ) -> dict[str, Any]:
        """Promote important memories; what is left out (None) comes from
        ``manager.lifecycle`` (default episodic -> semantic)."""
        return self.invoke("consolidate", _given(
            from_type=from_type, to_type=to_type, importance_threshold=importance_threshold,
            dry_run=dry_run))

    def clear(self, confirm: bool = False) -> dict[str, Any]:
        return self.invoke("clear", {"confirm": confirm})

    # --- context for a prompt and conversation capture ------------------------------
    def get_context_for_query(self, query: str, max_tokens: int | None = None, *,
                              reference_time: datetime | None = None,
                              recipe: str | None = None) -> str:
        """A block of the memories relevant to ``query`` to put in a prompt, at most
        ``max_tokens`` tokens (default ``context_tokens``); empty when nothing is.
        Built by :class:`~hello_memory.interfaces.tools.context.ContextBuilder` (docs/RETRIEVAL.md,
        "The context block"), the one builder the catalogue's ``context`` operation
        uses too."""
        return self.context.build(query, max_tokens, reference_time=reference_time,
                                  recipe=recipe)

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
