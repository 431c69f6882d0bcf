"""The PermGen model: BART-style encoder-decoder (engine/backbones/bart.py) × an output head.

Training objective (paper Eq. 6–7, π-SGD): for each example i of a batch, one order π'_i is
drawn (engine/permgen/permutation.py), the target is written in that order with its marks
(engine/permgen/marks.py), and the loss is

    J = (1/B) Σ_i −log p(Y^(i) | X^(i), π'_i) = (1/B) Σ_i Σ_l −log p(y_l | y_<l, X^(i))

— a sum over the example's marked tokens (⟨B-t⟩, words, ⟨E-t⟩, ⟨EOP⟩), averaged over the
batch, exactly Eq. 7. `token_nll` gives the per-token terms, used for perplexity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from engine.backbones.bart import BartBackbone, bart_config
from engine.heads import OutputHead, build_head
from engine.model import IGNORE_INDEX
from engine.permgen.config import PermGenConfig
from engine.permgen.marks import hierarchical_positions, mark_target
from engine.tokenizer import EOS, PAD, SPECIAL_TOKENS

PAD_ID = SPECIAL_TOKENS.index(PAD)
START_ID = SPECIAL_TOKENS.index(EOS)  # decoder start token, as GPT-2 documents start with eos


@dataclass
class EncodedExample:
    """One source and its target sentences (natural order), as token ids."""

    source: list[int]
    sentences: list[list[int]]


@dataclass
class Batch:
    """Padded tensors of one training batch; `orders` are the sentence orders used."""

    source: torch.Tensor  # [B, S]
    source_mask: torch.Tensor  # bool [B, S]
    decoder_input: torch.Tensor  # [B, T]
    sentence: torch.Tensor  # [B, T] global positions
    local: torch.Tensor  # [B, T] local positions
    targets: torch.Tensor  # [B, T], IGNORE_INDEX after the end
    orders: list[list[int]]

    def to(self, device: torch.device) -> Batch:
        return Batch(self.source.to(device), self.source_mask.to(device), self.decoder_input.to(device),
                     self.sentence.to(device), self.local.to(device), self.targets.to(device), self.orders)


def _pad(rows: Sequence[Sequence[int]], value: int) -> torch.Tensor:
    width = max(len(row) for row in rows)
    return torch.tensor([[*row, *[value] * (width - len(row))] for row in rows], dtype=torch.long)


def collate(examples: Sequence[EncodedExample], orders: Sequence[Sequence[int]]) -> Batch:
    """Mark each example's target in its order and pad everything (right padding)."""
    if len(examples) != len(orders) or not examples:
        raise ValueError(f"need one order per example, got {len(orders)} orders for {len(examples)} examples")
    targets = [mark_target(e.sentences, order) for e, order in zip(examples, orders, strict=True)]
    inputs = [[START_ID, *target[:-1]] for target in targets]
    positions = [hierarchical_positions(row) for row in inputs]
    source = _pad([e.source for e in examples], PAD_ID)
    return Batch(
        source=source,
        source_mask=_pad([[1] * len(e.source) for e in examples], 0).bool(),
        decoder_input=_pad(inputs, PAD_ID),
        sentence=_pad([g for g, _ in positions], 0),
        local=_pad([loc for _, loc in positions], 0),
        targets=_pad(targets, IGNORE_INDEX),
        orders=[list(o) for o in orders],
    )


class PermGenModel(nn.Module):
    """Encoder-decoder with hierarchical decoder positions and a swappable output head."""

    def __init__(self, config: PermGenConfig, backbone: BartBackbone | None = None) -> None:
        super().__init__()
        self.config = config
        m = config.model
        hf = bart_config(m.vocab_size, m.n_embd, config.encoder_layers, m.n_layer, m.n_head, config.feedforward,
                         config.max_source_len, m.dropout, PAD_ID)
        self.backbone = backbone if backbone is not None else BartBackbone(
            hf, config.max_sentences, config.max_sentence_len, config.absolute_positions)
        self.head: OutputHead = build_head(m, self.backbone.token_embedding)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def decoder_hidden(self, batch: Batch) -> torch.Tensor:
        """Teacher-forced decoder states [B, T, D]."""
        states = self.backbone.encode(batch.source, batch.source_mask)
        key_mask = batch.targets != IGNORE_INDEX  # [B, T]: real (non-pad) decoder inputs
        hidden: torch.Tensor = self.backbone.decoder(batch.decoder_input, batch.sentence, batch.local, states,
                                                     batch.source_mask, key_mask)
        return hidden

    def token_nll(self, batch: Batch) -> torch.Tensor:
        """−log p(y_l | y_<l, X) per target token [B, T]; 0 at padding."""
        hidden = self.decoder_hidden(batch)
        size, length = batch.targets.shape
        steps = torch.arange(1, length + 1, device=hidden.device).repeat(size)
        nll = self.head.token_nll(hidden.reshape(size * length, -1), batch.targets.clamp(min=0).reshape(-1), steps)
        return nll.view(size, length).masked_fill(batch.targets == IGNORE_INDEX, 0.0)

    def forward(self, batch: Batch) -> torch.Tensor:
        """Eq. 7 loss: per-example summed NLL of the marked target, averaged over the batch."""
        return self.token_nll(batch).sum(dim=1).mean()
