"""An MCP server (``hello-memory mcp``) exposing remember / recall / forget / restore /
ingest / ask tools, built on the ``mcp`` package (``server`` extra).

Every tool takes a ``namespace`` and checks it against the namespace patterns the
operator granted when starting the server (``--namespace PATTERN`` or the patterns of
an API key in ``api.api_keys``), with the REST API's rules: exact names, ``prefix/*``,
``*``. Runs over stdio (what desktop agents launch) or, optionally, streamable HTTP.

The module is named ``mcp_server`` so that it never shadows the ``mcp`` package.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import wraps
from typing import TYPE_CHECKING, Any, Literal

from hello_memory.api.security import confine_path, namespace_allowed
from hello_memory.config import Settings
from hello_memory.errors import (
    ConfigError,
    HelloMemoryError,
    InvalidInputError,
    PayloadTooLargeError,
)
from hello_memory.memory.manager import hit_to_json, item_to_json
from hello_memory.tools.rag_access import build_rag
from hello_memory.validation import require_namespace

if TYPE_CHECKING:
    from hello_memory.memory.manager import MemoryManager

__all__ = ["build_server", "grants_for"]

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


def build_server(manager: MemoryManager, settings: Settings, grants: Sequence[str]) -> Any:
    """An ``MCPServer`` (``mcp`` 2) whose tools act on ``manager``."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError as exc:
        raise ConfigError("the MCP server needs mcp>=2 (server extra): "
                          f"pip install 'hello-memory[server]' ({exc})") from exc
    if not grants:
        raise ConfigError("the MCP server was given no namespaces to serve")
    server = MCPServer("hello-memory", instructions=INSTRUCTIONS)
    rag: list[Any] = []  # built on first document call

    def check(namespace: str) -> str:
        ns = require_namespace(namespace)
        if not namespace_allowed(ns, grants):
            raise InvalidInputError(f"namespace {ns!r} is not granted to this server "
                                    f"(granted: {', '.join(grants)})")
        return ns

    def pipeline() -> Any:
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

    @tool
    def remember(namespace: str, content: str,
                 memory_type: Literal["working", "episodic", "semantic"] | None = None,
                 importance: float | None = None) -> dict[str, Any]:
        """Store a memory: a fact or preference (semantic), an event (episodic) or
        something about the current task (working). Returns its id."""
        ns = check(namespace)
        item = manager.add(content, memory_type, importance, namespace=ns,
                           auto_classify=memory_type is None)
        # A repeated remember gives back the memory already stored (issue 15).
        return {"id": item.id, "memory_type": item.memory_type.value,
                "importance": item.importance, "duplicate_of": item.duplicate_of,
                "near_duplicates": [{"id": i, "similarity": s}
                                    for i, s in item.near_duplicates]}

    @tool
    def recall(namespace: str, query: str, top_k: int = 5,
               as_of: str | None = None) -> dict[str, Any]:
        """Search memories relevant to a query (the one hybrid search); best first, with
        ids, scores and each view's rank. ``as_of`` (ISO 8601 with offset) searches what
        was true then, superseded memories included."""
        ns = check(namespace)
        hits = manager.search(query, top_k=top_k, namespace=ns, as_of=_as_of(as_of))
        return {"hits": [hit_to_json(h) for h in hits]}

    @tool
    def forget(namespace: str, memory_ids: list[str]) -> dict[str, Any]:
        """Forget memories by id (soft: they leave search; `restore` brings them back)."""
        ns = check(namespace)
        return {"forgotten": manager.forget_ids(memory_ids, namespace=ns)}

    @tool
    def restore(namespace: str, memory_ids: list[str]) -> dict[str, Any]:
        """Bring forgotten memories back."""
        ns = check(namespace)
        return {"restored": manager.restore(memory_ids, namespace=ns)}

    @tool
    def get_memory(namespace: str, memory_id: str) -> dict[str, Any]:
        """One memory by id, with every field."""
        return item_to_json(manager.get(memory_id, namespace=check(namespace)))

    @tool
    def ingest(namespace: str, text: str | None = None, source: str = "text",
               paths: list[str] | None = None) -> dict[str, Any]:
        """Add documents for `ask`: a text (with a source name) or files / folders on
        this machine (paths, only under the server's api.read_dirs)."""
        ns = check(namespace)
        if (text is None) == (paths is None):
            raise InvalidInputError("give either text or paths")
        if text is not None:
            return {"document_id": pipeline().add_text(text, namespace=ns, source=source)}
        # Paths on this machine only under api.read_dirs, as for the REST API.
        confined = [confine_path(p, settings.api.read_dirs) for p in paths or []]
        return dict(pipeline().ingest(confined, namespace=ns).as_dict())

    @tool
    def ask(namespace: str, question: str) -> dict[str, Any]:
        """Answer a question from the namespace's documents, with citations."""
        return dict(pipeline().ask(question, namespace=check(namespace)).as_dict())

    return server


def _payload_bytes(values: Sequence[Any]) -> int:
    """UTF-8 size of the strings in a tool call's arguments (lists included)."""
    total = 0
    for value in values:
        if isinstance(value, str):
            total += len(value.encode("utf-8", "surrogatepass"))
        elif isinstance(value, (list, tuple)):
            total += _payload_bytes(value)
    return total


def _as_of(value: str | None) -> datetime | None:
    """``recall``'s ``as_of``: an ISO 8601 time with its offset (issue 15)."""
    if value is None or not value.strip():
        return None
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInputError(f"as_of must be an ISO 8601 time, got {value!r}") from None
    if when.tzinfo is None:
        raise InvalidInputError("as_of needs a UTC offset (e.g. 2024-06-01T00:00:00+00:00)")
    return when
