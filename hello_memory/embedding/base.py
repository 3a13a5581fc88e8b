"""The ``Embedder`` protocol: a name, a fixed output dimension, batch encoding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder"]


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
