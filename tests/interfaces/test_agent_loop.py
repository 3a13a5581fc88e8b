"""The docs' agent loop (the ``py`` block that uses MemoryTool with an LLM; in
docs/AGENT_TOOL.md since the README moved to the site, issue 29) runs as written, twice,
in two processes, against the scripted LLM server: what the first run stores, the second
run recalls into its prompt.

The block is fenced ``py``, not ``python``, because it needs an LLM endpoint; the
generic README test runs only the self-contained ``python`` blocks.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from llm.scripted_server import ScriptedLLMServer

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def agent_block() -> str:
    blocks = [b for page in PAGES
              for b in re.findall(r"```py\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
              if "MemoryTool(" in b and "complete_json" in b]
    assert len(blocks) == 1, "the README and the docs hold one agent-loop example"
    return blocks[0]


def run_agent(code: str, server: ScriptedLLMServer, text: str, cwd: Path) -> str:
    env = {**os.environ, "LLM_BASE_URL": server.base_url, "LLM_MODEL": "scripted",
           "HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules", "HELLO_MEMORY_CONFIG": ""}
    out = subprocess.run([sys.executable, "-c", code, text], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip()


def test_agent_stores_and_recalls_across_two_runs(tmp_path: Path) -> None:
    code = agent_block().replace("/tmp/", f"{tmp_path}/")
    with ScriptedLLMServer() as server:
        server.reply(json.dumps({"reply": "Noted, no peanuts for you.",
                                 "remember": ["The user is allergic to peanuts."]}))
        first = run_agent(code, server, "Hi! I'm allergic to peanuts.", tmp_path)
        assert first == "Noted, no peanuts for you."
        # a first run knows only the turn it just recorded (working memory)
        assert " semantic:" not in server.requests[-1].body["messages"][0]["content"]

        server.reply(json.dumps({"reply": "Try apple slices.", "remember": []}))
        second = run_agent(code, server, "Which snacks are safe for my allergy?", tmp_path)
        assert second == "Try apple slices."
        system = server.requests[-1].body["messages"][0]["content"]
        # recalled from the first process's long-term memory, with its short handle
        assert "The user is allergic to peanuts." in system
        assert re.search(r"\[[0-9a-f-]{8}\] \d{4}-\d{2}-\d{2} semantic: ", system)
        assert server.unscripted == 0 and len(server.requests) == 2


def test_agent_block_without_an_llm_names_the_variables(tmp_path: Path) -> None:
    """Run with no LLM variables, the block stops before opening anything and says which
    variables to set and where the loop runs without an LLM (issue 29)."""
    code = agent_block().replace("/tmp/", f"{tmp_path}/")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    out = subprocess.run([sys.executable, "-c", code, "Hi!"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and out.stdout == ""
    said = out.stderr.strip()
    assert said.startswith("set LLM_BASE_URL and LLM_MODEL"), said
    assert "LLM_API_KEY" in said and "examples/agent_loop.py" in said
    assert not (tmp_path / "hm-agent").exists()  # nothing was opened or written
