"""Plain softmax output layer (one group = the whole vocabulary), tied to the input embedding."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from engine.heads.base import OutputHead
from engine.packed_linear import PackedLinear


class SoftmaxHead(OutputHead):
    """p(x | ctx) = softmax(h·Wᵀ); W is the token embedding when tied."""

    name = "softmax"

    def __init__(self, vocab_size: int, n_embd: int, tied_embedding: nn.Embedding | None = None) -> None:
        super().__init__(vocab_size)
        self.proj = PackedLinear(n_embd, vocab_size, bias=False)
        if tied_embedding is not None:
            self.proj.weight = tied_embedding.weight

    @property
    def num_groups(self) -> int:
        return 1

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.proj(hidden)  # [N, V]
        return logits

    def token_nll(
        self, hidden: torch.Tensor, targets: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        return F.cross_entropy(self.logits(hidden).float(), targets, reduction="none")  # [N]

    def log_probs(self, hidden: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        return F.log_softmax(self.logits(hidden).float(), dim=-1)  # [N, V]

    def group_log_probs(self, hidden: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        return hidden.new_zeros(hidden.shape[0], 1, dtype=torch.float32)  # log 1, [N, 1]

    def token_log_probs_in_group(
        self, hidden: torch.Tensor, groups: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        return self.log_probs(hidden, steps)

    def group_names(self) -> list[str]:
        return ["all tokens"]
