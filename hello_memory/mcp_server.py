"""An MCP server (``hello-memory mcp``) built on the ``mcp`` package (``server`` extra):
one tool per operation of the catalogue (:mod:`hello_memory.catalogue`: ``remember``,
``recall``, ``get_memory``, ``forget``, ``restore``, ..., and over documents ``ingest``,
``ingest_text``, ``search_documents``, ``ask``, ..., and over images and audio
``add_media_path``, ``search_media``; the same arguments as the REST API and the agent
tools). A path ``ingest`` or ``add_media_path`` reads must lie under ``api.read_dirs``.

Every tool takes a ``namespace`` and checks it against the namespace patterns the
operator granted when starting the server (``--namespace PATTERN`` or the patterns of
an API key in ``api.api_keys``), with the REST API's rules: exact names, ``prefix/*``,
``*``. Runs over stdio (what desktop agents launch) or, optionally, streamable HTTP.

The module is named ``mcp_server`` so that it never shadows the ``mcp`` package.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import wraps
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Field

from hello_memory.api.security import namespace_allowed
from hello_memory.catalogue import Call, Catalogue, Operation, annotated, default_catalogue
from hello_memory.config import Settings
from hello_memory.errors import (
    ConfigError,
    HelloMemoryError,
    InvalidInputError,
    PayloadTooLargeError,
)
from hello_memory.tools.rag_access import build_rag
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

__all__ = ["build_server", "grants_for", "tool_signature"]

INSTRUCTIONS = (
    "Long-term memory. Call `recall` before answering questions about the user or past "
    "work, `remember` for facts, preferences and events worth keeping, `forget` for what "
    "is wrong or unwanted (it can be restored). Every call names a namespace."
)


def grants_for(settings: Settings, *, namespaces: Sequence[str] = (),
               api_key: str | None = None) -> list[str]:
    """The namespace patterns this server may use (never empty: fails closed)."""
    if api_key:
        patterns = settings.api.api_keys.get(api_key)
        if patterns is None:
            raise ConfigError("unknown API key for the MCP server (not in api.api_keys)")
        return list(patterns)
    if namespaces:
        return [require_namespace(n) for n in namespaces]
    if settings.api.auth_disabled:  # a stdio server only ever talks to its own parent
        return ["*"]
    raise ConfigError("the MCP server needs the namespaces it may use: --namespace PATTERN "
                      "(repeatable; e.g. alice or team/*) or --api-key KEY from api.api_keys")


def build_server(manager: MemoryManager, settings: Settings, grants: Sequence[str], *,
                 catalogue: Catalogue | None = None) -> Any:
    """An ``MCPServer`` (``mcp`` 2) whose tools act on ``manager``: one per operation of
    ``catalogue`` (default: every operation MCP carries), each taking ``namespace`` and
    the operation's request fields (the same names, types and defaults as REST and the
    tools); the document tools share one RAG pipeline, built on first use."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError as exc:
        raise ConfigError("the MCP server needs mcp>=2 (server extra): "
                          f"pip install 'hello-memory[server]' ({exc})") from exc
    if not grants:
        raise ConfigError("the MCP server was given no namespaces to serve")
    server = MCPServer("hello-memory", instructions=INSTRUCTIONS)
    rag: list[Any] = []  # the one pipeline, built on the first document call

    def check(namespace: str) -> str:
        ns = require_namespace(namespace)
        if not namespace_allowed(ns, grants):
            raise InvalidInputError(f"namespace {ns!r} is not granted to this server "
                                    f"(granted: {', '.join(grants)})")
        return ns

    lock = threading.Lock()

    def pipeline() -> Any:
        with lock:
            if not rag:
                rag.append(build_rag(manager, settings))
            return rag[0]

    limit = settings.api.max_request_bytes

    def tool(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        @wraps(fn)
        def run(*args: Any, **kwargs: Any) -> dict[str, Any]:
            try:
                # The REST API's body limit holds here too: a model cannot push a
                # 50 MB "memory" through the tool call.
                size = _payload_bytes([*args, *kwargs.values()])
                if size > limit:
                    raise PayloadTooLargeError(
                        f"tool arguments of {size} bytes exceed api.max_request_bytes "
                        f"({limit})")
                return fn(*args, **kwargs)
            except HelloMemoryError as exc:  # the model reads this and can correct itself
                raise ToolError(f"{type(exc).__name__}: {exc}") from exc
        server.add_tool(run, name=fn.__name__, description=(fn.__doc__ or "").strip())
        return fn

    def register(op: Operation) -> None:
        def handle(namespace: str, **arguments: Any) -> dict[str, Any]:
            ns = check(namespace)
            if op.scope == "admin" and "*" not in grants:
                raise InvalidInputError(f"{op.name} needs a server granted '*'")
            return op.run(Call(manager, ns, settings, documents=pipeline),
                          op.parse(arguments))

        handle.__name__ = op.name_on("mcp")
        handle.__doc__ = op.doc
        handle.__signature__ = tool_signature(op)  # type: ignore[attr-defined]
        tool(handle)

    for op in (catalogue or default_catalogue()).on("mcp"):
        register(op)

    return server


def _payload_bytes(values: Sequence[Any]) -> int:
    """UTF-8 size of the strings in a tool call's arguments (inside lists, objects and
    validated models too)."""
    total = 0
    for value in values:
        if isinstance(value, BaseModel):
            value = value.model_dump()
        if isinstance(value, str):
            total += len(value.encode("utf-8", "surrogatepass"))
        elif isinstance(value, (list, tuple)):
            total += _payload_bytes(value)
        elif isinstance(value, Mapping):
            total += _payload_bytes([*value.keys(), *value.values()])
    return total


def tool_signature(op: Operation) -> inspect.Signature:
    """``namespace`` and the operation's request fields, as MCP reads a tool's
    arguments (their JSON schema: the request model's types, bounds, defaults and
    descriptions)."""
    params = [inspect.Parameter("namespace", inspect.Parameter.KEYWORD_ONLY,
                                annotation=Annotated[str, Field(description=(
                                    "The namespace to act in (granted to this server)."))])]
    for name, info in op.request.model_fields.items():
        annotation = annotated(info, Field(description=info.description))
        default = inspect.Parameter.empty if info.is_required() else info.default
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                        default=default, annotation=annotation))
    return inspect.Signature(params, return_annotation=dict[str, Any])
