"""Fixtures for perceptual memory: offline CLIP / CLAP checkpoints and media files.

No CLIP or CLAP weights can be downloaded here, so each session builds RANDOMLY
initialised models of the real architectures, saves them as checkpoint files, and the
encoders load those files through the same path a user gives for published weights
(``ClipEncoder(pretrained=<file>)``, ``ClapEncoder(checkpoint=<file>)``). Random weights
give meaningful self-similarity but no meaningful text<->media ranking, which is why
cross-modal tests check plumbing only.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from hello_memory.embedding import SentenceTransformerEmbedder
from hello_memory.embedding.clap import ClapEncoder, build_untrained_model
from hello_memory.embedding.clip import ClipEncoder
from hello_memory.memory.perceptual import PerceptualMemory
from hello_memory.stores.records import RecordStore
from hello_memory.stores.vector import QdrantVectorStore

# These tests need the multimodal extra, which lives in its own venv (.venv-multimodal:
# its torch/torchvision pair differs from the main venv's). Elsewhere the folder is left
# out of collection, loudly (see pytest_terminal_summary), instead of failing to import.
MISSING = [m for m in ("open_clip", "laion_clap", "torchvision", "soundfile", "librosa", "PIL")
           if importlib.util.find_spec(m) is None]
if MISSING:
    collect_ignore_glob = ["test_*.py"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if MISSING:
        terminalreporter.write_line(
            f"tests/multimodal NOT RUN: this environment lacks {', '.join(MISSING)}; run "
            "`.venv-multimodal/bin/python -m pytest tests/multimodal` (make install-multimodal)",
            yellow=True)


# The smallest open_clip config with a plain ViT (bundled tokenizer): 43M parameters.
CLIP_ARCH = "ViT-S-32-alt"
CLIP_DIM = 256
CLAP_DIM = 512


@pytest.fixture(scope="session")
def clip_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    import open_clip

    torch.manual_seed(0)
    model = open_clip.create_model(CLIP_ARCH, pretrained=None)
    path = tmp_path_factory.mktemp("clip") / "clip-random.pt"
    torch.save(model.state_dict(), path)
    yield path
    path.unlink(missing_ok=True)  # pytest keeps old tmp dirs: don't keep 170 MB in each


def _save_clap(tmp_path_factory: pytest.TempPathFactory, text_model: str,
               suffix: str = ".pt") -> Iterator[Path]:
    torch.manual_seed(0)
    model = build_untrained_model("HTSAT-tiny", text_model)
    path = tmp_path_factory.mktemp("clap") / f"clap-{text_model}-random{suffix}"
    if suffix == ".safetensors":
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
    else:  # laion-clap's training script saves {"epoch", "name", "state_dict", ...}
        torch.save({"epoch": 0, "name": "random", "state_dict": model.state_dict()}, path)
    del model
    yield path
    path.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def clap_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield from _save_clap(tmp_path_factory, "transformer")  # ~390 MB


@pytest.fixture(scope="session")
def clap_roberta_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The published checkpoints' layout, HTSAT-tiny audio + RoBERTa text (~630 MB),
    saved as safetensors (the safe format users can convert published pickles to)."""
    yield from _save_clap(tmp_path_factory, "roberta", ".safetensors")


