"""The figures of docs/RELIABILITY.md "Hostile input": time and server RSS growth of
the issue-19 cases against a live ``hello-memory serve`` (spaCy extraction on).

    .venv/bin/python -m benchmarks.hostile_bounds            # prints a Markdown table

Each row: the HTTP status, the wall time of the request, and how much the server
process's resident memory grew during it (VmRSS before and after; document parsing
runs in a worker process, whose memory is capped separately by RLIMIT_AS).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.reliability import hostile_files as hf
from tests.reliability.live_server import LiveServer

NS = {"namespace": "bench"}
MB = 1_048_576


def _cases() -> list[tuple[str, Callable[[httpx.Client], httpx.Response]]]:
    def upload(name: str, make: Callable[[], bytes], mime: str
               ) -> Callable[[httpx.Client], httpx.Response]:
        data = make()
        return lambda c: c.post("/v1/documents", params=NS, files=[("files", (name, data, mime))])

    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    return [
        ("search, 984,000 characters (refused)",
         lambda c: c.post("/v1/search", params=NS, json={"query": "who " * 246_000})),
        ("search, 9,900 characters (allowed)",
         lambda c: c.post("/v1/search", params=NS,
                          json={"query": "Ada met Bob in Paris. " * 450})),
        ("semantic memory, 60,000 x U+FDFA (refused)",
         lambda c: c.post("/v1/memories", params=NS,
                          json={"content": "\ufdfa" * 60_000, "memory_type": "semantic"})),
        ("semantic memory, 93,000 characters (allowed)",
         lambda c: c.post("/v1/memories", params=NS,
                          json={"content": "Grace Hopper visited Boston. " * 3100,
                                "memory_type": "semantic"})),
        ("metadata 1,000 deep (refused)",
         lambda c: c.post("/v1/memories", params=NS, headers={"content-type":
                                                               "application/json"},
                          content='{"content": "x", "metadata": ' + '{"a":' * 1000 + "1"
                          + "}" * 1000 + "}")),
        ("DOCX zip bomb, 1 GB inflated (refused)",
         upload("bomb.docx", lambda: hf.docx_zip_bomb(1024), docx)),
        ("PDF flate bomb, 512 MB inflated (refused)",
         upload("bomb.pdf", lambda: hf.pdf_flate_bomb(512), "application/pdf")),
        ("PDF of 1,500 pages (refused)",
         upload("long.pdf", hf.many_page_pdf, "application/pdf")),
        ("ordinary DOCX (converted)", upload("ok.docx", hf.small_docx, docx)),
    ]


def main() -> int:
    rows: list[tuple[str, Any, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        server = LiveServer(Path(tmp) / "data")
        server.start()
        try:
            cases = _cases()
            with server.client() as c:
                c.post("/v1/memories", params=NS, json={"content": "Ada Lovelace wrote the "
                                                        "first program.", "memory_type":
                                                        "semantic"})
                c.post("/v1/search", params=NS, json={"query": "warm up"})
                for label, call in cases:
                    rss = server.rss_bytes()
                    started = time.monotonic()
                    r = call(c)
                    elapsed = time.monotonic() - started
                    rows.append((label, r.status_code, elapsed,
                                 (server.rss_bytes() - rss) / MB))
        finally:
            server.stop()
    print("| Case | Status | Time | Server RSS growth |")
    print("| --- | --- | --- | --- |")
    for label, status, elapsed, grown in rows:
        print(f"| {label} | {status} | {elapsed:.2f} s | {grown:+.0f} MB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
