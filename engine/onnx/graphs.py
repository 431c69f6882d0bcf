"""Torch modules written for ONNX tracing: the GPT-2 decoder step.

Each module computes exactly what the torch decoding path computes (the same weights, the same
maths as `GPT2Backbone.decode`), but in the form an exported
graph needs: the key/value cache is an explicit input (`past_*`, [N, H, S, d] per layer) and the
grown cache an explicit output (`present_*`, [N, H, S + T, d]), and every position, mask and
length is derived from tensor shapes, so one graph serves every batch size, prompt length and
cache length (dynamic axes). Attention with its cache and each residual sum with the layer norm
after it trace to one fused ONNX Runtime node each (engine/onnx/graph_ops.py): a step is then a
few dozen nodes, most of them the matrix products.
"""

from __future__ import annotations

from typing import cast

import torch
from torch import nn
from transformers.models.gpt2.modeling_gpt2 import GPT2Block

from engine.backbones.gpt2 import GPT2Backbone
from engine.onnx.graph_ops import cached_self_attention, conv1d, skip_layer_norm


class GPT2StepGraph(nn.Module):
    """(ids [N, T], past keys/values per layer [N, H, S, d]) → (hidden [N, T, D], presents [N, H, S + T, d])."""

    def __init__(self, backbone: GPT2Backbone) -> None:
        super().__init__()
        self.backbone = backbone
        self.heads = backbone.config.n_head
        self.width = backbone.config.n_embd

    def forward(self, input_ids: torch.Tensor, *past: torch.Tensor) -> tuple[torch.Tensor, ...]:
        transformer = self.backbone.transformer
        blocks = cast(list[GPT2Block], list(transformer.h))
        positions = torch.arange(input_ids.shape[1], device=input_ids.device) + past[0].shape[2]  # [T]
        x = transformer.wte(input_ids) + transformer.wpe(positions)  # [N, T, D] the residual stream
        normed = blocks[0].ln_1(x)
        presents: list[torch.Tensor] = []
        for layer, block in enumerate(blocks):
            attn, mlp = block.attn, block.mlp
            q, k, v = torch.split(torch.matmul(normed, attn.c_attn.weight), self.width, dim=2)
            heads_out, keys, values = cached_self_attention(q, k, v, attn.c_attn.bias, past[2 * layer],
                                                            past[2 * layer + 1], self.heads)
            normed, x = skip_layer_norm(torch.matmul(heads_out, attn.c_proj.weight), attn.c_proj.bias, x, block.ln_2)
            next_norm = blocks[layer + 1].ln_1 if layer + 1 < len(blocks) else transformer.ln_f
            mlp_out = torch.matmul(mlp.act(conv1d(mlp.c_fc, normed)), mlp.c_proj.weight)
            normed, x = skip_layer_norm(mlp_out, mlp.c_proj.bias, x, next_norm)
            presents += [keys, values]
        return (normed, *presents)
