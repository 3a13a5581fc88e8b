"""The embedder port: text in, one float32 vector per text out.

Backends: ``SentenceTransformerEmbedder`` (the default model, on ONNX Runtime or torch),
the packaged embedders (``embedding/packaged.py``), ``CoalescingEmbedder`` (the server's
batching wrapper), CLIP and CLAP for their text side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt


@runtime_checkable
class EmbedderPort(Protocol):
    """What the write path, the views, dedup and the RAG index call on an embedder."""

    @property
    def name(self) -> str:
        """The model's name, stored with the vectors (a different name asks for a
        reindex)."""
        ...

    @property
    def dimension(self) -> int:
        """The length of every vector this embedder returns."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One row per text, in order (documents: no query prompt)."""
        ...

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """The vector of a search query (with the model's query prompt, if any)."""
        ...
