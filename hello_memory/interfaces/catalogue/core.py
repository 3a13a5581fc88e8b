"""The operation catalogue's definitions: :class:`Operation`, :class:`Catalogue`,
:class:`Call`, :class:`Rest`, the request base and the JSON helpers.

They live apart from the package's ``__init__`` (which re-exports every name and adds
:func:`~hello_memory.interfaces.catalogue.default_catalogue`) so that the operation modules
(``admin``, ``documents``, ``media``, ``memories``, ``memory_requests``) import them
without importing the package that imports them back (docs/ARCHITECTURE.md "Known
debts": no import cycle). See the package's doc for what an operation is.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

from hello_memory.errors import ConfigError, InvalidInputError

if TYPE_CHECKING:
    from hello_memory.config import Settings
    from hello_memory.interfaces.scheduler import JobScheduler
    from hello_memory.memory.manager import MemoryManager
    from hello_memory.memory.write_batching import CoalescingWriter
    from hello_memory.rag.pipeline import RAGPipeline

__all__ = ["INTERFACES", "Area", "Call", "Catalogue", "Interface", "NoArguments", "Operation",
           "Request", "Rest", "Scope", "annotated", "invalid_input",
           "plain_json"]

Scope = Literal["read", "write", "admin"]
Interface = Literal["rest", "mcp", "tool", "cli"]
# What an operation acts on: the MemoryTool carries the memory and media operations,
# the RAGTool the document ones; REST tags its routes with it.
Area = Literal["memories", "media", "documents", "admin"]
INTERFACES: tuple[Interface, ...] = ("rest", "mcp", "tool", "cli")


class Request(BaseModel):
    """The base of every operation's request model: an argument the operation does not
    take is refused (a misspelt name is an error, never silently ignored)."""

    model_config = ConfigDict(extra="forbid")


class NoArguments(Request):
    """The request of an operation that takes no arguments."""


@dataclass(frozen=True)
class Call:
    """Where one call acts: the memory manager (None for an interface over documents
    only, ``RAGTool``), the (checked) namespace, the settings of the interface that
    serves it (None: the manager's own defaults), and what the interface holds for
    the document and admin operations: ``documents`` returns its ONE RAG pipeline
    (built on first use, never one per call), ``read_dirs`` are the folders a caller
    may name paths under (None: ``settings.api.read_dirs``), ``jobs`` its job
    scheduler (None: a one-off, unscheduled one), ``writer`` the server's writer that
    stores concurrent adds together (None: each add stores itself)."""

    memories: MemoryManager | None
    namespace: str
    settings: Settings | None = None
    documents: Callable[[], RAGPipeline] | None = None
    read_dirs: tuple[str, ...] | None = None
    jobs: JobScheduler | None = None
    # the server's writer: adds of concurrent calls stored together (None: each alone)
    writer: CoalescingWriter | None = None

    def adder(self) -> CoalescingWriter | MemoryManager:
        """What an add goes through: the server's writer, else the manager."""
        return self.writer if self.writer is not None else self.manager

    @property
    def manager(self) -> MemoryManager:
        if self.memories is None:
            raise ConfigError("this interface serves documents only: it has no memory "
                              "manager")
        return self.memories

    def readable_dirs(self) -> tuple[str, ...]:
        """The folders a caller may name paths under: ``read_dirs`` (a tool's roots),
        else ``settings.api.read_dirs`` (none without settings)."""
        if self.read_dirs is not None:
            return self.read_dirs
        return tuple(self.settings.api.read_dirs) if self.settings is not None else ()

    def rag(self) -> RAGPipeline:
        """The interface's RAG pipeline (ConfigError without the rag extra)."""
        if self.documents is not None:
            return self.documents()
        raise ConfigError("this interface serves no documents (no RAG pipeline)")

    def scheduler(self) -> JobScheduler:
        from hello_memory.config import JobsSettings
        from hello_memory.interfaces.scheduler import JobScheduler

        if self.jobs is not None:
            return self.jobs
        manager = self.manager
        return JobScheduler(lambda: manager, JobsSettings())  # runs on request only


@dataclass(frozen=True)
class Rest:
    """How REST carries an operation: ``method`` and ``path`` (under ``/v1``; a
    ``{field}`` in it is a path parameter), the success ``status`` (or ``status_of``,
    from the result), the fields sent in the query string (a GET or DELETE sends every
    field there), ``respond``: a response of its own instead of JSON (export's file, a
    thumbnail's PNG) of media type ``respond_type``, and ``upload``: the request field
    that a multipart upload fills (one file, or a list when the field is a list; the
    other fields are then form fields). REST keeps each file under
    ``<data_dir>/uploads/<area>/`` and passes its ``path`` and ``name``; with
    ``keep_upload`` false (a query file) it lies in a temporary file removed after the
    call. ``before`` runs ahead of keeping an upload: a call bound to fail (a feature
    not configured) fails without writing the file."""

    method: Literal["GET", "POST", "PATCH", "PUT", "DELETE"]
    path: str
    status: int = 200
    query: tuple[str, ...] = ()
    status_of: Callable[[Any], int] | None = None
    respond: Callable[[Any, Call], Any] | None = None
    respond_type: str = "application/json"
    upload: str | None = None
    keep_upload: bool = True
    before: Callable[[Call], None] | None = None

    @property
    def path_fields(self) -> tuple[str, ...]:
        return tuple(part[1:-1] for part in self.path.split("/")
                     if part.startswith("{") and part.endswith("}"))

    @property
    def has_body(self) -> bool:
        return self.method in ("POST", "PATCH", "PUT")


@dataclass(frozen=True)
class Operation:
    """One operation, defined once (module doc). ``names`` gives an interface's own
    name where it keeps an older one (MCP's ``remember``); ``cli`` names the CLI
    command whose ``--json`` prints this operation's JSON; ``area`` says which agent
    tool carries it (memories and media: MemoryTool, documents: RAGTool, admin:
    none). ``batched``: the handler adds through :meth:`Call.adder` (the server's
    writer, when the interface has one), so REST runs it where waiting on the writer
    holds no operation slot
    (:meth:`~hello_memory.interfaces.aio.AsyncMemoryManager.run_waiting`)."""

    name: str
    summary: str
    request: type[BaseModel]
    handler: Callable[[Call, Any], Any]
    serialise: Callable[[Any], dict[str, Any]]
    scope: Scope
    rest: Rest | None
    description: str = ""
    names: Mapping[str, str] = field(default_factory=dict)
    not_on: Mapping[str, str] = field(default_factory=dict)
    cli: str | None = None
    area: Area = "memories"
    batched: bool = False

    def name_on(self, interface: Interface) -> str:
        return self.names.get(interface, self.name)

    def on(self, interface: Interface) -> bool:
        if interface == "rest" and self.rest is None:
            return False
        if interface == "cli" and self.cli is None:
            return False
        return interface not in self.not_on

    @property
    def doc(self) -> str:
        """Summary and description: REST's description, MCP's and the tool's."""
        return f"{self.summary} {self.description}".strip()

    def parameters(self) -> dict[str, Any]:
        """The request model's JSON schema as a function-calling tool's parameters
        (MemoryTool, RAGTool): without pydantic's ``title`` noise, which those APIs
        ignore and which costs prompt tokens."""
        stripped: dict[str, Any] = _strip_titles(self.request.model_json_schema())
        return stripped

    def parse(self, arguments: Mapping[str, Any]) -> BaseModel:
        """The request from plain arguments; a mismatch is :class:`InvalidInputError`."""
        try:
            return self.request.model_validate(dict(arguments))
        except ValidationError as exc:
            raise invalid_input(exc, self.name) from None

    def invoke(self, call: Call, request: BaseModel) -> Any:
        """The handler's result (blocking: the async interfaces run it in a pool)."""
        return self.handler(call, request)

    def run(self, call: Call, request: BaseModel) -> dict[str, Any]:
        """The handler's result as JSON."""
        return self.serialise(self.invoke(call, request))


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def annotated(info: FieldInfo, *extra: Any) -> Any:
    """A request field's type with its bounds (``info.metadata``) and ``extra`` (a
    FastAPI ``Query``, a pydantic ``Field``): how the interfaces declare one argument
    of a generated signature."""
    out: Any = info.annotation
    for meta in (*info.metadata, *extra):
        out = Annotated[out, meta]  # nested Annotated flattens
    return out


def invalid_input(exc: ValidationError, where: str) -> InvalidInputError:
    problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or where}: {e['msg']}"
                         for e in exc.errors())
    return InvalidInputError(problems)


