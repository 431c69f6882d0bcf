"""A torch module written for ONNX tracing: the Llama decoder step with its key/value cache.

It computes what `LlamaBackbone.decode` computes (the same weights, RMSNorm, rotary positions, grouped-query
attention and SwiGLU), in the form of the GPT-2 step (engine/onnx/graphs.py), so the one runner
(engine/onnx/runner.py) runs either: the cache is an explicit input (`past_*`, [N, H_kv, S, d] per layer) and
the grown cache an explicit output (`present_*`, [N, H_kv, S + T, d]), and positions, mask and lengths come
from tensor shapes, so one graph serves every batch size, prompt length and cache length.

The cache holds only the n_kv_head key/value heads. The g = n_head / n_kv_head query heads of one key/value
head attend to its keys by broadcasting ([N, H_kv, g, T, d] against [N, H_kv, 1, S, d]): the rows the
backbone lays out as g·T, without copying a key. Rotary positions gather the step's rows of the backbone's
own cos / sin tables at positions S … S + T − 1, so both runtimes rotate by the same numbers.

Each residual sum and the RMSNorm after it trace to one fused `SkipSimplifiedLayerNormalization` node, as
GPT-2's do to `SkipLayerNormalization` (engine/onnx/graph_ops.py). Attention stays plain ops: ONNX Runtime's
fused `MultiHeadAttention` takes as many key/value heads as query heads, and its `GroupQueryAttention` has
no fp32 CUDA kernel (docs/onnx-runtime.md).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from engine.backbones.llama import BlockWeights, LlamaBackbone, rotate
from engine.onnx.graph_ops import attention, causal_mask, reshape_kept, skip_rms_norm
from engine.packed_linear import plain_tensor


class LlamaStepGraph(nn.Module):
    """(ids [N, T], past keys/values per layer [N, H_kv, S, d]) → (hidden [N, T, D], presents [N, H_kv, S + T, d])."""

    def __init__(self, backbone: LlamaBackbone) -> None:
        super().__init__()
        self.backbone = backbone
        config = backbone.config
        self.heads, self.kv_heads, self.head_dim = config.n_head, config.kv_heads, backbone.head_dim
        self.mlp_hidden, self.eps = config.mlp_hidden, config.norm_eps

    def forward(self, input_ids: torch.Tensor, *past: torch.Tensor) -> tuple[torch.Tensor, ...]:
        backbone = self.backbone
        start, length = past[0].shape[2], input_ids.shape[1]
        positions = torch.arange(length, device=input_ids.device) + start  # [T]
        cos, sin = backbone.cos[positions], backbone.sin[positions]  # [T, d]: the tables' rows at the positions
        x = F.embedding(input_ids, backbone.embed.weight)  # [N, T, D] the residual stream
        mask = causal_mask(start, length, x)  # [T, S + T]
        weights = backbone.block_weights()
        norms = [w.attn_norm for w in weights[1:]] + [backbone.norm.weight]  # the norm after each block's MLP
        normed = self._rms_norm(x, weights[0].attn_norm)
        presents: list[torch.Tensor] = []
        for layer, (w, next_norm) in enumerate(zip(weights, norms, strict=True)):
            attended, keys, values = self._attend(w, normed, cos, sin, mask, past[2 * layer], past[2 * layer + 1])
            normed, x = skip_rms_norm(attended, x, w.mlp_norm, self.eps)
            normed, x = skip_rms_norm(self._mlp(w, normed), x, next_norm, self.eps)
            presents += [keys, values]
        return (normed, *presents)

    def _rms_norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """RMSNorm of x [N, T, D] in plain ops, which ONNX Runtime fuses into one node (the classic exporter has
        no `rms_norm` at opset 17)."""
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * weight

    def _attend(self, w: BlockWeights, normed: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                mask: torch.Tensor, past_keys: torch.Tensor, past_values: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The attention sublayer on the normed stream [N, T, D] over the cache → (its output [N, T, D], keys and
        values [N, H_kv, S + T, d])."""
        heads, kv_heads, d = self.heads, self.kv_heads, self.head_dim
        qkv = F.linear(normed, plain_tensor(w.qkv))  # [N, T, (H + 2·H_kv)·d]
        qkv = reshape_kept(qkv, (0, -1, heads + 2 * kv_heads, d)).transpose(1, 2)  # [N, H + 2·H_kv, T, d]
        rotated, v = torch.split(qkv, [heads + kv_heads, kv_heads], dim=1)
        q, k = torch.split(rotate(rotated, cos, sin), [heads, kv_heads], dim=1)
        keys = torch.cat([past_keys, k], dim=2)  # [N, H_kv, S + T, d]
        values = torch.cat([past_values, v], dim=2)
        grouped = reshape_kept(q, (0, kv_heads, heads // kv_heads, -1, d))  # [N, H_kv, g, T, d]
        out = attention(grouped, keys.unsqueeze(2), values.unsqueeze(2), mask)  # [N, H_kv, g, T, d]
        merged = reshape_kept(out.permute(0, 3, 1, 2, 4), (0, 0, -1))  # [N, T, D], heads in the query order
        return F.linear(merged, plain_tensor(w.attn_out)), keys, values

    def _mlp(self, w: BlockWeights, normed: torch.Tensor) -> torch.Tensor:
        """The SwiGLU sublayer: the normed stream h [N, T, D] → down(silu(gate·h) ⊙ up·h) [N, T, D]."""
        gate_up = F.linear(normed, plain_tensor(w.gate_up))  # [N, T, 2F]: gate, then up
        gate, up = torch.split(gate_up, [self.mlp_hidden, self.mlp_hidden], dim=-1)  # sizes given: no shape ops
        return F.linear(F.silu(gate) * up, plain_tensor(w.down))
