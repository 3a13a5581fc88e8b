"""What REST adds to the document operations (their routes are generated from the
catalogue, :mod:`hello_memory.catalogue.documents`): the app's one RAG pipeline
(:func:`pipeline_of`, built on first use), and uploads kept under
``<data_dir>/uploads/`` (their source stays citable and re-ingestable). A server path
is accepted only under ``api.read_dirs``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, UploadFile

from hello_memory.api.app import manager_of_app
from hello_memory.api.security import confine_path, safe_upload_name
from hello_memory.errors import InvalidInputError
from hello_memory.stores.uploads import upload_folder
from hello_memory.tools.rag_access import build_rag

__all__ = ["allowed_path", "pipeline_of", "save_upload", "save_uploads"]

_lock = threading.Lock()


def pipeline_of(app: FastAPI) -> Callable[[], Any]:
    """The app's RAG pipeline, built once per app on the first document call."""
    def pipeline() -> Any:
        with _lock:
            if app.state.rag is None:
                app.state.rag = build_rag(manager_of_app(app), app.state.settings)
            return app.state.rag
    return pipeline


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


def save_uploads(request: Request, namespace: str, files: Sequence[UploadFile]
                 ) -> list[dict[str, str]]:
    """Each uploaded document kept (:func:`save_upload`): its path, and the name it is
    cited by (the file name it was uploaded with)."""
    out = []
    for upload in files:
        path = save_upload(request, namespace, upload, "documents")
        out.append({"path": str(path), "name": display_name(upload.filename, path.name)})
    return out
