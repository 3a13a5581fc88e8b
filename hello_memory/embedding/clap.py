"""CLAP audio and text embeddings through laion-clap's model code, never random.

``ClapEncoder`` puts audio and texts into one space (text queries find sounds). Its text
tower satisfies the :class:`~hello_memory.embedding.base.Embedder` protocol;
:meth:`ClapEncoder.embed_audio` encodes files or bytes. Weights come from a local
laion-clap checkpoint (e.g. the published ``630k-audioset-best.pt``: HTSAT-tiny audio +
RoBERTa text); without one, ModelNotFoundError names ``perceptual.audio.checkpoint``.

Why not ``laion_clap.CLAP_Module``: ``import laion_clap`` downloads three tokenizers at
import time and ``CLAP_Module`` downloads ``roberta-base`` weights the checkpoint then
overwrites. Here laion-clap's ``clap_module`` is imported on its own and the RoBERTa
tower is built from its fixed architecture, so nothing is fetched. The ``transformer``
text tower's tokenizer is bundled; the ``roberta`` one needs the roberta-base tokenizer
files (``tokenizer=``: a directory or the HF cache), without which only text queries
fail. Fusion checkpoints are refused (their inputs need torchaudio and random crops).

Audio is decoded with soundfile, mixed to mono, resampled to 48 kHz with librosa and
int16-quantised, as laion-clap does. Clips under 10 s are repeat-padded; longer ones
become up to ``max_windows`` evenly spaced 10 s windows whose vectors are averaged
(deterministic, unlike laion-clap's random crop).
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.embedding.base import validate_texts
from hello_memory.embedding.clip import (
    MediaSource,
    describe,
    finish,
    open_media,
    validate_query,
    validate_sources,
)
from hello_memory.errors import (
    EmbeddingError,
    HelloMemoryError,
    InvalidInputError,
    ModelNotFoundError,
)

__all__ = [
    "SAMPLE_RATE", "ClapEncoder", "audio_mime_type", "build_untrained_model", "load_clap_module",
]

SAMPLE_RATE = 48_000
_WINDOW = 480_000  # 10 s at 48 kHz: the input size every laion-clap audio tower takes
_TEXT_MODELS = ("roberta", "transformer")
# Buffers older transformers saved in checkpoints and current ones do not keep.
_STALE_KEYS = ("text_branch.embeddings.position_ids", "text_branch.embeddings.token_type_ids")
# roberta-base's architecture: the text tower of every published CLAP checkpoint.
_ROBERTA_BASE: dict[str, Any] = {
    "vocab_size": 50265, "hidden_size": 768, "num_hidden_layers": 12,
    "num_attention_heads": 12, "intermediate_size": 3072, "max_position_embeddings": 514,
    "type_vocab_size": 1, "layer_norm_eps": 1e-5, "pad_token_id": 1, "bos_token_id": 0,
    "eos_token_id": 2,
}
# Guards the one-time import and the RoBERTa swap below (it patches a module attribute).
_build_lock = threading.RLock()


def load_clap_module() -> Any:
    """laion-clap's ``clap_module`` package, imported WITHOUT ``laion_clap/__init__``
    (which fetches tokenizers from the hub at import). It is registered under the
    top-level name laion-clap itself uses, so a later ``import laion_clap`` shares it."""
    with _build_lock:
        if "clap_module" not in sys.modules:
            _import_clap_module()
        return sys.modules["clap_module"]


def _import_clap_module() -> None:
    spec = importlib.util.find_spec("laion_clap")  # locates the package, runs nothing
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("laion-clap is not installed")
    pkg = Path(next(iter(spec.submodule_search_locations))) / "clap_module"
    sub = importlib.util.spec_from_file_location(
        "clap_module", pkg / "__init__.py", submodule_search_locations=[str(pkg)])
    if sub is None or sub.loader is None:
        raise ImportError(f"laion-clap's clap_module not found under {pkg}")
    module = importlib.util.module_from_spec(sub)
    sys.modules["clap_module"] = module
    try:
        with warnings.catch_warnings():  # timm/torch deprecation noise from its imports
            warnings.simplefilter("ignore")
            sub.loader.exec_module(module)
    except BaseException:
        sys.modules.pop("clap_module", None)
        raise


def build_untrained_model(audio_model: str, text_model: str) -> Any:
    """A laion-clap CLAP of the given towers with fresh weights, built without the hub.

    For converting or testing checkpoints; the encoder itself only ever embeds with
    weights loaded from a checkpoint.
    """
    cm = load_clap_module()
    if text_model != "roberta":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, _ = cm.create_model(audio_model, text_model, precision="fp32",
                                       enable_fusion=False)
        return model
    from transformers import RobertaConfig, RobertaModel

    class _Offline:  # stands in for RobertaModel.from_pretrained("roberta-base")
        @staticmethod
        def from_pretrained(*_: Any, **__: Any) -> Any:
            return RobertaModel(RobertaConfig(**_ROBERTA_BASE))

    mod: Any = sys.modules["clap_module.model"]
    with _build_lock, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        saved, mod.RobertaModel = mod.RobertaModel, _Offline
        try:
            model, _ = cm.create_model(audio_model, "roberta", precision="fp32",
                                       enable_fusion=False)
        finally:
            mod.RobertaModel = saved
    return model


def _decode_audio(src: MediaSource, index: int) -> npt.NDArray[np.float32]:
    """One file -> mono float32 waveform at 48 kHz, int16-quantised as laion-clap does."""
    import soundfile as sf

    label = describe(src, index, "audio")
    try:
        with open_media(src) as fh:
            data, rate = sf.read(fh, dtype="float32", always_2d=True)
    except InvalidInputError:
        raise
    except (RuntimeError, OSError, ValueError, TypeError) as exc:  # LibsndfileError et al.
        raise InvalidInputError(f"cannot read audio {label}: {exc}") from exc
    wave = data.mean(axis=1)
    if wave.size == 0:
        raise InvalidInputError(f"audio {label} has no samples")
    if not np.isfinite(wave).all():
        raise InvalidInputError(f"audio {label} contains non-finite samples")
    if rate != SAMPLE_RATE:
        import librosa

        wave = librosa.resample(wave, orig_sr=rate, target_sr=SAMPLE_RATE)
    quantised = (np.clip(wave, -1.0, 1.0) * 32767.0).astype(np.int16)
    return (quantised / 32767.0).astype(np.float32)


def _windows(wave: npt.NDArray[np.float32], max_windows: int) -> list[npt.NDArray[np.float32]]:
    """10 s inputs: a short clip repeated then zero-padded (laion's ``repeatpad``), a
    long one cut into up to ``max_windows`` evenly spaced windows."""
    if len(wave) <= _WINDOW:
        reps = np.tile(wave, _WINDOW // len(wave))
        return [np.pad(reps, (0, _WINDOW - len(reps)))]
    starts = np.linspace(0, len(wave) - _WINDOW, num=min(max_windows, -(-len(wave) // _WINDOW)))
    return [wave[int(s):int(s) + _WINDOW] for s in starts]


def audio_mime_type(data: bytes) -> str | None:
    """MIME type of encoded audio bytes (e.g. ``audio/wav``), None if not audio."""
    import io

    import soundfile as sf

    try:
        fmt = sf.info(io.BytesIO(data)).format
    except Exception:  # a probe: any failure just means "unknown"
        return None
    return {"WAV": "audio/wav", "WAVEX": "audio/wav", "FLAC": "audio/flac", "OGG": "audio/ogg",
            "MP3": "audio/mpeg", "AIFF": "audio/aiff"}.get(fmt, f"audio/x-{fmt.lower()}")


class ClapEncoder:
    """Audio/text encoder over a laion-clap checkpoint. No I/O until first use.

    ``checkpoint`` is a ``.safetensors`` file or a torch pickle; a pickle that torch's
    safe loader refuses (the published ones pickle numpy objects) loads only with
    ``allow_pickle=True``. ``text_model`` is ``"auto"`` (read from the checkpoint),
    ``"roberta"`` or ``"transformer"``. ``tokenizer`` (RoBERTa text tower only) is a
    local tokenizer directory or a hub id looked up in the local Hugging Face cache only.
    """

    def __init__(
        self,
        audio_model: str = "HTSAT-tiny",
        text_model: str = "auto",
        checkpoint: str | None = None,
        *,
        tokenizer: str = "roberta-base",
        allow_pickle: bool = False,
        device: str = "cpu",
        batch_size: int = 8,
        max_windows: int = 3,
        setting_name: str = "perceptual.audio.checkpoint",
        tokenizer_setting: str = "perceptual.audio.tokenizer",
    ) -> None:
        if text_model not in ("auto", *_TEXT_MODELS):
            raise InvalidInputError(f"text_model must be auto, roberta or transformer: "
                                    f"{text_model!r}")
        for label, value in (("batch_size", batch_size), ("max_windows", max_windows)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInputError(f"{label} must be a positive integer, got {value!r}")
        self.audio_model = audio_model
        self.text_model = text_model
        self.checkpoint = checkpoint
        self.tokenizer = tokenizer
        self.allow_pickle = allow_pickle
        self.device = device
        self.batch_size = batch_size
        self.max_windows = max_windows
        self.setting_name = setting_name
        self.tokenizer_setting = tokenizer_setting
        self._model: Any = None
        self._text_type = ""
        self._tokenize: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(audio_model={self.audio_model!r}, " \
               f"checkpoint={self.checkpoint!r})"

    @property
    def name(self) -> str:
        """``laion_clap:<audio model>@<absolute checkpoint path>`` (no load needed)."""
        path = Path(self.checkpoint).expanduser().resolve() if self.checkpoint else "none"
        return f"laion_clap:{self.audio_model}@{path}"

    @property
    def dimension(self) -> int:
        """Size of the shared audio/text space (loads the model)."""
        return int(self._ensure_loaded().joint_embed_shape)

    # --- loading -------------------------------------------------------------------
    def _ensure_loaded(self) -> Any:
        model = self._model
        if model is not None:
            return model
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    def _fail(self, reason: str) -> ModelNotFoundError:
        return ModelNotFoundError(self.audio_model, self.setting_name, reason)

    def _load(self) -> Any:
        if not self.checkpoint or not str(self.checkpoint).strip():
            raise self._fail("no CLAP checkpoint configured (random weights are never "
                             "used); give a local laion-clap checkpoint file")
        path = Path(self.checkpoint).expanduser()
        if not path.is_file():
            raise self._fail(f"checkpoint file {str(path)!r} does not exist")
        try:
            state = self._read_state(self._read_file(path))
            text_type = self._text_type_of(state)
            model = build_untrained_model(self.audio_model, text_type)
            model.load_state_dict(state, strict=True)
            model.to(self.device).eval()  # eval: no dropout, no SpecAugment
        except HelloMemoryError:
            raise
        except ImportError as exc:
            raise self._fail(f"{exc}; install the multimodal extra: "
                             "pip install 'hello-memory[multimodal]'") from exc
        except Exception as exc:  # unpickling, missing/unexpected keys, size mismatches
            # strict loading lists every bad key: keep the message readable
            raise self._fail(f"{type(exc).__name__}: {str(exc)[:600]}".strip()) from exc
        self._text_type = text_type
        return model

    def _read_file(self, path: Path) -> Any:
        import pickle

        import torch

        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            return load_file(str(path))
        try:
            return torch.load(path, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as exc:
            # The published CLAP checkpoints pickle numpy objects, which torch's safe
            # loader refuses; full unpickling can run code, so it takes an opt-in.
            if not self.allow_pickle:
                why = str(exc).rsplit("WeightsUnpickler error:", 1)[-1].strip().split("\n")[0]
                raise self._fail(
                    f"torch's safe loader refused the file ({why}); full unpickling can run "
                    "code it contains: if it is a checkpoint you trust, set "
                    "perceptual.audio.allow_pickle (allow_pickle=True), or re-save its "
                    "state_dict as .safetensors") from exc
        return torch.load(path, map_location="cpu", weights_only=False)

    @staticmethod
    def _read_state(raw: Any) -> dict[str, Any]:
        state = raw.get("state_dict", raw) if isinstance(raw, dict) else None
        if not isinstance(state, dict) or not state:
            raise ValueError("the file holds no state dict")
        if all(k.startswith("module.") for k in state):  # saved from DataParallel/DDP
            state = {k[len("module."):]: v for k, v in state.items()}
        return {k: v for k, v in state.items() if k not in _STALE_KEYS}

    def _text_type_of(self, state: dict[str, Any]) -> str:
        if any("fusion_model" in k or "mel_conv2d" in k for k in state):
            raise ValueError("fusion checkpoints are not supported; use a non-fusion one "
                             "such as 630k-audioset-best.pt")
        found = "roberta" if any(k.startswith("text_branch.embeddings.") for k in state) \
            else "transformer" if "token_embedding.weight" in state else None
        if found is None:
            raise ValueError("not a laion-clap checkpoint (no known text tower)")
        if self.text_model not in ("auto", found):
            raise ValueError(f"the checkpoint has a {found} text tower, "
                             f"not the configured {self.text_model}")
        return found

    def _tokens(self, texts: list[str]) -> Any:
        """Token ids (``transformer``) or an input dict (``roberta``) for the text tower."""
        if self._text_type == "transformer":
            cm = load_clap_module()
            tokens = cm.tokenize(texts)  # bundled CLIP BPE, 77 tokens
            eot = cm.tokenizer._tokenizer.encoder["<end_of_text>"]
            # Truncation cuts the end-of-text token the tower pools at: restore it.
            full = tokens[:, -1] != 0
            tokens[full, -1] = eot
            return tokens
        if self._tokenize is None:
            with self._lock:
                if self._tokenize is None:
                    self._tokenize = self._load_tokenizer()
        return dict(self._tokenize(texts, padding="max_length", truncation=True,
                                   max_length=77, return_tensors="pt"))

    def _load_tokenizer(self) -> Any:
        try:
            from transformers import AutoTokenizer

            # local_files_only: a directory or the HF cache, never a download attempt.
            return AutoTokenizer.from_pretrained(self.tokenizer, local_files_only=True)
        except Exception as exc:
            raise ModelNotFoundError(
                self.tokenizer, self.tokenizer_setting,
                f"the RoBERTa text tower needs the roberta-base tokenizer files "
                f"(audio embedding works without them): {type(exc).__name__}: {exc}",
            ) from exc

    # --- encoding ------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Text tower: float32 ``(len(texts), dimension)``, rows L2-normalised."""
        items = validate_texts(texts)
        model = self._ensure_loaded()
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        import torch

        parts = []
        for start in range(0, len(items), self.batch_size):
            tokens = self._tokens(items[start:start + self.batch_size])
            try:
                with torch.no_grad():
                    if isinstance(tokens, dict):
                        tokens = {k: v.to(self.device) for k, v in tokens.items()}
                    parts.append(model.encode_text(tokens, device=self.device))
            except Exception as exc:
                raise EmbeddingError(f"{self.name} failed to encode texts: {exc}") from exc
        return finish(torch.cat(parts), len(items), self.name)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """One text query; shape ``(dimension,)``."""
        vectors: npt.NDArray[np.float32] = self.embed([validate_query(text)])
        return vectors[0]

    def embed_audio(self, files: Sequence[MediaSource]) -> npt.NDArray[np.float32]:
        """Audio tower: float32 ``(len(files), dimension)``, rows L2-normalised.

        Every file is decoded before any is encoded: an unreadable or corrupt one
        raises InvalidInputError naming it, and nothing is returned.
        """
        items = validate_sources(files, "audio")
        waves = [_windows(_decode_audio(src, i), self.max_windows) for i, src in enumerate(items)]
        model = self._ensure_loaded()
        if not waves:
            return np.zeros((0, self.dimension), dtype=np.float32)
        import torch

        flat = [w for clip in waves for w in clip]
        parts = []
        try:
            with torch.no_grad():
                for start in range(0, len(flat), self.batch_size):
                    batch = torch.from_numpy(np.stack(flat[start:start + self.batch_size]))
                    inputs = {"waveform": batch.to(self.device),
                              "longer": torch.zeros(len(batch), 1, dtype=torch.bool)}
                    emb = model.encode_audio(inputs, device=self.device)["embedding"]
                    parts.append(torch.nn.functional.normalize(model.audio_projection(emb),
                                                               dim=-1))
        except Exception as exc:
            raise EmbeddingError(f"{self.name} failed to encode {len(items)} clips: {exc}") from exc
        windows = torch.cat(parts)
        counts = [len(clip) for clip in waves]  # average each clip's windows
        pooled = torch.stack([w.mean(dim=0) for w in torch.split(windows, counts)])
        return finish(pooled, len(items), self.name)
