"""HelloMemoryBlock inside LlamaIndex's Memory.from_defaults(memory_blocks=[...])."""

from __future__ import annotations

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory

from hello_memory.interfaces.adapters.llamaindex import HelloMemoryBlock
from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.records import ItemFilter


async def test_block_context_and_flush(manager: MemoryManager) -> None:
    manager.add("Alice is allergic to peanuts.", "semantic", importance=0.9,
                namespace="alice")
    manager.add("Alice's daughter Mia starts school in September.", "episodic",
                namespace="alice")
    block = HelloMemoryBlock(manager=manager, namespace="alice", max_tokens=200, priority=0)
    # a small window, so LlamaIndex flushes the first turns into the block
    memory = Memory.from_defaults(session_id="s1", token_limit=40, token_flush_size=20,
                                  chat_history_token_ratio=0.5, memory_blocks=[block])
    await memory.aput_messages([
        ChatMessage(role="user", content="We moved to Porto last month, the flat has a "
                                         "balcony facing the river and a tiny kitchen."),
        ChatMessage(role="assistant", content="Congratulations on the move to Porto! "
                                              "A river view sounds lovely."),
    ])
    await memory.aput(ChatMessage(role="user", content="Which snacks are safe for Alice?"))
    messages = await memory.aget()
    system = messages[0]
    assert system.role.value == "system"
    text = system.content or ""
    assert "<hello_memory>" in text and "allergic to peanuts" in text
    # the flushed turns are episodic memories of the namespace, with their session
    stored = manager.stores.records.memories.list_items("alice", ItemFilter(session_id="s1"))
    assert any("Porto" in i.content for i in stored)
    assert {i.metadata["role"] for i in stored} <= {"user", "assistant"}
    assert all(i.memory_type.value == "episodic" for i in stored)


async def test_truncate_and_empty(manager: MemoryManager) -> None:
    block = HelloMemoryBlock(manager=manager, namespace="bob", priority=2)
    assert await block.aget([ChatMessage(role="user", content="anything?")]) == ""
    for n in range(6):
        manager.add(f"Bob visited museum number {n} in Vienna.", "episodic", namespace="bob")
    content = await block.aget([ChatMessage(role="user", content="Which museums did Bob visit?")])
    lines = content.splitlines()
    assert len(lines) >= 4
    shorter = await block.atruncate(content, 20)
    assert shorter is not None and shorter.splitlines() == lines[:len(shorter.splitlines())]
    assert len(shorter.splitlines()) < len(lines)
    assert await block.atruncate(content, 10_000) is None
