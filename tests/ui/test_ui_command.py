"""`hello-memory ui`: the dashboard for a local data directory on 127.0.0.1, no key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from .conftest import free_port

pytestmark = pytest.mark.slow


def test_ui_command_serves_the_dashboard_on_loopback_without_a_key(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hello_memory.interfaces.cli", "--data-dir", str(tmp_path / "d"),
         "ui", "--no-open", "--port", str(port)], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once it listens
        assert f"{base}/ui/" in line, line
        with httpx.Client(base_url=base, timeout=60, follow_redirects=True) as c:
            page = c.get("/ui/")
            assert page.status_code == 200 and str(page.url) == f"{base}/ui/"
            assert "no key (loopback)" in page.text
            assert c.get("/ui/timeline", params={"namespace": "anyone"}).status_code == 200
            assert c.get("/healthz").json()["status"] == "ok"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode == 0
