"""The operation catalogue (issue 16): every operation is a REST route, an MCP tool and
a MemoryTool function with the same argument names and defaults; an operation added to
a catalogue (entry + handler, nothing else) is callable over all three; the REST routes
are ``async def`` on the app's AsyncMemoryManager, whose pool bounds them (issue 17)."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from asgi_client import AsgiApi  # tests/ is on sys.path
from fastapi.routing import APIRoute
from mcp import Client
from pydantic import BaseModel, ConfigDict, Field

from hello_memory.config import Settings
from hello_memory.interfaces.catalogue import Call, Operation, Rest, default_catalogue
from hello_memory.interfaces.mcp import build_server
from hello_memory.interfaces.rest import create_app
from hello_memory.interfaces.rest.routes import build_router
from hello_memory.interfaces.tools import MemoryTool
from hello_memory.interfaces.tools.views import HIT_OPERATIONS
from hello_memory.memory.manager import MemoryManager

from .conftest import make_settings

pytestmark = pytest.mark.slow  # the real embedding model (the manager fixture)
CATALOGUE = default_catalogue()
MISSING = object()


def _defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """Field -> its JSON-schema default (MISSING when it has none or null: the OpenAPI
    document leaves a null default out; required fields are compared apart)."""
    return {k: _default(v) for k, v in schema.get("properties", {}).items()}


def _default(schema: dict[str, Any]) -> Any:
    value = schema.get("default", MISSING)
    return MISSING if value is None else value


def _required(model: type[BaseModel]) -> set[str]:
    return set(model.model_json_schema().get("required", []))


def _model_defaults(model: type[BaseModel]) -> dict[str, Any]:
    return _defaults(model.model_json_schema())


def _resolve(schema: dict[str, Any], openapi: dict[str, Any]) -> dict[str, Any]:
    """A body schema itself: its ``$ref`` followed (an optional body: the one of
    ``anyOf`` that is not null)."""
    if "anyOf" in schema:
        schema = next(s for s in schema["anyOf"] if s.get("type") != "null")
    ref = schema.get("$ref")
    return openapi["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else schema


def _rest_arguments(openapi: dict[str, Any], op: Operation
                    ) -> tuple[dict[str, Any], set[str]]:
    """What REST takes for ``op``: query / path parameters and body fields with their
    defaults, and the required ones; ``namespace`` (REST's own) left out."""
    assert op.rest is not None
    spec = openapi["paths"]["/v1" + op.rest.path][op.rest.method.lower()]
    params = [p for p in spec.get("parameters", []) if p["name"] != "namespace"]
    out = {p["name"]: _default(p["schema"]) for p in params}
    required = {p["name"] for p in params if p.get("required")}
    content = spec.get("requestBody", {}).get("content", {})
    body = content.get("application/json") or content.get("multipart/form-data")
    if body is not None:
        schema = _resolve(body["schema"], openapi)
        out.update(_defaults(schema))
        required |= set(schema.get("required", []))
    return out, required


async def _mcp_tools(server: Any) -> dict[str, dict[str, Any]]:
    async with Client(server) as c:
        return {t.name: t.input_schema for t in (await c.list_tools()).tools}


def _tools(manager: MemoryManager) -> dict[str, dict[str, Any]]:
    """The agent tools' functions: the MemoryTool's (memories) and the RAGTool's
    (documents), by name."""
    from hello_memory.interfaces.tools.rag_access import build_rag
    from hello_memory.rag import RAGTool

    schemas = [*MemoryTool(manager, namespace="n").schemas(),
               *RAGTool(build_rag(manager), namespace="n").schemas()]
    return {s["function"]["name"]: s["function"] for s in schemas}


TOOL_PREFIX = {"memories": "memory_", "media": "memory_", "documents": "knowledge_base_"}


def _cli_commands() -> dict[str, Any]:
    """CLI command name -> its click command; a group's commands as ``group sub``."""
    from typer.main import get_command

    from hello_memory.interfaces.cli import app as cli_app

    out: dict[str, Any] = {}
    for name, cmd in get_command(cli_app).commands.items():  # type: ignore[attr-defined]
        out[name] = cmd
        for sub, subcmd in getattr(cmd, "commands", {}).items():
            out[f"{name} {sub}"] = subcmd
    return out


def test_every_interface_exposes_every_operation(manager: MemoryManager,
                                                 settings: Settings) -> None:
    openapi = create_app(settings, manager=manager).openapi()
    mcp_tools = anyio.run(_mcp_tools, build_server(manager, settings, ["*"]))
    tool = _tools(manager)
    commands = _cli_commands()
    for op in CATALOGUE:
        expected = _model_defaults(op.request)
        if op.on("rest"):
            assert _rest_arguments(openapi, op) == (expected, _required(op.request)), op.name
        # the media operations are offered only with perceptual memory on (issue 29):
        # off here; the hit operations add their own `detail` flag
        media_off = op.area == "media"
        interface_own = {"namespace"} | ({"detail"} if op.name in HIT_OPERATIONS else set())
        if op.on("mcp") and not media_off:
            schema = mcp_tools[op.name_on("mcp")]
            assert schema["required"][0] == "namespace"
            args = {k: v for k, v in _defaults(schema).items() if k not in interface_own}
            assert args == expected, op.name
            assert set(schema["required"][1:]) == _required(op.request), op.name
        else:
            assert op.name_on("mcp") not in mcp_tools
        name = TOOL_PREFIX.get(op.area, "?") + op.name_on("tool")
        if op.on("tool") and not media_off:
            params = tool[name]["parameters"]
            args = {k: v for k, v in _defaults(params).items() if k not in interface_own}
            assert args == expected, op.name
            assert set(params.get("required", [])) == _required(op.request), op.name
        else:
            assert name not in tool
        if op.cli is not None:  # the CLI command(s) print this operation's JSON
            tied = [c for n, c in commands.items() if n.split(" ")[0] == op.cli
                    and not getattr(c, "commands", None)]
            assert tied and all("as_json" in {p.name for p in c.params} for c in tied), op.cli
    # every tool function is an operation's
    assert len(tool) == len([op for op in CATALOGUE.on("tool") if op.area != "media"])
    # what an interface cannot carry is said, and stays a short list: a file download,
    # multipart uploads, a PNG answer, and the admin operations (whole-store, an
    # operator's)
    assert {op.name: sorted(op.not_on) for op in CATALOGUE if op.not_on} == {
        "export": ["mcp", "tool"], "ingest_upload": ["mcp", "tool"],
        "add_media_upload": ["mcp", "tool"], "search_media_file": ["mcp", "tool"],
        "media_thumbnail": ["mcp", "tool"],
        "list_jobs": ["mcp", "tool"], "run_job": ["mcp", "tool"],
        "list_namespaces": ["mcp", "tool"]}
    # the media operations are there (schemas and routes need no encoder)
    media = {op.name for op in CATALOGUE if op.area == "media"}
    assert media == {"add_media_upload", "add_media_path", "search_media",
                     "search_media_file", "media_thumbnail"}
    assert not {"add_media_path", "search_media"} & set(mcp_tools)  # perceptual off
    assert not {"memory_add_media_path", "memory_search_media"} & set(tool)
    assert all(reason for op in CATALOGUE for reason in op.not_on.values())
    # every route is async: they run through the AsyncMemoryManager
    names = {op.name for op in CATALOGUE.on("rest")}
    routes = [r for r in build_router(CATALOGUE).routes if isinstance(r, APIRoute)]
    assert {r.name for r in routes} == names
    assert all(inspect.iscoroutinefunction(r.endpoint) for r in routes)


# --- the media operations without perceptual memory: the 501 problem everywhere -------
MEDIA_CALLS = [
    ("POST", "/v1/media/path", {"json": {"path": "x.png", "modality": "image"}}),
    ("POST", "/v1/media/search", {"json": {"query": "a red square"}}),
    ("GET", "/v1/media/0123/thumbnail", {}),
    ("POST", "/v1/media", {"data": {"modality": "image"},
                           "files": {"file": ("a.png", b"\x89PNG....", "image/png")}}),
    ("POST", "/v1/media/search/file", {"data": {"modality": "audio"},
                                       "files": {"file": ("q.wav", b"RIFF....", "audio/wav")}}),
]


@pytest.mark.parametrize(("method", "path", "send"), MEDIA_CALLS,
                         ids=[f"{m} {p}" for m, p, _ in MEDIA_CALLS])
def test_media_routes_answer_501_without_perceptual_memory(
        manager: MemoryManager, tmp_path: Path, method: str, path: str,
        send: dict[str, Any]) -> None:
    """The media routes are generated like every other; on a server without perceptual
    memory each answers the 501 problem naming what to install and set, and an upload
    is not kept."""
    data = tmp_path / "data"
    settings = make_settings(data, api={"api_keys": {"k": ["u"]}})
    call = AsgiApi(create_app(settings, manager=manager),
                   headers={"Authorization": "Bearer k"})
    r = call(method, path, params={"namespace": "u"}, **send)
    assert r.status_code == 501, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["error"] == "PerceptualNotConfiguredError" and "perceptual" in body["detail"]
    assert not (data / "uploads").exists()  # nothing kept for a call bound to fail
    # a request the operation's model refuses is still a 422, before anything else
    if path == "/v1/media/search":
        bad = call("POST", path, params={"namespace": "u"},
                   json={"query": "x", "target_modality": "video"})
        assert bad.status_code == 422


def test_media_tools_are_not_offered_with_perceptual_memory_off(
        manager: MemoryManager, settings: Settings) -> None:
    """Issue 29: a model is not shown tools that cannot work (REST still answers the
    501 problem naming what to install, above)."""
    async def over_mcp() -> tuple[set[str], bool, str]:
        async with Client(build_server(manager, settings, ["u"])) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            r = await c.call_tool("search_media", {"namespace": "u", "query": "a cat"})
            return names, bool(r.is_error), str(getattr(r.content[0], "text", ""))

    names, is_error, said = anyio.run(over_mcp)
    media = {op.name_on("mcp") for op in CATALOGUE.on("mcp") if op.area == "media"}
    assert media and not media & names and "recall" in names
    assert is_error and "search_media" in said
    tool = MemoryTool(manager, namespace="u")
    assert not {f"memory_{op.name_on('tool')}" for op in CATALOGUE.on("tool")
                if op.area == "media"} & {s["function"]["name"] for s in tool.schemas()}
    out = tool.run({"action": "search_media", "query": "a cat"})
    assert out["ok"] is False and out["error"]["type"] == "InvalidInputError"


# --- a made-up operation: a catalogue entry and its handler, no other edit ------------
class Shout(BaseModel):
    model_config = ConfigDict(extra="forbid")
    word: str = Field(description="What to shout.")
    times: int = Field(2, ge=1, le=5, description="How often.")


def shout(call: Call, req: Shout) -> tuple[str, int]:
    return " ".join([req.word.upper()] * req.times), call.manager.stats(call.namespace)["total"]


SHOUT = Operation("shout", "Shout a word and count the namespace's memories.", Shout, shout,
                  lambda r: {"shout": r[0], "total": r[1]}, "read", Rest("POST", "/shout"))


def test_a_new_operation_is_callable_everywhere(manager: MemoryManager, tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data", api={"api_keys": {"k": ["alice"]}})
    catalogue = CATALOGUE.extended(SHOUT)
    manager.add("Alice keeps bees.", "semantic", namespace="alice")
    call = AsgiApi(create_app(settings, manager=manager, catalogue=catalogue),
                   headers={"Authorization": "Bearer k"})
    r = call("POST", "/v1/shout", params={"namespace": "alice"}, json={"word": "hi"})
    assert r.status_code == 200 and r.json() == {"shout": "HI HI", "total": 1}
    bad = call("POST", "/v1/shout", params={"namespace": "alice"},
               json={"word": "hi", "times": 9})
    assert bad.status_code == 422 and bad.json()["error"] == "RequestValidationError"
    denied = call("POST", "/v1/shout", params={"namespace": "bob"}, json={"word": "hi"})
    assert denied.status_code == 403  # REST's key check holds for the new route too

    async def over_mcp() -> tuple[Any, Any, Any]:
        async with Client(build_server(manager, settings, ["alice"], catalogue=catalogue)) as c:
            ok = await c.call_tool("shout", {"namespace": "alice", "word": "yo", "times": 3})
            over = await c.call_tool("shout", {"namespace": "alice", "word": "yo", "times": 9})
            other = await c.call_tool("shout", {"namespace": "bob", "word": "yo"})
            said = str(getattr(other.content[0], "text", ""))
            return ok.structured_content, over.is_error, (other.is_error, said)

    ok, over, other = anyio.run(over_mcp)
    assert ok == {"shout": "YO YO YO", "total": 1} and over is True
    assert other[0] and "not granted" in other[1]

    tool = MemoryTool(manager, namespace="alice", catalogue=catalogue)
    assert "memory_shout" in {s["function"]["name"] for s in tool.schemas()}
    out = tool.call("memory_shout", '{"word": "hey"}')
    assert out["ok"] and out["shout"] == "HEY HEY" and "HEY HEY" in out["text"]
    assert tool.run({"action": "shout", "word": "x", "times": 0})["ok"] is False
    # the default catalogue stays as it was
    assert "shout" not in CATALOGUE and "memory_shout" not in {
        s["function"]["name"] for s in MemoryTool(manager, namespace="alice").schemas()}


class Titles(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limit: int = Field(3, ge=1, le=10, description="How many titles.")


def titles(call: Call, req: Titles) -> list[str]:
    return [str(d.title) for d in call.rag().documents(call.namespace)][:req.limit]


TITLES = Operation("document_titles", "The titles of the namespace's documents.", Titles,
                   titles, lambda t: {"titles": t}, "read", Rest("GET", "/documents/titles"),
                   area="documents")


def test_a_new_document_operation_reaches_the_rag_tool(manager: MemoryManager,
                                                       tmp_path: Path) -> None:
    """A document operation (entry + handler) is a REST route, an MCP tool and a
    RAGTool action, on the interface's one pipeline."""
    from hello_memory.interfaces.tools.rag_access import build_rag
    from hello_memory.rag import RAGTool

    settings = make_settings(tmp_path / "data", api={"api_keys": {"k": ["kb"]}})
    catalogue = CATALOGUE.extended(TITLES)
    app = create_app(settings, manager=manager, catalogue=catalogue)
    call = AsgiApi(app, headers={"Authorization": "Bearer k"})
    added = call("POST", "/v1/documents/text", params={"namespace": "kb"},
                 json={"text": "# Bees\n\nAlice keeps bees.", "source": "bees"})
    assert added.status_code == 201
    r = call("GET", "/v1/documents/titles", params={"namespace": "kb", "limit": 1})
    assert r.status_code == 200 and r.json() == {"titles": ["Bees"]}
    assert app.state.rag is not None  # the app's one pipeline, built by the first call

    async def over_mcp() -> Any:
        async with Client(build_server(manager, settings, ["kb"], catalogue=catalogue)) as c:
            return (await c.call_tool("document_titles", {"namespace": "kb"})
                    ).structured_content

    assert anyio.run(over_mcp) == {"titles": ["Bees"]}
    tool = RAGTool(build_rag(manager), namespace="kb", catalogue=catalogue)
    assert tool.run("document_titles") == {"ok": True, "result": {"titles": ["Bees"]}}
    assert not tool.run("document_titles", limit=99)["ok"]  # the model's bounds hold
    assert "document_titles" not in RAGTool(build_rag(manager), namespace="kb").actions


def test_routes_share_the_bounded_pool_and_the_lifespan_closes_it(
        manager: MemoryManager, tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data", api={"api_keys": {"k": ["*"]}})
    running, peak, lock = 0, 0, threading.Lock()
    full = threading.Event()

    def wait(call: Call, req: BaseModel) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
            if running == 2:
                full.set()
        full.wait(timeout=30)
        with lock:
            running -= 1
        return peak

    class NoArgs(BaseModel):
        model_config = ConfigDict(extra="forbid")

    op = Operation("wait", "Wait for a second caller.", NoArgs, wait,
                   lambda n: {"peak": n}, "read", Rest("GET", "/wait"))
    app = create_app(settings, manager=manager, catalogue=CATALOGUE.extended(op),
                     max_workers=2)

    async def main() -> list[int]:
        async with app.router.lifespan_context(app):
            amm = app.state.amm
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test",
                                         headers={"Authorization": "Bearer k"}) as c:
                rs = await asyncio.gather(*(c.get("/v1/wait", params={"namespace": "n"})
                                            for _ in range(6)))
        assert app.state.amm is None  # the lifespan closed its facade's pool
        with pytest.raises(RuntimeError, match="closed"):
            await amm.stats("n")
        return [r.status_code for r in rs]

    assert asyncio.run(main()) == [200] * 6
    assert peak == 2  # never more than max_workers operations at once
    assert manager.stats("n")["total"] == 0  # a given manager stays open (the caller's)


# --- the CLI's --json is the operation's JSON, as REST answers it -----------------------
CLI_ENV = {"HELLO_MEMORY__SEMANTIC__EXTRACTOR": "rules", "HELLO_MEMORY_CONFIG": ""}
# what two runs of the same call may differ in: the time taken, the access a search
# records on each hit (REST's search runs before the CLI's calls), and recency (the
# clock) moving the scores in the last places
TIMING = {"seconds"}
ACCESS = {"access_count", "last_access"}


def _same(a: Any, b: Any, where: str = "") -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        assert set(a) == set(b), where
        for key in set(a) - TIMING - ACCESS:
            _same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-3, abs=1e-4), where
    else:
        assert a == b, where


def test_cli_json_is_the_rest_json(embedder: Any, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hello_memory.interfaces.cli import app as cli_app

    from .conftest import make_manager

    data, docs = tmp_path / "d", tmp_path / "docs"
    docs.mkdir()
    (docs / "wifi.md").write_text("# Wifi\n\nThe guest wifi password is sunflower-42.\n")
    fact = "Frank keeps his spare keys under the blue pot."

    def cli(*args: str) -> Any:
        result = CliRunner().invoke(cli_app, ["--data-dir", str(data), *args], env=CLI_ENV)
        assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
        return json.loads(result.stdout)

    mid = cli("add", fact, "--type", "semantic", "-n", "frank", "--json")["id"]
    cli("ingest", str(docs), "-n", "kb", "--json")
    # the same calls over REST, on the same data directory (the CLI has closed it)
    settings = make_settings(data, api={"api_keys": {"k": ["*"]}, "read_dirs": [str(docs)]})
    mm = make_manager(settings, embedder)
    try:
        api = AsgiApi(create_app(settings, manager=mm), headers={"Authorization": "Bearer k"})
        frank, kb = {"namespace": "frank"}, {"namespace": "kb"}
        rest = {
            "add": api("POST", "/v1/memories", params=frank,
                       json={"content": fact, "memory_type": "semantic"}),
            "stats": api("GET", "/v1/stats", params=frank),
            "forget": api("POST", "/v1/forget", params=frank,
                          json={"ids": [mid], "dry_run": True}),
            "ingest": api("POST", "/v1/documents/paths", params=kb,
                          json={"paths": [str(docs)]}),
            "search": api("POST", "/v1/search", params=frank, json={"query": "spare keys"})}
    finally:
        mm.close()
    assert all(r.status_code in (200, 201) for r in rest.values())
    got = {"add": cli("add", fact, "--type", "semantic", "-n", "frank", "--json"),
           "stats": cli("stats", "-n", "frank", "--json"),
           "forget": cli("forget", mid, "-n", "frank", "--dry-run", "--json"),
           "ingest": cli("ingest", str(docs), "-n", "kb", "--json"),
           "search": cli("search", "spare keys", "-n", "frank", "--json")}
    for name, response in rest.items():
        _same(got[name], response.json(), name)
    # and they say something: a repeated add, one hit, a dry run, an unchanged file
    assert got["add"]["duplicate_of"] == mid and got["search"]["hits"][0]["id"] == mid
    assert got["forget"]["ids"] == [mid] and got["ingest"]["skipped"] == 1
