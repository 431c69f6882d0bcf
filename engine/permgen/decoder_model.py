"""PermGen on a decoder-only language model (a pretrained Llama such as SmolLM2): `layout` "decoder-only".

One sequence holds the source and the target (docs/permgen-decoder-only.md):

    eos  s_1 … s_S  eos  ⟨B-π1⟩ y … ⟨E-π1⟩ ⟨B-π2⟩ … ⟨E-πT⟩ ⟨EOP⟩
    └─ the prefix ─────┘ └─ the marked target of engine/permgen/marks.py ────┘

The first eos starts a document, as in every language-model window; the second is the encoder-decoder's
decoder start token, so the target and its marks are exactly those of the paper's layout and every
decoding policy (first marks, order control, sentence beams, copy limit) reads them the same way. A
`text_form` "prose" model's source ends with a line naming its task instead ("…\nStory:",
engine/permgen/text.py) and has no second eos: `eos s_1 … s_S ⟨B-π1⟩ …`, the marks the same. The
prefix holds the source only: the order plan is the sequence of ⟨B-t⟩ marks the model writes, chosen
by it or forced by the writer, as in the paper; no plan tokens precede it.

Loss on the target only (Eq. 7): every position of the prefix has the target IGNORE_INDEX except the
second eos, whose target is the first mark; only the scored positions reach the head, so the source costs
its pass through the blocks and nothing more. The termination step t of a target token counts from 1 at
the first mark, as the encoder-decoder's decoder steps do.

Positions: the Llama's rotary positions over the whole sequence (the paper's hierarchical sentence and
in-sentence embeddings have no place in a rotary model; the marks name each sentence instead).

Marks: the vocabulary of an imported checkpoint already holds ⟨B-1..10⟩, ⟨E-1..10⟩ and ⟨EOP⟩ as new rows,
all at the mean of its rows (engine/checkpoints/vocabulary.py), where no mark can be told from another.
`spell_marks` starts each at the mean of the rows of a short text's pieces (⟨B-3⟩ "<3>", ⟨E-3⟩ "</3>",
⟨EOP⟩ "<end>"): new tokens with rows of their own rather than text strings, because every decoding policy
chooses, masks and ends on single mark ids. The paper is silent here (it fine-tunes a BART whose
vocabulary gained the marks; a mean of rows is not read as the text, and the spelling mattered little
on SmolLM2, measured: docs/permgen-decoder-only.md). Their rows
of the tied embedding train in every `trainable` setting, and only those rows (`trained_rows`,
engine/training/trainable.py), so a bundle on the base stores 21 rows of the table, not all of it.

The model names its tensors as the language model does (`backbone.*`, `head.*`), so a language model's
weights start it and a language model's base is its base (engine/bundles/base.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from engine.backbones.kv_cache import KVCache
from engine.backbones.llama import LlamaBackbone
from engine.heads import OutputHead, build_head
from engine.model import IGNORE_INDEX
from engine.permgen.config import PermGenConfig
from engine.permgen.marks import BEGIN_IDS, END_IDS, EOP_ID
from engine.permgen.model import PAD_ID, START_ID, EncodedExample, marked_targets, pad_rows
from engine.permgen.network import PermGenNetwork
from engine.tokenizer import MAX_SENTENCES, VariorumTokenizer

DOCUMENT_START = START_ID  # eos: a language model's start of a document
MARK_IDS = [*BEGIN_IDS, *END_IDS, EOP_ID]  # the rows `spell_marks` sets and a fine-tune trains
MARK_TEXTS = [*(f"<{t}>" for t in range(1, MAX_SENTENCES + 1)), *(f"</{t}>" for t in range(1, MAX_SENTENCES + 1)),
              "<end>"]


@dataclass
class DecoderBatch:
    """Padded sequences of one training batch: prefix and target in one row each."""

    input_ids: torch.Tensor  # [B, L]: eos, source, eos, the marked target but its ⟨EOP⟩; PAD_ID after
    targets: torch.Tensor  # [B, L]: the next token at each target position, IGNORE_INDEX elsewhere
    orders: list[list[int]]
    target_groups: torch.Tensor | None = None  # [B, L] POSG observed groups, IGNORE_INDEX where not scored

    def to(self, device: torch.device) -> DecoderBatch:
        groups = self.target_groups.to(device) if self.target_groups is not None else None
        return DecoderBatch(self.input_ids.to(device), self.targets.to(device), self.orders, groups)


def prefix_ids(source_ids: Sequence[int], joined: bool = False) -> list[int]:
    """The prefix a target follows: eos, the source ids, eos (the decoder start token); `joined` (a prose
    model, whose source ends with a line naming its task): eos and the source ids only."""
    return [DOCUMENT_START, *source_ids] if joined else [DOCUMENT_START, *source_ids, START_ID]


def decoder_collate(
    examples: Sequence[EncodedExample], orders: Sequence[Sequence[int]], mark_group: int | None = None,
    joined: bool = False,
) -> DecoderBatch:
    """Each example's prefix (`prefix_ids`) and its target marked in its order, right-padded (see the module
    docstring)."""
    targets, groups = marked_targets(examples, orders, mark_group)
    prefixes = [prefix_ids(e.source, joined) for e in examples]
    unscored = [[IGNORE_INDEX] * (len(prefix) - 1) for prefix in prefixes]  # the prefix but its last token
    return DecoderBatch(
        input_ids=pad_rows([[*p, *t[:-1]] for p, t in zip(prefixes, targets, strict=True)], PAD_ID),
        targets=pad_rows([[*u, *t] for u, t in zip(unscored, targets, strict=True)], IGNORE_INDEX),
        orders=[list(o) for o in orders],
        target_groups=None if groups is None else pad_rows(
            [[*u, *g] for u, g in zip(unscored, groups, strict=True)], IGNORE_INDEX),
    )


class DecoderPermGenModel(PermGenNetwork[DecoderBatch]):
    """A Llama language model × an output head writing PermGen's marked targets after a source prefix."""

    def __init__(self, config: PermGenConfig, backbone: LlamaBackbone | None = None) -> None:
        super().__init__()
        self.config = config
        self.backbone = backbone if backbone is not None else LlamaBackbone(config.model)
        self.head: OutputHead = build_head(config.model, self.backbone.token_embedding)

    def block_stack(self) -> tuple[list[nn.Module], list[nn.Module]]:
        return self.backbone.block_stack()

    def trained_rows(self) -> dict[str, list[int]]:
        """The marks' rows of the token embedding (tied to the softmax head's output layer)."""
        return {"backbone.embed.weight": list(MARK_IDS)}

    def collate(self, examples: Sequence[EncodedExample], orders: Sequence[Sequence[int]],
                mark_group: int | None = None) -> DecoderBatch:
        return decoder_collate(examples, orders, mark_group, self.joined)

    @property
    def joined(self) -> bool:
        """Whether the source ends with a line joining it to the target rather than with eos (a prose model)."""
        return self.config.text_form == "prose"

    def token_nll(self, batch: DecoderBatch, hidden: torch.Tensor | None = None) -> torch.Tensor:
        """−log p of every target token [B, L], 0 elsewhere; only the scored positions reach the head."""
        hidden = self.backbone(batch.input_ids) if hidden is None else hidden  # [B, L, D]
        scored = batch.targets != IGNORE_INDEX  # [B, L]
        steps = scored.long().cumsum(dim=1)[scored]  # [N]: 1 at each row's first mark
        targets = batch.targets[scored]  # [N]
        if batch.target_groups is None:
            nll = self.head.token_nll(hidden[scored], targets, steps)  # [N]
        else:
            nll = self.head.token_nll_given_groups(hidden[scored], targets, batch.target_groups[scored], steps)
        return torch.zeros(scored.shape, dtype=nll.dtype, device=nll.device).masked_scatter(scored, nll)

    def new_cache(self, rows: int, positions: int | None = None) -> KVCache:
        """An empty KV cache for `rows` decoding rows of `positions` positions (the decoder's runner seam)."""
        return self.backbone.new_cache(rows, positions)

    def decode(self, input_ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """ids [N, T] after the cache's positions → hidden [N, T, D]; fills the cache."""
        return self.backbone.decode(input_ids, cache)


@torch.no_grad()
def spell_marks(model: DecoderPermGenModel, tokenizer: VariorumTokenizer) -> None:
    """Start each mark's embedding row at the mean of the rows of its text's pieces (`MARK_TEXTS`): distinct rows,
    where the import left them all at one point. Not rescaled: a mean of rows is shorter than a row, so a mark
    starts improbable (on SmolLM2 about e^-9 after the prefix, against e^-16.6 for all 21 alike at the import);
    scaled to a row's length, the marks took most of the first token's mass from every word."""
    weight = model.backbone.embed.weight  # [V, D]
    for token, text in zip(MARK_IDS, MARK_TEXTS, strict=True):
        weight[token] = weight[tokenizer.encode(text)].mean(dim=0)  # [D]
