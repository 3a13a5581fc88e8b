"""HelloMemorySession and the memory function tools in the OpenAI Agents SDK: the
Session protocol directly, then a real Runner against the scripted chat endpoint
(the project's one stand-in for an LLM)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.memory import Session, SessionSettings
from llm.scripted_server import ScriptedLLMServer, ScriptedResponse, chat_body
from openai import AsyncOpenAI

from hello_memory.interfaces.adapters.openai_agents import HelloMemorySession, memory_function_tools
from hello_memory.interfaces.tools.memory_tool import MemoryTool
from hello_memory.memory.manager import MemoryManager

set_tracing_disabled(True)  # nothing leaves the machine


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


async def test_session_protocol(manager: MemoryManager) -> None:
    session = HelloMemorySession("chat-1", manager, namespace="alice")
    assert isinstance(session, Session)
    assert await session.get_items() == [] and await session.pop_item() is None
    items: list[Any] = [
        {"role": "user", "content": "I just adopted a beagle called Rex."},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Congratulations on Rex!"}]},
        {"type": "function_call", "call_id": "c1", "name": "memory_add",
         "arguments": '{"content": "Alice has a beagle called Rex"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "stored"},
    ]
    await session.add_items(items[:2])
    await session.add_items(items[2:])
    assert await session.get_items() == items
    assert await session.get_items(limit=2) == items[2:]
    # the turns are memories: the one search finds the user's words
    hits = manager.search("which dog did I adopt?", top_k=3, namespace="alice")
    mine = [h.item for h in hits if h.item.content == "I just adopted a beagle called Rex."]
    assert mine and mine[0].session_id == "chat-1" and mine[0].metadata["role"] == "user"

    assert await session.pop_item() == items[3]
    assert await session.get_items() == items[:3]
    other = HelloMemorySession("chat-2", manager, namespace="alice",
                               session_settings=SessionSettings(limit=1))
    await other.add_items([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    assert await other.get_items() == [{"role": "user", "content": "b"}]
    await session.clear_session()
    assert await session.get_items() == []
    assert len(await other.get_items(limit=10)) == 2     # other sessions are untouched


async def test_runner_with_session_and_tools(manager: MemoryManager,
                                             llm: ScriptedLLMServer) -> None:
    memory = MemoryTool(manager, namespace="bob")
    client = AsyncOpenAI(base_url=llm.base_url, api_key="test-key", max_retries=0)
    agent = Agent(name="assistant", instructions="Remember what matters.",
                  model=OpenAIChatCompletionsModel(model="scripted", openai_client=client),
                  tools=memory_function_tools(memory))
    session = HelloMemorySession("bob-chat", manager, namespace="bob")

    llm.enqueue(tool_call("memory_add", {"content": "Bob is allergic to shellfish.",
                                         "memory_type": "semantic", "importance": 0.9}))
    llm.reply("Noted: no shellfish for you.")
    first = await Runner.run(agent, "Remember that I'm allergic to shellfish.",
                             session=session)
    assert first.final_output == "Noted: no shellfish for you."
    stored = manager.search("shellfish allergy", memory_types=["semantic"], namespace="bob")
    assert stored and stored[0].item.content == "Bob is allergic to shellfish."
    tool_result = llm.requests[1].body["messages"][-1]
    assert tool_result["role"] == "tool" and json.loads(tool_result["content"])["ok"] is True

    llm.enqueue(tool_call("memory_search", {"query": "allergies"}))
    llm.reply("You are allergic to shellfish.")
    second = await Runner.run(agent, "What am I allergic to?", session=session)
    assert second.final_output == "You are allergic to shellfish."
    # the second run's prompt carries the first run's history, read from the session
    sent = llm.requests[2].body["messages"]
    assert any(m.get("content") == "Remember that I'm allergic to shellfish." for m in sent)
    found = json.loads(llm.requests[3].body["messages"][-1]["content"])
    assert "Bob is allergic to shellfish." in [h["text"] for h in found["hits"]]  # brief
    history = await session.get_items()
    assert history[0] == {"content": "Remember that I'm allergic to shellfish.",
                          "role": "user"}
    assert len(history) >= 8
