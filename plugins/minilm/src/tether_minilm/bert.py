"""A BERT encoder forward pass in numpy, for inference only.

Reproduces Hugging Face's ``BertModel`` (absolute position embeddings, post-LayerNorm,
exact erf GELU) closely enough that sentence embeddings match the PyTorch reference to a
cosine of 0.9999 or better. Weights are read from a ``model.safetensors`` file with
``safetensors.numpy``; names may carry a ``bert.`` prefix or not.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .model_files import ModelUnavailable

__all__ = ["BertConfig", "BertEncoder"]

Array = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class BertConfig:
    """The parts of a Hugging Face ``config.json`` the forward pass needs."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    layer_norm_eps: float
    hidden_act: str

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        try:
            raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            config = cls(
                hidden_size=int(raw["hidden_size"]),
                num_hidden_layers=int(raw["num_hidden_layers"]),
                num_attention_heads=int(raw["num_attention_heads"]),
                intermediate_size=int(raw["intermediate_size"]),
                max_position_embeddings=int(raw["max_position_embeddings"]),
                layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)),
                hidden_act=str(raw.get("hidden_act", "gelu")),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ModelUnavailable(f"{path} is not a usable BERT config ({exc!r}).") from exc
        if (
            raw.get("model_type", "bert") != "bert"
            or raw.get("position_embedding_type", "absolute") != "absolute"
        ):
            raise ModelUnavailable(
                f"{path} describes a model this encoder cannot run (needs plain BERT)."
            )
        if config.hidden_act not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
            raise ModelUnavailable(f"{path}: activation {config.hidden_act!r} is not supported.")
        return config


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv_w: Array  # (hidden, 3*hidden), transposed for x @ w
    qkv_b: Array
    out_w: Array
    out_b: Array
    ln1_g: Array
    ln1_b: Array
    ff_in_w: Array
    ff_in_b: Array
    ff_out_w: Array
    ff_out_b: Array
    ln2_g: Array
    ln2_b: Array


# Abramowitz & Stegun 7.1.26: |error| < 1.5e-7, below float32 resolution near 1.
_P = np.float32(0.3275911)
_A = tuple(
    np.float32(a) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
)


def _gelu(x: Array) -> Array:
    """Exact (erf) GELU, computed in place on temporaries to spare memory traffic."""
    z = x * np.float32(1.0 / math.sqrt(2.0))
    a = np.abs(z)
    t = a * _P
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    p = t * _A[4]
    for coefficient in (_A[3], _A[2], _A[1], _A[0]):
        p += coefficient
        p *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    p *= a  # p = 1 - erf(|z|)
    np.subtract(np.float32(1.0), p, out=p)
    np.copysign(p, z, out=p)  # erf(z)
    p += np.float32(1.0)
    p *= x
    p *= np.float32(0.5)
    result: Array = p
    return result


def _gelu_tanh(x: Array) -> Array:
    inner = np.float32(math.sqrt(2.0 / math.pi)) * (x + np.float32(0.044715) * x * x * x)
    result: Array = (np.float32(0.5) * x * (np.float32(1.0) + np.tanh(inner))).astype(np.float32)
    return result


