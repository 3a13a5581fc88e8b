"""hello-memory as an AutoGen memory (offline, embedded).

    pip install "hello-memory[autogen]"
    python examples/autogen_memory.py [DATA_DIR]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile

from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import UserMessage

from hello_memory import MemoryManager
from hello_memory.interfaces.adapters.autogen import HelloMemory


async def main(data_dir: str) -> None:
    with MemoryManager.open(data_dir=data_dir) as mm:
        memory = HelloMemory(mm, namespace="alice")   # AssistantAgent(..., memory=[memory])
        await memory.add(MemoryContent(content="Alice is allergic to peanuts.",
                                       mime_type=MemoryMimeType.TEXT,
                                       metadata={"memory_type": "semantic"}))
        context = BufferedChatCompletionContext(buffer_size=10)
        await context.add_message(UserMessage(content="Can I bake Alice a peanut cake?",
                                              source="user"))
        await memory.update_context(context)        # what an agent does before each reply
        for message in await context.get_messages():
            print(f"{type(message).__name__}: {message.content}")
        await memory.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1
                     else tempfile.mkdtemp(prefix="hm-autogen-")))
