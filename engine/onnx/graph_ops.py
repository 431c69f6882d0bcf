"""The operations the traced decoder graphs are built from (engine/onnx/graphs.py, llama_graphs.py,
seq2seq_graphs.py).

Plain ops (`split_heads`, `merge_heads`, `reshape_kept`, `conv1d`, `attention`, `causal_mask`) are
written so that tracing them gives few nodes: what ONNX Runtime spends on a small model's step besides
the matrix products is mostly per-node work, and shape arithmetic traced from views runs every step.

Three ops trace to one fused ONNX Runtime node each (domain `com.microsoft`, run by its CPU and CUDA
execution providers) instead of the dozen plain nodes they stand for:

- `cached_self_attention` → `MultiHeadAttention`: adds the q/k/v biases, splits heads, appends the
  step's keys / values to the cache, attends causally and merges heads, in one kernel;
- `skip_layer_norm` → `SkipLayerNormalization`: a residual sum with a bias, and its layer norm;
- `skip_rms_norm` → `SkipSimplifiedLayerNormalization`: a residual sum and its RMSNorm (the Llama step).

Their torch forward computes the same maths with plain ops, so a traced module is also a torch
module that gives the decoder's numbers (tests compare both runtimes).
"""

from __future__ import annotations

import math
from typing import Any, cast

import torch
from torch import nn
from torch.nn import functional
from transformers.pytorch_utils import Conv1D


