"""An MCP server (``hello-memory mcp``) built on the ``mcp`` package (``server`` extra):
one tool per operation of the catalogue (:mod:`hello_memory.interfaces.catalogue`: ``remember``,
``recall``, ``get_memory``, ``forget``, ``restore``, ..., and over documents ``ingest``,
``ingest_text``, ``search_documents``, ``ask``, ..., and over images and audio
``add_media_path``, ``search_media``; the same arguments as the REST API and the agent
tools). A path ``ingest`` or ``add_media_path`` reads must lie under ``api.read_dirs``.

Every tool takes a ``namespace`` and checks it against the namespace patterns the
operator granted when starting the server (``--namespace PATTERN`` or the patterns of
an API key in ``api.api_keys``), with the REST API's rules: exact names, ``prefix/*``,
``*``. Where exactly one namespace is granted (one exact name), ``namespace`` is
optional and defaults to it. Runs over stdio (what desktop agents launch) or,
optionally, streamable HTTP.

Sized for a model (issue 29, item 4): the media tools are offered only when perceptual
memory is on (they could not work otherwise); ``recall`` and ``search_media`` answer
each hit as ``id``, ``text``, ``date``, ``type``, ``score`` (``detail: true`` gives the
full record and score breakdown, what REST answers); descriptions are the operation's
one-line summary.

The module was ``hello_memory.mcp_server``; as ``hello_memory.interfaces.mcp`` it does not
shadow the ``mcp`` package either, since every import here is absolute.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import wraps
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Field

from hello_memory.config import Settings
from hello_memory.errors import (
    ConfigError,
    HelloMemoryError,
    InvalidInputError,
    PayloadTooLargeError,
)
from hello_memory.interfaces.catalogue import (
    Call,
    Catalogue,
    Operation,
    annotated,
    default_catalogue,
)
from hello_memory.interfaces.rest.security import namespace_allowed, single_namespace
from hello_memory.interfaces.tools.rag_access import build_rag
from hello_memory.interfaces.tools.views import DETAIL_DESCRIPTION, HIT_OPERATIONS, brief
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

__all__ = ["INSTRUCTIONS", "build_server", "description", "grants_for", "offered",
           "single_namespace", "tool_signature"]

INSTRUCTIONS = (
    "Long-term memory. Call `recall` before answering questions about the user or past "
    "work, `remember` for facts, preferences and events worth keeping, `forget` for what "
    "is wrong or unwanted (it can be restored)."
)


def offered(catalogue: Catalogue, manager: MemoryManager) -> list[Operation]:
    """The operations MCP offers over ``manager``: the media ones only when perceptual
    memory is on."""
    media = bool(getattr(manager, "has_perceptual", False))
    return [op for op in catalogue.on("mcp") if media or op.area != "media"]


def description(op: Operation) -> str:
    """A tool's description: the operation's one-line summary (and, for the tools that
    answer hits, what a hit holds)."""
    if op.name in HIT_OPERATIONS:
        return (f"{op.summary} Each hit: id, text, date, type, score; detail=true adds "
                "the score breakdown.")
    return op.summary


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
    default_ns = single_namespace(grants)
    server = MCPServer("hello-memory", instructions=INSTRUCTIONS + (
        f" The namespace is {default_ns!r} unless a call names it." if default_ns
        else " Every call names a namespace."))
    check = _namespace_check(grants)
    pipeline = _pipeline(manager, settings)
    tool = _tool_adder(server, ToolError, settings.api.max_request_bytes)

    def register(op: Operation) -> None:
        hits = op.name in HIT_OPERATIONS

        def handle(namespace: str | None = default_ns, **arguments: Any) -> dict[str, Any]:
            ns = check(namespace or "")
            if op.scope == "admin" and "*" not in grants:
                raise InvalidInputError(f"{op.name} needs a server granted '*'")
            detail = bool(arguments.pop("detail", False)) if hits else True
            data = op.run(Call(manager, ns, settings, documents=pipeline),
                          op.parse(arguments))
            return data if detail else brief(data)

        handle.__name__ = op.name_on("mcp")
        handle.__doc__ = op.doc
        handle.__signature__ = tool_signature(  # type: ignore[attr-defined]
            op, default_namespace=default_ns, detail=hits)
        tool(handle, description(op))

    for op in offered(catalogue or default_catalogue(), manager):
        register(op)

    return server


def _namespace_check(grants: Sequence[str]) -> Callable[[str], str]:
    """What checks a tool call's namespace against the server's ``grants``
    (``build_server``'s part): the valid name, or InvalidInputError."""

    def check(namespace: str) -> str:
        ns = require_namespace(namespace)
        if not namespace_allowed(ns, grants):
            raise InvalidInputError(f"namespace {ns!r} is not granted to this server "
                                    f"(granted: {', '.join(grants)})")
        return ns

    return check


def _pipeline(manager: MemoryManager, settings: Settings) -> Callable[[], Any]:
    """The document tools' one RAG pipeline, built on the first call that needs it
    (``build_server``'s part)."""
    rag: list[Any] = []  # the one pipeline, built on the first document call
    lock = threading.Lock()

    def pipeline() -> Any:
        with lock:
            if not rag:
                rag.append(build_rag(manager, settings))
            return rag[0]

    return pipeline


def _tool_adder(server: Any, tool_error: type[Exception], limit: int
                ) -> Callable[[Callable[..., dict[str, Any]], str], Callable[..., dict[str, Any]]]:
    """What adds one tool to ``server`` (``build_server``'s part): its arguments held to
    ``limit`` bytes, the library's errors raised as ``tool_error`` (MCP's ToolError:
    the model reads it)."""

    def tool(fn: Callable[..., dict[str, Any]], summary: str) -> Callable[..., dict[str, Any]]:
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
                raise tool_error(f"{type(exc).__name__}: {exc}") from exc
        server.add_tool(run, name=fn.__name__, description=summary)
        _strip_schema_titles(server, fn.__name__)
        return fn

    return tool


def _strip_schema_titles(server: Any, name: str) -> None:
    """Drop pydantic's ``title`` from a tool's input schema (every property had one, a
    copy of its name: about 3 KB of the tool list no model reads), as the agent tools'
    schemas do (``Operation.parameters``). Left as is where this ``mcp`` keeps its
    tools elsewhere."""
    from hello_memory.interfaces.catalogue import _strip_titles

    tool = getattr(getattr(server, "_tool_manager", None), "_tools", {}).get(name)
    if tool is not None and isinstance(getattr(tool, "parameters", None), dict):
        tool.parameters = _strip_titles(tool.parameters)


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


def tool_signature(op: Operation, *, default_namespace: str | None = None,
                   detail: bool = False) -> inspect.Signature:
    """``namespace`` (optional when the server has ``default_namespace``), the
    operation's request fields, as MCP reads a tool's arguments (their JSON schema: the
    request model's types, bounds, defaults and descriptions), and with ``detail`` the
    flag that asks for full hits."""
    if default_namespace is None:
        namespace = inspect.Parameter("namespace", inspect.Parameter.KEYWORD_ONLY,
                                      annotation=Annotated[str, Field(description=(
                                          "The namespace to act in."))])
    else:
        namespace = inspect.Parameter(
            "namespace", inspect.Parameter.KEYWORD_ONLY, default=default_namespace,
            annotation=Annotated[str, Field(description=f"Default {default_namespace!r}.")])
    params = [namespace]
    for name, info in op.request.model_fields.items():
        annotation = annotated(info, Field(description=info.description))
        default = inspect.Parameter.empty if info.is_required() else info.default
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                        default=default, annotation=annotation))
    if detail:
        params.append(inspect.Parameter(
            "detail", inspect.Parameter.KEYWORD_ONLY, default=False,
            annotation=Annotated[bool, Field(description=DETAIL_DESCRIPTION)]))
    return inspect.Signature(params, return_annotation=dict[str, Any])
