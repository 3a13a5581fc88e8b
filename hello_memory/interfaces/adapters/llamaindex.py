"""A LlamaIndex memory block over hello-memory (extra ``hello-memory[llamaindex]``).

>>> from llama_index.core.memory import Memory                         # doctest: +SKIP
>>> from hello_memory.interfaces.adapters.llamaindex import HelloMemoryBlock     # doctest: +SKIP
>>> memory = Memory.from_defaults(session_id="s1", token_limit=4000,  # doctest: +SKIP
...     memory_blocks=[HelloMemoryBlock(manager=mm, namespace="alice")])

- ``aget`` (LlamaIndex's ``_aget``) returns the progressive loader's context block for
  the latest user message, the same block ``MemoryTool.get_context_for_query`` gives
  (relevant memories, then the standing facts), at most ``max_tokens`` tokens.
- ``aput`` (``_aput``) receives the messages LlamaIndex flushes out of its short-term
  memory and stores each text message as an episodic memory (role in metadata, the
  LlamaIndex session as ``session_id``), through ``MemoryManager.add_many``.
- ``priority`` works as for any block (0: never truncated); when LlamaIndex asks the
  block to shrink, whole memory lines are dropped from the end of the block (the least
  relevant first).

What the interface cannot carry: a block gets only the chat messages, so the query is
the latest user message's text (images and other content blocks are not searched).
"""

from __future__ import annotations

from typing import Any

from hello_memory.interfaces.adapters import missing_extra

try:  # the framework is an optional extra: a missing one names it
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory.memory import BaseMemoryBlock
except ModuleNotFoundError as _missing:
    raise missing_extra("llamaindex", _missing, __name__) from _missing

from pydantic import Field, PrivateAttr

from hello_memory.interfaces.aio import AsyncMemoryManager
from hello_memory.interfaces.tools.memory_tool import MemoryTool
from hello_memory.types import MemoryType
from hello_memory.validation import require_namespace

__all__ = ["HelloMemoryBlock"]


def _text(message: ChatMessage) -> str:
    return " ".join((message.content or "").split())


class HelloMemoryBlock(BaseMemoryBlock[str]):
    """hello-memory as a LlamaIndex memory block (module doc)."""

    name: str = Field(default="hello_memory", description="The block's name.")
    description: str | None = Field(
        default="Long-term memories relevant to the conversation (hello-memory).")
    priority: int = Field(default=1, description="0 = never truncate, 1 = highest, ...")
    manager: Any = Field(description="a MemoryManager or AsyncMemoryManager", exclude=True)
    namespace: str
    user_id: str | None = None
    max_tokens: int = Field(default=500, ge=20)
    store_flushed: bool = Field(default=True, description="store the messages LlamaIndex "
                                "flushes from short-term memory as episodic memories")
    _aio: AsyncMemoryManager = PrivateAttr()
    _tool: MemoryTool = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._aio = AsyncMemoryManager.wrap(self.manager)
        self._tool = MemoryTool(self._aio.manager, namespace=require_namespace(self.namespace),
                                user_id=self.user_id, context_tokens=self.max_tokens)

    async def _aget(self, messages: list[ChatMessage] | None = None,
                    **block_kwargs: Any) -> str:
        query = next((_text(m) for m in reversed(messages or [])
                      if m.role.value == "user" and _text(m)), "")
        if not query:
            return ""
        return await self._aio.context_for_query(self._tool, query, self.max_tokens)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        if not self.store_flushed:
            return
        entries = [{"content": _text(m), "memory_type": MemoryType.EPISODIC,
                    "metadata": {"role": m.role.value, "source": "llamaindex"},
                    "namespace": self.namespace, "user_id": self.user_id,
                    "session_id": m.additional_kwargs.get("session_id")}
                   for m in messages if _text(m)]
        if entries:
            await self._aio.add_many(entries)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        lines = content.splitlines()
        counter = self._tool.counter
        target = counter.count(content) - tokens_to_truncate
        while lines and counter.count("\n".join(lines)) > target:
            lines.pop()
        # a header alone says nothing
        return "\n".join(lines) if len(lines) > 1 else None
