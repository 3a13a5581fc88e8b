"""hello-memory as a LlamaIndex memory block (offline, embedded).

    pip install "hello-memory[llamaindex]"
    python examples/llamaindex_block.py [DATA_DIR]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory

from hello_memory import MemoryManager
from hello_memory.interfaces.adapters.llamaindex import HelloMemoryBlock


async def main(data_dir: str) -> None:
    with MemoryManager.open(data_dir=data_dir) as mm:
        mm.add("Alice is allergic to peanuts.", "semantic", importance=0.9, namespace="alice")
        memory = Memory.from_defaults(session_id="alice-chat", token_limit=2000, memory_blocks=[
            HelloMemoryBlock(manager=mm, namespace="alice", max_tokens=200)])
        await memory.aput(ChatMessage(role="user", content="Which snacks can Alice eat?"))
        for message in await memory.aget():
            print(f"{message.role.value}: {message.content}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1
                     else tempfile.mkdtemp(prefix="hm-llamaindex-")))
