"""hello-memory as a Pydantic AI toolset.

Offline it shows the tools and the instructions the toolset adds; with LLM_BASE_URL
(and LLM_MODEL, LLM_API_KEY) set to any OpenAI-compatible endpoint it runs the agent.

    pip install "hello-memory[pydantic-ai]" "pydantic-ai-slim[openai]"
    python examples/pydantic_ai_toolset.py [DATA_DIR]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile

from hello_memory import MemoryManager, MemoryTool
from hello_memory.interfaces.adapters.pydantic_ai import memory_toolset


async def main(data_dir: str) -> None:
    with MemoryManager.open(data_dir=data_dir) as mm:
        mm.add("Carol's daughter is called Mia.", "semantic", namespace="carol")
        memory = MemoryTool(mm, namespace="carol")
        toolset = memory_toolset(memory)
        print("tools:", ", ".join(sorted(toolset.tools)))
        if os.environ.get("LLM_BASE_URL"):
            from pydantic_ai import Agent
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai import OpenAIProvider

            model = OpenAIChatModel(os.environ.get("LLM_MODEL", "any"), provider=OpenAIProvider(
                base_url=os.environ["LLM_BASE_URL"], api_key=os.environ.get("LLM_API_KEY", "none")))
            agent = Agent(model, toolsets=[toolset])
            print("agent:", (await agent.run("What is my daughter's name?")).output)
        else:  # the instructions the toolset gives the model for this prompt
            print(memory.get_context_for_query("What is my daughter's name?"))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1
                     else tempfile.mkdtemp(prefix="hm-pydantic-ai-")))
