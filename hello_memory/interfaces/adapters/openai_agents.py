"""OpenAI Agents SDK ``Session`` and function tools over hello-memory (extra
``hello-memory[openai-agents]``).

>>> from agents import Agent, Runner                                    # doctest: +SKIP
>>> from hello_memory.interfaces.adapters.openai_agents import (                   # doctest: +SKIP
...     HelloMemorySession, memory_function_tools)
>>> tool = MemoryTool(mm, namespace="alice")                             # doctest: +SKIP
>>> agent = Agent(name="assistant", tools=memory_function_tools(tool))   # doctest: +SKIP
>>> await Runner.run(agent, "hi", session=HelloMemorySession("chat-1", mm,  # doctest: +SKIP
...                                                         namespace="alice"))

- :class:`HelloMemorySession` keeps a conversation's items as episodic memories of one
  namespace with ``session_id`` = the session's id: every turn is then long-term memory
  that search (and the neighbour context of a hit) finds. Each item comes back exactly
  as added (it is kept in the memory's metadata; the memory's text is its readable
  part: a message's text, ``called name(arguments)``, ``tool output: ...``).
  ``get_items(limit)`` gives the latest items oldest first (``session_settings.limit``
  when no limit is passed), ``pop_item`` removes the newest, ``clear_session`` this
  session's items. Reads include items a forget job marked forgotten, so a history
  never loses half of a tool call.
- :func:`memory_function_tools` turns a :class:`~hello_memory.MemoryTool` into the SDK's
  ``FunctionTool`` list (``memory_add``, ``memory_search``, ...; the same schemas as
  ``tool.schemas()``); each call's result is the tool's JSON result (ids, scores,
  ``text``), errors included as ``ok: false``.

What the interface cannot carry: items with no text of their own (reasoning, images,
file search calls) are stored but are poor search material; their text is a short
JSON rendering.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from hello_memory.interfaces.adapters import missing_extra

try:  # the framework is an optional extra: a missing one names it
    from agents import FunctionTool
    from agents.memory.session_settings import SessionSettings, resolve_session_limit
except ModuleNotFoundError as _missing:
    raise missing_extra("openai-agents", _missing, __name__) from _missing

from hello_memory.interfaces.adapters._common import add_keyed, keyed_item, stable_id
from hello_memory.interfaces.aio import AsyncMemoryManager
from hello_memory.memory.manager import MemoryManager
from hello_memory.services.browse import ItemFilter
from hello_memory.types import MemoryItem, MemoryType
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

    from hello_memory.interfaces.tools.memory_tool import MemoryTool

__all__ = ["HelloMemorySession", "item_text", "memory_function_tools"]

META = "openai_agents"  # metadata key: the item as given and its place in the session
OTHER_IMPORTANCE = 0.2  # tool calls and other non-message items rank low


def _parts_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text") or p.get("refusal") or "") for p in content
                        if isinstance(p, dict)).strip()
    return ""


def item_text(item: Any) -> tuple[str, str | None]:
    """(readable text, role) of one session item."""
    if not isinstance(item, dict):
        return json.dumps(item, default=str)[:2000], None
    kind = item.get("type") or ("message" if "role" in item else None)
    if kind == "message":
        return _parts_text(item.get("content")), item.get("role")
    if kind == "function_call":
        return f"called {item.get('name')}({item.get('arguments') or ''})", "assistant"
    if kind == "function_call_output":
        out = item.get("output")
        return f"tool output: {out if isinstance(out, str) else json.dumps(out)}", "tool"
    return json.dumps(item, default=str, ensure_ascii=False)[:2000], None


class HelloMemorySession:
    """An Agents SDK ``Session`` whose items are hello-memory memories (module doc)."""

    def __init__(self, session_id: str, manager: MemoryManager | AsyncMemoryManager, *,
                 namespace: str, user_id: str | None = None,
                 session_settings: SessionSettings | None = None) -> None:
        self.session_id = session_id
        self.aio = AsyncMemoryManager.wrap(manager)
        self.manager = self.aio.manager
        self.namespace = require_namespace(namespace)
        self.user_id = user_id
        self.session_settings = session_settings
        self._lock = threading.Lock()  # one writer at a time: places are counted

    def _stored(self) -> list[MemoryItem]:
        """This session's items, oldest first (forgotten ones too)."""
        rows = self.manager.browse.list_memories(
            self.namespace, ItemFilter(session_id=self.session_id, status=None))
        mine = [r for r in rows if META in r.metadata]
        return sorted(mine, key=lambda r: r.metadata[META]["seq"])

    def _get(self, limit: int | None) -> list[Any]:
        rows = self._stored()
        if limit is not None:
            rows = rows[-limit:] if limit > 0 else []
        return [r.metadata[META]["item"] for r in rows]

    def _add(self, items: list[Any]) -> None:
        with self._lock:
            stored = self._stored()
            seq = stored[-1].metadata[META]["seq"] + 1 if stored else 0
            records = []
            for n, item in enumerate(items):
                text, role = item_text(item)
                kind = item.get("type", "message") if isinstance(item, dict) else "other"
                meta: dict[str, Any] = {META: {"item": item, "seq": seq + n}, "role": role,
                                        "source": "openai-agents"}
                text = text.strip() or f"[{kind}]"
                records.append(keyed_item(
                    stable_id("openai-agents", self.namespace, self.session_id, str(seq + n)),
                    self.namespace, text, MemoryType.EPISODIC, meta,
                    importance=None if kind == "message" else OTHER_IMPORTANCE,
                    session_id=self.session_id, user_id=self.user_id,
                    limits=self.manager.limits))
            add_keyed(self.manager, records)

    def _pop(self) -> Any:
        with self._lock:
            stored = self._stored()
            if not stored:
                return None
            last = stored[-1]
            self.manager.remove(last.id, namespace=self.namespace)
            return last.metadata[META]["item"]

    def _clear(self) -> None:
        with self._lock:
            ids = [r.id for r in self._stored()]
            if ids:
                self.manager.edit.remove_many(self.namespace, ids)

    # --- the Session protocol --------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        return await self.aio.run(self._get, resolve_session_limit(limit,
                                                                   self.session_settings))

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        if items:
            await self.aio.run(self._add, list(items))

    async def pop_item(self) -> TResponseInputItem | None:
        return await self.aio.run(self._pop)

    async def clear_session(self) -> None:
        await self.aio.run(self._clear)


def memory_function_tools(tool: MemoryTool, *,
                          aio: AsyncMemoryManager | None = None) -> list[FunctionTool]:
    """The tool's actions as Agents SDK function tools (``tool.schemas()``); each call
    runs ``tool.call(name, arguments)`` in the async facade's pool."""
    runner = aio or AsyncMemoryManager.wrap(tool.manager)
    tools: list[FunctionTool] = []
    for schema in tool.schemas():
        fn = schema["function"]

        async def invoke(ctx: Any, arguments: str, *, _name: str = fn["name"]) -> str:
            result = await runner.run(tool.call, _name, arguments)
            return json.dumps(result, ensure_ascii=False, default=str)

        tools.append(FunctionTool(name=fn["name"], description=fn["description"],
                                  params_json_schema=fn["parameters"], on_invoke_tool=invoke,
                                  strict_json_schema=False))
    return tools
