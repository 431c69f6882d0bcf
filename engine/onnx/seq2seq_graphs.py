"""Torch modules written for ONNX tracing: the PermGen encoder and decoder step (BART, post-norm layers).

They compute what `engine.backbones.bart.BartBackbone` computes with the same weights, in the form
an exported graph needs (see engine/onnx/graphs.py for the GPT-2 step, engine/onnx/graph_ops.py for the shared ops):

- `BartEncoderGraph`: source ids [1, S] → the cross-attention keys and values of every decoder
  layer [1, H, S, d]. They depend on the source only, so they are computed once per request, and
  their batch of 1 is broadcast to the decoder's N rows inside attention (beams never copy them).
- `BartStepGraph`: decoder ids, sentence and local positions [N, T], the cross keys / values and
  the self-attention cache [N, H, P, d] per layer → hidden [N, T, D] and the grown cache
  [N, H, P + T, d]. Plain-BART bundles (absolute positions) take the same inputs and use the
  cache length P for the positions instead of `sentence` / `local`.

The source is never padded at decoding time (one request = one source), so neither graph takes a
source mask: every source position is visible, as in `PermGenRows`.
"""

from __future__ import annotations

from typing import cast

import torch
from torch import nn
from transformers.models.bart.modeling_bart import BartAttention, BartDecoderLayer, BartEncoderLayer

from engine.backbones.bart import BartBackbone
from engine.onnx.graph_ops import attention, cached_self_attention, merge_heads, skip_layer_norm, split_heads

POSITION_OFFSET = 2  # BART's learned source positions start at row 2 of their table


def _attend(attn: BartAttention, x: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
            mask: torch.Tensor | None) -> torch.Tensor:
    """BART attention of queries from x [N, T, D] over keys / values [N or 1, H, S, d] → [N, T, D]."""
    q = split_heads(attn.q_proj(x), attn.num_heads)
    out: torch.Tensor = attn.out_proj(merge_heads(attention(q, keys, values, mask)))
    return out


def _project(linear: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """x·Wᵀ without the bias: the bias is added inside the fused residual norm that follows."""
    return torch.matmul(x, linear.weight.t())


def _feed_forward(layer: BartEncoderLayer | BartDecoderLayer, x: torch.Tensor) -> torch.Tensor:
    """The post-norm feed-forward sublayer: LN(x + fc2(act(fc1(x))))."""
    out: torch.Tensor = layer.final_layer_norm(x + layer.fc2(layer.activation_fn(layer.fc1(x))))
    return out


class BartEncoderGraph(nn.Module):
    """source_ids [1, S] → (cross keys_0, cross values_0, keys_1, …) of the decoder layers, [1, H, S, d] each."""

    def __init__(self, backbone: BartBackbone) -> None:
        super().__init__()
        self.backbone = backbone

    def forward(self, source_ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        encoder = self.backbone.encoder
        positions = torch.arange(source_ids.shape[1], device=source_ids.device) + POSITION_OFFSET  # [S]
        x = self.backbone.shared(source_ids) + encoder.embed_positions.weight[positions]  # [1, S, D]
        x = encoder.layernorm_embedding(x)
        for layer in cast(list[BartEncoderLayer], encoder.layers):
            attn = layer.self_attn
            keys, values = split_heads(attn.k_proj(x), attn.num_heads), split_heads(attn.v_proj(x), attn.num_heads)
            x = layer.self_attn_layer_norm(x + _attend(attn, x, keys, values, None))
            x = _feed_forward(layer, x)
        cross: list[torch.Tensor] = []
        for decoder_layer in cast(list[BartDecoderLayer], self.backbone.decoder.layers):
            attn = decoder_layer.encoder_attn
            cross += [split_heads(attn.k_proj(x), attn.num_heads), split_heads(attn.v_proj(x), attn.num_heads)]
        return tuple(cross)


class BartStepGraph(nn.Module):
    """(ids, sentence, local [N, T], cross keys / values ×L [1, H, S, d], past keys / values ×L [N, H, P, d])
    → (hidden [N, T, D], present keys / values ×L [N, H, P + T, d])."""

    def __init__(self, backbone: BartBackbone) -> None:
        super().__init__()
        self.decoder = backbone.decoder
        self.layers = len(backbone.decoder.layers)

    def forward(self, ids: torch.Tensor, sentence: torch.Tensor, local: torch.Tensor,
                *caches: torch.Tensor) -> tuple[torch.Tensor, ...]:
        cross, past = caches[: 2 * self.layers], caches[2 * self.layers:]
        x = self.decoder.layernorm_embedding(self._embed(ids, sentence, local, past[0].shape[2]))  # [N, T, D]
        presents: list[torch.Tensor] = []
        for index, layer in enumerate(cast(list[BartDecoderLayer], self.decoder.layers)):
            attn, cross_attn = layer.self_attn, layer.encoder_attn
            projections = (attn.q_proj, attn.k_proj, attn.v_proj)  # one product: the exporter folds the cat
            qkv = torch.matmul(x, torch.cat([p.weight for p in projections]).t())  # [N, T, 3D]
            q, k, v = torch.split(qkv, qkv.shape[-1] // 3, dim=2)
            heads_out, keys, values = cached_self_attention(
                q, k, v, torch.cat([p.bias for p in projections]), past[2 * index], past[2 * index + 1],
                attn.num_heads)
            x, _ = skip_layer_norm(_project(attn.out_proj, heads_out), attn.out_proj.bias, x,
                                   layer.self_attn_layer_norm)
            q = split_heads(cross_attn.q_proj(x), cross_attn.num_heads)
            cross_out = merge_heads(attention(q, cross[2 * index], cross[2 * index + 1], None))
            x, _ = skip_layer_norm(_project(cross_attn.out_proj, cross_out), cross_attn.out_proj.bias, x,
                                   layer.encoder_attn_layer_norm)
            x, _ = skip_layer_norm(_project(layer.fc2, layer.activation_fn(layer.fc1(x))), layer.fc2.bias, x,
                                   layer.final_layer_norm)
            presents += [keys, values]
        return (x, *presents)

    def _embed(self, ids: torch.Tensor, sentence: torch.Tensor, local: torch.Tensor, start: int) -> torch.Tensor:
        """Token + hierarchical (sentence, local) embeddings, or token + absolute position start + 0..T-1."""
        tokens: torch.Tensor = self.decoder.embed_tokens(ids)
        if self.decoder.embed_positions is not None:
            positions = torch.arange(ids.shape[1], device=ids.device) + start  # [T]
            absolute: torch.Tensor = tokens + self.decoder.embed_positions(positions)
            return absolute
        assert self.decoder.embed_sentence is not None and self.decoder.embed_local is not None
        embedded: torch.Tensor = tokens + self.decoder.embed_sentence(sentence) + self.decoder.embed_local(local)
        return embedded
