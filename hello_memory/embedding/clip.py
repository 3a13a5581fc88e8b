"""CLIP image and text embeddings through open_clip, loaded lazily and never random.

``ClipEncoder`` puts images and texts into one vector space, so a text query can find
stored images. It satisfies the :class:`~hello_memory.embedding.base.Embedder` protocol
with its text tower (``embed``/``embed_query``) and adds :meth:`ClipEncoder.embed_images`.

Weights come from ``pretrained``: an open_clip pretrained tag (e.g. ``"laion2b_s34b_b79k"``
for ViT-B-32; needs the Hugging Face hub or its local cache) or the path of a local
checkpoint file (a state dict saved with ``torch.save``, ``.safetensors`` also works).
Without weights, or when they cannot be loaded, :class:`~hello_memory.errors.
ModelNotFoundError` names the setting to change: randomly initialised CLIP vectors
would look valid and silently poison the image collection.

Needs the ``multimodal`` extra (open_clip_torch, torchvision, pillow).
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.embedding.base import validate_texts
from hello_memory.errors import (
    EmbeddingError,
    EmptyContentError,
    HelloMemoryError,
    InvalidInputError,
    ModelNotFoundError,
)

__all__ = [
    "DEFAULT_CLIP_MODEL", "MAX_MEDIA_BYTES", "ClipEncoder", "MediaSource", "image_mime_type",
    "read_media",
]

DEFAULT_CLIP_MODEL = "ViT-B-32"
# A path, or the raw bytes of a file (e.g. an upload that never touched the disk).
MediaSource = str | Path | bytes
MAX_MEDIA_BYTES = 256 * 1024 * 1024  # one memory, not an archive: also bounds RAM use
_CHECKPOINT_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".ckpt", ".npz")


def validate_query(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidInputError(f"query must be a str, got {type(text).__name__}")
    if not text.strip():
        raise EmptyContentError("query is empty or whitespace only")
    return text


def validate_sources(sources: Sequence[MediaSource], what: str) -> list[MediaSource]:
    """A list of paths / bytes; a bare path or bytes object is refused (it would
    otherwise be iterated character by character)."""
    if isinstance(sources, (str, bytes, Path)):
        raise InvalidInputError(f"{what} must be a sequence of paths or bytes, not one item")
    try:
        items = list(sources)
    except TypeError as exc:
        raise InvalidInputError(f"{what} must be a sequence, got {type(sources).__name__}") from exc
    for i, src in enumerate(items):
        if not isinstance(src, (str, Path, bytes, bytearray)):
            raise InvalidInputError(
                f"{what}[{i}] must be a path or bytes, got {type(src).__name__}")
        if isinstance(src, (bytes, bytearray)) and not src:
            raise InvalidInputError(f"{what}[{i}] is empty (0 bytes)")
    return items


def describe(src: MediaSource, index: int, what: str) -> str:
    """How an error names one input: its path, or its position for raw bytes."""
    return repr(str(src)) if isinstance(src, (str, Path)) else f"{what}[{index}] (bytes)"


def open_media(src: MediaSource) -> Any:
    """A binary file object for a path or bytes; a missing path is the caller's error."""
    if isinstance(src, (bytes, bytearray)):
        return io.BytesIO(bytes(src))
    path = Path(src).expanduser()
    if not path.is_file():
        raise InvalidInputError(f"no such file: {str(path)!r}")
    return path.open("rb")


def read_media(source: MediaSource) -> tuple[bytes, str | None]:
    """A source's bytes and, for a file, its absolute path (stored to re-index later)."""
    path = None
    if isinstance(source, (str, Path)):
        p = Path(source).expanduser()
        if not p.is_file():
            raise InvalidInputError(f"source file {str(p)!r} does not exist")
        if p.stat().st_size > MAX_MEDIA_BYTES:  # checked before reading it into memory
            raise InvalidInputError(f"source {str(p)!r} is over {MAX_MEDIA_BYTES >> 20} MiB")
        source, path = p.read_bytes(), str(p.resolve())
    if not isinstance(source, (bytes, bytearray)):
        raise InvalidInputError(f"source must be a path or bytes, got {type(source).__name__}")
    if not source or len(source) > MAX_MEDIA_BYTES:
        raise InvalidInputError(f"source must hold 1 byte to {MAX_MEDIA_BYTES >> 20} MiB")
    return bytes(source), path


