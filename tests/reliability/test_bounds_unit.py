"""The pieces behind issue 19's guarantees, in-process and fast: the Host rule, upload
names, metadata walked without recursion, the zip check, bounded entity analysis."""

from __future__ import annotations

import io
import math
import zipfile

import pytest

from hello_memory.errors import InvalidInputError, PayloadTooLargeError
from hello_memory.interfaces.rest.security import host_allowed, safe_upload_name
from hello_memory.rag.errors import DocumentReadError
from hello_memory.rag.safe_parse import ParseLimits, check_zip
from hello_memory.text.entities import RuleExtractor
from hello_memory.validation import (
    normalized_length,
    validate_content,
    validate_metadata,
    validate_query,
)


@pytest.mark.parametrize(("host", "server", "allowed", "ok"), [
    ("127.0.0.1:8765", "127.0.0.1", [], True),
    ("localhost:8765", "127.0.0.1", [], True),
    ("[::1]:8765", "::1", [], True),
    ("localhost", "172.18.0.3", [], True),  # a port Docker publishes
    ("10.0.0.5:8765", "10.0.0.5", [], True),  # bound to 0.0.0.0: the address used
    ("memory.example.org", "10.0.0.5", ["memory.example.org"], True),
    ("MEMORY.example.org:443", "10.0.0.5", ["memory.example.org"], True),
    ("anything.example", "127.0.0.1", ["*"], True),
    ("evil.example", "127.0.0.1", [], False),
    ("evil.example:8765", "127.0.0.1", ["memory.example.org"], False),
    ("localhost.evil.example", "127.0.0.1", [], False),
    ("127.0.0.1.nip.io", "127.0.0.1", [], False),
    (None, "127.0.0.1", [], True),  # HTTP/1.0 without Host: no browser sends that
])
def test_host_rule(host: str | None, server: str, allowed: list[str], ok: bool) -> None:
    assert host_allowed(host, server, allowed) is ok


@pytest.mark.parametrize(("given", "kept"), [
    ("会议记录.md", "upload.md"),
    ("report.PDF", "report.pdf"),
    ("../../etc/passwd", "passwd"),
    ("C:\\Users\\me\\notes.txt", "notes.txt"),
    ("a\x00b.docx", "a_b.docx"),
    (None, "upload"),
    ("", "upload"),
])
def test_upload_names(given: str | None, kept: str) -> None:
    assert safe_upload_name(given) == kept


def test_upload_names_fit_the_file_system() -> None:
    name = safe_upload_name("é" * 200 + "x" * 300 + ".markdown")
    assert name.endswith(".markdown") and len(name.encode()) <= 120


def test_metadata_is_walked_without_recursion() -> None:
    deep: dict[str, object] = {}
    node = deep
    for _ in range(100_000):
        child: dict[str, object] = {}
        node["a"] = child
        node = child
    with pytest.raises(InvalidInputError, match="nested more than"):
        validate_metadata(deep)
    for bad in ({"n": math.nan}, {"n": [1, math.inf]}, {"\ud800": 1}, {"k": "\udc80"},
                {"k": object()}):
        with pytest.raises(InvalidInputError):
            validate_metadata(bad)
    with pytest.raises(PayloadTooLargeError):
        validate_metadata({"blob": "x" * 100_000})
    assert validate_metadata({"ok": [1, 2.5, None, True, {"b": "ü"}], 3: "int key"})


def test_lengths_are_counted_after_nfkc() -> None:
    assert normalized_length("\ufdfa") == 18
    with pytest.raises(PayloadTooLargeError, match="NFKC"):
        validate_query("\ufdfa" * 600)  # 600 characters, 10,800 after NFKC
    with pytest.raises(PayloadTooLargeError):
        validate_content("\ufdfa" * 60_000)
    assert validate_query("x" * 10_000)


def test_zip_check_refuses_bombs_from_the_directory_alone() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", b" " * (20 * 1_048_576))
    with pytest.raises(DocumentReadError, match="zip bomb"):
        check_zip("b.docx", buf.getvalue(), ParseLimits())
    with pytest.raises(DocumentReadError, match="inflate to"):
        check_zip("b.docx", buf.getvalue(), ParseLimits(max_expanded_bytes=1_048_576))
    check_zip("b.docx", buf.getvalue(), ParseLimits(max_ratio=10_000))  # allowed then


def test_entity_analysis_reads_a_bounded_prefix() -> None:
    text = "Ada Lovelace met Charles Babbage in London. " + "filler words here. " * 50_000
    text += "Grace Hopper lived in Arlington."
    names = {e.name for e in RuleExtractor(2_000).extract(text, "ns").entities}
    assert "Ada Lovelace" in names and not any("Grace" in n for n in names)


def test_an_unexpected_error_is_a_problem_that_stays_inside_the_app(tmp_path: object) -> None:
    """A bug in a route answers a problem+json 500 from inside the app, so the server
    never sees the exception and keeps the client's connection open."""
    import asyncio

    import httpx

    from hello_memory.config import load_settings
    from hello_memory.interfaces.rest.app import create_app

    app = create_app(load_settings(environ={}, data_dir=str(tmp_path),
                                   api={"auth_disabled": True}))

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("a bug")

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)  # raises what escapes the app
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            return await c.get("/boom")

    r = asyncio.run(go())
    assert r.status_code == 500 and r.headers["content-type"] == "application/problem+json"
    assert r.json()["error"] == "RuntimeError" and "a bug" not in r.text