def _layer_norm(x: Array, gamma: Array, beta: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    variance = np.mean(centered * centered, axis=-1, keepdims=True)
    result: Array = centered / np.sqrt(variance + np.float32(eps)) * gamma + beta
    return result


# exp(-30) ~ 1e-13: weights this small change nothing, and clipping keeps softmax outputs
# (and their products in the next matmul) out of the subnormal range, where x86 CPUs
# slow down by two orders of magnitude.
_MIN_LOGIT = np.float32(-30.0)


def _attend(scores: Array, keep: Array | None, values: Array) -> Array:
    """``softmax(scores) @ values`` over the last axis, computed in place on ``scores``.

    ``keep`` (1 for real tokens, 0 for padding; ``None`` when nothing is padded) zeroes
    the weights of padding keys exactly. Normalising after the matmul divides the small
    ``(heads, seq, head_dim)`` result instead of the ``(heads, seq, seq)`` weights.
    """
    scores -= scores.max(axis=-1, keepdims=True)
    np.maximum(scores, _MIN_LOGIT, out=scores)
    np.exp(scores, out=scores)
    if keep is not None:
        scores *= keep
    context: Array = scores @ values
    context /= scores.sum(axis=-1, keepdims=True)
    return context


class BertEncoder:
    """BERT's embeddings and encoder stack; :meth:`forward` returns the last hidden state.

    Not thread-safe to construct twice over the same arrays in place, but ``forward`` only
    reads the weights, so one encoder may serve calls from several threads.
    """

    def __init__(self, config: BertConfig, tensors: dict[str, npt.NDArray[Any]]) -> None:
        self.config = config
        get = _TensorReader(tensors)
        self.word = get("embeddings.word_embeddings.weight")
        self.position = get("embeddings.position_embeddings.weight")
        self.token_type = get("embeddings.token_type_embeddings.weight")
        self.emb_ln_g = get("embeddings.LayerNorm.weight")
        self.emb_ln_b = get("embeddings.LayerNorm.bias")
        self.layers = [self._layer(get, i) for i in range(config.num_hidden_layers)]
        self._act = _gelu if config.hidden_act == "gelu" else _gelu_tanh

    @classmethod
    def load(cls, config_path: Path, weights_path: Path) -> BertEncoder:
        """Read ``config.json`` and ``model.safetensors``."""
        from safetensors.numpy import load_file

        config = BertConfig.from_file(config_path)
        try:
            tensors = load_file(str(weights_path))
        except Exception as exc:  # safetensors raises its own error types and OSError
            raise ModelUnavailable(
                f"Cannot read the weights in {weights_path}: {exc}. Reinstall the model files."
            ) from exc
        return cls(config, tensors)

    @staticmethod
    def _layer(get: _TensorReader, index: int) -> _Layer:
        p = f"encoder.layer.{index}."
        q, k, v = (get(p + f"attention.self.{n}.weight") for n in ("query", "key", "value"))
        qb, kb, vb = (get(p + f"attention.self.{n}.bias") for n in ("query", "key", "value"))
        return _Layer(
            qkv_w=np.ascontiguousarray(np.concatenate([q, k, v], axis=0).T),
            qkv_b=np.concatenate([qb, kb, vb]),
            out_w=np.ascontiguousarray(get(p + "attention.output.dense.weight").T),
            out_b=get(p + "attention.output.dense.bias"),
            ln1_g=get(p + "attention.output.LayerNorm.weight"),
            ln1_b=get(p + "attention.output.LayerNorm.bias"),
            ff_in_w=np.ascontiguousarray(get(p + "intermediate.dense.weight").T),
            ff_in_b=get(p + "intermediate.dense.bias"),
            ff_out_w=np.ascontiguousarray(get(p + "output.dense.weight").T),
            ff_out_b=get(p + "output.dense.bias"),
            ln2_g=get(p + "output.LayerNorm.weight"),
            ln2_b=get(p + "output.LayerNorm.bias"),
        )

    def forward(self, input_ids: IntArray, attention_mask: IntArray) -> Array:
        """Hidden states ``(batch, seq, hidden)`` for padded ``input_ids`` ``(batch, seq)``.

        Padding positions (``attention_mask == 0``) are excluded as attention keys; their
        own outputs are meaningless and must be ignored by the caller.
        """
        batch, seq = input_ids.shape
        if seq > self.config.max_position_embeddings:
            raise ValueError(
                f"Sequence of {seq} tokens exceeds the model's {self.config.max_position_embeddings} positions."
            )
        eps = self.config.layer_norm_eps
        x = self.word[input_ids] + self.position[:seq][None, :, :] + self.token_type[0]
        x = _layer_norm(x, self.emb_ln_g, self.emb_ln_b, eps)
        keep = (attention_mask[:, None, None, :] > 0).astype(np.float32)
        lengths = [int(n) for n in (attention_mask > 0).sum(axis=1)]
        for layer in self.layers:
            x = self._encoder_layer(x, keep, lengths, layer, batch, seq)
        return x

    def _encoder_layer(
        self, x: Array, keep: Array, lengths: list[int], layer: _Layer, batch: int, seq: int
    ) -> Array:
        hidden = self.config.hidden_size
        heads = self.config.num_attention_heads
        head_dim = hidden // heads
        eps = self.config.layer_norm_eps
        flat = x.reshape(batch * seq, hidden)
        qkv = flat @ layer.qkv_w + layer.qkv_b
        qkv = qkv.reshape(batch, seq, 3, heads, head_dim)
        context = np.empty((batch, seq, heads, head_dim), dtype=np.float32)
        scale = np.float32(1.0 / math.sqrt(head_dim))
        # One sample at a time: its (heads, seq, seq) scores stay in cache.
        for row in range(batch):
            q = np.ascontiguousarray(qkv[row, :, 0].transpose(1, 0, 2))
            k = np.ascontiguousarray(qkv[row, :, 1].transpose(1, 2, 0))
            v = np.ascontiguousarray(qkv[row, :, 2].transpose(1, 0, 2))
            scores = q @ k
            scores *= scale
            padded = keep[row] if lengths[row] < seq else None
            context[row] = _attend(scores, padded, v).transpose(1, 0, 2)
        merged = context.reshape(batch * seq, hidden)
        attended = _layer_norm(
            merged @ layer.out_w + layer.out_b + flat, layer.ln1_g, layer.ln1_b, eps
        )
        inner = self._act(attended @ layer.ff_in_w + layer.ff_in_b)
        out = _layer_norm(
            inner @ layer.ff_out_w + layer.ff_out_b + attended, layer.ln2_g, layer.ln2_b, eps
        )
        return out.reshape(batch, seq, hidden)


class _TensorReader:
    """Looks up tensors with or without the ``bert.`` prefix, as float32."""

    def __init__(self, tensors: dict[str, npt.NDArray[Any]]) -> None:
        self._tensors = tensors

    def __call__(self, name: str) -> Array:
        for key in (name, f"bert.{name}"):
            tensor = self._tensors.get(key)
            if tensor is not None:
                return np.ascontiguousarray(tensor, dtype=np.float32)
        raise ModelUnavailable(
            f"The weights lack tensor {name!r}; they are not a BERT model this encoder can run."
        )
