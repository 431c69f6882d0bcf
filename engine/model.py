"""A language model = backbone × output head, with the loss and incremental decoding steps."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from engine.backbones import Backbone, build_backbone
from engine.backbones.kv_cache import KVCache
from engine.bundled_model import BundledModel
from engine.config import ModelConfig
from engine.heads import OutputHead, build_head
from engine.heads.termination import document_steps
from engine.tokenizer import EOS, SPECIAL_TOKENS

IGNORE_INDEX = -100  # target value excluded from the loss (padding, prompt positions)
EOS_ID = SPECIAL_TOKENS.index(EOS)  # the document separator; termination steps restart after it


class LanguageModel(BundledModel):
    """Decoder-only LM: ids [B, T] → hidden [B, T, D] → grouped next-token distributions."""

    kind = "lm"

    def __init__(self, config: ModelConfig, backbone: Backbone | None = None) -> None:
        super().__init__()
        self.config = config
        self.backbone = backbone if backbone is not None else build_backbone(config)
        self.head: OutputHead = build_head(config, self.backbone.token_embedding)

    def bundle_sections(self) -> dict[str, Any]:
        return {"model": self.config.to_dict()}

    def block_stack(self) -> tuple[list[nn.Module], list[nn.Module]]:
        return self.backbone.block_stack()

    def hidden_states(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Hidden states [B, T, D] of every position of ids [B, T], attending causally (training, scoring)."""
        hidden: torch.Tensor = self.backbone(input_ids)
        return hidden

    def new_cache(self, rows: int, positions: int | None = None) -> KVCache:
        """An empty preallocated KV cache for `rows` decoding rows and `positions` positions (default: one block)."""
        return self.backbone.new_cache(rows, positions)

    def decode(self, input_ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Incremental decoding: ids [B, T] after the cache's positions → hidden [B, T, D]; fills the cache."""
        return self.backbone.decode(input_ids, cache)

    def forward(
        self, input_ids: torch.Tensor, targets: torch.Tensor, target_groups: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Mean per-token NLL of `targets` [B, T] (IGNORE_INDEX positions excluded).

        `target_groups` [B, T] (POSG): the observed group of each target, its POS tag;
        when given, the loss is the head's −log p(group) − log p(x | group)."""
        hidden = self.hidden_states(input_ids)  # [B, T, D]
        nll = self.token_nll(hidden, targets, target_groups)  # [B, T]
        mask = targets != IGNORE_INDEX
        return (nll * mask).sum() / mask.sum().clamp(min=1)

    def token_nll(
        self, hidden: torch.Tensor, targets: torch.Tensor, target_groups: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Per-position NLL [B, T]; ignored positions get 0."""
        batch, length = targets.shape
        steps = document_steps(targets, EOS_ID)  # t restarts after each eos (engine/heads/termination.py)
        safe_targets = targets.clamp(min=0)
        if target_groups is None:
            nll = self.head.token_nll(
                hidden.reshape(batch * length, -1), safe_targets.reshape(-1), steps.reshape(-1)
            )
        else:  # observed groups (POSG)
            nll = self.head.token_nll_given_groups(
                hidden.reshape(batch * length, -1), safe_targets.reshape(-1),
                target_groups.clamp(min=0).reshape(-1), steps.reshape(-1),
            )
        return nll.view(batch, length).masked_fill(targets == IGNORE_INDEX, 0.0)  # not `* mask`: 0·inf is nan

    @torch.no_grad()
    def next_log_probs(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Marginal log p(x) after each position: ids [B, T] → [B, T, V] (no cache)."""
        hidden = self.hidden_states(input_ids)
        batch, length, dim = hidden.shape
        # Position i predicts target i + 1 = input i + 1, so steps come from the inputs shifted by one.
        steps = document_steps(torch.cat([input_ids[:, 1:], input_ids[:, -1:]], dim=1), EOS_ID).reshape(-1)
        return self.head.log_probs(hidden.reshape(-1, dim), steps).view(batch, length, -1)
