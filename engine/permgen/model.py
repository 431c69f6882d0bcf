"""The PermGen model: BART-style encoder-decoder (engine/backbones/bart.py) × an output head.

The paper's layout (`PermGenConfig.layout` "encoder-decoder"); the decoder-only one on a pretrained
Llama is engine/permgen/decoder_model.py, and both are `PermGenNetwork`s (engine/permgen/network.py).

Training objective (paper Eq. 6–7, π-SGD): for each example i of a batch, one order π'_i is
drawn (engine/permgen/permutation.py), the target is written in that order with its marks
(engine/permgen/marks.py), and the loss is

    J = (1/B) Σ_i −log p(Y^(i) | X^(i), π'_i) = (1/B) Σ_i Σ_l −log p(y_l | y_<l, X^(i))

— a sum over the example's marked tokens (⟨B-t⟩, words, ⟨E-t⟩, ⟨EOP⟩), averaged over the
batch, exactly Eq. 7. `token_nll` gives the per-token terms, used for perplexity.

With a POSG head the batch also carries the observed POS group of every target (`collate(...,
mark_group=...)`, the tags of engine/permgen/pos.py moved with their sentences by `mark_groups`),
and each per-token term becomes the POSG paper's Eq. 4 term −log p(ρ_l | ·) − log p(y_l | ρ_l, ·);
the sum over the example and the batch mean stay Eq. 7's. Batches without groups (held-out
evaluation) get the marginal −log Σ_ρ p(ρ) p(y_l | ρ), comparable with a softmax model.
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
from engine.permgen.marks import hierarchical_positions, mark_groups, mark_target
from engine.permgen.network import PermGenNetwork
from engine.tokenizer import EOS, PAD, SPECIAL_TOKENS

PAD_ID = SPECIAL_TOKENS.index(PAD)
START_ID = SPECIAL_TOKENS.index(EOS)  # decoder start token, as GPT-2 documents start with eos


@dataclass
class EncodedExample:
    """One source and its target sentences (natural order), as token ids."""

    source: list[int]
    sentences: list[list[int]]
    groups: list[list[int]] | None = None  # POSG: observed group id of each sentence token (same shape)


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
    target_groups: torch.Tensor | None = None  # [B, T] POSG observed groups, IGNORE_INDEX after the end

    def to(self, device: torch.device) -> Batch:
        groups = self.target_groups.to(device) if self.target_groups is not None else None
        return Batch(self.source.to(device), self.source_mask.to(device), self.decoder_input.to(device),
                     self.sentence.to(device), self.local.to(device), self.targets.to(device), self.orders, groups)


def pad_rows(rows: Sequence[Sequence[int]], value: int) -> torch.Tensor:
    """Rows of ids as one tensor [B, longest], right-padded with `value`."""
    width = max(len(row) for row in rows)
    return torch.tensor([[*row, *[value] * (width - len(row))] for row in rows], dtype=torch.long)


def collate(
    examples: Sequence[EncodedExample], orders: Sequence[Sequence[int]], mark_group: int | None = None
) -> Batch:
    """Mark each example's target in its order and pad everything (right padding).

    `mark_group` (POSG training): also lay out every example's observed groups in the same order,
    the marks getting this group; then every example must carry `groups`. None: no groups (the
    loss is the head's plain / marginal NLL)."""
    targets, marked_groups = marked_targets(examples, orders, mark_group)
    groups = None if marked_groups is None else pad_rows(marked_groups, IGNORE_INDEX)
    inputs = [[START_ID, *target[:-1]] for target in targets]
    positions = [hierarchical_positions(row) for row in inputs]
    source = pad_rows([e.source for e in examples], PAD_ID)
    return Batch(
        source=source,
        source_mask=pad_rows([[1] * len(e.source) for e in examples], 0).bool(),
        decoder_input=pad_rows(inputs, PAD_ID),
        sentence=pad_rows([g for g, _ in positions], 0),
        local=pad_rows([loc for _, loc in positions], 0),
        targets=pad_rows(targets, IGNORE_INDEX),
        orders=[list(o) for o in orders],
        target_groups=groups,
    )


def marked_targets(
    examples: Sequence[EncodedExample], orders: Sequence[Sequence[int]], mark_group: int | None = None
) -> tuple[list[list[int]], list[list[int]] | None]:
    """Each example's marked target in its order, and with `mark_group` its observed groups laid out alike
    (the marks in that group); both layouts' batches are made of these."""
    if len(examples) != len(orders) or not examples:
        raise ValueError(f"need one order per example, got {len(orders)} orders for {len(examples)} examples")
    pairs = list(zip(examples, orders, strict=True))
    targets = [mark_target(e.sentences, order) for e, order in pairs]
    if mark_group is None:
        return targets, None
    return targets, [mark_groups(_groups_of(e), order, mark_group) for e, order in pairs]


def _groups_of(example: EncodedExample) -> list[list[int]]:
    """The example's sentence groups, checked to match its sentences token for token."""
    shapes = [len(s) for s in example.sentences]
    if example.groups is None or [len(g) for g in example.groups] != shapes:
        got = None if example.groups is None else [len(g) for g in example.groups]
        raise ValueError(f"POSG training needs one group per target token: sentences of {shapes} tokens, "
                         f"groups {got}")
    return example.groups


class PermGenModel(PermGenNetwork[Batch]):
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

    def block_stack(self) -> tuple[list[nn.Module], list[nn.Module]]:
        """The decoder's layers (nearest the output); the encoder's come before them, so "last-N" fine-tunes
        the decoder's top N and LoRA adapts both stacks."""
        return [*self.backbone.encoder.layers, *self.backbone.decoder.layers], []

    def collate(self, examples: Sequence[EncodedExample], orders: Sequence[Sequence[int]],
                mark_group: int | None = None) -> Batch:
        return collate(examples, orders, mark_group)

    def decoder_hidden(self, batch: Batch) -> torch.Tensor:
        """Teacher-forced decoder states [B, T, D]."""
        states = self.backbone.encode(batch.source, batch.source_mask)
        key_mask = batch.targets != IGNORE_INDEX  # [B, T]: real (non-pad) decoder inputs
        hidden: torch.Tensor = self.backbone.decoder(batch.decoder_input, batch.sentence, batch.local, states,
                                                     batch.source_mask, key_mask)
        return hidden

    def token_nll(self, batch: Batch, hidden: torch.Tensor | None = None) -> torch.Tensor:
        """−log p(y_l | y_<l, X) per target token [B, T]; 0 at padding. With `batch.target_groups`
        (POSG training) the term is −log p(ρ_l) − log p(y_l | ρ_l) of the observed group ρ_l.
        `hidden` [B, T, D]: the batch's decoder states when another runtime computed them."""
        hidden = self.decoder_hidden(batch) if hidden is None else hidden
        size, length = batch.targets.shape
        flat = hidden.reshape(size * length, -1)  # [B·T, D]
        targets = batch.targets.clamp(min=0).reshape(-1)  # [B·T]; padding masked out below
        steps = torch.arange(1, length + 1, device=hidden.device).repeat(size)
        if batch.target_groups is None:
            nll = self.head.token_nll(flat, targets, steps)
        else:
            nll = self.head.token_nll_given_groups(flat, targets, batch.target_groups.clamp(min=0).reshape(-1), steps)
        # masked_fill, not `* mask`: a padding position may be +inf (target outside group 0), and 0·inf is nan
        return nll.view(size, length).masked_fill(batch.targets == IGNORE_INDEX, 0.0)
