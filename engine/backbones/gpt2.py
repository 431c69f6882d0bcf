"""GPT-2 decoder backbone built from transformers' modules, never downloaded.

The backbone stops at the final layer norm: it returns hidden states and a KV cache, and the
output layer is a separate head (see `engine.heads`), so heads can be swapped freely.

Two forward paths share the same weights: `forward` (transformers' module, for training and
scoring) and `decode` (incremental decoding with a preallocated `KVCache`). `decode` runs the
same GPT-2 block maths — pre-LN attention with scale 1/√d, tanh-GELU MLP, learned positions —
directly on the block's modules, without transformers' per-call cache and mask bookkeeping,
which dominates the cost of one step for a model this small (docs/architecture.md, "Decoding").
"""

from __future__ import annotations

from typing import NamedTuple, cast

import torch
import torch.nn.functional as F
from torch import nn
from transformers import GPT2Config, GPT2Model
from transformers.models.gpt2.modeling_gpt2 import GPT2Block

from engine import packed_linear
from engine.backbones.kv_cache import KVCache
from engine.config import ModelConfig


def hf_config(config: ModelConfig) -> GPT2Config:
    """The transformers config for `config` (special ids inside our vocabulary)."""
    return GPT2Config(
        vocab_size=config.vocab_size,
        n_positions=config.block_size,
        n_embd=config.n_embd,
        n_layer=config.n_layer,
        n_head=config.n_head,
        resid_pdrop=config.dropout,
        embd_pdrop=config.dropout,
        attn_pdrop=config.dropout,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=1,
    )


class BlockWeights(NamedTuple):
    """One GPT-2 block's parameters for `GPT2Backbone.decode` (Conv1D weights are [in, out]).

    Looked up once per decode (`new_cache`): reaching them through the modules' attributes each
    step costs ~25 `nn.Module.__getattr__` calls per block (docs/decoding_speed.md, "Block parameters")."""

    ln_1_weight: torch.Tensor  # [D]
    ln_1_bias: torch.Tensor
    ln_1_eps: float
    qkv_weight: torch.Tensor  # [D, 3D]
    qkv_bias: torch.Tensor
    attn_proj_weight: torch.Tensor  # [D, D]
    attn_proj_bias: torch.Tensor
    ln_2_weight: torch.Tensor  # [D]
    ln_2_bias: torch.Tensor
    ln_2_eps: float
    fc_weight: torch.Tensor  # [D, 4D]
    fc_bias: torch.Tensor
    act: nn.Module  # the checkpoint's activation, when it is not GPT-2's tanh-GELU
    mlp_proj_weight: torch.Tensor  # [4D, D]
    mlp_proj_bias: torch.Tensor

    @classmethod
    def of(cls, block: GPT2Block) -> BlockWeights:
        ln_1, attn, ln_2, mlp = block.ln_1, block.attn, block.ln_2, block.mlp
        return cls(ln_1.weight, ln_1.bias, ln_1.eps, attn.c_attn.weight, attn.c_attn.bias, attn.c_proj.weight,
                   attn.c_proj.bias, ln_2.weight, ln_2.bias, ln_2.eps, mlp.c_fc.weight, mlp.c_fc.bias, mlp.act,
                   mlp.c_proj.weight, mlp.c_proj.bias)


