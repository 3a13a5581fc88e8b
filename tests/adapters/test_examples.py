"""Every adapter's example (examples/*.py) runs against the installed framework, offline,
on the embedded defaults, and prints what its docstring promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

EXPECTED = {
    "langgraph_store.py": ["-> Dana's cat is called Miso"],
    "langchain_retriever.py": ["retriever: Alice prefers green tea.",
                               "vector store: r router.md Hold the reset button"],
    "llamaindex_block.py": ["semantic: Alice is allergic to peanuts.",
                            "user: Which snacks can Alice eat?"],
    "openai_agents_session.py": ["tools: memory_add, memory_search",
                                 "searchable: I'm allergic to peanuts. (session chat-1)"],
    "pydantic_ai_toolset.py": ["memory_search", "semantic: Carol's daughter is called Mia."],
    "google_adk_memory.py": ["user ", "I'm vegetarian and I hate flying."],
    "autogen_memory.py": ["SystemMessage: Relevant memories",
                          "semantic: Alice is allergic to peanuts."],
}


# Examples that need no framework run in the main suite instead.
TESTED_ELSEWHERE = {"agent_loop.py": "tests/interfaces/test_papercuts.py"}


def test_every_example_is_checked() -> None:
    names = sorted(p.name for p in EXAMPLES.glob("*.py") if p.name not in TESTED_ELSEWHERE)
    assert names == sorted(EXPECTED)
    root = EXAMPLES.parent
    assert all(name in (root / test).read_text() for name, test in TESTED_ELSEWHERE.items())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LLM_", "HELLO_MEMORY"))}
    done = subprocess.run([sys.executable, str(EXAMPLES / name), str(tmp_path / "data")],
                          capture_output=True, text=True, timeout=280, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    for expected in EXPECTED[name]:
        assert expected in done.stdout, done.stdout
