"""`hello-memory serve` on a data directory another process holds: one line, exit 4
(issue 14), not a traceback out of the ASGI lifespan."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hello_memory.config import load_settings
from hello_memory.memory.manager import MemoryManager

from .conftest import free_port

pytestmark = pytest.mark.slow


def test_serve_on_a_held_directory_is_one_line_and_exit_4(tmp_path: Path, embedder) -> None:
    data = tmp_path / "d"
    env = {**os.environ, "HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules", "HELLO_MEMORY_CONFIG": ""}
    exe = shutil.which("hello-memory", path=str(Path(sys.executable).parent))
    assert exe is not None
    with MemoryManager.open(load_settings(environ={}, data_dir=data), embedder=embedder):
        out = subprocess.run([exe, "--data-dir", str(data), "serve", "--port",
                              str(free_port())], env=env, capture_output=True, text=True,
                             timeout=120)
    assert out.returncode == 4, (out.stdout, out.stderr)
    lines = [line for line in out.stderr.splitlines() if line.strip()
             and not line.startswith("Opening stores")]
    assert len(lines) == 1 and lines[0].startswith("error:"), out.stderr
    assert "Traceback" not in out.stderr