class GPT2Backbone(nn.Module):
    """Token ids [B, T] → hidden states [B, T, n_embd], with an optional KV cache."""

    def __init__(self, config: ModelConfig, transformer: GPT2Model | None = None) -> None:
        super().__init__()
        self.config = config
        self.transformer = transformer if transformer is not None else GPT2Model(hf_config(config))
        # Decoding feeds the pad id to rows that already ended and ignores their outputs, so
        # transformers' "input_ids may be padded" warning would only be noise on every CLI run.
        self.transformer.config.pad_token_id = None
        # GPT-2's own activation; `decode` then runs it as one fused op instead of transformers' several.
        self.tanh_gelu = self.transformer.config.activation_function in ("gelu_new", "gelu_pytorch_tanh")

    @property
    def token_embedding(self) -> nn.Embedding:
        wte = self.transformer.wte
        assert isinstance(wte, nn.Embedding)
        return wte

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:  # [B, T] → [B, T, D]
        """Hidden states of every position, through transformers' module (training and scoring)."""
        hidden: torch.Tensor = self.transformer(input_ids=input_ids, use_cache=False).last_hidden_state
        return hidden

    def block_stack(self) -> tuple[list[nn.Module], list[nn.Module]]:
        """The blocks, input side first, and the final layer norm after them."""
        return list(self.transformer.h), [self.transformer.ln_f]

    def new_cache(self, rows: int, positions: int | None = None) -> KVCache:
        """An empty preallocated cache for `rows` rows and `positions` positions (at most, and by default,
        one block), with the blocks' weights looked up once for the decode it serves (`BlockWeights`)."""
        config, like = self.config, self.token_embedding.weight
        head_dim = config.n_embd // config.n_head
        capacity = config.block_size if positions is None else min(positions, config.block_size)
        cache = KVCache.allocate(config.n_layer, rows, config.n_head, capacity, head_dim, like)
        cache.weights = self.block_weights()
        return cache

    def block_weights(self) -> list[BlockWeights]:
        """Every block's parameters, in the order `decode` uses them."""
        return [BlockWeights.of(block) for block in cast(list[GPT2Block], self.transformer.h)]

    def decode(self, input_ids: torch.Tensor, cache: KVCache, position: torch.Tensor | None = None) -> torch.Tensor:
        """Hidden states [B, T, D] of ids [B, T] that follow the cache's positions; fills the cache.

        T > 1 (a prompt) attends causally; positions continue from `cache.length`. The block maths
        run as functional ops on the modules' own parameters (one fused tanh-GELU, no module calls),
        because per-op Python overhead is most of a step at this size (docs/decoding_speed.md).

        With `position` [1] (a device tensor holding `cache.length`), the step has fixed shapes for a
        CUDA graph: one token per row, written at `position`, attending to the cache's whole capacity
        under a mask; the cache's `length` is then the caller's to advance."""
        transformer, start = self.transformer, cache.length
        batch, length = input_ids.shape
        dim = self.config.n_embd
        if position is None:  # position rows start … start + T are a slice of the table (what a lookup copies)
            positions = transformer.wpe.weight[start : start + length]
        elif length == 1:
            positions = transformer.wpe.weight.index_select(0, position)  # [1, D]
        else:
            raise ValueError(f"a fixed-shape step takes one token per row, got {length}")
        x = F.embedding(input_ids, transformer.wte.weight) + positions
        x = x.view(batch * length, dim)  # [B·T, D]
        mask = None
        if position is not None:  # keys 0 … position of the whole buffer
            mask = torch.arange(cache.capacity, device=input_ids.device)[None, :] <= position[:, None]  # [1, T_max]
        elif length > 1:  # query i (absolute start + i) sees keys 0 … start + i
            keys_at = torch.arange(start + length, device=input_ids.device)
            mask = keys_at[None, :] <= keys_at[start:, None]  # [T, start + T]
        for layer, w in enumerate(cache.weights or self.block_weights()):
            x = x + self._attend(w, x, cache, layer, batch, mask, position)
            h = torch.layer_norm(x, (dim,), w.ln_2_weight, w.ln_2_bias, w.ln_2_eps)
            h = packed_linear.project(h, w.fc_weight, w.fc_bias)  # [B·T, 4D]
            h = F.gelu(h, approximate="tanh") if self.tanh_gelu else w.act(h)
            x = x + packed_linear.project(h, w.mlp_proj_weight, w.mlp_proj_bias)
        if position is None:
            cache.advance(length)
        ln_f = transformer.ln_f
        return torch.layer_norm(x, (dim,), ln_f.weight, ln_f.bias, ln_f.eps).view(batch, length, dim)

    def _attend(
        self, w: BlockWeights, x: torch.Tensor, cache: KVCache, layer: int, batch: int, mask: torch.Tensor | None,
        position: torch.Tensor | None,
    ) -> torch.Tensor:
        """One self-attention sublayer on the residual x [B·T, D], keys/values kept in the cache → [B·T, D]."""
        dim, heads = x.shape[1], self.config.n_head
        h = torch.layer_norm(x, (dim,), w.ln_1_weight, w.ln_1_bias, w.ln_1_eps)
        qkv = packed_linear.project(h, w.qkv_weight, w.qkv_bias)  # [B·T, 3D]
        q, k, v = qkv.view(batch, -1, 3, heads, dim // heads).permute(2, 0, 3, 1, 4).unbind(0)  # each [B, H, T, d]
        if position is None:
            keys, values = cache.write(layer, k, v)  # [B, H, S, d]
        else:
            keys, values = cache.write_at(layer, k, v, position)  # [B, H, T_max, d]
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)  # [B, H, T, d]
        return packed_linear.project(out.transpose(1, 2).reshape(x.shape[0], dim), w.attn_proj_weight, w.attn_proj_bias)
