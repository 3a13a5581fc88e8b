"""Embedders: the :class:`Embedder` protocol and the sentence-transformers text embedder.

Importing this package is cheap: sentence-transformers (and torch) load only when a
model is first used.
"""

from __future__ import annotations

from hello_memory.embedding.base import Embedder
from hello_memory.embedding.sentence_transformer import (
    DEFAULT_TEXT_MODEL,
    SentenceTransformerEmbedder,
)

__all__ = ["DEFAULT_TEXT_MODEL", "Embedder", "SentenceTransformerEmbedder"]
