"""Multimodal routes: add an image or audio file (upload or server path), search by
text, image or audio with a chosen target modality, image thumbnails.

These need perceptual memory (``perceptual.enabled: true`` and the ``multimodal``
extra); without it every route answers a 501 problem naming what to change.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, File, Form, Query, Request, Response, UploadFile
from pydantic import BaseModel, ConfigDict, Field

from hello_memory.api.app import Namespace, manager_of
from hello_memory.api.documents import allowed_path, save_upload
from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.memory.manager import MemoryManager, item_to_json
from hello_memory.memory.scoring import SearchHit
from hello_memory.stores.uploads import uploads_root
from hello_memory.types import MemoryType, Modality

__all__ = ["media_roots", "media_source", "perceptual_of", "router"]

router = APIRouter(prefix="/v1/media", tags=["multimodal"])
Manager = Annotated[MemoryManager, Depends(manager_of)]
MediaKind = Literal["image", "audio"]
Target = Literal["text", "image", "audio"]


def perceptual_of(mm: Manager) -> Any:
    """The manager's perceptual memory, or its PerceptualNotConfiguredError (a 501
    problem saying what to install and set)."""
    return mm.perceptual


Perceptual = Annotated[Any, Depends(perceptual_of)]


class MediaPath(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    modality: MediaKind
    caption: str | None = None
    importance: float = Field(0.5, ge=0, le=1)
    user_id: str | None = None
    session_id: str | None = None


class MediaSearch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(description="a text query")
    target_modality: Target = "image"
    top_k: int = Field(5, ge=1, le=100)
    min_importance: float | None = Field(None, ge=0, le=1)


def media_hit(hit: SearchHit, namespace: str) -> dict[str, Any]:
    item = hit.item
    meta = item.metadata
    out: dict[str, Any] = {
        "id": item.id, "score": hit.score, "modality": item.modality.value,
        "source": meta.get("source"), "caption": meta.get("caption"),
        "mime_type": meta.get("mime_type"), "breakdown": hit.breakdown.as_dict(),
        "memory": item_to_json(item)}
    if item.modality is Modality.IMAGE and meta.get("source"):
        out["thumbnail_url"] = (f"/v1/media/{item.id}/thumbnail?"
                                f"{urlencode({'namespace': namespace})}")
    return out


def media_roots(request: Request) -> list[Path]:
    """Where a media memory's file may lie: the uploads folder and ``api.read_dirs``."""
    settings = request.app.state.settings
    return [uploads_root(settings.data_dir).resolve(),
            *(Path(d).resolve() for d in settings.api.read_dirs)]


def media_source(request: Request, source: str) -> Path:
    """``source`` resolved, when it lies under :func:`media_roots`; else an
    InvalidInputError (400): a stored path pointing elsewhere is never opened."""
    if "\x00" in source:
        raise InvalidInputError("the stored source path holds a NUL character")
    try:
        path = Path(source).resolve()
    except (OSError, ValueError, RuntimeError):
        raise InvalidInputError("the stored source path cannot be resolved") from None
    if not any(path == root or root in path.parents for root in media_roots(request)):
        raise InvalidInputError("the stored source file lies outside the uploads folder and "
                                "api.read_dirs; it is not served")
    return path


@router.post("", status_code=201)
def add_upload(
    request: Request, namespace: Namespace, perceptual: Perceptual,
    file: Annotated[UploadFile, File(description="an image or audio file")],
    modality: Annotated[MediaKind, Form()],
    caption: Annotated[str | None, Form()] = None,
    importance: Annotated[float, Form(ge=0, le=1)] = 0.5,
    user_id: Annotated[str | None, Form()] = None,
    session_id: Annotated[str | None, Form()] = None,
) -> dict[str, Any]:
    """Store an uploaded image or audio file (kept under ``<data_dir>/uploads``)."""
    path = save_upload(request, namespace, file, "media")
    item = perceptual.add(namespace, modality=modality, source=str(path), caption=caption,
                          importance=importance, user_id=user_id, session_id=session_id)
    return item_to_json(item)


@router.post("/path", status_code=201)
def add_path(request: Request, body: MediaPath, namespace: Namespace,
             perceptual: Perceptual) -> dict[str, Any]:
    """Store an image or audio file that lies on the server (under ``api.read_dirs``)."""
    path = allowed_path(request, body.path)
    item = perceptual.add(namespace, modality=body.modality, source=str(path),
                          caption=body.caption, importance=body.importance,
                          user_id=body.user_id, session_id=body.session_id)
    return item_to_json(item)


@router.post("/search")
def search_text(body: MediaSearch, namespace: Namespace, perceptual: Perceptual
                ) -> dict[str, Any]:
    """Text -> image, text -> audio (or text -> text) search."""
    hits = perceptual.retrieve(namespace, body.query, target_modality=body.target_modality,
                               top_k=body.top_k, min_importance=body.min_importance)
    return {"hits": [media_hit(h, namespace) for h in hits]}


@router.post("/search/file")
def search_file(
    namespace: Namespace, perceptual: Perceptual,
    file: Annotated[UploadFile, File(description="the query image or audio")],
    modality: Annotated[MediaKind, Form(description="what the file is")],
    top_k: Annotated[int, Form(ge=1, le=100)] = 5,
) -> dict[str, Any]:
    """Image -> image or audio -> audio search with an uploaded query file."""
    data = file.file.read()
    if not data:
        raise InvalidInputError("the query file is empty")
    hits = perceptual.retrieve(namespace, data, query_modality=modality,
                               target_modality=modality, top_k=top_k)
    return {"hits": [media_hit(h, namespace) for h in hits]}


@router.get("/{memory_id}/thumbnail", response_class=Response,
            responses={200: {"content": {"image/png": {}}}})
def thumbnail(request: Request, memory_id: str, namespace: Namespace, perceptual: Perceptual,
              mm: Manager, size: Annotated[int, Query(ge=16, le=512)] = 128) -> Response:
    """A PNG thumbnail of an image memory (from its stored source file, which must lie
    under the uploads folder or ``api.read_dirs``)."""
    item = mm.stores.records.memories.get_item(namespace, memory_id)
    source = item.metadata.get("source")
    if item.memory_type is not MemoryType.PERCEPTUAL or item.modality is not Modality.IMAGE:
        raise InvalidInputError(f"memory {memory_id!r} is not an image")
    if not isinstance(source, str) or not source:
        raise NotFoundError(f"the source file of image {memory_id!r} is gone")
    path = media_source(request, source)
    if not path.is_file():
        raise NotFoundError(f"the source file of image {memory_id!r} is gone")
    source = str(path)
    from PIL import Image

    with Image.open(source) as img:
        img.thumbnail((size, size))
        buf = io.BytesIO()
        img.convert("RGB").save(buf, format="PNG")
    return Response(buf.getvalue(), media_type="image/png")
