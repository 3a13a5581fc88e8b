"""Pydantic AI toolset over hello-memory (extra ``hello-memory[pydantic-ai]``,
``pydantic-ai-slim``).

>>> from pydantic_ai import Agent                                        # doctest: +SKIP
>>> from hello_memory.interfaces.adapters.pydantic_ai import memory_toolset         # doctest: +SKIP
>>> agent = Agent(model, toolsets=[memory_toolset(MemoryTool(mm, namespace="alice"))])

The installed Pydantic AI (2.x) has no memory-store or searchable-store protocol to
implement: its ``ConversationStore`` keeps a run's message log (with revisions and
branches) and ``native_tools.MemoryTool`` is a model provider's own memory. So the
adapter is a ``FunctionToolset``:

- one tool per :class:`~hello_memory.MemoryTool` action (``memory_add``,
  ``memory_search``, ... with the same JSON schemas as ``tool.schemas()``); a tool call
  returns the tool's JSON result, errors included as ``ok: false``;
- with ``context=True`` (the default) the toolset also contributes instructions: the
  progressive loader's context block for the run's user prompt
  (``MemoryTool.get_context_for_query``), so the model sees what it remembers before it
  decides to call a tool.

Every call runs in :class:`~hello_memory.interfaces.aio.AsyncMemoryManager`'s pool.
"""

from __future__ import annotations

from typing import Any

from hello_memory.interfaces.adapters import missing_extra

try:  # the framework is an optional extra: a missing one names it
    from pydantic_ai import RunContext
    from pydantic_ai.tools import Tool
    from pydantic_ai.toolsets import FunctionToolset
except ModuleNotFoundError as _missing:
    raise missing_extra("pydantic-ai", _missing, __name__) from _missing

from hello_memory.interfaces.aio import AsyncMemoryManager
from hello_memory.interfaces.tools.memory_tool import MemoryTool

__all__ = ["memory_toolset"]


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, (list, tuple)):
        return " ".join(p for p in prompt if isinstance(p, str))
    return ""


def memory_toolset(tool: MemoryTool, *, context: bool = True, max_tokens: int | None = None,
                   aio: AsyncMemoryManager | None = None) -> FunctionToolset[Any]:
    """``tool``'s actions as a Pydantic AI toolset, plus (``context``) its context
    block for the run's prompt as instructions (module doc)."""
    runner = aio or AsyncMemoryManager.wrap(tool.manager)
    tools: list[Tool[Any]] = []
    for schema in tool.schemas():
        fn = schema["function"]

        async def call(*, _name: str = fn["name"], **arguments: Any) -> dict[str, Any]:
            return await runner.run(tool.call, _name, arguments)

        tools.append(Tool.from_schema(call, name=fn["name"], description=fn["description"],
                                      json_schema=fn["parameters"]))

    async def remembered(ctx: RunContext[Any]) -> str | None:
        query = _prompt_text(ctx.prompt).strip()
        if not query:
            return None
        block = await runner.context_for_query(tool, query, max_tokens)
        return block or None

    return FunctionToolset(tools, instructions=remembered if context else None)
