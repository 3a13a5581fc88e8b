"""The docs' adapter example (docs/ADAPTERS.md; the README's until issue 29) runs as
written (data path moved into tmp_path)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_readme_adapter_example(tmp_path: Path) -> None:
    blocks = [b for page in PAGES
              for b in re.findall(r"```py\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
              if "hello_memory.interfaces.adapters" in b]
    assert len(blocks) == 1
    out = subprocess.run([sys.executable, "-c", blocks[0].replace("/tmp/", f"{tmp_path}/")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=280)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines() == ["Alice prefers green tea.", "Alice prefers green tea."]
