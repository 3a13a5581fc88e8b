"""The REST example of the docs (issue 26: the curl examples answer from memory they just
stored; docs/REST.md since the README moved to the site, issue 29): its ``serve`` line
starts a real server, and its curl lines, run as written against it, store Alice's tea,
find it first and put it in the context block."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from .conftest import free_port

pytestmark = pytest.mark.slow
REST_PAGE = Path(__file__).resolve().parents[2] / "docs" / "REST.md"


def rest_block() -> list[str]:
    text = REST_PAGE.read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)  # the page's first bash block
    assert block is not None
    return block.group(1).replace("\\\n", " ").splitlines()


def test_the_readme_curl_lines_answer_from_what_they_stored(tmp_path: Path) -> None:
    lines = rest_block()
    serve = next(line for line in lines if line.rstrip().endswith("hello-memory serve"))
    curls = [line for line in lines if line.startswith("curl ")]
    assert len(curls) == 3
    env_part = serve.split(" hello-memory serve")[0]
    name, value = env_part.split("=", 1)
    port = free_port()
    env = {**os.environ, name: shlex.split(value)[0], "HELLO_MEMORY_CONFIG": "",
           "HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules"}
    server = subprocess.Popen(
        [sys.executable, "-m", "hello_memory.interfaces.cli", "--data-dir", str(tmp_path / "data"),
         "serve", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            assert time.monotonic() < deadline, "serve did not answer /healthz"
            time.sleep(0.3)
        out = []
        for line in curls:
            cmd = shlex.split(line.replace("localhost:8765", f"127.0.0.1:{port}"))
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            out.append(json.loads(done.stdout))
        stored, found, context = out
        assert found["hits"][0]["id"] == stored["id"]
        assert f"[{stored['id'][:8]}]" in context["context"] and "green tea" in context["context"]
    finally:
        server.terminate()
        server.wait(timeout=60)
