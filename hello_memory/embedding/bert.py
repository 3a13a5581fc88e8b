"""A small torch runner for sentence-transformers models of the plain BERT shape.

A sentence-transformers directory made of a BERT ``Transformer`` module, a mean
``Pooling`` module and optionally ``Normalize`` (all-MiniLM-L6-v2, the default model,
and most of the BERT family) is computed here directly from ``model.safetensors`` and
``tokenizer.json`` with torch, the Rust ``tokenizers`` library and ``safetensors``.
The arithmetic is the model's own (embeddings, self-attention, GELU feed-forward,
post-layer norms, masked mean); vectors equal sentence-transformers' to within float
rounding (``tests/unit/test_bert_runner.py`` compares them).

Why it exists: importing ``sentence_transformers`` (which imports ``transformers``,
scikit-learn and their backends) took about 6 s of the 7.5 s a fresh process spent
opening a ``MemoryManager``; this runner needs only torch's import. Every CLI call,
``serve`` start and MCP server start pays that once (docs/ARCHITECTURE.md, decision 10).

:func:`load_bert_directory` returns ``None`` for any directory it does not recognise
exactly (another architecture, another pooling, a default prompt, missing files), and
the caller then loads it with sentence-transformers as before: a model is never run
by a path that might compute something else.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["BertSentenceEncoder", "load_bert_directory"]

_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"
_OTHER_POOLING_MODES = ("pooling_mode_cls_token", "pooling_mode_max_tokens",
                        "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens",
                        "pooling_mode_lasttoken")


def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def _plain_bert_layout(root: Path) -> dict[str, Any] | None:
    """What the runner needs from ``root``, or None unless it is exactly the shape
    this module computes: BERT (absolute positions, GELU) -> mean pooling -> optional
    normalisation, with no prompt prepended by default."""
    try:
        modules = _read_json(root / "modules.json")
        types = [m["type"] for m in modules]
        if types not in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE]):
            return None
        if modules[0].get("path", "") != "":
            return None
        config = _read_json(root / "config.json")
        pooling = _read_json(root / modules[1]["path"] / "config.json")
        st_config = _read_json(root / "sentence_bert_config.json")
        extra_path = root / "config_sentence_transformers.json"
        extra = _read_json(extra_path) if extra_path.is_file() else {}
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    if (config.get("model_type") != "bert" or config.get("hidden_act") != "gelu"
            or config.get("position_embedding_type", "absolute") != "absolute"
            or config.get("is_decoder", False)):
        return None
    if not pooling.get("pooling_mode_mean_tokens") or any(
            pooling.get(mode) for mode in _OTHER_POOLING_MODES):
        return None
    if extra.get("default_prompt_name") or st_config.get("do_lower_case"):
        return None
    if not ((root / "tokenizer.json").is_file() and (root / "model.safetensors").is_file()):
        return None
    hidden = int(config["hidden_size"])
    if int(pooling.get("word_embedding_dimension", hidden)) != hidden:
        return None
    max_positions = int(config.get("max_position_embeddings", 512))
    return {"config": config, "normalize": len(types) == 3,
            "max_seq_length": min(int(st_config.get("max_seq_length") or max_positions),
                                  max_positions)}


def _pick_device(device: str | None) -> str:
    """sentence-transformers' choice when no device is given: CUDA, then MPS, then CPU."""
    if device:
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    return "mps" if mps is not None and mps.is_available() else "cpu"


