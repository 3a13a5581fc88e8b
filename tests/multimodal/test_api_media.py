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

from hello_memory.config import load_settings
from hello_memory.interfaces.rest import create_app
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


# The keys of a media hit before the catalogue (api/media.py's media_hit): clients keep
# them; the hit is now hit_to_json's, whose keys it has too.
OLD_HIT_KEYS = {"id", "score", "modality", "source", "caption", "mime_type", "breakdown",
                "memory", "thumbnail_url"}
SEARCH_HIT_KEYS = {"id", "score", "memory_type", "content", "fused", "context", "views",
                   "breakdown", "memory"}
BRIEF_HIT_KEYS = {"id", "text", "date", "type", "score"}


def test_media_operations_over_mcp_and_the_tool(api: Any, media: dict[str, Path],
                                                tmp_path: Path) -> None:
    """add_media_path and search_media are MCP tools and MemoryTool actions (generated
    from the catalogue, as every operation): the same JSON as REST, paths only under
    the interface's folders (MCP api.read_dirs, the tool its roots)."""
    import anyio
    from mcp import Client

    from hello_memory.interfaces.mcp import build_server
    from hello_memory.interfaces.tools import MemoryTool

    call, settings = api
    mm = call.app.state.manager
    folder = media["red"].parent
    tool = MemoryTool(mm, namespace="u", roots=[folder], user_id="ann")
    added = tool.run({"action": "add_media_path", "path": str(media["red"]),
                      "modality": "image", "caption": "red"})
    assert added["ok"] and added["text"] == f"stored image memory id={added['id']}"
    assert mm.get(added["id"], namespace="u").user_id == "ann"  # the tool's user fills in
    no_roots = MemoryTool(mm, namespace="u").run(
        {"action": "add_media_path", "path": str(media["red"]), "modality": "image"})
    assert not no_roots["ok"] and "roots" in no_roots["error"]["message"]
    outside = tmp_path / "elsewhere.png"
    outside.write_bytes(media["red"].read_bytes())
    refused = tool.run({"action": "add_media_path", "path": str(outside), "modality": "image"})
    assert not refused["ok"] and refused["error"]["type"] == "InvalidInputError"

    async def over_mcp() -> tuple[Any, Any, bool]:
        async with Client(build_server(mm, settings, ["u"])) as c:
            stripes = await c.call_tool("add_media_path", {
                "namespace": "u", "path": str(media["stripes"]), "modality": "image"})
            found = await c.call_tool("search_media", {"namespace": "u", "query": "red",
                                                       "top_k": 5})
            out = await c.call_tool("add_media_path", {
                "namespace": "u", "path": str(outside), "modality": "image"})
            return stripes.structured_content, found.structured_content, bool(out.is_error)

    stripes, found, out_refused = anyio.run(over_mcp)
    assert stripes["modality"] == "image" and out_refused
    rest = call("POST", "/v1/media/search", params=NS, json={"query": "red"}).json()
    assert [h["id"] for h in found["hits"]] == [h["id"] for h in rest["hits"]]
    assert {h["id"] for h in rest["hits"]} == {added["id"], stripes["id"]}
    for hit in rest["hits"]:
        assert set(hit) == OLD_HIT_KEYS | SEARCH_HIT_KEYS
        assert hit["memory_type"] == "perceptual" and hit["memory"]["id"] == hit["id"]
    # MCP's hits are brief (issue 29): id, text, date, type, score and the media fields
    media_keys = OLD_HIT_KEYS - SEARCH_HIT_KEYS
    for hit in found["hits"]:
        assert BRIEF_HIT_KEYS <= set(hit) <= BRIEF_HIT_KEYS | media_keys, set(hit)
        assert hit["type"] == "perceptual" and hit["modality"] == "image"
    searched = tool.run({"action": "search_media", "query": "red"})
    assert searched["ok"] and {h["id"] for h in searched["hits"]} == {added["id"], stripes["id"]}
    assert all(h["modality"] == "image" and h["source"] for h in searched["hits"])
    assert "2 media memories:" in searched["text"]


def test_thumbnail_and_query_file_edges(api: Any, media: dict[str, Path]) -> None:
    """A thumbnail of an unknown memory is a 404, of a text memory a 400; a query file
    searched by is not kept (the uploads folder stays as it was)."""
    call, settings = api
    text = call("POST", "/v1/memories", params=NS,
                json={"content": "Ann likes red.", "memory_type": "semantic"}).json()
    assert call("GET", f"/v1/media/{text['id']}/thumbnail", params=NS).status_code == 400
    gone = call("GET", "/v1/media/00000000-0000-0000-0000-000000000000/thumbnail", params=NS)
    assert gone.status_code == 404
    call("POST", "/v1/media", params=NS, data={"modality": "image"},
         files={"file": ("red.png", media["red"].read_bytes(), "image/png")})
    uploads = Path(settings.data_dir) / "uploads"
    before = sorted(uploads.rglob("*"))
    r = call("POST", "/v1/media/search/file", params=NS, data={"modality": "image"},
             files={"file": ("q.png", media["stripes"].read_bytes(), "image/png")})
    assert r.status_code == 200 and len(r.json()["hits"]) == 1
    assert sorted(uploads.rglob("*")) == before
    empty = call("POST", "/v1/media/search/file", params=NS, data={"modality": "image"},
                 files={"file": ("q.png", b"", "image/png")})
    assert empty.status_code == 400
