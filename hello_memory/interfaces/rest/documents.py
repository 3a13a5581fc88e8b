"""What REST adds to the document and media operations (their routes are generated from
the catalogue, :mod:`hello_memory.interfaces.catalogue`): the app's one RAG pipeline
(:func:`pipeline_of`, built on first use, shared with the dashboard), uploads kept under
``<data_dir>/uploads/`` (their source stays citable and re-ingestable) and query files
kept for one call only.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, UploadFile

from hello_memory.errors import InvalidInputError
from hello_memory.interfaces.rest.deps import manager_of_app
from hello_memory.interfaces.rest.security import safe_upload_name
from hello_memory.interfaces.tools.rag_access import build_rag
from hello_memory.services.browse import upload_folder

__all__ = ["display_name", "pipeline_of", "save_upload", "temporary_upload"]

_lock = threading.Lock()


def pipeline_of(app: FastAPI) -> Callable[[], Any]:
    """The app's RAG pipeline, built once per app on the first document call."""
    def pipeline() -> Any:
        with _lock:
            if app.state.rag is None:
                app.state.rag = build_rag(manager_of_app(app), app.state.settings)
            return app.state.rag
    return pipeline


def _read_upload(upload: UploadFile) -> tuple[bytes, str]:
    """The upload's bytes (an empty one is refused) and a safe file name for it."""
    data = upload.file.read()
    if not data:
        raise InvalidInputError(f"uploaded file {upload.filename!r} is empty")
    return data, safe_upload_name(upload.filename)  # keeps the extension, fits the disk


def save_upload(request: Request, namespace: str, upload: UploadFile, kind: str
                ) -> dict[str, str]:
    """Keep an uploaded file under ``<data_dir>/uploads/<kind>/``, named by content: its
    ``path``, and the ``name`` it is cited by (the file name it was uploaded with)."""
    data, name = _read_upload(upload)
    request.app.state.manager.browse.check_disk(2 * len(data))  # 507 before writing
    folder = upload_folder(request.app.state.settings.data_dir, kind, namespace, data)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if not path.exists():
        path.write_bytes(data)
    return {"path": str(path), "name": display_name(upload.filename, path.name)}


def temporary_upload(upload: UploadFile) -> dict[str, str]:
    """An uploaded query file in a temporary file (the caller removes it): its ``path``
    and ``name``."""
    data, name = _read_upload(upload)
    fd, path = tempfile.mkstemp(prefix="hm-upload-", suffix=Path(name).suffix)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return {"path": path, "name": display_name(upload.filename, name)}


def display_name(filename: str | None, fallback: str) -> str:
    """The name an uploaded file is cited by: the client's file name without any
    folder part or control characters (at most 200 characters)."""
    base = re.split(r"[\\/]", filename or "")[-1]
    clean = "".join(ch for ch in base if ch.isprintable()).strip()
    return clean[:200] or fallback
