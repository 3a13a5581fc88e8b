"""Perceptual memory behind the MemoryManager, configured from settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from hello_memory.config import load_settings
from hello_memory.errors import InvalidInputError
from hello_memory.memory.manager import MemoryManager
from hello_memory.types import MemoryType, Modality

from .conftest import CLIP_ARCH


def open_manager(data: Path, clip_checkpoint: Path, clap_checkpoint: Path) -> MemoryManager:
    settings = load_settings(environ={}, data_dir=data, perceptual={
        "enabled": True,
        "image": {"model": CLIP_ARCH, "pretrained": str(clip_checkpoint)},
        "audio": {"model": "HTSAT-tiny", "checkpoint": str(clap_checkpoint)},
    })
    return MemoryManager.open(settings)


def test_manager_routes_perceptual_memories(tmp_path: Path, clip_checkpoint: Path,
                                           clap_checkpoint: Path, media: dict[str, Path]) -> None:
    mm = open_manager(tmp_path / "d", clip_checkpoint, clap_checkpoint)
    assert mm.perceptual is not None
    img = mm.perceptual.add("u", modality="image", source=media["red"], caption="a red square")
    snd = mm.perceptual.add("u", modality="audio", source=media["a440"], caption="a 440 Hz tone")
    note = mm.perceptual.add("u", modality="text", content="The photo shows our red logo.")
    mm.add("Our logo colour was chosen in 2021.", "episodic", namespace="u")
    with pytest.raises(InvalidInputError, match="perceptual"):
        mm.add("x", "perceptual", namespace="u")
    hits = mm.search("red logo", ["perceptual"], top_k=10, namespace="u")
    assert {h.id for h in hits} == {img.id, snd.id, note.id}  # one search, three modalities
    assert all(h.memory_type == MemoryType.PERCEPTUAL for h in hits)
    assert mm.stats("u")["by_type"]["perceptual"] == 3
    by_image = mm.perceptual.retrieve("u", media["red"], query_modality="image", top_k=1)
    assert by_image[0].id == img.id
    assert mm.remove(snd.id, namespace="u") is True
    assert mm.perceptual.count("u", Modality.AUDIO) == 0
    mm.close()
    # restart: records and the per-modality collections persist
    mm = open_manager(tmp_path / "d", clip_checkpoint, clap_checkpoint)
    assert mm.perceptual is not None
    assert mm.perceptual.count("u", Modality.IMAGE) == 1
    assert mm.stats("u")["by_type"]["perceptual"] == 2
    assert mm.clear("u", confirm=True)["records"] == 3
    assert mm.perceptual.count("u") == 0
    mm.close()


def test_hybrid_search_fuses_perceptual_memories(tmp_path: Path, clip_checkpoint: Path,
                                                 clap_checkpoint: Path,
                                                 media: dict[str, Path]) -> None:
    """With perceptual memory configured, the hybrid retriever searches images and audio
    as one more dense view and scores them with the perceptual profile after fusion."""
    from hello_memory.retrieval.hybrid import HybridRetriever

    mm = open_manager(tmp_path / "d", clip_checkpoint, clap_checkpoint)
    assert mm.perceptual is not None
    img = mm.perceptual.add("u", modality="image", source=media["red"], caption="a red square",
                            session_id="s1")
    snd = mm.perceptual.add("u", modality="audio", source=media["a440"],
                            caption="a 440 Hz tone", session_id="s2")
    text = mm.add("Our logo is a red square.", "episodic", namespace="u", session_id="s1")
    with HybridRetriever(mm) as retriever:
        hits = retriever.retrieve("red square logo", 10, namespace="u")
        by_id = {h.id: h for h in hits}
        assert {img.id, snd.id, text.id} <= set(by_id)
        assert by_id[img.id].memory_type == MemoryType.PERCEPTUAL
        assert "perceptual" in by_id[img.id].views and "perceptual" not in by_id[text.id].views
        assert "perceptual" in retriever.explain(by_id[img.id])
        only_text = retriever.retrieve("red square logo", 10, namespace="u",
                                     memory_types=["episodic"])
        assert {h.id for h in only_text} == {text.id}
        # the caller's filters hold for media too
        s1 = retriever.retrieve("red square logo", 10, namespace="u", session_id="s1")
        assert snd.id not in {h.id for h in s1} and img.id in {h.id for h in s1}
        assert retriever.retrieve("red square logo", 10, namespace="other") == []
    mm.close()
