"""``hello-memory mcp`` over stdio, driven by the ``mcp`` package's own client."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.slow


def server(data_dir: Path, *args: str, env: dict[str, str] | None = None
           ) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "hello_memory.interfaces.cli", "--data-dir", str(data_dir), "mcp", *args],
        env={"HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules", **(env or {})})


def test_tools_over_stdio(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "wifi.md").write_text("# Wifi\n\nThe guest wifi password is sunflower-42.\n")
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nThe vault code is 1234.\n")
    results: dict[str, Any] = {}

    async def session() -> None:
        params = server(tmp_path / "d", "--namespace", "alice", "--namespace", "team/*",
                        env={"HELLO_MEMORY__API__READ_DIRS": json.dumps([str(docs)]),
                             "HELLO_MEMORY__API__MAX_REQUEST_BYTES": "65536"})
        async with Client(params, read_timeout_seconds=180) as c:
            results["tools"] = sorted(t.name for t in (await c.list_tools()).tools)
            added = await c.call_tool("remember", {
                "namespace": "alice", "content": "Alice is vegetarian.",
                "memory_type": "semantic"})
            mid = added.structured_content["id"]
            recalled = await c.call_tool("recall", {"namespace": "alice",
                                                     "query": "what does Alice eat?"})
            results["recall"] = (mid, recalled.structured_content["hits"])
            results["forget"] = (await c.call_tool("forget", {
                "namespace": "alice", "ids": [mid]})).structured_content
            after = await c.call_tool("recall", {"namespace": "alice",
                                                 "query": "what does Alice eat?"})
            results["after_forget"] = after.structured_content["hits"]
            results["restore"] = (await c.call_tool("restore", {
                "namespace": "alice", "ids": [mid]})).structured_content
            denied = await c.call_tool("recall", {"namespace": "bob", "query": "anything"})
            results["denied"] = (denied.is_error, denied.content[0].text)
            bad = await c.call_tool("remember", {"namespace": "alice", "content": "  "})
            results["bad"] = (bad.is_error, bad.content[0].text)
            huge = await c.call_tool("remember", {"namespace": "alice", "content": "x" * 70_000})
            results["huge"] = (huge.is_error, huge.content[0].text)
            outside = await c.call_tool("ingest", {"namespace": "team/it",
                                                   "paths": [str(secret)]})
            results["outside"] = (outside.is_error, outside.content[0].text)
            ing = await c.call_tool("ingest", {"namespace": "team/it", "paths": [str(docs)]})
            results["ingest"] = ing.structured_content
            ans = await c.call_tool("ask", {"namespace": "team/it",
                                            "question": "What is the guest wifi password?"})
            results["ask"] = ans.structured_content
            text = await c.call_tool("ingest_text", {"namespace": "team/it", "source": "desk",
                                                     "text": "The printer is on floor 3."})
            found = await c.call_tool("search_documents", {"namespace": "team/it",
                                                           "query": "printer", "top_k": 1})
            results["text"] = (text.structured_content, found.structured_content["hits"])

    anyio.run(session)
    # one tool per catalogue operation MCP carries (tests/interfaces/test_catalogue.py),
    # documents' included
    # (the media tools only with perceptual memory on: off here, issue 29)
    assert results["tools"] == ["add_batch", "ask", "clear",
                                "clear_documents", "consolidate",
                                "context", "delete_document", "document_stats", "forget",
                                "get_memory", "ingest", "ingest_text", "recall", "remember",
                                "remove", "restore", "search_documents", "stats",
                                "summary",
                                "update"]
    mid, hits = results["recall"]
    assert hits[0]["id"] == mid and hits[0]["text"] == "Alice is vegetarian."
    assert set(hits[0]) == {"id", "text", "date", "type", "score"}  # brief by default
    # the REST API's forget answer (issue 16: one serialiser per result)
    assert results["forget"] == {"strategy": "ids", "namespace": "alice", "ids": [mid],
                                 "count": 1, "dry_run": False, "hard": False}
    assert results["after_forget"] == []
    assert results["restore"] == {"restored": 1}
    assert results["denied"][0] and "not granted" in results["denied"][1]
    assert results["bad"][0] and "EmptyContentError" in results["bad"][1]
    assert results["huge"][0] and "PayloadTooLargeError" in results["huge"][1]
    assert results["outside"][0] and "outside api.read_dirs" in results["outside"][1]
    assert results["ingest"]["files"] == 1
    assert "sunflower-42" in results["ask"]["text"]
    added, found = results["text"]
    assert found[0]["document_id"] == added["document_id"] and found[0]["name"] == "desk"


def test_refuses_to_start_without_namespaces(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "hello_memory.interfaces.cli", "--data-dir",
                          str(tmp_path), "mcp"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "HELLO_MEMORY_API_KEY": ""}, stdin=subprocess.DEVNULL)
    assert out.returncode == 2 and "--namespace" in out.stderr
    assert out.stdout == "" and "Traceback" not in out.stderr


def test_streamable_http_on_loopback(tmp_path: Path) -> None:
    from .conftest import free_port

    port = free_port()
    env = {**os.environ, "HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules"}
    base = [sys.executable, "-m", "hello_memory.interfaces.cli", "--data-dir", str(tmp_path), "mcp",
            "-n", "alice", "--http", "--port", str(port)]
    refused = subprocess.run([*base, "--host", "0.0.0.0"], env=env, capture_output=True,
                             text=True, timeout=120)
    assert refused.returncode == 2 and "loopback" in refused.stderr
    proc = subprocess.Popen(base, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    results: dict[str, Any] = {}

    async def session() -> None:
        async with Client(f"http://127.0.0.1:{port}/mcp") as c:
            added = await c.call_tool("remember", {
                "namespace": "alice", "content": "Alice's locker is number 12."})
            got = await c.call_tool("get_memory", {
                "namespace": "alice", "memory_id": added.structured_content["id"]})
            results["content"] = got.structured_content["content"]

    deadline = time.monotonic() + 240
    while True:  # until the server listens (it loads the model first)
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the MCP HTTP server did not start"
        time.sleep(0.5)
    try:
        anyio.run(session)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert results["content"] == "Alice's locker is number 12."
