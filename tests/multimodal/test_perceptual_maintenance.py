"""reconcile / reindex with perceptual memory configured: lost media and text vectors
come back from their sources, orphan points in the per-modality collections go, and a
vector whose source was given as bytes (not re-readable) is reported, never faked."""

from __future__ import annotations

import uuid
from pathlib import Path

from hello_memory.config import load_settings
from hello_memory.memory.manager import MemoryManager
from hello_memory.memory.perceptual import COLLECTIONS
from hello_memory.stores.bundle import DENSE
from hello_memory.types import Modality, VectorPoint

from .conftest import CLIP_ARCH, CLIP_DIM


def open_manager(data: Path, clip_checkpoint: Path) -> MemoryManager:
    settings = load_settings(environ={}, data_dir=data, perceptual={
        "enabled": True, "image": {"model": CLIP_ARCH, "pretrained": str(clip_checkpoint)}})
    return MemoryManager.open(settings)


def test_reconcile_and_reindex_cover_perceptual_collections(
    tmp_path: Path, clip_checkpoint: Path, media: dict[str, Path],
) -> None:
    mm = open_manager(tmp_path / "d", clip_checkpoint)
    try:
        assert mm.perceptual is not None
        img = mm.perceptual.add("u", modality="image", source=media["red"], caption="red")
        raw = mm.perceptual.add("u", modality="image", source=media["blue_circle"].read_bytes())
        note = mm.perceptual.add("u", modality="text", content="The photo shows our red logo.")
        mm.add("Our logo colour was chosen in 2021.", namespace="u")
        assert mm.reconcile().changed == 0

        vectors = mm.stores.vectors
        image_coll, text_coll = COLLECTIONS[Modality.IMAGE], COLLECTIONS[Modality.TEXT]
        vectors.delete(image_coll, [img.id, raw.id], namespace="u")
        vectors.delete(text_coll, [note.id], namespace="u")
        ghost = str(uuid.uuid4())
        vectors.upsert(image_coll, [VectorPoint(id=ghost, vectors={DENSE: [0.1] * CLIP_DIM},
                                                payload={"namespace": "u"})])
        report = mm.reconcile(namespace="u")
        assert report.orphan_vectors == [ghost]
        assert set(report.reindexed) == {img.id, note.id}
        assert set(report.skipped) == {raw.id} and "bytes" in report.skipped[raw.id]
        assert vectors.ids(image_coll, namespace="u") == {img.id}
        assert vectors.ids(text_coll, namespace="u") == {note.id}
        hit = mm.perceptual.retrieve("u", media["red"], query_modality="image", top_k=1)
        assert [h.id for h in hit] == [img.id]

        before = [h.id for h in mm.search("red logo", ["perceptual"], top_k=5, namespace="u")]
        rebuilt = mm.reindex(namespace="u")
        assert rebuilt.perceptual == 3 and rebuilt.orphan_vectors == 0
        assert [h.id for h in mm.search("red logo", ["perceptual"], top_k=5,
                                        namespace="u")] == before
    finally:
        mm.close()
