"""memory_toolset in a real Pydantic AI agent, against the scripted chat endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from llm.scripted_server import ScriptedLLMServer, ScriptedResponse, chat_body
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from hello_memory.interfaces.adapters.pydantic_ai import memory_toolset
from hello_memory.interfaces.tools.memory_tool import MemoryTool
from hello_memory.memory.manager import MemoryManager


@pytest.fixture
def llm() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server
        assert server.unscripted == 0


def tool_call(name: str, arguments: dict[str, Any]) -> ScriptedResponse:
    body = chat_body("")
    body["choices"][0]["finish_reason"] = "tool_calls"
    body["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{name}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(arguments)}}]}
    return ScriptedResponse(body=body)


async def test_agent_uses_the_memory_tools(manager: MemoryManager,
                                           llm: ScriptedLLMServer) -> None:
    manager.add("Carol's daughter is called Mia.", "semantic", namespace="carol")
    model = OpenAIChatModel("scripted", provider=OpenAIProvider(base_url=llm.base_url,
                                                                api_key="test-key"))
    agent = Agent(model, instructions="You are a helpful assistant.",
                  toolsets=[memory_toolset(MemoryTool(manager, namespace="carol"))])

    llm.enqueue(tool_call("memory_add", {"content": "Carol's daughter Mia loves dinosaurs.",
                                         "memory_type": "semantic"}))
    llm.reply("I'll remember that Mia loves dinosaurs.")
    result = await agent.run("What is my daughter's name? Also, she loves dinosaurs.")
    assert result.output == "I'll remember that Mia loves dinosaurs."

    first = llm.requests[0].body
    names = {t["function"]["name"] for t in first["tools"]}
    assert {"memory_add", "memory_search", "memory_update", "memory_remove"} <= names
    system = " ".join(str(m.get("content")) for m in first["messages"]
                      if m["role"] in ("system", "developer"))
    assert "Carol's daughter is called Mia." in system      # the context block
    tool_result = json.loads(llm.requests[1].body["messages"][-1]["content"])
    assert tool_result["ok"] is True and tool_result["action"] == "add"
    assert any("dinosaurs" in h.item.content
               for h in manager.search("what does Mia love?", namespace="carol"))

    # a bad call comes back to the model as ok: false, nothing stored
    llm.enqueue(tool_call("memory_update", {"memory_id": "no-such-id", "importance": 0.5}))
    llm.reply("Sorry, I could not find that memory.")
    await agent.run("Mark that as important.")
    failed = json.loads(llm.requests[3].body["messages"][-1]["content"])
    assert failed["ok"] is False and failed["error"]["type"] == "NotFoundError"


def test_toolset_without_context(manager: MemoryManager) -> None:
    toolset = memory_toolset(MemoryTool(manager, namespace="x"), context=False)
    assert sorted(toolset.tools) == sorted(
        s["function"]["name"] for s in MemoryTool(manager, namespace="x").schemas())
