"""Torch modules written for ONNX tracing: the GPT-2 decoder step.

Each module computes exactly what the torch decoding path computes (the same weights, the same
maths as `GPT2Backbone.decode`), but in the form an exported
graph needs: the key/value cache is an explicit input (`past_*`, [N, H, S, d] per layer) and the
grown cache an explicit output (`present_*`, [N, H, S + T, d]), and every position, mask and
length is derived from tensor shapes, so one graph serves every batch size, prompt length and
cache length (dynamic axes). Attention is written out (QKᵀ/√d + mask → softmax → ·V) rather than
through SDPA, so the exported graph is plain opset ops that every execution provider runs.
"""

from __future__ import annotations

import math
from typing import cast

import torch
from torch import nn
from transformers.models.gpt2.modeling_gpt2 import GPT2Block
from transformers.pytorch_utils import Conv1D

from engine.backbones.gpt2 import GPT2Backbone


def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """[N, T, D] → [N, H, T, d]. `unflatten` of the last axis, not a view to (N, T, H, d): a view
    traces N and T into shape arithmetic (Shape / Gather / Concat nodes) that runs every step."""
    return torch.unflatten(x, -1, (heads, x.shape[-1] // heads)).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[N, H, T, d] → [N, T, D] (`flatten`, for the same reason)."""
    return x.transpose(1, 2).flatten(2)


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


class GPT2StepGraph(nn.Module):
    """(ids [N, T], past keys/values per layer [N, H, S, d]) → (hidden [N, T, D], presents [N, H, S + T, d])."""

    def __init__(self, backbone: GPT2Backbone) -> None:
        super().__init__()
        self.backbone = backbone
        self.heads = backbone.config.n_head
        self.width = backbone.config.n_embd

    def forward(self, input_ids: torch.Tensor, *past: torch.Tensor) -> tuple[torch.Tensor, ...]:
        transformer = self.backbone.transformer
        start, length = past[0].shape[2], input_ids.shape[1]
        positions = torch.arange(length, device=input_ids.device) + start  # [T]
        x = transformer.wte(input_ids) + transformer.wpe(positions)  # [N, T, D]
        mask = causal_mask(start, length, x)  # [T, S + T]
        presents: list[torch.Tensor] = []
        for layer, block in enumerate(cast(list[GPT2Block], transformer.h)):
            q, k, v = torch.split(conv1d(block.attn.c_attn, block.ln_1(x)), self.width, dim=2)
            keys = torch.cat([past[2 * layer], split_heads(k, self.heads)], dim=2)  # [N, H, S + T, d]
            values = torch.cat([past[2 * layer + 1], split_heads(v, self.heads)], dim=2)
            x = x + conv1d(block.attn.c_proj, merge_heads(attention(split_heads(q, self.heads), keys, values, mask)))
            mlp = block.mlp
            x = x + conv1d(mlp.c_proj, mlp.act(conv1d(mlp.c_fc, block.ln_2(x))))
            presents += [keys, values]
        return (transformer.ln_f(x), *presents)
