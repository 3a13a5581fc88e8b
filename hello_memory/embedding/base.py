"""The ``Embedder`` protocol: a name, a fixed output dimension, batch encoding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from hello_memory.errors import EmptyContentError, InvalidInputError

__all__ = ["Embedder", "validate_texts"]


# Not runtime_checkable: on Python < 3.12 an isinstance() check reads the
# `dimension` property, which would load the model.
class Embedder(Protocol):
    @property
    def name(self) -> str:
        """Model identifier, stored with collections so a model change is detected."""

    @property
    def dimension(self) -> int:
        """Size of every vector this embedder returns."""

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Encode a batch; returns an array of shape (len(texts), dimension), float32,
        finite. Raises InvalidInputError for empty strings."""

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Encode one query; shape (dimension,)."""


def validate_texts(texts: Sequence[str]) -> list[str]:
    """The text checks every embedder applies: a real sequence of non-empty strings."""
    if isinstance(texts, (str, bytes)):
        raise InvalidInputError("embed() takes a sequence of strings, not a single string")
    try:
        items = list(texts)
    except TypeError as exc:
        raise InvalidInputError(
            f"embed() takes a sequence of strings, got {type(texts).__name__}") from exc
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise InvalidInputError(f"texts[{i}] must be a str, got {type(text).__name__}")
        if not text.strip():
            raise EmptyContentError(f"texts[{i}] is empty or whitespace only")
    return items
