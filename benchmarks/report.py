"""BENCHMARKS.md is shared by several scripts: each owns one marked section."""

from __future__ import annotations

import re
from pathlib import Path

HEADER = ("# Benchmarks\n\nEvery number here is written by a script in `benchmarks/`; "
          "each section says which command produced it.\n")


def write_section(path: Path, name: str, body: str) -> None:
    """Replace (or append) the section ``name`` of ``path``, leaving the others."""
    start, end = f"<!-- section:{name} -->", f"<!-- /section:{name} -->"
    block = f"{start}\n{body.strip()}\n{end}\n"
    text = path.read_text(encoding="utf-8") if path.exists() else HEADER
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end) + r"\n?", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else (
        text.rstrip("\n") + "\n\n" + block)
    path.write_text(text, encoding="utf-8")
