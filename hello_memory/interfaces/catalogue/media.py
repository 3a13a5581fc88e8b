"""The multimodal (media) operations: add an image or audio file (a path on this
machine, or REST's upload), search by text with a chosen target modality (text ->
image, audio or text), search by an uploaded image or audio file, and an image's PNG
thumbnail (REST's binary answer).

Each needs perceptual memory (``perceptual.enabled: true`` and the ``multimodal``
extra): without it ``MemoryManager.perceptual`` raises PerceptualNotConfiguredError,
a 501 problem over REST naming what to install and set. A path a caller names is read
only under the interface's folders (:func:`~hello_memory.interfaces.catalogue.documents.
confined`); the thumbnail opens a stored source file only under the uploads folder or
those folders. A media hit is ``hit_to_json`` plus its modality, source, caption, MIME
type and, for an image with a stored file, ``thumbnail_url`` (REST's route).
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote, urlencode

from pydantic import Field

from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.interfaces.catalogue.core import Call, Operation, Request, Rest
from hello_memory.interfaces.catalogue.documents import SavedUpload, confined, resolve_under
from hello_memory.memory.manager import hit_to_json, item_to_json, perceptual_off_error
from hello_memory.types import MemoryItem, MemoryType, Modality

if TYPE_CHECKING:
    from hello_memory.memory.scoring import SearchHit

__all__ = ["MEDIA_OPERATIONS", "MediaFound", "MediaPath", "MediaSearch", "media_hit_json",
           "media_roots"]

MediaKind = Literal["image", "audio"]
Target = Literal["text", "image", "audio"]


class _MediaFields(Request):
    modality: MediaKind = Field(description="What the file is: image or audio.")
    caption: str | None = Field(None, description="A caption (also the memory's text).")
    importance: float = Field(0.5, ge=0, le=1)
    user_id: str | None = None
    session_id: str | None = None


class MediaPath(_MediaFields):
    path: str = Field(description="An image or audio file on this machine, under the "
                      "folders this interface may read.")


class MediaUpload(_MediaFields):
    file: SavedUpload = Field(description="an image or audio file")


class MediaSearch(Request):
    query: str = Field(description="a text query")
    target_modality: Target = Field("image", description="What to find: image, audio "
                                    "or text memories.")
    top_k: int = Field(5, ge=1, le=100)
    min_importance: float | None = Field(None, ge=0, le=1)


class MediaFileSearch(Request):
    file: SavedUpload = Field(description="the query image or audio")
    modality: MediaKind = Field(description="what the file is")
    top_k: int = Field(5, ge=1, le=100)


class Thumbnail(Request):
    memory_id: str = Field(description="An image memory's id.")
    size: int = Field(128, ge=16, le=512, description="The longest side, in pixels.")


@dataclass(frozen=True)
class MediaFound:
    """A media search's hits, with the namespace their thumbnail URLs name."""

    namespace: str
    hits: list[SearchHit]


def media_roots(call: Call) -> list[Path]:
    """Where a media memory's stored file may lie: the uploads folder and the folders
    the interface may read."""
    from hello_memory.services.browse import uploads_root

    roots = [uploads_root(call.settings.data_dir)] if call.settings is not None else []
    return [*roots, *map(Path, call.readable_dirs())]


# --- handlers: one facade call each -----------------------------------------------------
def _add(call: Call, req: _MediaFields, source: Path) -> MemoryItem:
    # 507 before the encoder runs (the record store refuses the write anyway; this
    # spares the CLIP / CLAP work: hello_memory/stores/disk.py)
    call.manager.browse.check_disk(source.stat().st_size if source.is_file() else 0)
    return call.manager.perceptual.add(
        call.namespace, modality=req.modality, source=str(source), caption=req.caption,
        importance=req.importance, user_id=req.user_id, session_id=req.session_id)


def add_media_path(call: Call, req: MediaPath) -> MemoryItem:
    perceptual_on(call)  # 501 before the path is looked at
    return _add(call, req, confined(call, req.path))


def add_media_upload(call: Call, req: MediaUpload) -> MemoryItem:
    return _add(call, req, Path(req.file.path))


def search_media(call: Call, req: MediaSearch) -> MediaFound:
    hits = call.manager.perceptual.retrieve(
        call.namespace, req.query, target_modality=req.target_modality, top_k=req.top_k,
        min_importance=req.min_importance)
    return MediaFound(call.namespace, hits)


def search_media_file(call: Call, req: MediaFileSearch) -> MediaFound:
    perceptual = call.manager.perceptual
    hits = perceptual.retrieve(call.namespace, Path(req.file.path).read_bytes(),
                               query_modality=req.modality, target_modality=req.modality,
                               top_k=req.top_k)
    return MediaFound(call.namespace, hits)


