"""What a model reads from the memory tools: bytes and tokens of a recall of 5 hits and
of the MCP tool list, before and after issue 29 (item 4), next to the documented result
shapes of two peers filled with the same memories.

    python -m benchmarks.tool_output            # prints the table, writes BENCHMARKS.md

"Before" is the answer as it was (every hit as ``hit_to_json``: the memory record, the
fused score, each view's rank and score, the profile breakdown); "after" is what MCP's
``recall`` and ``MemoryTool``'s search answer by default now (id, text, date, type,
score; ``detail: true`` gives the old form). The MemoryTool rows are the tool's own
answers (``tool.run``): by default its ``text`` only says how many hits there are; with
``detail: true`` (the "before" form) it renders every hit again under the token budget.
The tool list "before" offered every operation with its full description and a
required ``namespace``; "after" leaves the media tools out while perceptual memory is
off and describes each tool in one line.
Tokens are counted by the project's offline counter (``HeuristicTokenCounter``,
about cl100k_base within +-25 %); bytes are the UTF-8 JSON (no spaces) a client
receives as the tool's structured result.

The peers' shapes are their documented response fields, filled with the same memories
(not measured on their servers): Mem0's search (docs.mem0.ai/api-reference/memory/
v1-search-memories: id, memory, input, user_id, hash, metadata, created_at, updated_at)
and mcp-memory-service's ``retrieve_memory`` (its API reference: memories of content,
content_hash, tags, memory_type, created_at, similarity_score; query, total_results).
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.report import write_section

MEMORIES = [
    ("Alice moved from Paris to Berlin in May 2024 for a job at Acme Robotics.", "episodic"),
    ("Alice prefers green tea over coffee and never drinks anything after 6 pm.", "semantic"),
    ("The user's Bluetooth headphones (order 984233) have a crackling left earbud.",
     "episodic"),
    ("Bob is allergic to peanuts; always check restaurant menus for him.", "semantic"),
    ("The team agreed to ship version 2.0 of the mobile app on June 30.", "episodic"),
    ("Deploy steps: run migrations first, then restart the API workers one by one.",
     "semantic"),
    ("Alice's sister Clara lives in Lyon and visits every December.", "semantic"),
    ("The quarterly planning meeting moved to Thursday at 10:00 in room 4B.", "episodic"),
    ("The user runs 5 km every Tuesday and Saturday morning before work.", "semantic"),
    ("Dana recommended the book 'The Pragmatic Programmer' during the last review.",
     "episodic"),
    ("The office wifi password changed to sunflower-42 on Monday.", "episodic"),
    ("The user is learning Portuguese for a trip to Lisbon in the spring.", "semantic"),
]
QUERIES = ["what does Alice drink?", "where does Alice live now?", "what do we know about Alice?",
           "what is Bob allergic to?", "when does the app ship?", "what is planned at work?",
           "how do we deploy?", "what is the wifi password?"]


def size(value: Any) -> tuple[int, int]:
    from hello_memory.text.tokens import default_token_counter

    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8")), default_token_counter().count(text)


def mem0_shape(found: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for hit in found["hits"]:
        m = hit["memory"]
        out.append({"id": m["id"], "memory": m["content"], "input": [],
                    "user_id": m.get("user_id") or "alice",
                    "hash": hashlib.md5(m["content"].encode()).hexdigest(),  # noqa: S324
                    "metadata": m["metadata"] or None, "created_at": m["recorded_time"],
                    "updated_at": m["recorded_time"]})
    return out


def mcp_memory_service_shape(found: dict[str, Any], query: str) -> dict[str, Any]:
    memories = [{"content": h["memory"]["content"],
                 "content_hash": hashlib.sha256(h["memory"]["content"].encode()).hexdigest(),
                 "tags": [], "memory_type": h["memory_type"],
                 "created_at": h["memory"]["recorded_time"],
                 "similarity_score": h["score"]} for h in found["hits"]]
    return {"memories": memories, "query": query, "total_results": len(memories)}


def tool_lists(manager: Any, settings: Any) -> dict[str, tuple[int, int, int]]:
    """(tools, bytes, tokens) of MCP's tools/list: before (every operation, its full
    description, namespace required) and after (this server's)."""
    import anyio
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from hello_memory.interfaces.catalogue import default_catalogue
    from hello_memory.interfaces.mcp import INSTRUCTIONS, build_server, tool_signature

    def listed(server: Any) -> list[dict[str, Any]]:
        async def go() -> list[dict[str, Any]]:
            async with Client(server) as c:
                return [t.model_dump(mode="json", exclude_none=True)
                        for t in (await c.list_tools()).tools]
        return anyio.run(go)

    old = MCPServer("hello-memory", instructions=INSTRUCTIONS)
    for op in default_catalogue().on("mcp"):
        def handle(**kwargs: Any) -> dict[str, Any]:
            return {}
        handle.__name__ = op.name_on("mcp")
        handle.__signature__ = tool_signature(op)  # type: ignore[attr-defined]
        old.add_tool(handle, name=op.name_on("mcp"), description=op.doc)
    out = {}
    for label, server in (("before", old), ("after", build_server(manager, settings, ["*"])),
                          ("after, one namespace granted",
                           build_server(manager, settings, ["alice"]))):
        tools = listed(server)
        out[label] = (len(tools), *size(tools))
    return out


def measure() -> dict[str, Any]:
    from hello_memory import MemoryManager, MemoryTool
    from hello_memory.config import load_settings
    from hello_memory.interfaces.catalogue import Call, default_catalogue
    from hello_memory.interfaces.tools.views import brief

    rows: dict[str, list[tuple[int, int]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(environ={}, data_dir=Path(tmp),
                                 semantic={"extractor": "rules"})
        with MemoryManager.open(settings) as mm:
            mm.add_many([{"content": c, "memory_type": t, "namespace": "alice"}
                         for c, t in MEMORIES])
            search = default_catalogue()["search"]
            tool = MemoryTool(mm, namespace="alice")
            for query in QUERIES:
                found = search.run(Call(mm, "alice", settings),
                                   search.parse({"query": query, "top_k": 5, "min_score": 0}))
                if len(found["hits"]) != 5:  # the engine found fewer: not a 5-hit recall
                    continue
                asked = {"action": "search", "query": query, "top_k": 5, "min_score": 0}
                new_tool = tool.run(asked)
                # the tool's answer before issue 29 is its detail form today
                old_tool = tool.run({**asked, "detail": True})
                assert len(new_tool["hits"]) == len(old_tool["hits"]) == 5, query
                for label, value in (
                        ("MCP recall, before (full hits)", found),
                        ("MCP recall, after (default)", brief(found)),
                        ("MemoryTool search, before (now `detail: true`)", old_tool),
                        ("MemoryTool search, after (default)", new_tool),
                        ("Mem0 search (documented fields)", mem0_shape(found)),
                        ("mcp-memory-service retrieve_memory (documented fields)",
                         mcp_memory_service_shape(found, query))):
                    rows.setdefault(label, []).append(size(value))
            assert len(rows["MCP recall, after (default)"]) >= 4, "too few 5-hit answers"
            lists = tool_lists(mm, settings)
    return {"recall": {k: (statistics.mean(b for b, _ in v), statistics.mean(t for _, t in v),
                           max(b for b, _ in v)) for k, v in rows.items()},
            "tools": lists, "answers": len(rows["MCP recall, after (default)"])}


def render(results: dict[str, Any]) -> str:
    lines = ["## What a model reads: recall and tool list sizes (issue 29)", "",
             "Produced by `python -m benchmarks.tool_output` (12 short memories; the "
             f"{results['answers']} of 8 queries answered with 5 hits, `top_k` 5, "
             "`min_score` 0; mean over them; bytes of the JSON without "
             "spaces, tokens by the offline counter). Peers: their documented result "
             "fields filled with the same hits, not measured on their servers (sources "
             "in the script's docstring).", "",
             "| recall of 5 hits | bytes (mean) | bytes (max) | tokens (mean) |",
             "| --- | ---: | ---: | ---: |"]
    for label, (b, t, most) in results["recall"].items():
        lines.append(f"| {label} | {b:,.0f} | {most:,} | {t:,.0f} |")
    lines += ["", "| MCP tools/list | tools | bytes | tokens |", "| --- | ---: | ---: | ---: |"]
    for label, (n, b, t) in results["tools"].items():
        lines.append(f"| {label} | {n} | {b:,} | {t:,} |")
    lines += ["", "The MemoryTool rows are the tool's own answers (`tool.run`, with `ok`, "
              "`action`, `namespace` and `text`). By default its `text` says how many hits "
              "there are (`5 memories: in hits, best first`) instead of rendering them a "
              "second time; `detail: true` gives the full hits and the rendering (the "
              "\"before\" rows)."]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=inspect.getdoc(__import__(__name__)))
    ap.add_argument("--md", type=Path, default=Path("BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    body = render(measure())
    print(body)
    if not args.no_write:
        write_section(args.md, "tool-output", body)


if __name__ == "__main__":
    main()
