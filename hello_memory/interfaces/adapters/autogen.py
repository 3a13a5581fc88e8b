"""AutoGen ``Memory`` over hello-memory (extra ``hello-memory[autogen]``; autogen-core).

>>> from autogen_agentchat.agents import AssistantAgent                 # doctest: +SKIP
>>> from hello_memory.interfaces.adapters.autogen import HelloMemory              # doctest: +SKIP
>>> agent = AssistantAgent("assistant", model_client=client,            # doctest: +SKIP
...                        memory=[HelloMemory(mm, namespace="alice")])

- ``update_context(model_context)`` adds one system message: the progressive loader's
  context block for the latest user message (``MemoryTool.get_context_for_query``, at
  most ``max_tokens`` tokens), and returns its lines as ``MemoryContent``.
- ``query(q, top_k=...)`` is hello-memory's one search; each hit is a ``MemoryContent``
  (text, with id, score, memory type and time in ``metadata``).
- ``add(MemoryContent)`` stores text (``text/plain``, ``text/markdown``) or JSON
  (``application/json``, stored as its JSON text) through ``MemoryManager.add``;
  ``metadata`` may set ``memory_type`` and ``importance``, the rest is kept.
- ``clear()`` deletes every memory of the namespace (``MemoryManager.clear``).

What the interface cannot carry: images and binary content (``add`` refuses them), and
a ``CancellationToken`` does not stop a call already running in the pool. The
component is not serialisable with ``dump_component`` (a manager holds open stores).
"""

from __future__ import annotations

import json
import re
from typing import Any

from hello_memory.interfaces.adapters import missing_extra

try:  # the framework is an optional extra: a missing one names it
    from autogen_core import CancellationToken
    from autogen_core.memory import (
        Memory,
        MemoryContent,
        MemoryMimeType,
        MemoryQueryResult,
        UpdateContextResult,
    )
    from autogen_core.model_context import ChatCompletionContext
    from autogen_core.models import SystemMessage, UserMessage
except ModuleNotFoundError as _missing:
    raise missing_extra("autogen", _missing, __name__) from _missing

from hello_memory.errors import InvalidInputError
from hello_memory.interfaces.aio import AsyncMemoryManager
from hello_memory.interfaces.tools.memory_tool import MemoryTool
from hello_memory.memory.manager import MemoryManager
from hello_memory.validation import require_namespace

__all__ = ["HelloMemory"]

_LINE = re.compile(r"^- \[([^\]]+)\] (.*)$")
_TEXT_TYPES = {MemoryMimeType.TEXT.value, MemoryMimeType.MARKDOWN.value}


def _mime(content: MemoryContent) -> str:
    m = content.mime_type
    return m.value if isinstance(m, MemoryMimeType) else str(m)


class HelloMemory(Memory):
    """hello-memory as an AutoGen memory bound to one namespace (module doc)."""

    component_type = "memory"

    def __init__(self, manager: MemoryManager | AsyncMemoryManager, *, namespace: str,
                 user_id: str | None = None, top_k: int = 5, max_tokens: int = 500) -> None:
        self._owns_pool = not isinstance(manager, AsyncMemoryManager)
        self.aio = AsyncMemoryManager.wrap(manager)
        self.manager = self.aio.manager
        self.namespace = require_namespace(namespace)
        self.user_id = user_id
        self.top_k = top_k
        self.max_tokens = max_tokens
        self.tool = MemoryTool(self.manager, namespace=self.namespace, user_id=user_id,
                               context_tokens=max_tokens)

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        messages = await model_context.get_messages()
        query = ""
        for message in reversed(messages):
            if isinstance(message, UserMessage):
                content = message.content
                query = content if isinstance(content, str) else " ".join(
                    c for c in content if isinstance(c, str))
                if query.strip():
                    break
        if not query.strip():
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        block = await self.aio.context_for_query(self.tool, query, self.max_tokens)
        if not block:
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        await model_context.add_message(SystemMessage(content=block))
        lines = []
        for line in block.splitlines():
            match = _LINE.match(line)
            if match:
                lines.append(MemoryContent(content=match.group(2), mime_type=MemoryMimeType.TEXT,
                                           metadata={"id": match.group(1)}))
        return UpdateContextResult(memories=MemoryQueryResult(results=lines))

    async def query(self, query: str | MemoryContent,
                    cancellation_token: CancellationToken | None = None,
                    **kwargs: Any) -> MemoryQueryResult:
        text = query.content if isinstance(query, MemoryContent) else query
        if not isinstance(text, str):
            raise InvalidInputError("a memory query must be text")
        hits = await self.aio.search(text, top_k=int(kwargs.pop("top_k", self.top_k)),
                                     namespace=self.namespace, **kwargs)
        return MemoryQueryResult(results=[MemoryContent(
            content=h.item.content, mime_type=MemoryMimeType.TEXT,
            metadata={"id": h.id, "score": h.score, "memory_type": h.memory_type.value,
                      "event_time": h.item.event_time.isoformat(), **h.item.metadata})
            for h in hits])

    async def add(self, content: MemoryContent,
                  cancellation_token: CancellationToken | None = None) -> None:
        mime = _mime(content)
        if mime in _TEXT_TYPES and isinstance(content.content, str):
            text = content.content
        elif mime == MemoryMimeType.JSON.value and isinstance(content.content, (dict, str)):
            text = (content.content if isinstance(content.content, str)
                    else json.dumps(content.content, ensure_ascii=False, sort_keys=True))
        else:
            raise InvalidInputError(f"hello-memory stores text and JSON, not {mime}")
        meta = dict(content.metadata or {})
        mtype = meta.pop("memory_type", None)
        importance = meta.pop("importance", None)
        await self.aio.add(text, mtype, importance, {**meta, "mime_type": mime},
                           namespace=self.namespace, user_id=self.user_id,
                           auto_classify=mtype is None)

    async def clear(self) -> None:
        await self.aio.clear(self.namespace, confirm=True)

    async def close(self) -> None:
        """Stop this memory's pool when it made one; the manager stays open."""
        if self._owns_pool:
            await self.aio.close()
