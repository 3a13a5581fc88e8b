"""hello-memory as an OpenAI Agents SDK session and memory tools.

Offline it shows the session and the tools; with LLM_BASE_URL (and LLM_MODEL,
LLM_API_KEY) set to any OpenAI-compatible endpoint it runs the agent.

    pip install "hello-memory[openai-agents]"
    python examples/openai_agents_session.py [DATA_DIR]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

from hello_memory import MemoryManager, MemoryTool
from hello_memory.interfaces.adapters.openai_agents import HelloMemorySession, memory_function_tools


async def main(data_dir: str) -> None:
    with MemoryManager.open(data_dir=data_dir) as mm:
        session = HelloMemorySession("chat-1", mm, namespace="alice")
        tools = memory_function_tools(MemoryTool(mm, namespace="alice"))
        print("tools:", ", ".join(t.name for t in tools))
        if os.environ.get("LLM_BASE_URL"):
            set_tracing_disabled(True)
            client = AsyncOpenAI(base_url=os.environ["LLM_BASE_URL"],
                                 api_key=os.environ.get("LLM_API_KEY", "none"))
            model = OpenAIChatCompletionsModel(model=os.environ.get("LLM_MODEL", "any"),
                                               openai_client=client)
            agent = Agent(name="assistant", model=model, tools=tools,
                          instructions="Store lasting facts about the user with memory_add.")
            result = await Runner.run(agent, "I'm allergic to peanuts.", session=session)
            print("agent:", result.final_output)
        else:  # what a Runner does with a session, by hand
            await session.add_items([
                {"role": "user", "content": "I'm allergic to peanuts."},
                {"role": "assistant", "content": "Noted, no peanuts."}])
        print("history:", await session.get_items())
        hit = mm.search("what can't I eat?", namespace="alice", top_k=1)[0]
        print("searchable:", hit.item.content, "(session", hit.item.session_id + ")")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1
                     else tempfile.mkdtemp(prefix="hm-openai-agents-")))
