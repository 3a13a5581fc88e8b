"""``RAGTool``: the RAG pipeline as one agent tool bound to one knowledge base.

Every action works on the tool's namespace only (``clear`` included), takes and
returns JSON-able values, and reports bad input as ``{"ok": false, "error": ...}``
from :meth:`RAGTool.run`, so an agent loop can hand the result straight back to
the model. :meth:`RAGTool.schema` is an OpenAI-style function description.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hello_memory.errors import HelloMemoryError, InvalidInputError
from hello_memory.rag.pipeline import RAGPipeline
from hello_memory.validation import require_namespace

__all__ = ["RAGTool"]

ACTIONS = ("add_document", "add_text", "search", "ask", "stats", "delete_document", "clear")


class RAGTool:
    """Document knowledge base for an agent, scoped to ``namespace``."""

    name = "knowledge_base"
    description = ("Search and answer from an indexed document collection: add_document "
                   "(a file or folder path), add_text, search, ask (a cited answer), stats, "
                   "delete_document, clear.")

    def __init__(self, pipeline: RAGPipeline, *, namespace: str,
                 roots: Sequence[str | Path] | None = None) -> None:
        self.pipeline = pipeline
        self.namespace = require_namespace(namespace)
        # A model chooses the paths: it may read only under these folders (the
        # working directory unless told otherwise), never the whole file system.
        self.roots = [Path(r).expanduser().resolve() for r in (roots or [Path.cwd()])]

    # --- actions --------------------------------------------------------------------
    def add_document(self, path: str) -> dict[str, Any]:
        """Ingest a file or a folder under the tool's roots; the ingest report (links
        leading out of the folder are not followed)."""
        if not isinstance(path, str) or not path.strip() or "\x00" in path:
            raise InvalidInputError("path must be a non-empty file or folder path")
        resolved = Path(path).expanduser().resolve()
        if not any(resolved.is_relative_to(root) for root in self.roots):
            raise InvalidInputError(f"{path!r} is outside the folders this tool may read "
                                    f"({', '.join(map(str, self.roots))})")
        return self.pipeline.ingest([resolved], namespace=self.namespace).as_dict()

    def add_text(self, text: str, *, source: str = "text",
                 metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        doc_id = self.pipeline.add_text(text, namespace=self.namespace, source=source,
                                        metadata=metadata)
        return {"document_id": doc_id}

    def search(self, query: str, *, top_k: int = 5,
               filters: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        hits = self.pipeline.search(query, namespace=self.namespace, top_k=top_k,
                                    filters=filters)
        return [h.as_dict() for h in hits]

    def ask(self, question: str, *, max_context_tokens: int | None = None) -> dict[str, Any]:
        answer = self.pipeline.ask(question, namespace=self.namespace,
                                   max_context_tokens=max_context_tokens)
        return answer.as_dict()

    def stats(self) -> dict[str, Any]:
        return self.pipeline.stats(self.namespace)

    def delete_document(self, document: str) -> dict[str, Any]:
        """Delete by document id or source path; how many chunks went."""
        return {"chunks_deleted": self.pipeline.delete_document(document,
                                                                namespace=self.namespace)}

    def clear(self, *, confirm: bool = False) -> dict[str, Any]:
        """Delete every document of this tool's namespace (needs ``confirm=True``)."""
        return self.pipeline.clear(self.namespace, confirm=confirm)

    # --- dispatch -------------------------------------------------------------------
    def run(self, action: str, **params: Any) -> dict[str, Any]:
        """Run one action by name: ``{"ok": true, "result": ...}`` or, for bad input
        and other hello-memory errors, ``{"ok": false, "error": "..."}``."""
        handlers: dict[str, Callable[..., Any]] = {a: getattr(self, a) for a in ACTIONS}
        handler = handlers.get(action)
        try:
            if handler is None:
                raise InvalidInputError(f"unknown action {action!r}; use one of {list(ACTIONS)}")
            if "namespace" in params:
                raise InvalidInputError("this tool is bound to one namespace; "
                                        "do not pass namespace")
            try:  # wrong or missing parameters from the model; a bug inside still raises
                inspect.signature(handler).bind(**params)
            except TypeError as exc:
                raise InvalidInputError(f"bad parameters for {action}: {exc}") from None
            return {"ok": True, "result": handler(**params)}
        except HelloMemoryError as exc:
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    def schema(self) -> dict[str, Any]:
        """An OpenAI function-calling description of :meth:`run`."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": list(ACTIONS)},
                        "path": {"type": "string", "description": "add_document: file/folder"},
                        "text": {"type": "string", "description": "add_text: the text"},
                        "source": {"type": "string", "description": "add_text: its name"},
                        "query": {"type": "string", "description": "search: the query"},
                        "question": {"type": "string", "description": "ask: the question"},
                        "top_k": {"type": "integer", "minimum": 1},
                        "document": {"type": "string",
                                     "description": "delete_document: id or source path"},
                        "confirm": {"type": "boolean", "description": "clear: must be true"},
                    },
                    "required": ["action"],
                },
            },
        }
