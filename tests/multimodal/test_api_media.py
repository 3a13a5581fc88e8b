"""The REST media routes over HTTP (httpx ASGI transport) with perceptual memory on:
uploads and server paths, text -> image / audio, image -> image, audio -> audio,
thumbnails. Random-weight encoders (see conftest): same-file retrieval is meaningful,
cross-modal ranking is plumbing only."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from asgi_client import AsgiApi  # tests/ is on sys.path

from hello_memory.api import create_app
from hello_memory.config import load_settings
from hello_memory.memory.manager import MemoryManager

from .conftest import CLIP_ARCH

H = {"Authorization": "Bearer k"}
NS = {"namespace": "u"}



@pytest.fixture
def api(tmp_path: Path, clip_checkpoint: Path, clap_checkpoint: Path,
        media: dict[str, Path]) -> Any:
    settings = load_settings(environ={}, data_dir=tmp_path / "d", perceptual={
        "enabled": True,
        "image": {"model": CLIP_ARCH, "pretrained": str(clip_checkpoint)},
        "audio": {"model": "HTSAT-tiny", "checkpoint": str(clap_checkpoint)},
    }, api={"api_keys": {"k": ["u"]}, "read_dirs": [str(media["red"].parent)]})
    mm = MemoryManager.open(settings)
    yield AsgiApi(create_app(settings, manager=mm), headers=H), settings
    mm.close()


def test_media_routes(api: Any, media: dict[str, Path], tmp_path: Path) -> None:
    call, settings = api
    up = call("POST", "/v1/media", params=NS, data={"modality": "image", "caption": "red"},
              files={"file": ("red.png", media["red"].read_bytes(), "image/png")})
    assert up.status_code == 201, up.text
    red = up.json()
    assert red["modality"] == "image" and red["metadata"]["mime_type"] == "image/png"
    stored = Path(red["metadata"]["source"])
    assert stored.is_file() and Path(settings.data_dir).resolve() in stored.resolve().parents
    stripes = call("POST", "/v1/media/path", params=NS,
                   json={"path": str(media["stripes"]), "modality": "image"}).json()
    tone = call("POST", "/v1/media/path", params=NS,
                json={"path": str(media["a440"]), "modality": "audio",
                      "caption": "a 440 Hz tone"}).json()
    noise = call("POST", "/v1/media", params=NS, data={"modality": "audio"},
                 files={"file": ("n.wav", media["noise_burst"].read_bytes(), "audio/wav")})
    assert noise.status_code == 201

    by_image = call("POST", "/v1/media/search/file", params=NS, data={"modality": "image"},
                    files={"file": ("q.png", media["stripes"].read_bytes(), "image/png")})
    hits = by_image.json()["hits"]
    assert hits[0]["id"] == stripes["id"] and {h["modality"] for h in hits} == {"image"}
    by_audio = call("POST", "/v1/media/search/file", params=NS, data={"modality": "audio"},
                    files={"file": ("q.wav", media["a440"].read_bytes(), "audio/wav")})
    assert by_audio.json()["hits"][0]["id"] == tone["id"]
    assert by_audio.json()["hits"][0]["caption"] == "a 440 Hz tone"

    to_images = call("POST", "/v1/media/search", params=NS,
                     json={"query": "a red square", "target_modality": "image"}).json()["hits"]
    assert {h["id"] for h in to_images} == {red["id"], stripes["id"]}
    assert all(h["source"] and h["thumbnail_url"] for h in to_images)
    to_audio = call("POST", "/v1/media/search", params=NS,
                    json={"query": "a beep", "target_modality": "audio"}).json()["hits"]
    assert {h["modality"] for h in to_audio} == {"audio"} and len(to_audio) == 2

    thumb = call("GET", to_images[0]["thumbnail_url"] + "&size=32")
    assert thumb.status_code == 200 and thumb.headers["content-type"] == "image/png"
    from PIL import Image

    assert max(Image.open(io.BytesIO(thumb.content)).size) <= 32

    outside = tmp_path / "elsewhere.png"
    outside.write_bytes(media["red"].read_bytes())
    refused = call("POST", "/v1/media/path", params=NS,
                   json={"path": str(outside), "modality": "image"})
    assert refused.status_code == 400 and "read_dirs" in refused.json()["detail"]
    bad = call("POST", "/v1/media", params=NS, data={"modality": "image"},
               files={"file": ("x.png", b"not an image at all", "image/png")})
    assert bad.status_code == 400 and bad.headers["content-type"].startswith(
        "application/problem+json")
    assert call("GET", "/v1/stats", params=NS).json()["by_type"]["perceptual"] == 4


def test_media_source_cannot_be_repointed(tmp_path: Path, clip_checkpoint: Path,
                                          clap_checkpoint: Path,
                                          media: dict[str, Path]) -> None:
    """Issue 19: PATCH cannot rewrite an image memory's stored file path, and the
    thumbnail route opens nothing outside the uploads folder and api.read_dirs (a
    source put there some other way, here through the library, is refused)."""
    settings = load_settings(environ={}, data_dir=tmp_path / "d", perceptual={
        "enabled": True,
        "image": {"model": CLIP_ARCH, "pretrained": str(clip_checkpoint)},
        "audio": {"model": "HTSAT-tiny", "checkpoint": str(clap_checkpoint)},
    }, api={"api_keys": {"k": ["u"]}})
    secret = tmp_path / "secret.png"  # an image outside every allowed folder
    secret.write_bytes(media["stripes"].read_bytes())
    with MemoryManager.open(settings) as mm:
        call = AsgiApi(create_app(settings, manager=mm), headers=H)
        up = call("POST", "/v1/media", params=NS, data={"modality": "image"},
                  files={"file": ("red.png", media["red"].read_bytes(), "image/png")})
        assert up.status_code == 201, up.text
        mid, source = up.json()["id"], up.json()["metadata"]["source"]
        for target in (str(secret), "/etc/passwd", "../../../../etc/hostname"):
            r = call("PATCH", f"/v1/memories/{mid}", params=NS,
                     json={"metadata": {"source": target}})
            assert r.status_code == 400 and "source" in r.json()["detail"], r.text
        kept = call("PATCH", f"/v1/memories/{mid}", params=NS,
                    json={"metadata": {"note": "renamed"}})
        assert kept.status_code == 200 and kept.json()["metadata"]["source"] == source
        assert call("GET", f"/v1/media/{mid}/thumbnail", params=NS).status_code == 200

        item = mm.stores.records.memories.get_item("u", mid)
        mm.stores.records.memories.update_item("u", mid, metadata={**item.metadata,
                                                                   "source": str(secret)})
        refused = call("GET", f"/v1/media/{mid}/thumbnail", params=NS)
        assert refused.status_code == 400 and "outside" in refused.json()["detail"]