def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """[N, T, D] → [N, H, T, d]. `unflatten` of the last axis, not a view to (N, T, H, d): a view
    traces N and T into shape arithmetic (Shape / Gather / Concat nodes) that runs every step."""
    return torch.unflatten(x, -1, (heads, x.shape[-1] // heads)).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[N, H, T, d] → [N, T, D] (`flatten`, for the same reason)."""
    return x.transpose(1, 2).flatten(2)


class _ReshapeKept(torch.autograd.Function):
    """Traced as one `Reshape` to a constant shape whose 0s keep the input's size (ONNX Reshape's meaning)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
        return x.reshape([x.shape[axis] if size == 0 else size for axis, size in enumerate(shape)])

    @staticmethod
    def symbolic(graph: Any, x: Any, shape: tuple[int, ...]) -> Any:
        return graph.op("Reshape", x, graph.op("Constant", value_t=torch.tensor(shape, dtype=torch.int64)))


def reshape_kept(x: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """x reshaped to `shape`, where 0 keeps x's size on that axis and one −1 takes what is left: one Reshape node
    with a constant shape, where `unflatten` / `flatten` with two dynamic axes (N and T) trace into shape
    arithmetic run every step."""
    return cast(torch.Tensor, _ReshapeKept.apply(x, shape))  # type: ignore[no-untyped-call]


def conv1d(layer: Conv1D, x: torch.Tensor) -> torch.Tensor:
    """GPT-2's Conv1D (x·W + b, W [in, out]) on x [..., in] as one MatMul and one Add: the module's own
    forward flattens x to 2-D and back, which traces into shape arithmetic."""
    return torch.matmul(x, layer.weight) + layer.bias


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """softmax(QKᵀ/√d + mask)·V: q [N, H, T, d], k/v [N or 1, H, S, d] (a batch of 1 is broadcast to the
    queries' N), additive mask broadcast to [N, H, T, S] or None (every key visible)."""
    scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        scores = scores + mask
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def causal_mask(start: int, length: int, like: torch.Tensor) -> torch.Tensor:
    """Additive mask [T, S + T]: query i (absolute start + i) sees keys 0 … start + i."""
    positions = torch.arange(length, device=like.device) + start  # [T]
    keys = torch.arange(positions.shape[0] + start, device=like.device)  # [S + T]
    allowed = keys[None, :] <= positions[:, None]
    return torch.where(allowed, torch.zeros((), dtype=like.dtype), torch.tensor(torch.finfo(like.dtype).min))


class _CachedSelfAttention(torch.autograd.Function):
    """Traced as `com.microsoft.MultiHeadAttention` with a past / present cache and a causal mask."""

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, qkv_bias: torch.Tensor,
                past_keys: torch.Tensor, past_values: torch.Tensor, heads: int
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q_bias, k_bias, v_bias = qkv_bias.chunk(3)
        keys = torch.cat([past_keys, split_heads(k + k_bias, heads)], dim=2)  # [N, H, S + T, d]
        values = torch.cat([past_values, split_heads(v + v_bias, heads)], dim=2)
        mask = causal_mask(past_keys.shape[2], q.shape[1], q)  # [T, S + T]
        return merge_heads(attention(split_heads(q + q_bias, heads), keys, values, mask)), keys, values

    @staticmethod
    def symbolic(graph: Any, q: Any, k: Any, v: Any, qkv_bias: Any, past_keys: Any, past_values: Any,
                 heads: int) -> Any:
        absent = graph.op("prim::Constant").setType(torch._C.NoneType.get())  # an empty optional input
        out, keys, values = graph.op("com.microsoft::MultiHeadAttention", q, k, v, qkv_bias, absent, absent,
                                     past_keys, past_values, num_heads_i=heads, unidirectional_i=1, outputs=3)
        out.setType(q.type())  # the exporter cannot infer a contrib op's types and shapes; the cache's
        grown = past_keys.type().with_sizes([None, heads, None, None])  # length is S + T, not the past's S
        keys.setType(grown)
        values.setType(grown)
        return out, keys, values


def cached_self_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, qkv_bias: torch.Tensor,
                          past_keys: torch.Tensor, past_values: torch.Tensor, heads: int
                          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Causal self-attention of the step's q, k, v [N, T, D] (before their biases, qkv_bias [3D]) over
    the cache past_keys / past_values [N, H, S, d] and the step itself → (merged heads [N, T, D],
    keys [N, H, S + T, d], values [N, H, S + T, d]); query i of the step sees keys 0 … S + i."""
    out = _CachedSelfAttention.apply(q, k, v, qkv_bias, past_keys, past_values, heads)  # type: ignore[no-untyped-call]
    return cast(tuple[torch.Tensor, torch.Tensor, torch.Tensor], out)


class _SkipLayerNorm(torch.autograd.Function):
    """Traced as `com.microsoft.SkipLayerNormalization`, keeping its fourth output (the sum)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, skip: torch.Tensor, weight: torch.Tensor,
                norm_bias: torch.Tensor, bias: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
        total = x + bias + skip
        return functional.layer_norm(total, (total.shape[-1],), weight, norm_bias, eps), total

    @staticmethod
    def symbolic(graph: Any, x: Any, skip: Any, weight: Any, norm_bias: Any, bias: Any, eps: float) -> Any:
        outputs = graph.op("com.microsoft::SkipLayerNormalization", x, skip, weight, norm_bias, bias,
                           epsilon_f=eps, outputs=4)
        for output in (outputs[0], outputs[3]):  # x's type and shape (the exporter cannot infer them)
            output.setType(x.type())
        return outputs[0], outputs[3]  # the normed sum, and the sum (the mean and 1/σ are not used)


def skip_layer_norm(x: torch.Tensor, bias: torch.Tensor, skip: torch.Tensor,
                    norm: nn.LayerNorm) -> tuple[torch.Tensor, torch.Tensor]:
    """(norm(x + bias + skip), x + bias + skip) for x, skip [N, T, D] and bias [D]: a residual branch's
    output before its bias, added to the residual stream and normed for the next sublayer."""
    out = _SkipLayerNorm.apply(x, skip, norm.weight, norm.bias, bias, norm.eps)  # type: ignore[no-untyped-call]
    return cast(tuple[torch.Tensor, torch.Tensor], out)


class _SkipRMSNorm(torch.autograd.Function):
    """Traced as `com.microsoft.SkipSimplifiedLayerNormalization` (RMSNorm of a residual sum), keeping its sum."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, skip: torch.Tensor, weight: torch.Tensor,
                eps: float) -> tuple[torch.Tensor, torch.Tensor]:
        total = x + skip
        return functional.rms_norm(total, (total.shape[-1],), weight, eps), total

    @staticmethod
    def symbolic(graph: Any, x: Any, skip: Any, weight: Any, eps: float) -> Any:
        outputs = graph.op("com.microsoft::SkipSimplifiedLayerNormalization", x, skip, weight, epsilon_f=eps,
                           outputs=4)
        for output in (outputs[0], outputs[3]):  # x's type and shape (the exporter cannot infer them)
            output.setType(x.type())
        return outputs[0], outputs[3]  # the normed sum, and the sum (the mean and 1/rms are not used)


def skip_rms_norm(x: torch.Tensor, skip: torch.Tensor, weight: torch.Tensor,
                  eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(rms_norm(x + skip) · weight, x + skip) for x, skip [N, T, D] and weight [D]: a Llama sublayer's output
    added to the residual stream and normed for the next sublayer."""
    out = _SkipRMSNorm.apply(x, skip, weight, eps)  # type: ignore[no-untyped-call]
    return cast(tuple[torch.Tensor, torch.Tensor], out)