class BertSentenceEncoder:
    """One loaded model; ``encode`` and ``get_embedding_dimension`` have the meaning of
    the ``SentenceTransformer`` methods of those names, so the embedder treats both
    the same. Read-only after construction: concurrent ``encode`` calls are safe."""

    def __init__(self, root: Path, layout: dict[str, Any], device: str | None) -> None:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        cfg = layout["config"]
        self.hidden = int(cfg["hidden_size"])
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.normalize_output = bool(layout["normalize"])
        self.max_seq_length = int(layout["max_seq_length"])
        self.device = torch.device(_pick_device(device))
        weights = load_file(str(root / "model.safetensors"))
        # Some exports prefix every key with the model class's name.
        self.weights = {k.removeprefix("bert."): v.to(self.device, torch.float32)
                        for k, v in weights.items()}
        missing = [k for k in self._required_keys() if k not in self.weights]
        if missing:
            raise ValueError(f"model.safetensors lacks {missing[:3]}")
        tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
        # tokenizer.json may carry its own fixed padding and truncation (all-MiniLM's
        # pads and cuts at 128); sentence-transformers overrides both per call, so do we.
        tokenizer.no_padding()
        tokenizer.enable_truncation(self.max_seq_length)
        self.tokenizer = tokenizer

    def _required_keys(self) -> list[str]:
        names = ["embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
                 "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight"]
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            names += [p + "attention.self.query.weight", p + "attention.self.key.weight",
                      p + "attention.self.value.weight", p + "attention.output.dense.weight",
                      p + "attention.output.LayerNorm.weight", p + "intermediate.dense.weight",
                      p + "output.dense.weight", p + "output.LayerNorm.weight"]
        return names

    def get_embedding_dimension(self) -> int:
        return self.hidden

    def encode(self, sentences: Sequence[str], *, batch_size: int = 32,
               show_progress_bar: bool = False, normalize_embeddings: bool = False,
               convert_to_numpy: bool = True) -> npt.NDArray[np.float32]:
        """Vectors for ``sentences`` in their order, shape ``(n, dimension)``.

        Texts are stripped (as sentence-transformers does), tokenised, cut at
        ``max_seq_length`` tokens and run in batches of similar length so little
        padding is computed. ``convert_to_numpy`` is accepted for the
        sentence-transformers signature; the result is always a numpy array."""
        texts = [str(s).strip() for s in sentences]
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        batches = range(0, len(order), batch_size)
        starts: Iterable[int] = batches
        if show_progress_bar and len(batches) > 1:
            from tqdm.auto import tqdm

            starts = tqdm(batches, desc="Batches", unit="batch")
        for start in starts:
            chunk = order[start:start + batch_size]
            vectors = self._forward([encodings[i].ids for i in chunk])
            if normalize_embeddings or self.normalize_output:
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                vectors = vectors / np.maximum(norms, 1e-12)
            out[chunk] = vectors
        return out

    def _forward(self, batch: list[list[int]]) -> npt.NDArray[np.float32]:
        import torch
        import torch.nn.functional as F

        w = self.weights
        width = max(len(ids) for ids in batch)
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.bool)
        for row, token_ids in enumerate(batch):
            ids[row, :len(token_ids)] = torch.tensor(token_ids, dtype=torch.long)
            mask[row, :len(token_ids)] = True
        ids, mask = ids.to(self.device), mask.to(self.device)

        def norm(x: torch.Tensor, name: str) -> torch.Tensor:
            return F.layer_norm(x, (self.hidden,), w[name + ".weight"], w[name + ".bias"],
                                self.eps)

        def dense(x: torch.Tensor, name: str) -> torch.Tensor:
            return F.linear(x, w[name + ".weight"], w[name + ".bias"])

        rows, head_size = len(batch), self.hidden // self.heads

        def split(x: torch.Tensor) -> torch.Tensor:  # (rows, width, hidden) -> per head
            return x.view(rows, width, self.heads, head_size).transpose(1, 2)

        with torch.inference_mode():
            x = (w["embeddings.word_embeddings.weight"][ids]
                 + w["embeddings.position_embeddings.weight"][:width]
                 + w["embeddings.token_type_embeddings.weight"][0])
            x = norm(x, "embeddings.LayerNorm")
            attend = mask[:, None, None, :]
            for i in range(self.layers):
                p = f"encoder.layer.{i}."
                q = split(dense(x, p + "attention.self.query"))
                k = split(dense(x, p + "attention.self.key"))
                v = split(dense(x, p + "attention.self.value"))
                ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=attend,
                                                     scale=1.0 / math.sqrt(head_size))
                ctx = ctx.transpose(1, 2).reshape(rows, width, self.hidden)
                x = norm(dense(ctx, p + "attention.output.dense") + x,
                         p + "attention.output.LayerNorm")
                x = norm(dense(F.gelu(dense(x, p + "intermediate.dense")), p + "output.dense")
                         + x, p + "output.LayerNorm")
            weights = mask.unsqueeze(-1).to(x.dtype)
            pooled = (x * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
            return pooled.cpu().numpy().astype(np.float32, copy=False)


def load_bert_directory(path: str, device: str | None) -> BertSentenceEncoder | None:
    """The runner for ``path`` when it has the plain BERT shape, else None."""
    root = Path(path)
    if not root.is_dir():
        return None
    layout = _plain_bert_layout(root)
    if layout is None:
        return None
    return BertSentenceEncoder(root, layout, device)
