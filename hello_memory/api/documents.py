"""Document routes: ingest (upload, text or server path), search, ask, delete, stats.

Uploaded files are kept under ``<data_dir>/uploads/`` (their source stays citable
and re-ingestable); a server path is accepted only under ``api.read_dirs``.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Request, UploadFile
from pydantic import BaseModel, ConfigDict, Field

from hello_memory.api.app import Namespace, manager_of
from hello_memory.api.security import confine_path, safe_upload_name
from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.memory.manager import MemoryManager
from hello_memory.stores.uploads import remove_upload, upload_folder
from hello_memory.tools.rag_access import build_rag

__all__ = ["allowed_path", "router", "save_upload"]

router = APIRouter(prefix="/v1", tags=["documents"])
Manager = Annotated[MemoryManager, Depends(manager_of)]
_lock = threading.Lock()
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class TextDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    source: str = "text"
    metadata: dict[str, Any] | None = None


class PathDocuments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    paths: list[str] = Field(min_length=1, max_length=1000)


class DocSearch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str
    top_k: int = Field(5, ge=1, le=50)


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str
    max_context_tokens: int | None = Field(None, ge=50, le=100_000)
    llm_calls: int | None = Field(None, ge=0, le=3, description="LLM calls at most "
                                  "(answer, then HyDE, then MQE); default rag.llm_calls")


def rag_of(request: Request, mm: Manager) -> Any:
    with _lock:  # build the pipeline once per app
        if request.app.state.rag is None:
            request.app.state.rag = build_rag(mm, request.app.state.settings)
        return request.app.state.rag


Rag = Annotated[Any, Depends(rag_of)]


def allowed_path(request: Request, raw: str) -> Path:
    """``raw`` resolved, when it lies under one of ``api.read_dirs``."""
    return confine_path(raw, request.app.state.settings.api.read_dirs)


def save_upload(request: Request, namespace: str, upload: UploadFile, kind: str) -> Path:
    """Store an uploaded file under ``<data_dir>/uploads/<kind>/``, named by content."""
    data = upload.file.read()
    if not data:
        raise InvalidInputError(f"uploaded file {upload.filename!r} is empty")
    name = safe_upload_name(upload.filename)  # keeps the extension, fits the file system
    request.app.state.manager.stores.check_disk(2 * len(data))  # 507 before writing
    folder = upload_folder(request.app.state.settings.data_dir, kind, namespace, data)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if not path.exists():
        path.write_bytes(data)
    return path


def display_name(filename: str | None, fallback: str) -> str:
    """The name an uploaded file is cited by: the client's file name without any
    folder part or control characters (at most 200 characters)."""
    base = re.split(r"[\\/]", filename or "")[-1]
    clean = "".join(ch for ch in base if ch.isprintable()).strip()
    return clean[:200] or fallback


@router.post("/documents", status_code=201)
def ingest_upload(request: Request, namespace: Namespace, rag: Rag,
                  files: Annotated[list[UploadFile], File(description="documents")]
                  ) -> dict[str, Any]:
    """Ingest uploaded documents (Markdown, text, PDF, Office... as the rag extra reads).
    Citations name each by the file name it was uploaded with."""
    paths = [save_upload(request, namespace, f, "documents") for f in files]
    names = {str(p): display_name(f.filename, p.name) for p, f in zip(paths, files, strict=True)}
    report = rag.ingest(paths, namespace=namespace, names=names)
    return dict(report.as_dict())


@router.post("/documents/text", status_code=201)
def ingest_text(body: TextDocument, namespace: Namespace, rag: Rag) -> dict[str, Any]:
    doc_id = rag.add_text(body.text, namespace=namespace, source=body.source,
                          metadata=body.metadata)
    return {"document_id": doc_id}


@router.post("/documents/paths", status_code=201)
def ingest_paths(request: Request, body: PathDocuments, namespace: Namespace, rag: Rag
                 ) -> dict[str, Any]:
    """Ingest files or folders on the server (only under ``api.read_dirs``)."""
    paths = [allowed_path(request, p) for p in body.paths]
    return dict(rag.ingest(paths, namespace=namespace).as_dict())


@router.post("/documents/search")
def search_documents(body: DocSearch, namespace: Namespace, rag: Rag) -> dict[str, Any]:
    hits = rag.search(body.query, namespace=namespace, top_k=body.top_k)
    return {"hits": [h.as_dict() for h in hits]}


@router.post("/ask")
def ask(body: AskRequest, namespace: Namespace, rag: Rag) -> dict[str, Any]:
    """Answer from the namespace's documents, with numbered citations."""
    answer = rag.ask(body.question, namespace=namespace,
                     max_context_tokens=body.max_context_tokens, llm_calls=body.llm_calls)
    return dict(answer.as_dict())


@router.delete("/documents/{document}")
def delete_document(request: Request, document: str, namespace: Namespace, rag: Rag
                    ) -> dict[str, Any]:
    """Delete one document (id or source path) with its chunks, and the uploaded file
    when it was uploaded; 404 when the namespace has no such document (an ingested
    document always has a chunk)."""
    doc = rag.find_document(document, namespace=namespace)
    result = rag.delete_document(document, namespace=namespace)
    if not result:
        raise NotFoundError(f"no document {document!r} in namespace {namespace!r}")
    if doc is not None:
        remove_upload(request.app.state.settings.data_dir, "documents", namespace,
                      doc.source_path)
    return {"deleted": result if isinstance(result, (int, bool, dict)) else str(result)}


@router.get("/documents/stats")
def document_stats(namespace: Namespace, rag: Rag) -> dict[str, Any]:
    result = rag.stats(namespace)
    return dict(result) if isinstance(result, dict) else {"stats": result}
