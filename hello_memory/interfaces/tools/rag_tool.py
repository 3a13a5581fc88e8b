"""``RAGTool``: the RAG pipeline as one agent tool bound to one knowledge base.

Its actions are the catalogue's document operations
(:mod:`hello_memory.interfaces.catalogue.documents`;
the same argument names, defaults and JSON as ``POST /v1/documents/...`` and the MCP
tools), under the tool's names: ``add_document`` (ingest_paths), ``add_text``,
``search``, ``ask``, ``stats``, ``delete_document``, ``clear``. Every action works on the
tool's namespace only (``clear`` included), takes and returns JSON-able values, and
reports bad input as ``{"ok": false, "error": ...}`` from :meth:`RAGTool.run`, so an
agent loop can hand the result straight back to the model. :meth:`RAGTool.schema` is
one OpenAI-style function (an ``action`` and the union of the actions' arguments),
:meth:`RAGTool.schemas` one function per action.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hello_memory.errors import HelloMemoryError, InvalidInputError
from hello_memory.interfaces.catalogue import Call, Catalogue, Operation, default_catalogue
from hello_memory.rag.pipeline import RAGPipeline
from hello_memory.validation import require_namespace

__all__ = ["RAGTool"]


def _actions(catalogue: Catalogue) -> dict[str, Operation]:
    return {op.name_on("tool"): op for op in catalogue.on("tool", "documents")}


ACTIONS = tuple(_actions(default_catalogue()))


class RAGTool:
    """Document knowledge base for an agent, scoped to ``namespace``."""

    name = "knowledge_base"

    def __init__(self, pipeline: RAGPipeline, *, namespace: str,
                 roots: Sequence[str | Path] | None = None, prefix: str = "knowledge_base_",
                 catalogue: Catalogue | None = None) -> None:
        self.pipeline = pipeline
        self.namespace = require_namespace(namespace)
        # A model chooses the paths: it may read only under these folders (the
        # working directory unless told otherwise), never the whole file system.
        self.roots = [Path(r).expanduser().resolve() for r in (roots or [Path.cwd()])]
        self.prefix = prefix
        self.actions = _actions(catalogue if catalogue is not None else default_catalogue())
        self.description = ("Search and answer from an indexed document collection: "
                            + ", ".join(self.actions) + ".")

    def _call(self) -> Call:
        return Call(None, self.namespace, documents=lambda: self.pipeline,
                    read_dirs=tuple(map(str, self.roots)))

    # --- dispatch -------------------------------------------------------------------
    def invoke(self, action: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The operation's JSON (what REST answers); raises the typed error."""
        op = self.actions.get(action)
        if op is None:
            raise InvalidInputError(f"unknown action {action!r}; use one of "
                                    f"{list(self.actions)}")
        if "namespace" in arguments:
            raise InvalidInputError("this tool is bound to one namespace; do not pass "
                                    "namespace")
        return op.run(self._call(), op.parse(arguments))

    def run(self, action: str, **params: Any) -> dict[str, Any]:
        """Run one action by name: ``{"ok": true, "result": ...}`` or, for bad input
        and other hello-memory errors, ``{"ok": false, "error": "..."}``."""
        try:
            return {"ok": True, "result": self.invoke(action, params)}
        except HelloMemoryError as exc:
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run the function ``name`` of :meth:`schemas` (``knowledge_base_search``, ...)."""
        action = name[len(self.prefix):] if name.startswith(self.prefix) else name
        return self.run(action, **dict(arguments or {}))

    # --- descriptions ---------------------------------------------------------------
    def schemas(self) -> list[dict[str, Any]]:
        """One OpenAI function per action: the catalogue's request model (the tool's
        namespace left out: it is fixed)."""
        return [{"type": "function", "function": {
                    "name": f"{self.prefix}{action}", "description": op.doc,
                    "parameters": op.parameters()}}
                for action, op in self.actions.items()]

    def schema(self) -> dict[str, Any]:
        """One OpenAI function for :meth:`run`: ``action`` and every action's arguments
        (each described with the actions that take it)."""
        properties: dict[str, Any] = {"action": {"type": "string",
                                                 "enum": list(self.actions)}}
        takers: dict[str, list[str]] = {}
        for action, op in self.actions.items():
            schema = op.parameters()
            for field, spec in schema.get("properties", {}).items():
                properties.setdefault(field, {k: v for k, v in spec.items()
                                              if k != "description"})
                takers.setdefault(field, []).append(action)
                if spec.get("description") and "description" not in properties[field]:
                    properties[field]["description"] = spec["description"]
        for field, actions in takers.items():
            said = properties[field].get("description")
            properties[field]["description"] = ", ".join(actions) + (
                f": {said}" if said else "")
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": {"type": "object", "properties": properties,
                           "required": ["action"]}}}

    # --- actions (typed Python API; these raise instead of returning errors) --------
    def add_document(self, path: str) -> dict[str, Any]:
        """Ingest a file or a folder under the tool's roots; the ingest report."""
        return self.invoke("add_document", {"paths": [path]})

    def add_text(self, text: str, *, source: str = "text",
                 metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        args: dict[str, Any] = {"text": text, "source": source}
        if metadata is not None:
            args["metadata"] = dict(metadata)
        return self.invoke("add_text", args)

    def search(self, query: str, *, top_k: int = 5,
               filters: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.invoke("search", {"query": query, "top_k": top_k, "filters": filters})

    def ask(self, question: str, *, max_context_tokens: int | None = None) -> dict[str, Any]:
        return self.invoke("ask", {"question": question,
                                   "max_context_tokens": max_context_tokens})

    def stats(self) -> dict[str, Any]:
        return self.invoke("stats", {})

    def delete_document(self, document: str) -> dict[str, Any]:
        """Delete by document id or source path (NotFoundError for an unknown one)."""
        return self.invoke("delete_document", {"document": document})

    def clear(self, *, confirm: bool = False) -> dict[str, Any]:
        """Delete every document of this tool's namespace (needs ``confirm=True``)."""
        return self.invoke("clear", {"confirm": confirm})
