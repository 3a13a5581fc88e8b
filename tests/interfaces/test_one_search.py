"""One recall engine where users meet it: the same question through Python, REST, MCP,
``MemoryTool`` and the CLI returns the same memories in the same order (issue 13)."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest
from asgi_client import AsgiApi  # tests/ is on sys.path
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from hello_memory.config import load_settings
from hello_memory.interfaces.cli import app as cli_app
from hello_memory.interfaces.rest import create_app
from hello_memory.interfaces.tools import MemoryTool
from hello_memory.memory.manager import MemoryManager

pytestmark = pytest.mark.slow
NS = "family"
ENV = {"HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules", "HELLO_MEMORY_CONFIG": ""}
WHEN = datetime(2026, 11, 20, 18, 0, tzinfo=timezone.utc)
MEMORIES = [
    ("The user's name is Sofia Chen.", "semantic", None),
    ("The user reports to Raj Patel, who leads the design team.", "semantic", None),
    ("Tom's boss at the harbour office is Ingrid Dahl.", "semantic", None),
    ("The user is allergic to peanuts.", "semantic", None),
    ("Tom plays the cello in a community orchestra.", "semantic", None),
    ("Mia's teacher is Mr. Okafor.", "semantic", None),
    ("Sofia presented the warehouse app redesign to the board.", "episodic", WHEN),
    ("Tom and the user had dinner at a Georgian restaurant.", "episodic",
     WHEN - timedelta(days=3)),
    ("The user renewed her passport at the consulate.", "episodic", WHEN - timedelta(days=40)),
]
QUERIES = ["Who is my manager?", "What instrument does Tom play?",
           "What did I do at work?", "What am I allergic to?"]


def _settings(data: Path) -> Any:
    return load_settings(environ=ENV, data_dir=data,
                         api={"api_keys": {"k": ["*"]}})


def test_same_ids_in_the_same_order_everywhere(tmp_path: Path, embedder: Any) -> None:
    data = tmp_path / "data"
    settings = _settings(data)
    results: dict[str, dict[str, list[str]]] = {}
    with MemoryManager.open(settings, embedder=embedder) as mm:
        mm.add_many([{"content": c, "memory_type": t, "namespace": NS, "importance": 0.5,
                      **({"event_time": w} if w else {})} for c, t, w in MEMORIES])
        results["python"] = {q: [h.id for h in mm.search(q, top_k=5, namespace=NS)]
                             for q in QUERIES}
        tool = MemoryTool(mm, namespace=NS)
        results["tool"] = {q: [h["id"] for h in tool.search(q, top_k=5)["hits"]]
                           for q in QUERIES}
        api = AsgiApi(create_app(settings, manager=mm), headers={"Authorization": "Bearer k"})
        results["rest"] = {}
        for q in QUERIES:
            r = api("POST", "/v1/search", params={"namespace": NS},
                    json={"query": q, "top_k": 5})
            assert r.status_code == 200, r.text
            assert r.json()["recipe"] == "hybrid"
            results["rest"][q] = [h["id"] for h in r.json()["hits"]]
    # The CLI and the MCP server open the data directory themselves, as a user's would.
    results["cli"] = {}
    for q in QUERIES:
        out = CliRunner().invoke(cli_app, ["--data-dir", str(data), "search", q, "-n", NS,
                                           "--top-k", "5", "--json"], env=ENV)
        assert out.exit_code == 0, (out.stdout, out.stderr)
        found = json.loads(out.stdout)  # the search JSON of POST /v1/search
        assert found["recipe"] == "hybrid"
        results["cli"][q] = [h["id"] for h in found["hits"]]

    async def recall() -> dict[str, list[str]]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "hello_memory.interfaces.cli", "--data-dir", str(data), "mcp",
                  "--namespace", NS],
            env=ENV)
        out: dict[str, list[str]] = {}
        async with Client(params, read_timeout_seconds=180) as c:
            for q in QUERIES:
                res = await c.call_tool("recall", {"namespace": NS, "query": q, "top_k": 5})
                out[q] = [h["id"] for h in res.structured_content["hits"]]
        return out

    results["mcp"] = anyio.run(recall)
    expected = results["python"]
    assert all(expected[q] for q in QUERIES)
    for interface, got in results.items():
        assert got == expected, f"{interface} ranks differently from Python"
