"""HelloMemory: AutoGen's Memory over hello-memory, updating a real model context."""

from __future__ import annotations

import pytest
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage

from hello_memory.errors import InvalidInputError
from hello_memory.interfaces.adapters.autogen import HelloMemory
from hello_memory.memory.manager import MemoryManager


async def test_add_query_update_context_clear(manager: MemoryManager) -> None:
    memory = HelloMemory(manager, namespace="alice", top_k=3)
    await memory.add(MemoryContent(content="Alice is allergic to peanuts.",
                                   mime_type=MemoryMimeType.TEXT,
                                   metadata={"memory_type": "semantic", "importance": 0.9}))
    await memory.add(MemoryContent(content={"city": "Berlin", "since": 2024},
                                   mime_type=MemoryMimeType.JSON))
    with pytest.raises(InvalidInputError):
        await memory.add(MemoryContent(content=b"\x00\x01", mime_type=MemoryMimeType.BINARY))

    found = await memory.query("what must Alice not eat?")
    assert found.results[0].content == "Alice is allergic to peanuts."
    assert found.results[0].metadata["memory_type"] == "semantic"
    assert found.results[0].metadata["score"] > 0

    context = BufferedChatCompletionContext(buffer_size=10)
    await context.add_message(UserMessage(content="Can I give Alice a peanut snack?",
                                          source="user"))
    result = await memory.update_context(context)
    messages = await context.get_messages()
    assert isinstance(messages[-1], SystemMessage)
    assert "allergic to peanuts" in messages[-1].content
    assert any(r.content.endswith("Alice is allergic to peanuts.")
               for r in result.memories.results)
    assert all(r.metadata and r.metadata["id"] for r in result.memories.results)

    await memory.clear()
    assert manager.stats("alice")["total"] == 0
    empty = BufferedChatCompletionContext(buffer_size=10)
    await empty.add_message(UserMessage(content="anything?", source="user"))
    assert (await memory.update_context(empty)).memories.results == []
    assert len(await empty.get_messages()) == 1
    await memory.close()
