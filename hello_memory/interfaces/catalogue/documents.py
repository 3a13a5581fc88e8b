"""The document (RAG) operations: ingest (text, paths on this machine, an upload), search,
ask, delete one document, stats, clear the namespace's documents; one handler each,
calling the interface's ONE pipeline (``Call.rag()``: built on first use, never one per
call).

A path a caller names is read only under the interface's folders (``Call.read_dirs``,
else ``api.read_dirs``; the RAGTool's ``roots``): :func:`confine_path`. An uploaded
file arrives as the path REST kept it under (``Rest.upload``), so the upload is REST's
only: the other interfaces name paths instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.interfaces.catalogue.core import (
    Call,
    NoArguments,
    Operation,
    Request,
    Rest,
    plain_json,
)

if TYPE_CHECKING:
    from hello_memory.rag.types import Answer, IngestReport, RAGHit

__all__ = ["DOCUMENT_OPERATIONS", "AskRequest", "DocSearch", "PathDocuments", "SavedUpload",
           "TextDocument", "confine_path", "confined", "resolve_under"]


class TextDocument(Request):
    text: str = Field(description="The document's text (Markdown headings are kept).")
    source: str = Field("text", description="The name it is cited by; text added again "
                        "under the same source replaces it")
    metadata: dict[str, Any] | None = Field(None, description="Free-form tags.")


class PathDocuments(Request):
    paths: list[str] = Field(min_length=1, max_length=1000, description=(
        "Files or folders on this machine, under the folders this interface may read."))


class SavedUpload(Request):
    path: str
    name: str


class UploadedDocuments(Request):
    files: list[SavedUpload] = Field(min_length=1, description="documents")


class DocSearch(Request):
    query: str = Field(description="What to look for in the documents.")
    top_k: int = Field(5, ge=1, le=50, description="How many passages to return.")
    filters: dict[str, Any] | None = Field(
        None, description="source (a path or a list), document_id, heading (a heading "
        "path or a prefix of one), language")


class AskRequest(Request):
    question: str = Field(description="The question, answered from the documents.")
    top_k: int | None = Field(None, ge=1, le=100, description="Passages retrieved; "
                              "default rag.ask_top_k")
    max_context_tokens: int | None = Field(None, ge=50, le=100_000, description=(
        "Token budget of the passages given to the LLM; default rag.context_tokens"))
    llm_calls: int | None = Field(None, ge=0, le=3, description="LLM calls at most "
                                  "(answer, then HyDE, then MQE); default rag.llm_calls")


class DocumentRef(Request):
    document: str = Field(description="A document id, or its source path.")


class ClearDocuments(Request):
    confirm: bool = Field(False, description="Must be true; nothing happens otherwise.")


def resolve_under(raw: str, roots: Sequence[str | Path], what: str) -> Path | None:
    """``raw`` resolved (links followed) when it lies under one of ``roots``, else None;
    InvalidInputError naming ``what`` when it cannot be resolved at all. The one check
    of every path a caller names or a record stores (:func:`confine_path`, the media
    thumbnail's stored file)."""
    if "\x00" in raw:
        raise InvalidInputError(f"{what} holds a NUL character")
    try:
        path = Path(raw).expanduser().resolve()
    except (OSError, ValueError, RuntimeError) as exc:  # too long, a link loop
        raise InvalidInputError(f"{what} cannot be resolved: {exc}") from None
    resolved = [Path(d).expanduser().resolve() for d in roots]
    return path if any(path == r or r in path.parents for r in resolved) else None


def confine_path(raw: str, read_dirs: Sequence[str | Path], where: str = "api.read_dirs"
                 ) -> Path:
    """``raw`` resolved, when it lies under one of ``read_dirs`` (named ``where`` in
    errors) and exists: a remote caller or a model names paths on this machine only
    inside those."""
    if not read_dirs:
        raise InvalidInputError(f"this interface reads no paths ({where} is empty); "
                                "upload the file or send the text instead")
    path = resolve_under(raw, read_dirs, f"path {raw[:200]!r}")
    if path is None:
        raise InvalidInputError(f"path {raw!r} is outside {where}")
    try:
        exists = path.exists()
    except (OSError, ValueError):  # a name over NAME_MAX
        exists = False
    if not exists:
        raise InvalidInputError(f"path {raw[:200]!r} does not exist")
    return path


def confined(call: Call, raw: str) -> Path:
    """``raw`` under the interface's folders (:meth:`Call.readable_dirs`)."""
    if call.read_dirs is not None:
        return confine_path(raw, call.read_dirs, "the folders this tool may read ("
                            + (", ".join(call.read_dirs) or "none: give it roots") + ")")
    return confine_path(raw, call.readable_dirs())


# --- handlers: one pipeline call each ---------------------------------------------------
def ingest_text(call: Call, req: TextDocument) -> str:
    return call.rag().add_text(req.text, namespace=call.namespace, source=req.source,
                               metadata=req.metadata)


def ingest_paths(call: Call, req: PathDocuments) -> IngestReport:
    paths = [confined(call, p) for p in req.paths]
    return call.rag().ingest(paths, namespace=call.namespace)


def ingest_upload(call: Call, req: UploadedDocuments) -> IngestReport:
    """Citations name each file by the name it was uploaded with."""
    return call.rag().ingest([f.path for f in req.files], namespace=call.namespace,
                             names={f.path: f.name for f in req.files})


def search_documents(call: Call, req: DocSearch) -> list[RAGHit]:
    return call.rag().search(req.query, namespace=call.namespace, top_k=req.top_k,
                             filters=req.filters)


def ask(call: Call, req: AskRequest) -> Answer:
    return call.rag().ask(req.question, namespace=call.namespace, top_k=req.top_k,
                          max_context_tokens=req.max_context_tokens, llm_calls=req.llm_calls)


def _remove_uploads(call: Call, sources: Sequence[str]) -> None:
    """The kept uploads of deleted documents (a file the server was only pointed at is
    never touched: RAGPipeline.remove_uploads)."""
    if call.settings is None:
        return
    call.rag().remove_uploads(call.settings.data_dir, call.namespace, sources)


def delete_document(call: Call, req: DocumentRef) -> int:
    rag = call.rag()
    doc = rag.find_document(req.document, namespace=call.namespace)
    removed = rag.delete_document(req.document, namespace=call.namespace)
    if not removed:  # an ingested document always has a chunk
        raise NotFoundError(f"no document {req.document!r} in namespace {call.namespace!r}")
    if doc is not None:
        _remove_uploads(call, [doc.source_path])
    return removed


def document_stats(call: Call, req: NoArguments) -> dict[str, Any]:
    return call.rag().stats(call.namespace)


def clear_documents(call: Call, req: ClearDocuments) -> dict[str, int]:
    rag = call.rag()
    if req.confirm is not True:
        raise InvalidInputError(f"this deletes every document of namespace "
                                f"{call.namespace!r}: add confirm=true")
    sources = [d.source_path for d in rag.documents(call.namespace)]
    done = rag.clear(call.namespace, confirm=True)
    _remove_uploads(call, sources)
    return done


def _as_dict(value: Any) -> dict[str, Any]:
    out = plain_json(value)
    assert isinstance(out, dict)
    return out


_UPLOAD_ONLY = ("a multipart file upload is REST's; the other interfaces name paths "
                "(ingest_paths) or send the text (ingest_text)")

DOCUMENT_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "ingest_text", "Add a text as a document for search_documents and ask.",
        TextDocument, ingest_text, lambda doc_id: {"document_id": doc_id}, "write",
        Rest("POST", "/documents/text", 201), names={"tool": "add_text"},
        area="documents"),
    Operation(
        "ingest_paths", "Ingest files or folders on this machine (only under the "
        "folders this interface may read: REST and MCP api.read_dirs, the RAGTool its "
        "roots).",
        PathDocuments, ingest_paths, _as_dict, "write", Rest("POST", "/documents/paths", 201),
        description="Unchanged files are skipped, a changed one replaced; the ingest "
        "report.", names={"mcp": "ingest", "tool": "add_document"}, cli="ingest",
        area="documents"),
    Operation(
        "ingest_upload", "Ingest uploaded documents (Markdown, text, PDF, Office... as "
        "the rag extra reads).",
        UploadedDocuments, ingest_upload, _as_dict, "write",
        Rest("POST", "/documents", 201, upload="files"),
        description="Citations name each by the file name it was uploaded with.",
        not_on={"mcp": _UPLOAD_ONLY, "tool": _UPLOAD_ONLY}, area="documents"),
    Operation(
        "search_documents", "Find the passages of the namespace's documents relevant to "
        "a query (dense + BM25, fused).",
        DocSearch, search_documents, lambda hits: {"hits": [h.as_dict() for h in hits]},
        "read", Rest("POST", "/documents/search"), names={"tool": "search"},
        area="documents"),
    Operation(
        "ask", "Answer a question from the namespace's documents, with numbered citations.",
        AskRequest, ask, _as_dict, "read", Rest("POST", "/ask"),
        description="Without an LLM the answer is the ranked passages.", cli="ask",
        area="documents"),
    Operation(
        "delete_document", "Delete one document (id or source path) with its chunks, "
        "and the uploaded file when it was uploaded.",
        DocumentRef, delete_document, lambda n: {"deleted": n}, "write",
        Rest("DELETE", "/documents/{document}"),
        description="An unknown document is an error (NotFoundError; REST 404); "
        "``deleted`` counts its chunks.", area="documents"),
    Operation(
        "document_stats", "Counts of the namespace's documents, chunks and vectors.",
        NoArguments, document_stats, _as_dict, "read", Rest("GET", "/documents/stats"),
        names={"tool": "stats"}, area="documents"),
    Operation(
        "clear_documents", "Delete every document of the namespace (and only its "
        "documents: memories stay). Needs confirm=true.",
        ClearDocuments, clear_documents, _as_dict, "write",
        Rest("DELETE", "/documents", query=("confirm",)), names={"tool": "clear"},
        area="documents"),
)
