"""Llama-family decoder backbone: one config-driven block, written on plain torch ops.

The block is what `LlamaForCausalLM` computes (SmolLM2, TinyLlama, Llama 2/3 without rope scaling):

    x = x + Wo · attention(RoPE(Wq · rms(x)), RoPE(Wk · rms(x)), Wv · rms(x))    grouped-query heads
    x = x + W_down · (silu(W_gate · rms(x)) ⊙ W_up · rms(x))                      SwiGLU MLP

with RMSNorm (a learned scale, no bias, no mean) before each sublayer and after the last block, rotary
positions on every query and key (rotate-half layout, frequencies θ^(−2i/d) with the config's
`rope_theta`), and `n_kv_head` key/value heads shared by `n_head / n_kv_head` query heads each. The
fields that make a Llama a Llama live in `ModelConfig` (`n_kv_head`, `mlp_width`, `rope_theta`,
`norm_eps`); the backbone stops at the final norm and returns hidden states, and the output layer is
a separate head (engine/heads), tied to the token embedding or not.

Query, key and value projections are one [Dq + 2·Dkv, D] weight, and gate and up one [2·F, D] weight
(as litgpt stores them): a decoding step at this size is a few rows times each weight, and one product
per sublayer instead of three costs less. An import from transformers' separate matrices stacks them
(engine/checkpoints/llama_import.py).

Grouped-query attention never copies keys: the g = n_head / n_kv_head query heads of one key/value head
are laid out as g·T query rows of that head ([B, H_kv, g·T, d]), and the causal mask repeats g times. So the
KV cache holds only the n_kv_head heads ([L, N, H_kv, T_max, d]), a third of the query heads for SmolLM2.

`forward` (training, scoring) and `decode` (incremental, with the preallocated `KVCache`) run the same
block maths; `decode` with `position` is the fixed-shape step a CUDA graph records
(engine/decoding/graphed_step.py), as for GPT-2.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol, cast

import torch
import torch.nn.functional as F
from torch import nn

from engine import packed_linear
from engine.backbones.kv_cache import KVCache
from engine.config import ModelConfig
from engine.low_rank_adapters import adapted_weight


def rope_tables(head_dim: int, positions: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin [positions, head_dim] of rotary embeddings, rotate-half layout (both halves equal)."""
    inverse = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))  # [d/2]
    angles = torch.arange(positions, dtype=torch.float32)[:, None] * inverse[None, :]  # [P, d/2]
    angles = torch.cat([angles, angles], dim=-1)  # [P, d]
    return angles.cos(), angles.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE on x [B, H, T, d] with cos/sin [T, d]: x·cos + rotate_half(x)·sin."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class LlamaBlock(nn.Module):
    """One pre-norm block: RMSNorm → grouped-query attention with RoPE, RMSNorm → SwiGLU MLP."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        width, head_dim = config.n_embd, config.n_embd // config.n_head
        kv_width = config.kv_heads * head_dim
        self.attn_norm = nn.RMSNorm(width, eps=config.norm_eps)
        self.qkv = nn.Linear(width, width + 2 * kv_width, bias=False)  # [Dq + 2·Dkv, D]
        self.attn_out = nn.Linear(width, width, bias=False)
        self.mlp_norm = nn.RMSNorm(width, eps=config.norm_eps)
        self.gate_up = nn.Linear(width, 2 * config.mlp_hidden, bias=False)  # [2F, D]: gate rows, then up rows
        self.down = nn.Linear(config.mlp_hidden, width, bias=False)


class BlockWeights(NamedTuple):
    """One block's tensors for `decode`, looked up once per decode rather than through module attributes."""

    attn_norm: torch.Tensor  # [D]
    qkv: packed_linear.Weight  # [Dq + 2·Dkv, D]
    attn_out: packed_linear.Weight  # [D, D]
    mlp_norm: torch.Tensor  # [D]
    gate_up: packed_linear.Weight  # [2F, D]
    down: packed_linear.Weight  # [D, F]

    @classmethod
    def of(cls, block: LlamaBlock) -> BlockWeights:
        # a fine-tune's LoRA adapters wrap the projections: their update is added here (engine/low_rank_adapters.py)
        return cls(block.attn_norm.weight, adapted_weight(block.qkv), adapted_weight(block.attn_out),
                   block.mlp_norm.weight, adapted_weight(block.gate_up), adapted_weight(block.down))