def _stored_file(call: Call, source: str) -> Path:
    """``source`` resolved, when it lies under :func:`media_roots`; else an
    InvalidInputError (400): a stored path pointing elsewhere is never opened."""
    path = resolve_under(source, media_roots(call), "the stored source path")
    if path is None:
        raise InvalidInputError("the stored source file lies outside the uploads folder and "
                                "api.read_dirs; it is not served")
    return path


def _image_file(call: Call, item: MemoryItem) -> Path:
    """An image memory's stored file, when it still lies under :func:`media_roots`."""
    if item.memory_type is not MemoryType.PERCEPTUAL or item.modality is not Modality.IMAGE:
        raise InvalidInputError(f"memory {item.id!r} is not an image")
    source = item.metadata.get("source")
    path = _stored_file(call, source) if isinstance(source, str) and source else None
    if path is None or not path.is_file():
        raise NotFoundError(f"the source file of image {item.id!r} is gone")
    return path


def media_thumbnail(call: Call, req: Thumbnail) -> bytes:
    """A PNG of the image memory's stored file, its longest side at most ``size``."""
    perceptual_on(call)
    path = _image_file(call, call.manager.get(req.memory_id, namespace=call.namespace))
    from PIL import Image

    with Image.open(path) as img:
        img.thumbnail((req.size, req.size))
        buf = io.BytesIO()
        img.convert("RGB").save(buf, format="PNG")
    return buf.getvalue()


def perceptual_on(call: Call) -> None:
    """Perceptual memory is configured, else its PerceptualNotConfiguredError (501): a
    handler's first check, and REST's before it keeps an upload."""
    if not call.manager.has_perceptual:
        raise perceptual_off_error()


# --- serialisers --------------------------------------------------------------------------
def media_hit_json(hit: SearchHit, namespace: str) -> dict[str, Any]:
    """:func:`hit_to_json` plus the media fields (module doc)."""
    item, meta = hit.item, hit.item.metadata
    out = {**hit_to_json(hit), "modality": item.modality.value, "source": meta.get("source"),
           "caption": meta.get("caption"), "mime_type": meta.get("mime_type")}
    if item.modality is Modality.IMAGE and meta.get("source"):
        out["thumbnail_url"] = (f"/v1/media/{quote(item.id, safe='')}/thumbnail?"
                                f"{urlencode({'namespace': namespace})}")
    return out


def found_json(found: MediaFound) -> dict[str, Any]:
    return {"hits": [media_hit_json(h, found.namespace) for h in found.hits]}


def png_json(png: bytes) -> dict[str, Any]:
    return {"media_type": "image/png", "png_base64": base64.b64encode(png).decode("ascii")}


def png_response(png: bytes, call: Call) -> Any:
    from starlette.responses import Response

    return Response(png, media_type="image/png")


_UPLOAD_ONLY = ("a multipart file upload is REST's; the other interfaces name a file on "
                "this machine (add_media_path)")
_QUERY_UPLOAD = ("a multipart query file is REST's; the other interfaces search by text "
                 "(search_media)")
_PNG_ONLY = "a binary PNG answer for a browser or a UI, not a tool answer"

MEDIA_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "add_media_upload", "Store an uploaded image or audio file (kept under "
        "<data_dir>/uploads).",
        MediaUpload, add_media_upload, item_to_json, "write",
        Rest("POST", "/media", 201, upload="file", before=perceptual_on),
        not_on={"mcp": _UPLOAD_ONLY, "tool": _UPLOAD_ONLY}, area="media"),
    Operation(
        "add_media_path", "Store an image or audio file that lies on this machine (only "
        "under the folders this interface may read: REST and MCP api.read_dirs, the "
        "MemoryTool its roots).",
        MediaPath, add_media_path, item_to_json, "write", Rest("POST", "/media/path", 201),
        description="Needs perceptual memory (the multimodal extra).", area="media"),
    Operation(
        "search_media", "Search image, audio or text memories by a text query "
        "(text -> image, text -> audio, text -> text).",
        MediaSearch, search_media, found_json, "read", Rest("POST", "/media/search"),
        description="Each hit is a search hit plus modality, source, caption, mime_type "
        "and, for an image, thumbnail_url (REST's PNG route).", area="media"),
    Operation(
        "search_media_file", "Image -> image or audio -> audio search with an uploaded "
        "query file (not kept).",
        MediaFileSearch, search_media_file, found_json, "read",
        Rest("POST", "/media/search/file", upload="file", keep_upload=False,
             before=perceptual_on),
        not_on={"mcp": _QUERY_UPLOAD, "tool": _QUERY_UPLOAD}, area="media"),
    Operation(
        "media_thumbnail", "A PNG thumbnail of an image memory (from its stored file, "
        "which must lie under the uploads folder or api.read_dirs).",
        Thumbnail, media_thumbnail, png_json, "read",
        Rest("GET", "/media/{memory_id}/thumbnail", respond=png_response,
             respond_type="image/png"),
        not_on={"mcp": _PNG_ONLY, "tool": _PNG_ONLY}, area="media"),
)