@pytest.fixture(scope="session")
def byte_level_tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local RoBERTa-type tokenizer directory (256 byte tokens, no merges): stands in
    for a downloaded roberta-base tokenizer folder."""
    from transformers import RobertaTokenizer

    d = tmp_path_factory.mktemp("tokenizer")
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    # GPT-2's byte-to-unicode table: printable bytes map to themselves, others to 256+.
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    extra = iter(range(256, 512))
    for b in range(256):
        vocab[chr(b if b in printable else next(extra))] = len(vocab)
    vocab["<mask>"] = len(vocab)
    (d / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (d / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    out = d / "saved"
    RobertaTokenizer(str(d / "vocab.json"), str(d / "merges.txt")).save_pretrained(str(out))
    return out


@pytest.fixture(scope="session")
def clip_encoder(clip_checkpoint: Path) -> ClipEncoder:
    return ClipEncoder(CLIP_ARCH, pretrained=str(clip_checkpoint))


@pytest.fixture(scope="session")
def clap_encoder(clap_checkpoint: Path) -> ClapEncoder:
    return ClapEncoder(checkpoint=str(clap_checkpoint), max_windows=2)


@pytest.fixture(scope="session")
def text_embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()  # the packaged all-MiniLM-L6-v2: offline


@pytest.fixture(scope="session")
def media(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Distinct images (PNG/JPEG) and sounds (WAV/FLAC, several rates) on disk."""
    import soundfile as sf
    from PIL import Image, ImageDraw

    d = tmp_path_factory.mktemp("media")
    out: dict[str, Path] = {}
    rng = np.random.default_rng(0)
    red = Image.new("RGB", (96, 96), (220, 30, 30))
    red.save(out.setdefault("red", d / "red.png"))
    blue = Image.new("RGB", (128, 80), (20, 40, 200))
    ImageDraw.Draw(blue).ellipse((30, 10, 100, 70), fill=(250, 250, 40))
    blue.save(out.setdefault("blue_circle", d / "blue_circle.jpg"), quality=95)
    stripes = Image.new("RGB", (100, 100), (255, 255, 255))
    draw = ImageDraw.Draw(stripes)
    for x in range(0, 100, 20):
        draw.rectangle((x, 0, x + 9, 99), fill=(0, 0, 0))
    stripes.save(out.setdefault("stripes", d / "stripes.png"))
    noise = Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8))
    noise.save(out.setdefault("noise", d / "noise.png"))

    def tone(name: str, seconds: float, rate: int, fn: np.ndarray, fmt: str = "wav") -> None:
        path = d / f"{name}.{fmt}"
        sf.write(path, fn.astype(np.float32), rate)
        out[name] = path

    t16 = np.arange(int(16_000 * 1.5)) / 16_000
    tone("a440", 1.5, 16_000, 0.5 * np.sin(2 * np.pi * 440 * t16))
    t44 = np.arange(int(44_100 * 1.0)) / 44_100
    stereo = np.stack([0.4 * np.sin(2 * np.pi * 2000 * t44), 0.4 * np.sign(
        np.sin(2 * np.pi * 3 * t44))], axis=1)
    tone("chirp_stereo", 1.0, 44_100, stereo, fmt="flac")
    tone("noise_burst", 2.0, 48_000, 0.3 * rng.standard_normal(96_000))
    t_long = np.arange(48_000 * 12) / 48_000  # longer than one 10 s window
    tone("long_hum", 12.0, 48_000, 0.3 * np.sin(2 * np.pi * 110 * t_long))
    return out


def open_memory(root: Path, *, text_embedder: SentenceTransformerEmbedder,
                clip: ClipEncoder | None, clap: ClapEncoder | None,
                on_disk: bool = False) -> PerceptualMemory:
    records = RecordStore(f"sqlite:///{root}/r.db")
    vectors = (QdrantVectorStore(path=str(root / "qdrant")) if on_disk
               else QdrantVectorStore(location=":memory:"))
    memory = PerceptualMemory(records, vectors, text_embedder=text_embedder,
                              image_encoder=clip, audio_encoder=clap)
    memory.open()
    return memory


@pytest.fixture
def memory(tmp_path: Path, text_embedder: SentenceTransformerEmbedder,
           clip_encoder: ClipEncoder, clap_encoder: ClapEncoder) -> Iterator[PerceptualMemory]:
    mem = open_memory(tmp_path, text_embedder=text_embedder, clip=clip_encoder,
                      clap=clap_encoder)
    yield mem
    mem.close()
