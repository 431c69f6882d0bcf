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

from pathlib import Path
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn
from transformers import GPT2Config, GPT2Model
from transformers.cache_utils import Cache
from transformers.models.gpt2.modeling_gpt2 import GPT2Attention, GPT2Block

from engine.backbones.kv_cache import KVCache
from engine.config import ConfigError, ModelConfig


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


class GPT2Backbone(nn.Module):
    """Token ids [B, T] → hidden states [B, T, n_embd], with an optional KV cache."""

    def __init__(self, config: ModelConfig, transformer: GPT2Model | None = None) -> None:
        super().__init__()
        self.config = config
        self.transformer = transformer if transformer is not None else GPT2Model(hf_config(config))
        # Decoding feeds the pad id to rows that already ended and ignores their outputs, so
        # transformers' "input_ids may be padded" warning would only be noise on every CLI run.
        self.transformer.config.pad_token_id = None

    @property
    def token_embedding(self) -> nn.Embedding:
        wte = self.transformer.wte
        assert isinstance(wte, nn.Embedding)
        return wte

    def forward(
        self,
        input_ids: torch.Tensor,  # [B, T]
        past: Cache | None = None,
        position_ids: torch.Tensor | None = None,  # [B, T]
        use_cache: bool = False,
    ) -> tuple[torch.Tensor, Cache | None]:
        out = self.transformer(
            input_ids=input_ids, past_key_values=past, position_ids=position_ids, use_cache=use_cache
        )
        return out.last_hidden_state, out.past_key_values  # [B, T, D]

    def new_cache(self, rows: int) -> KVCache:
        """An empty preallocated cache for `rows` rows and one block of positions."""
        config, like = self.config, self.token_embedding.weight
        head_dim = config.n_embd // config.n_head
        return KVCache.allocate(config.n_layer, rows, config.n_head, config.block_size, head_dim, like)

    def decode(self, input_ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Hidden states [B, T, D] of ids [B, T] that follow the cache's positions; fills the cache.

        T > 1 (a prompt) attends causally; positions continue from `cache.length`."""
        transformer, start = self.transformer, cache.length
        length = input_ids.shape[1]
        positions = torch.arange(start, start + length, device=input_ids.device)  # [T]
        x = transformer.wte(input_ids) + transformer.wpe(positions)  # [B, T, D]
        mask = None
        if length > 1:  # query i (absolute start + i) sees keys 0 … start + i
            keys_at = torch.arange(start + length, device=input_ids.device)
            mask = keys_at[None, :] <= positions[:, None]  # [T, start + T]
        for layer, block in enumerate(cast(list[GPT2Block], transformer.h)):
            x = x + self._attend(block.attn, block.ln_1(x), cache, layer, mask)
            x = x + block.mlp(block.ln_2(x))
        cache.advance(length)
        hidden: torch.Tensor = transformer.ln_f(x)
        return hidden

    def _attend(
        self, attn: GPT2Attention, x: torch.Tensor, cache: KVCache, layer: int, mask: torch.Tensor | None
    ) -> torch.Tensor:
        """One self-attention sublayer on normalised x [B, T, D], keys/values kept in the cache."""
        batch, length, dim = x.shape
        heads = self.config.n_head
        q, k, v = attn.c_attn(x).split(dim, dim=2)  # each [B, T, D]
        q, k, v = (t.view(batch, length, heads, dim // heads).transpose(1, 2) for t in (q, k, v))  # [B, H, T, d]
        keys, values = cache.write(layer, k, v)  # [B, H, S, d]
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)  # [B, H, T, d]
        projected: torch.Tensor = attn.c_proj(out.transpose(1, 2).reshape(batch, length, dim))
        return projected


def load_hf_gpt2_backbone(directory: Path) -> GPT2Backbone:
    """Load a GPT-2 backbone from a local HF checkpoint directory (`config.json` + weights)."""
    if not (directory / "config.json").is_file():
        raise ConfigError(f"{directory} is not a Hugging Face GPT-2 checkpoint (no config.json)")
    transformer = GPT2Model.from_pretrained(str(directory), local_files_only=True)
    hf = transformer.config
    config = ModelConfig(
        vocab_size=hf.vocab_size,
        n_layer=hf.n_layer,
        n_head=hf.n_head,
        n_embd=hf.n_embd,
        block_size=hf.n_positions,
        dropout=hf.resid_pdrop,
    )
    return GPT2Backbone(config, transformer)
