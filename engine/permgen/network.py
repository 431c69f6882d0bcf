"""What PermGen's trainer, decoders and bundles use of a model, whichever its layout.

Two layouts implement it (`PermGenConfig.layout`): the paper's encoder-decoder (engine/permgen/model.py,
`PermGenModel`) and a decoder-only language model that reads the source as a prefix (engine/permgen/
decoder_model.py, `DecoderPermGenModel`; docs/permgen-decoder-only.md). Both lay a training example out
with the same marks (engine/permgen/marks.py) in the same π-SGD order, each in its own kind of batch
(`collate`), and score its marked target with the same output head (`token_nll`), so the loss of Eq. 7,
the held-out numbers, the trainer and the bundle are one for both; their decoding rows are made by
`engine.permgen.rows.open_rows`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, Self, TypeVar

import torch

from engine.bundled_model import BundledModel
from engine.heads import OutputHead
from engine.permgen.config import PermGenConfig

if TYPE_CHECKING:
    from engine.permgen.model import EncodedExample


class TargetBatch(Protocol):
    """A padded training batch of either layout: its targets [B, T] (IGNORE_INDEX where nothing is scored)."""

    targets: torch.Tensor
    orders: list[list[int]]

    def to(self, device: torch.device) -> Self: ...


BatchT = TypeVar("BatchT", bound=TargetBatch)


class PermGenNetwork(BundledModel, Generic[BatchT]):
    """A PermGen model of one layout: its config, its output head, its batches and the Eq. 7 loss."""

    kind = "permgen"
    config: PermGenConfig
    head: OutputHead

    def bundle_sections(self) -> dict[str, Any]:
        """The decoder's `ModelConfig` as the "model" section every bundle has, PermGen's own settings as
        "permgen"."""
        extras = self.config.to_dict()
        return {"model": extras.pop("model"), "permgen": extras}

    @abstractmethod
    def collate(self, examples: Sequence[EncodedExample], orders: Sequence[Sequence[int]],
                mark_group: int | None = None) -> BatchT:
        """Each example's target marked in its order, padded into this layout's batch; `mark_group` (POSG
        training): the marks' group, with every example's observed groups laid out alike."""

    @abstractmethod
    def token_nll(self, batch: BatchT, hidden: torch.Tensor | None = None) -> torch.Tensor:
        """−log p(y_l | y_<l, X) of every target token [B, T], 0 where nothing is scored; with the batch's
        observed groups (POSG) −log p(ρ_l) − log p(y_l | ρ_l). `hidden`: the states another runtime computed."""

    def forward(self, batch: BatchT) -> torch.Tensor:
        """Eq. 7 loss: per-example summed NLL of the marked target, averaged over the batch."""
        return self.token_nll(batch).sum(dim=1).mean()


def build_permgen_model(config: PermGenConfig) -> PermGenNetwork[Any]:
    """The untrained model of `config`'s layout."""
    if config.layout == "decoder-only":
        from engine.permgen.decoder_model import DecoderPermGenModel

        return DecoderPermGenModel(config)
    from engine.permgen.model import PermGenModel

    return PermGenModel(config)