def finish(vectors: Any, n: int, name: str) -> npt.NDArray[np.float32]:
    """Torch output -> float32 array, L2-normalised, checked for shape and finiteness."""
    import torch

    out = torch.nn.functional.normalize(vectors.float(), dim=-1).cpu().numpy()
    arr = np.asarray(out, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[0] != n:
        raise EmbeddingError(f"{name} returned shape {arr.shape}, expected ({n}, d)")
    if not np.isfinite(arr).all():
        raise EmbeddingError(f"{name} produced non-finite values")
    return arr


def _decode_image(src: MediaSource, index: int) -> Any:
    """Fully decode one image to RGB (``load()`` forces truncated data to fail here)."""
    from PIL import Image

    label = describe(src, index, "images")
    try:
        with open_media(src) as fh, Image.open(fh) as img:
            img.load()
            return img.convert("RGB")
    except InvalidInputError:
        raise
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        # PIL reports unknown formats (UnidentifiedImageError), truncated files and
        # broken headers through these.
        raise InvalidInputError(f"cannot read image {label}: {exc}") from exc


def image_mime_type(data: bytes) -> str | None:
    """MIME type of encoded image bytes (e.g. ``image/png``), None if not an image."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as img:
            fmt = img.format
    except Exception:  # a probe: any failure just means "unknown"
        return None
    return Image.MIME.get(fmt or "") or (f"image/{fmt.lower()}" if fmt else None)


class ClipEncoder:
    """Image/text encoder over an open_clip model. No I/O until first use.

    The first call to :meth:`embed`, :meth:`embed_images`, :meth:`embed_query` or
    :attr:`dimension` loads the model (once, even under concurrent first calls).
    """

    def __init__(
        self,
        model: str = DEFAULT_CLIP_MODEL,
        pretrained: str | None = None,
        *,
        device: str = "cpu",
        batch_size: int = 32,
        setting_name: str = "perceptual.image.pretrained",
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError("the CLIP model name must be a non-empty string")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.model = model
        self.pretrained = pretrained
        self.device = device
        self.batch_size = batch_size
        self.setting_name = setting_name
        self._loaded: tuple[Any, Any, Any, int] | None = None  # model, preprocess, tok, dim
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, pretrained={self.pretrained!r})"

    @property
    def name(self) -> str:
        """``open_clip:<model>@<tag or absolute checkpoint path>`` (no load needed)."""
        weights = self.pretrained or "none"
        if self.pretrained and Path(self.pretrained).expanduser().exists():
            weights = str(Path(self.pretrained).expanduser().resolve())
        return f"open_clip:{self.model}@{weights}"

    @property
    def dimension(self) -> int:
        """Size of the shared image/text space (loads the model)."""
        return self._ensure_loaded()[3]

    # --- loading -------------------------------------------------------------------
    def _ensure_loaded(self) -> tuple[Any, Any, Any, int]:
        loaded = self._loaded
        if loaded is not None:  # fast path: no lock once loaded
            return loaded
        with self._lock:
            if self._loaded is None:  # another thread may have loaded it meanwhile
                self._loaded = self._load()
            return self._loaded

    def _weights(self) -> str:
        """The pretrained tag or checkpoint path, or ModelNotFoundError explaining why not."""
        p = self.pretrained
        if p is None or not str(p).strip():
            raise ModelNotFoundError(
                self.model, self.setting_name,
                "no CLIP weights configured (random weights are never used); give an "
                "open_clip pretrained tag or a local checkpoint file")
        local = Path(p).expanduser()
        looks_like_path = os.sep in p or p.startswith(("~", ".")) or p.endswith(
            _CHECKPOINT_SUFFIXES)
        if looks_like_path and not local.is_file():
            # Fail at once: open_clip would try it as a hub tag first.
            raise ModelNotFoundError(self.model, self.setting_name,
                                     f"checkpoint file {str(local)!r} does not exist")
        return str(local) if local.is_file() else p

    def _load(self) -> tuple[Any, Any, Any, int]:
        weights = self._weights()
        try:
            import open_clip
            import torch

            model, _, preprocess = open_clip.create_model_and_transforms(
                self.model, pretrained=weights, device=self.device)
            tokenizer = open_clip.get_tokenizer(self.model)
            model.eval()
            with torch.no_grad():  # the text tower's output size is the space's size
                dim = int(model.encode_text(tokenizer(["probe"]).to(self.device)).shape[-1])
        except HelloMemoryError:
            raise
        except ImportError as exc:
            raise ModelNotFoundError(
                self.model, self.setting_name,
                f"{exc}; install the multimodal extra: pip install 'hello-memory[multimodal]'",
            ) from exc
        except Exception as exc:  # open_clip raises RuntimeError, OSError, KeyError, ...
            raise ModelNotFoundError(
                self.model, self.setting_name, f"{type(exc).__name__}: {exc}".strip()) from exc
        return model, preprocess, tokenizer, dim

    # --- encoding ------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Text tower: float32 ``(len(texts), dimension)``, rows L2-normalised."""
        items = validate_texts(texts)  # before loading: bad input costs nothing
        model, _, tokenizer, dim = self._ensure_loaded()
        if not items:
            return np.zeros((0, dim), dtype=np.float32)
        import torch

        parts = []
        try:
            with torch.no_grad():
                for start in range(0, len(items), self.batch_size):
                    tokens = tokenizer(items[start:start + self.batch_size]).to(self.device)
                    parts.append(model.encode_text(tokens))
        except Exception as exc:
            raise EmbeddingError(f"{self.name} failed to encode {len(items)} texts: {exc}") from exc
        return finish(torch.cat(parts), len(items), self.name)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """One text query; shape ``(dimension,)``."""
        vectors: npt.NDArray[np.float32] = self.embed([validate_query(text)])
        return vectors[0]

    def embed_images(self, images: Sequence[MediaSource]) -> npt.NDArray[np.float32]:
        """Image tower: float32 ``(len(images), dimension)``, rows L2-normalised.

        Every image is decoded before any is encoded: an unreadable, corrupt or
        unsupported one raises InvalidInputError naming it, and nothing is returned.
        """
        items = validate_sources(images, "images")
        decoded = [_decode_image(src, i) for i, src in enumerate(items)]
        model, preprocess, _, dim = self._ensure_loaded()
        if not decoded:
            return np.zeros((0, dim), dtype=np.float32)
        import torch

        parts = []
        try:
            with torch.no_grad():
                for start in range(0, len(decoded), self.batch_size):
                    batch = torch.stack(
                        [preprocess(img) for img in decoded[start:start + self.batch_size]])
                    parts.append(model.encode_image(batch.to(self.device)))
        except Exception as exc:
            raise EmbeddingError(
                f"{self.name} failed to encode {len(decoded)} images: {exc}") from exc
        return finish(torch.cat(parts), len(decoded), self.name)