class PrefixStates(Protocol):
    """Hidden states after the first `first_block` blocks, known in advance for some sequences (a fine-tune of
    the last blocks computes its frozen blocks' output once: engine/training/frozen_prefix.py)."""

    first_block: int

    def states(self, input_ids: torch.Tensor) -> torch.Tensor | None:
        """[B, T, D] for ids [B, T] when every row is known, else None."""


class LlamaBackbone(nn.Module):
    """Token ids [B, T] → hidden states [B, T, n_embd] after the final RMSNorm; see the module docstring."""

    cos: torch.Tensor  # buffers, declared for the type checker
    sin: torch.Tensor
    frozen_prefix: PrefixStates | None = None

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.n_embd)
        self.blocks = nn.ModuleList(LlamaBlock(config) for _ in range(config.n_layer))
        self.norm = nn.RMSNorm(config.n_embd, eps=config.norm_eps)
        self.head_dim = config.n_embd // config.n_head
        # One table for every position the model reads; not saved (the config says how to make it).
        cos, sin = rope_tables(self.head_dim, config.block_size, config.rope_theta)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    @property
    def token_embedding(self) -> nn.Embedding:
        return self.embed

    def block_list(self) -> list[LlamaBlock]:
        return cast(list[LlamaBlock], list(self.blocks))

    def block_stack(self) -> tuple[list[nn.Module], list[nn.Module]]:
        """The blocks, input side first, and the final RMSNorm after them."""
        return list(self.blocks), [self.norm]

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:  # [B, T] → [B, T, D]
        """Hidden states of every position, attending causally (training and scoring); the first blocks' output
        is taken from `frozen_prefix` where it knows the rows."""
        prefix = self.frozen_prefix
        known = prefix.states(input_ids) if prefix is not None else None
        if prefix is None or known is None:
            x = self.run_blocks(self.embed(input_ids), 0, len(self.blocks))
        else:
            x = self.run_blocks(known.to(self.embed.weight.device), prefix.first_block, len(self.blocks))
        return F.rms_norm(x, (x.shape[-1],), self.norm.weight, self.config.norm_eps)

    def run_blocks(self, x: torch.Tensor, first: int, end: int) -> torch.Tensor:
        """The residual stream x [B, T, D] at block `first` through blocks first … end − 1, attending causally."""
        length = x.shape[1]
        keys_at = torch.arange(length, device=x.device)
        mask = keys_at[None, :] <= keys_at[:, None]  # [T, T]
        cos, sin = self.cos[:length], self.sin[:length]
        for block in self.block_list()[first:end]:
            x = x + self._dropout(self._attend(BlockWeights.of(block), x, cos, sin, mask, None, 0, None))
            x = x + self._dropout(self._mlp(BlockWeights.of(block), x))
        return x

    def _dropout(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(x, self.config.dropout, self.training) if self.config.dropout else x

    def new_cache(self, rows: int, positions: int | None = None) -> KVCache:
        """An empty cache of the key/value heads for `rows` rows and `positions` positions (at most one block)."""
        config = self.config
        capacity = config.block_size if positions is None else min(positions, config.block_size)
        cache = KVCache.allocate(config.n_layer, rows, config.kv_heads, capacity, self.head_dim, self.embed.weight)
        cache.weights = self.block_weights()
        return cache

    def keep_packed_weights_only(self, half: bool = False) -> int:
        """For a model loaded only to generate on the CPU: each block's four products keep oneDNN's packed float32
        weight alone, or with `half` a float16 copy packed for FBGEMM where this PyTorch has it
        (engine/packed_linear.py `keep_packed_only`): a step then reads 2 bytes per block weight instead of 4,
        and its speed is bound by those reads (docs/decoding_speed.md). Returns the bytes freed. The blocks then
        neither train nor export nor move to another device."""
        blocks = self.block_list()
        layers = [layer for b in blocks for layer in (b.qkv, b.attn_out, b.gate_up, b.down)]
        return packed_linear.keep_packed_only(layers, half)

    def block_weights(self) -> list[BlockWeights]:
        return [BlockWeights.of(block) for block in self.block_list()]

    def decode(self, input_ids: torch.Tensor, cache: KVCache, position: torch.Tensor | None = None) -> torch.Tensor:
        """Hidden states [B, T, D] of ids [B, T] that follow the cache's positions; fills the cache.

        With `position` [1] (a device tensor holding `cache.length`), one token per row is written at
        `position` and attends to the whole buffer under a mask: fixed shapes for a CUDA graph; the
        caller then advances `cache.length`."""
        start, length = cache.length, input_ids.shape[1]
        if position is None:
            cos, sin = self.cos[start : start + length], self.sin[start : start + length]  # [T, d]
            mask = None
            if length > 1:  # query i (absolute start + i) sees keys 0 … start + i
                keys_at = torch.arange(start + length, device=input_ids.device)
                mask = keys_at[None, :] <= keys_at[start:, None]  # [T, start + T]
        elif length == 1:
            cos, sin = self.cos.index_select(0, position), self.sin.index_select(0, position)  # [1, d]
            mask = torch.arange(cache.capacity, device=input_ids.device)[None, :] <= position[:, None]  # [1, T_max]
        else:
            raise ValueError(f"a fixed-shape step takes one token per row, got {length}")
        x = F.embedding(input_ids, self.embed.weight)  # [B, T, D]
        for layer, w in enumerate(cache.weights or self.block_weights()):
            x = x + self._attend(w, x, cos, sin, mask, cache, layer, position)
            x = x + self._mlp(w, x)
        if position is None:
            cache.advance(length)
        return F.rms_norm(x, (x.shape[-1],), self.norm.weight, self.config.norm_eps)

    def _attend(
        self, w: BlockWeights, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None,
        cache: KVCache | None, layer: int, position: torch.Tensor | None,
    ) -> torch.Tensor:
        """The attention sublayer on x [B, T, D] → [B, T, D]; keys/values go to `cache` when there is one."""
        batch, length, width = x.shape
        heads, kv_heads, d = self.config.n_head, self.config.kv_heads, self.head_dim
        h = F.rms_norm(x, (width,), w.attn_norm, self.config.norm_eps)
        qkv = packed_linear.linear(h.view(batch * length, width), w.qkv).view(batch, length, heads + 2 * kv_heads, d)
        # A 16-bit copy keeps float32 rope tables (engine/decoding/graphed_step.py): queries and keys are rotated in
        # float32 and rounded once, back to the residual stream's dtype (float32 under autocast: no cast then).
        qkv = rotate_heads(qkv.transpose(1, 2), heads + kv_heads, cos, sin).to(x.dtype)  # [B, H + 2·H_kv, T, d]
        q, k, v = torch.split(qkv, [heads, kv_heads, kv_heads], dim=1)
        if cache is not None and position is None:
            k, v = cache.write(layer, k, v)  # [B, H_kv, S, d]
        elif cache is not None and position is not None:
            k, v = cache.write_at(layer, k, v, position)  # [B, H_kv, T_max, d]
        group = heads // kv_heads  # query heads per key/value head, laid out as g·T rows of that head
        q = q.reshape(batch, kv_heads, group * length, d)
        if mask is not None and group > 1:
            mask = mask.repeat(group, 1)  # [g·T, S]: row j·T + t is query t of the group's head j
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # [B, H_kv, g·T, d]
        out = out.reshape(batch, heads, length, d).transpose(1, 2).reshape(batch * length, width)
        return packed_linear.linear(out, w.attn_out).view(batch, length, width)

    def _mlp(self, w: BlockWeights, x: torch.Tensor) -> torch.Tensor:
        """The SwiGLU sublayer: x [B, T, D] → down(silu(gate·h) ⊙ up·h) [B, T, D]."""
        batch, length, width = x.shape
        h = F.rms_norm(x, (width,), w.mlp_norm, self.config.norm_eps).view(batch * length, width)
        gate, up = packed_linear.linear(h, w.gate_up).chunk(2, dim=-1)  # each [B·T, F]
        return packed_linear.linear(F.silu(gate) * up, w.down).view(batch, length, width)


def rotate_heads(qkv: torch.Tensor, rotated: int, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE on the first `rotated` heads of qkv [B, H_all, T, d] (queries and keys; values stay) → a new tensor."""
    return torch.cat([rotate(qkv[:, :rotated], cos, sin), qkv[:, rotated:]], dim=1)
