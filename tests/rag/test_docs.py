"""docs/RAG.md's Python example runs as written (data paths moved into tmp_path)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "RAG.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_doc_example_runs(block: str, tmp_path: Path) -> None:
    code = block.replace("/tmp/", f"{tmp_path}/")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "router.md > Router manual > Reset" in out.stdout
    assert "1 files, 2 chunks, failed: []" in out.stdout
