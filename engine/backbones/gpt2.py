"""GPT-2 decoder backbone built from transformers' modules, never downloaded.

The backbone stops at the final layer norm: it returns hidden states and a KV cache, and the
output layer is a separate head (see `engine.heads`), so heads can be swapped freely.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from transformers import GPT2Config, GPT2Model
from transformers.cache_utils import Cache

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
