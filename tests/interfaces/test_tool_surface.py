"""A tool surface sized for models (issue 29, item 4): no media tools while perceptual
memory is off, ``namespace`` optional where exactly one is granted, a recall that is
brief by default (5 hits under 1.5 KB) with the full breakdown on request, and short
tool descriptions. MCP through the ``mcp`` package's own client, in process."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client

from hello_memory.config import Settings
from hello_memory.interfaces.mcp import build_server
from hello_memory.interfaces.tools import MemoryTool
from hello_memory.memory.manager import MemoryManager

pytestmark = pytest.mark.slow

FACTS = [
    "Alice moved from Paris to Berlin in May 2024 for a job at Acme Robotics.",
    "Alice prefers green tea over coffee and never drinks anything after 6 pm.",
    "Alice's sister Clara lives in Lyon and visits every December.",
    "Alice runs 5 km every Tuesday and Saturday morning before work.",
    "Alice is learning Portuguese for a trip to Lisbon in the spring.",
    "Alice keeps the spare keys to the office in her desk drawer.",
]
MEDIA_TOOLS = {"add_media_path", "search_media"}


def _session(manager: MemoryManager, settings: Settings, grants: list[str],
             calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(build_server(manager, settings, grants)) as c:
            tools = (await c.list_tools()).tools
            out["tools"] = {t.name: t for t in tools}
            for n, (name, args) in enumerate(calls):
                r = await c.call_tool(name, args)
                text = str(getattr(r.content[0], "text", "")) if r.content else ""
                out[n] = (r.is_error, r.structured_content, text)
        return out
    return anyio.run(go)


def test_one_granted_namespace_is_the_default_and_recall_is_brief(
        manager: MemoryManager, settings: Settings) -> None:
    manager.add_many([{"content": f, "memory_type": "semantic", "namespace": "alice"}
                      for f in FACTS])
    out = _session(manager, settings, ["alice"], [
        ("recall", {"query": "what does Alice drink?", "top_k": 5, "min_score": 0}),
        ("recall", {"query": "what does Alice drink?", "top_k": 5, "min_score": 0,
                    "detail": True}),
        ("remember", {"content": "Alice's locker is number 12."}),
        ("recall", {"namespace": "bob", "query": "anything"}),
        ("stats", {})])
    tools = out["tools"]
    assert not MEDIA_TOOLS & set(tools)  # perceptual memory is off here
    recall = tools["recall"].input_schema
    assert "namespace" not in recall.get("required", [])
    assert recall["properties"]["namespace"]["default"] == "alice"
    assert recall["properties"]["detail"]["default"] is False
    is_error, brief, _ = out[0]
    assert not is_error and len(brief["hits"]) == 5
    assert all(set(h) == {"id", "text", "date", "type", "score"} for h in brief["hits"])
    assert brief["hits"][0]["text"].startswith("Alice prefers green tea")
    size = len(json.dumps(brief, ensure_ascii=False, separators=(",", ":")).encode())
    assert size < 1500, size  # issue 29: a recall of 5 hits under 1.5 KB
    _, full, _ = out[1]
    assert [h["id"] for h in full["hits"]] == [h["id"] for h in brief["hits"]]
    assert full["hits"][0]["breakdown"] and full["hits"][0]["views"]
    assert full["hits"][0]["memory"]["namespace"] == "alice"
    assert not out[2][0] and out[2][1]["namespace"] == "alice"  # stored in the default
    assert out[3][0] and "not granted" in out[3][2]
    assert out[4][1]["total"] == len(FACTS) + 1


def test_several_granted_namespaces_are_named_on_every_call(
        manager: MemoryManager, settings: Settings) -> None:
    for grants in (["alice", "bob"], ["team/*"]):
        out = _session(manager, settings, grants, [("stats", {})])
        schema = out["tools"]["stats"].input_schema
        assert schema["required"] == ["namespace"], grants
        assert out[0][0], grants  # a call without one is refused


def test_descriptions_are_short_and_schemas_carry_no_titles(
        manager: MemoryManager, settings: Settings) -> None:
    tools = _session(manager, settings, ["*"], [])["tools"]
    for name, tool in tools.items():
        assert tool.description and len(tool.description) <= 220, (name, tool.description)
        assert '"title"' not in json.dumps(tool.input_schema), name


def test_memory_tool_offers_what_can_work_and_answers_brief(manager: MemoryManager) -> None:
    manager.add_many([{"content": f, "memory_type": "semantic", "namespace": "alice"}
                      for f in FACTS])
    tool = MemoryTool(manager, namespace="alice")
    names = {s["function"]["name"] for s in tool.schemas()}
    assert "memory_search" in names and not {f"memory_{m}" for m in MEDIA_TOOLS} & names
    brief = tool.search("what does Alice drink?")
    assert all(set(h) == {"id", "text", "date", "type", "score"} for h in brief["hits"])
    full = tool.search("what does Alice drink?", detail=True)
    assert full["hits"][0]["breakdown"] and full["hits"][0]["id"] == brief["hits"][0]["id"]
    # the whole answer of 5 hits, as a framework hands it to the model, under 1.5 KB:
    # the text says how many hits there are instead of rendering them a second time
    five = tool.run({"action": "search", "query": "what does Alice drink?", "top_k": 5,
                     "min_score": 0})
    assert five["ok"] and len(five["hits"]) == 5
    assert set(five) == {"ok", "action", "namespace", "hits", "text"}
    assert five["text"] == "5 memories: in hits, best first"
    assert five["hits"][0]["text"].startswith("Alice prefers green tea")
    size = len(json.dumps(five, ensure_ascii=False, separators=(",", ":")).encode())
    assert size < 1500, size
    rendered = tool.run({"action": "search", "query": "what does Alice drink?", "top_k": 5,
                         "min_score": 0, "detail": True})["text"]
    assert rendered.startswith("5 memories:\n") and five["hits"][0]["id"] in rendered
    long = manager.add("Alice's diary: " + "a long walk by the river. " * 200, "episodic",
                       namespace="alice")
    hit = next(h for h in tool.search("Alice's diary long walk by the river", top_k=10)["hits"]
               if h["id"] == long.id)
    assert hit["truncated"] is True and len(hit["text"]) <= 1001  # get returns it whole
