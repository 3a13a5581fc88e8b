"""The README's Python examples, and those of the site pages they moved to (issue 29),
run as written (data paths moved into tmp_path)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Pages whose ```python blocks are whole programs. The other pages (ADAPTERS,
# RETRIEVAL, RELIABILITY, ...) show fragments in ```python blocks; a whole program that needs an LLM
# or an extra is fenced ```py and has a test of its own (test_agent_loop.py,
# tests/adapters/test_readme_adapters.py).
PAGES = ["README.md", "docs/QUICKSTART.md", "docs/MEMORY.md", "docs/AGENT_TOOL.md",
         "docs/EMBEDDINGS.md", "docs/RAG.md", "docs/OBSERVABILITY.md"]


def _blocks() -> dict[str, str]:
    found: dict[str, str] = {}
    for page in PAGES:
        text = (REPO / page).read_text(encoding="utf-8")
        for i, block in enumerate(re.findall(r"```python\n(.*?)```", text, re.S)):
            if block not in found.values():  # the README's quickstart is also the site's
                found[f"{page}:{i}"] = block
    return found


BLOCKS = _blocks()

pytestmark = pytest.mark.slow


def test_readme_and_pages_have_examples() -> None:
    pages = {name.split(":")[0] for name in BLOCKS}
    assert pages == set(PAGES)
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("block", list(BLOCKS.values()), ids=list(BLOCKS))
def test_readme_example_runs(block: str, tmp_path: Path) -> None:
    code = block.replace("/tmp/", f"{tmp_path}/")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip(), "an example should print its result"
