"""The benchmarks' embedding cache (benchmarks/corpus.py, issue 27 item 5): the 1M
corpus takes about 40 minutes to embed, so the cache is built chunk by chunk, an
interrupted build resumes from its last whole chunk, and what it finally holds is what
the model gives for the texts in one go. The model is the real default one (ONNX
int8 MiniLM); a wrapper only counts its calls and stops one run part way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import benchmarks.corpus as corpus_mod
from hello_memory.embedding import SentenceTransformerEmbedder


class _Counting:
    """The real model; counts the texts it encodes, and fails on call ``fail_on``."""

    def __init__(self, model: Any, fail_on: int | None = None) -> None:
        self.model, self.fail_on, self.calls, self.texts = model, fail_on, 0, 0

    def encode(self, texts: list[str], **kw: Any) -> Any:
        self.calls += 1
        if self.fail_on is not None and self.calls == self.fail_on:
            raise KeyboardInterrupt("stopped part way")
        self.texts += len(texts)
        return self.model.encode(texts, **kw)


@pytest.fixture(scope="module")
def model() -> Any:
    return SentenceTransformerEmbedder()._ensure_loaded()


def test_an_interrupted_cache_build_resumes_and_matches_one_encoding(
        model: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus_mod, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(corpus_mod, "CHUNK", 40)
    texts = corpus_mod.corpus(130)
    whole = np.asarray(model.encode(texts, batch_size=64, normalize_embeddings=True))

    # call 1 probes the dimension, 2 and 3 are chunks 0-40 and 40-80, 4 is stopped
    first = _Counting(model, fail_on=4)
    with pytest.raises(KeyboardInterrupt):
        corpus_mod.cached_embeddings(first, texts, 64, "t", progress=False)
    state = json.loads((tmp_path / "t.partial.json").read_text())
    assert state["done"] == 80

    second = _Counting(model)
    vecs = corpus_mod.cached_embeddings(second, texts, 64, "t", progress=False)
    assert second.texts == 1 + 50  # the probe, then only the chunks not done
    assert vecs.shape == (130, 384)
    assert np.abs(vecs - whole).max() < 1e-5
    assert not list(tmp_path.glob("t.partial.*"))  # the partial files are gone
    assert json.loads((tmp_path / "t.json").read_text())["n"] == 130

    third = _Counting(model)
    again = corpus_mod.cached_embeddings(third, texts, 64, "t", progress=False)
    assert third.calls == 0 and np.array_equal(again, vecs)  # read from the cache


def test_a_partial_file_of_other_texts_is_not_resumed(
        model: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus_mod, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(corpus_mod, "CHUNK", 40)
    other = corpus_mod.corpus(130, seed=3)
    with pytest.raises(KeyboardInterrupt):
        corpus_mod.cached_embeddings(_Counting(model, fail_on=3), other, 64, "t",
                                     progress=False)
    texts = corpus_mod.corpus(130)
    counting = _Counting(model)
    vecs = corpus_mod.cached_embeddings(counting, texts, 64, "t", progress=False)
    assert counting.texts == 1 + 130  # every chunk encoded again
    whole = np.asarray(model.encode(texts, batch_size=64, normalize_embeddings=True))
    assert np.abs(vecs - whole).max() < 1e-5