class Catalogue:
    """An ordered set of operations; the interfaces are built from one."""

    def __init__(self, operations: Mapping[str, Operation] | None = None) -> None:
        self._ops: dict[str, Operation] = dict(operations or {})

    def register(self, op: Operation) -> Operation:
        if op.name in self._ops:
            raise InvalidInputError(f"operation {op.name!r} is already in the catalogue")
        self._ops[op.name] = op
        return op

    def extended(self, *ops: Operation) -> Catalogue:
        """A copy with ``ops`` added (this catalogue stays as it is)."""
        out = Catalogue(self._ops)
        for op in ops:
            out.register(op)
        return out

    def __iter__(self) -> Iterator[Operation]:
        return iter(self._ops.values())

    def __getitem__(self, name: str) -> Operation:
        return self._ops[name]

    def __contains__(self, name: object) -> bool:
        return name in self._ops

    def on(self, interface: Interface, area: Area | None = None) -> list[Operation]:
        return [op for op in self if op.on(interface) and area in (None, op.area)]

    def named(self, interface: Interface, name: str) -> Operation | None:
        return next((op for op in self.on(interface) if op.name_on(interface) == name), None)


def plain_json(value: Any) -> Any:
    """A report as JSON: ``as_dict()`` where it has one, a dataclass field by field, a
    mapping as a dict, enums as their values, tuples and sets as lists."""
    if hasattr(value, "as_dict") and callable(value.as_dict):
        return plain_json(value.as_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: plain_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(getattr(type(value), "count", None), property):
            out["count"] = value.count  # type: ignore[attr-defined]
        return out
    if isinstance(value, Mapping):
        return {str(k): plain_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain_json(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value
