"""Perceptual memory and its CLIP / CLAP encoders, offline, on random-weight checkpoints
(see conftest.py). Self-retrieval is meaningful with any fixed weights; text<->media
ranking is not, so those tests check plumbing only."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import numpy as np
import pytest

from hello_memory.embedding.clap import ClapEncoder
from hello_memory.embedding.clip import ClipEncoder
from hello_memory.errors import (
    ConfigError,
    DimensionMismatchError,
    InvalidInputError,
    ModelNotFoundError,
)
from hello_memory.memory.perceptual import COLLECTIONS, PerceptualMemory
from hello_memory.stores.records import ItemFilter
from hello_memory.stores.vector.base import CollectionSpec
from hello_memory.types import MemoryType, Modality

from .conftest import CLAP_DIM, CLIP_ARCH, CLIP_DIM, open_memory

NS = "tests"
IMAGES = ("red", "blue_circle", "stripes", "noise")
SOUNDS = ("a440", "chirp_stereo", "noise_burst")


def _unit_rows(arr: np.ndarray, n: int, d: int) -> None:
    assert arr.shape == (n, d) and arr.dtype == np.float32
    assert np.isfinite(arr).all()
    np.testing.assert_allclose(np.linalg.norm(arr, axis=1), 1.0, atol=1e-5)


def _counts(mem: PerceptualMemory, ns: str = NS) -> tuple[int, ...]:
    only = ItemFilter(memory_types=(MemoryType.PERCEPTUAL,))
    records = mem.records.memories.count_items(ns, only)
    return (records, *(mem.vectors.count(COLLECTIONS[m], namespace=ns) for m in Modality))


# --- encoders -------------------------------------------------------------------------
def test_clip_shapes_and_normalisation(clip_encoder: ClipEncoder, media: dict[str, Path]) -> None:
    assert clip_encoder.dimension == CLIP_DIM
    _unit_rows(clip_encoder.embed(["a red square", "a blue circle"]), 2, CLIP_DIM)
    images = clip_encoder.embed_images([media[k] for k in IMAGES])
    _unit_rows(images, len(IMAGES), CLIP_DIM)
    from_bytes = clip_encoder.embed_images([media["red"].read_bytes()])
    np.testing.assert_allclose(from_bytes[0], images[0], atol=1e-5)
    assert clip_encoder.embed_query("red").shape == (CLIP_DIM,)
    assert CLIP_ARCH in clip_encoder.name


def test_clap_shapes_and_normalisation(clap_encoder: ClapEncoder, media: dict[str, Path]) -> None:
    assert clap_encoder.dimension == CLAP_DIM
    _unit_rows(clap_encoder.embed(["a dog barking", "rain on a roof"]), 2, CLAP_DIM)
    # 16 kHz mono WAV, 44.1 kHz stereo FLAC, and a 12 s clip (two 10 s windows)
    sounds = clap_encoder.embed_audio([media["a440"], media["chirp_stereo"], media["long_hum"]])
    _unit_rows(sounds, 3, CLAP_DIM)
    from_bytes = clap_encoder.embed_audio([media["a440"].read_bytes()])
    np.testing.assert_allclose(from_bytes[0], sounds[0], atol=1e-5)
    assert clap_encoder.embed_query("a beep").shape == (CLAP_DIM,)


def test_encoders_refuse_corrupt_media(clip_encoder: ClipEncoder, clap_encoder: ClapEncoder,
                                       media: dict[str, Path], tmp_path: Path) -> None:
    truncated = tmp_path / "half.png"
    truncated.write_bytes(media["stripes"].read_bytes()[:200])
    with pytest.raises(InvalidInputError, match="images\\[1\\]"):
        clip_encoder.embed_images([media["red"], b"definitely not an image"])
    with pytest.raises(InvalidInputError, match="half.png"):
        clip_encoder.embed_images([truncated])
    with pytest.raises(InvalidInputError, match="audio\\[0\\]"):
        clap_encoder.embed_audio([b"RIFF\x00\x00garbage" * 10])
    with pytest.raises(InvalidInputError, match="no such file"):
        clap_encoder.embed_audio([tmp_path / "missing.wav"])
    with pytest.raises(InvalidInputError):
        clip_encoder.embed_images(str(media["red"]))  # type: ignore[arg-type]  # one path
    with pytest.raises(InvalidInputError):
        clap_encoder.embed([""])


def test_missing_weights_name_the_setting(tmp_path: Path, clap_checkpoint: Path) -> None:
    cases = [
        (ClipEncoder(CLIP_ARCH), "perceptual.image.pretrained"),
        (ClipEncoder(CLIP_ARCH, str(tmp_path / "nope.pt")), "perceptual.image.pretrained"),
        (ClapEncoder(), "perceptual.audio.checkpoint"),
        (ClapEncoder(checkpoint=str(tmp_path / "nope.pt")), "perceptual.audio.checkpoint"),
        (ClapEncoder(text_model="roberta", checkpoint=str(clap_checkpoint)),
         "perceptual.audio.checkpoint"),
    ]
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"\x00not a checkpoint" * 100)
    cases += [(ClipEncoder(CLIP_ARCH, str(junk)), "perceptual.image.pretrained"),
              (ClapEncoder(checkpoint=str(junk)), "perceptual.audio.checkpoint")]
    for encoder, setting in cases:
        with pytest.raises(ModelNotFoundError) as err:
            _ = encoder.dimension
        assert err.value.setting == setting and setting in str(err.value)


def test_unsafe_pickles_need_an_opt_in(tmp_path: Path) -> None:
    """A checkpoint torch's safe loader refuses (like the published CLAP ones, which
    pickle numpy objects) is only unpickled with allow_pickle=True."""
    import torch

    path = tmp_path / "numpy-inside.pt"
    torch.save({"state_dict": {"x": torch.zeros(1)}, "best": np.float64(0.5)}, path)
    with pytest.raises(ModelNotFoundError, match="allow_pickle"):
        _ = ClapEncoder(checkpoint=str(path)).dimension
    with pytest.raises(ModelNotFoundError, match="not a laion-clap checkpoint"):
        _ = ClapEncoder(checkpoint=str(path), allow_pickle=True).dimension  # unpickled


def test_lazy_load_happens_once_under_concurrency(clip_checkpoint: Path) -> None:
    encoder = ClipEncoder(CLIP_ARCH, pretrained=str(clip_checkpoint))
    calls = []
    real = encoder._load

    def counting() -> tuple[object, object, object, int]:
        calls.append(1)
        return real()

    encoder._load = counting  # type: ignore[method-assign]
    threads = [threading.Thread(target=lambda: encoder.dimension) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and encoder.dimension == CLIP_DIM


def test_roberta_checkpoint_loads_offline(clap_roberta_checkpoint: Path, tmp_path: Path,
                                          byte_level_tokenizer_dir: Path,
                                          media: dict[str, Path]) -> None:
    """The published checkpoints' layout builds without the hub; text needs the
    tokenizer files, and says which setting to change when they are missing."""
    no_tok = ClapEncoder(checkpoint=str(clap_roberta_checkpoint),
                         tokenizer=str(tmp_path / "no-tokenizer"))
    _unit_rows(no_tok.embed_audio([media["a440"]]), 1, CLAP_DIM)
    with pytest.raises(ModelNotFoundError) as err:
        no_tok.embed(["a dog"])
    assert err.value.setting == "perceptual.audio.tokenizer"
    no_tok._model = None  # free ~600 MB before the next load
    with_tok = ClapEncoder(checkpoint=str(clap_roberta_checkpoint),
                           tokenizer=str(byte_level_tokenizer_dir))
    _unit_rows(with_tok.embed(["a dog", "rain"]), 2, CLAP_DIM)


# --- perceptual memory ----------------------------------------------------------------
def test_one_collection_per_modality_with_its_dimension(memory: PerceptualMemory) -> None:
    for modality, dim in ((Modality.TEXT, 384), (Modality.IMAGE, CLIP_DIM),
                          (Modality.AUDIO, CLAP_DIM)):
        with pytest.raises(DimensionMismatchError) as err:
            memory.vectors.ensure_collection(
                CollectionSpec(name=COLLECTIONS[modality], dense={"dense": dim + 1}))
        assert err.value.expected == dim


def test_image_self_retrieval(memory: PerceptualMemory, media: dict[str, Path]) -> None:
    ids = {k: memory.add(NS, modality="image", source=media[k]).id for k in IMAGES}
    for key, memory_id in ids.items():
        hits = memory.retrieve(NS, media[key], query_modality="image", top_k=len(IMAGES))
        assert hits[0].id == memory_id
        assert {h.id for h in hits} == set(ids.values())
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert hits[0].breakdown.similarity == pytest.approx(1.0, abs=1e-4)
    by_bytes = memory.retrieve(NS, media["stripes"].read_bytes(), query_modality="image")
    assert by_bytes[0].id == ids["stripes"]


def test_audio_self_retrieval(memory: PerceptualMemory, media: dict[str, Path]) -> None:
    ids = {k: memory.add(NS, modality="audio", source=media[k]).id for k in SOUNDS}
    for key, memory_id in ids.items():
        hits = memory.retrieve(NS, media[key], query_modality="audio", target_modality="audio")
        assert hits[0].id == memory_id
        assert all(h.item.modality is Modality.AUDIO for h in hits)


def test_text_queries_reach_every_collection(memory: PerceptualMemory,
                                             media: dict[str, Path]) -> None:
    image = memory.add(NS, modality="image", source=media["red"], caption="a red square")
    sound = memory.add(NS, modality="audio", source=media["a440"], caption="a 440 Hz beep")
    note = memory.add(NS, modality="text", content="The meeting moved to Tuesday")
    for target, expected in (("image", image), ("audio", sound), ("text", note)):
        hits = memory.retrieve(NS, "something red that beeps", target_modality=target)
        assert [h.id for h in hits] == [expected.id]
        assert math.isfinite(hits[0].score) and 0.0 <= hits[0].breakdown.similarity <= 1.0


def test_text_to_text_ranks_by_meaning(memory: PerceptualMemory) -> None:
    texts = ["The cat sleeps on the sofa all afternoon",
             "Quarterly revenue grew by ten percent",
             "Knead the sourdough and let it rise overnight"]
    ids = [memory.add(NS, modality=Modality.TEXT, content=t).id for t in texts]
    assert memory.retrieve(NS, "a kitten napping on the couch")[0].id == ids[0]
    assert memory.retrieve(NS, "how do I bake bread?")[0].id == ids[2]
    assert memory.retrieve(NS, "company earnings went up")[0].id == ids[1]


def test_records_and_payloads(memory: PerceptualMemory, media: dict[str, Path]) -> None:
    img = memory.add(NS, modality="image", source=media["red"], caption="red", importance=0.9,
                     user_id="u1", metadata={"album": "colours"})
    assert img.content == "red" and img.memory_type is MemoryType.PERCEPTUAL
    assert img.metadata["source"] == str(media["red"].resolve())
    assert img.metadata["mime_type"] == "image/png" and img.metadata["album"] == "colours"
    assert len(img.metadata["source_sha256"]) == 64
    raw = memory.add(NS, modality="audio", source=media["a440"].read_bytes())
    assert raw.metadata["source"] is None and raw.metadata["mime_type"] == "audio/wav"
    assert raw.content.startswith("audio sha256:")
    named = memory.add(NS, modality="image", source=media["stripes"])
    assert named.content == "stripes.png"
    stored = memory.records.memories.get_item(NS, img.id)
    assert stored.metadata == img.metadata and stored.modality is Modality.IMAGE
    point = memory.vectors.retrieve(COLLECTIONS[Modality.IMAGE], [img.id], namespace=NS)[0]
    assert point.payload["source"] == img.metadata["source"]
    assert point.payload["memory_type"] == "perceptual" and point.payload["user_id"] == "u1"
    assert memory.records.outbox.pending_outbox() == []
    assert memory.retrieve(NS, media["red"], query_modality="image", user_id="u2") == []
    assert memory.retrieve(NS, media["red"], query_modality="image",
                           min_importance=0.95) == []
    assert memory.count(NS, "image") == 2 and memory.count(NS) == 3


def test_invalid_input_writes_nothing(memory: PerceptualMemory, media: dict[str, Path],
                                      tmp_path: Path) -> None:
    memory.add(NS, modality="image", source=media["red"])
    before = _counts(memory)
    bad_calls = [
        dict(modality="image", source=b"\x89PNG\r\n\x1a\n broken"),
        dict(modality="audio", source=b"RIFF....WAVEfmt garbage"),
        dict(modality="image", source=tmp_path / "missing.png"),
        dict(modality="image", source=media["red"], content="text belongs to text memories"),
        dict(modality="text", content="hello", source=media["red"]),
        dict(modality="text", content="   "),
        dict(modality="video", content="nope"),
        dict(modality="image", source=media["red"], importance=1.5),
        dict(modality="image", source=media["red"], metadata={"source": "spoofed"}),
        dict(modality="audio", source=media["red"]),  # an image is no audio
    ]
    for kwargs in bad_calls:
        with pytest.raises(InvalidInputError):
            memory.add(NS, **kwargs)  # type: ignore[arg-type]
    assert _counts(memory) == before
    assert memory.records.outbox.pending_outbox() == []


def test_unsupported_query_combinations(memory: PerceptualMemory, media: dict[str, Path]) -> None:
    with pytest.raises(InvalidInputError, match="image query can only search image"):
        memory.retrieve(NS, media["red"], query_modality="image", target_modality="text")
    with pytest.raises(InvalidInputError, match="audio query can only search audio"):
        memory.retrieve(NS, media["a440"], query_modality="audio", target_modality="image")
    with pytest.raises(InvalidInputError):
        memory.retrieve(NS, b"bytes are no text query")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        memory.retrieve(NS, "red", target_modality="image", top_k=0)


def test_missing_encoder_is_a_config_error(tmp_path: Path, text_embedder: object,
                                           media: dict[str, Path]) -> None:
    mem = open_memory(tmp_path, text_embedder=text_embedder, clip=None, clap=None)  # type: ignore[arg-type]
    try:
        with pytest.raises(ConfigError, match="perceptual.image.pretrained"):
            mem.add(NS, modality="image", source=media["red"])
        with pytest.raises(ConfigError, match="perceptual.audio.checkpoint"):
            mem.retrieve(NS, "a beep", target_modality="audio")
        assert mem.add(NS, modality="text", content="text still works").content
        assert mem.count(NS) == 1
    finally:
        mem.close()


def test_namespace_isolation(memory: PerceptualMemory, media: dict[str, Path]) -> None:
    a = memory.add("alice", modality="image", source=media["red"])
    b = memory.add("bob", modality="image", source=media["red"])
    assert [h.id for h in memory.retrieve("alice", media["red"], query_modality="image")] == [a.id]
    assert memory.remove("alice", b.id) is False  # bob's memory is invisible to alice
    assert memory.clear("alice") == 1
    assert memory.count("alice") == 0 and memory.count("bob") == 1
    assert [h.id for h in memory.retrieve("bob", media["red"], query_modality="image")] == [b.id]


def test_remove_and_clear(memory: PerceptualMemory, media: dict[str, Path]) -> None:
    img = memory.add(NS, modality="image", source=media["red"])
    snd = memory.add(NS, modality="audio", source=media["a440"])
    memory.add(NS, modality="text", content="a note")
    assert memory.remove(NS, img.id) is True
    assert memory.remove(NS, img.id) is False
    assert _counts(memory) == (2, 1, 0, 1)
    assert memory.records.outbox.pending_outbox() == []
    assert memory.retrieve(NS, media["red"], query_modality="image") == []
    assert memory.clear(NS) == 2
    assert _counts(memory) == (0, 0, 0, 0)
    assert memory.records.outbox.pending_outbox() == []
    assert memory.retrieve(NS, media["a440"], query_modality="audio") == []
    assert snd.id not in memory.records.memories.all_ids(NS)


def test_persistence_across_reopen(tmp_path: Path, text_embedder: object, media: dict[str, Path],
                                   clip_encoder: ClipEncoder, clap_encoder: ClapEncoder) -> None:
    kw = dict(text_embedder=text_embedder, clip=clip_encoder, clap=clap_encoder, on_disk=True)
    mem = open_memory(tmp_path, **kw)  # type: ignore[arg-type]
    img = mem.add(NS, modality="image", source=media["blue_circle"], caption="blue")
    snd = mem.add(NS, modality="audio", source=media["noise_burst"])
    txt = mem.add(NS, modality="text", content="Remember the blue circle")
    mem.close()
    again = open_memory(tmp_path, **kw)  # type: ignore[arg-type]
    try:
        assert again.count(NS) == 3
        assert again.retrieve(NS, media["blue_circle"], query_modality="image")[0].id == img.id
        assert again.retrieve(NS, media["noise_burst"], query_modality="audio")[0].id == snd.id
        assert again.retrieve(NS, "the blue circle")[0].id == txt.id
    finally:
        again.close()


def test_reindex_restores_missing_vectors(memory: PerceptualMemory, media: dict[str, Path],
                                          tmp_path: Path) -> None:
    copy = tmp_path / "copy.png"
    copy.write_bytes(media["noise"].read_bytes())
    by_path = memory.add(NS, modality="image", source=media["stripes"])
    by_bytes = memory.add(NS, modality="image", source=media["red"].read_bytes())
    changed = memory.add(NS, modality="image", source=copy)
    text = memory.add(NS, modality="text", content="a remembered sentence")
    kept = memory.add(NS, modality="audio", source=media["a440"])
    copy.write_bytes(media["red"].read_bytes())  # the file changes after it was stored
    for item in (by_path, by_bytes, changed):
        memory.vectors.delete(COLLECTIONS[Modality.IMAGE], [item.id], namespace=NS)
    memory.vectors.delete(COLLECTIONS[Modality.TEXT], [text.id], namespace=NS)
    report = memory.reindex([by_path, by_bytes, changed, text, kept])
    assert sorted(report.reindexed) == sorted([by_path.id, text.id])
    assert report.present == [kept.id]
    assert "bytes" in report.skipped[by_bytes.id] and "changed" in report.skipped[changed.id]
    assert memory.retrieve(NS, media["stripes"], query_modality="image")[0].id == by_path.id
    assert memory.retrieve(NS, "a remembered sentence")[0].id == text.id


def test_outbox_replay_through_stores(memory: PerceptualMemory, media: dict[str, Path]) -> None:
    """Registered as the PERCEPTUAL indexer, replayed rows go to the modality
    collections, never to the text collection of the other memory types."""
    from hello_memory.stores.bundle import MEMORY_COLLECTION, Stores
    from hello_memory.stores.graph.sqlite import SQLiteGraphStore

    stores = Stores(memory.records, memory.vectors, SQLiteGraphStore(memory.records.engine),
                    memory.text_embedder)
    stores.register_indexer(MemoryType.PERCEPTUAL, memory)
    stores.open()
    item = memory.add(NS, modality="image", source=media["stripes"])
    memory.vectors.delete(COLLECTIONS[Modality.IMAGE], [item.id], namespace=NS)
    stores.update(NS, item.id, importance=0.8)  # an outbox row, replayed at once
    point = memory.vectors.retrieve(COLLECTIONS[Modality.IMAGE], [item.id], namespace=NS)
    assert point and point[0].payload["importance"] == 0.8
    assert memory.vectors.count(MEMORY_COLLECTION, namespace=NS) == 0
    assert stores.delete(NS, [item.id]) == 1
    assert memory.vectors.count(COLLECTIONS[Modality.IMAGE], namespace=NS) == 0
