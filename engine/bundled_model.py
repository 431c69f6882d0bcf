"""What the layers below the bundle reader know of a bundle: the base of its model, and its error.

The language model (engine/model.py) and PermGen (engine/permgen/model.py) derive from
`BundledModel`, and so does any new family's model: the bundle writer (engine/bundles/bundle.py
`save_bundle`) writes any of them through it, and the training loop (engine/training/loop.py)
trains any of them, without knowing which family it is. A family reads its config sections back
when the bundle loads (engine/families). `BundleError` is here, not in engine/bundles/bundle.py, because
modules the family protocol builds on raise it too (engine/word_sources.py reads `words.txt`);
engine/bundles/bundle.py exports it with the rest of the bundle API.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from torch import nn

from engine.config import ConfigError
from engine.heads.base import OutputHead


class BundleError(Exception):
    """A bundle cannot be used; the message says which bundle and why."""


class BundledModel(nn.Module, ABC):
    """A model a bundle can hold: its family's kind, its output head and its sections of config.json."""

    kind: ClassVar[str]  # config.json "kind": the family that reads the bundle back
    head: OutputHead  # its `bundle_files()` go into the bundle too (POSG: pos_vocab.json)

    @abstractmethod
    def bundle_sections(self) -> dict[str, Any]:
        """The family's sections of config.json: "model", the (decoder) `ModelConfig` every bundle has
        (bundle pickers read its head), and any of the family's own (PermGen: "permgen")."""

    def block_stack(self) -> tuple[list[nn.Module], list[nn.Module]]:
        """The stack of blocks nearest the output, input side first, and the modules between its last block
        and the head (a final layer norm): what a fine-tune of the last blocks or LoRA trains
        (engine/training/trainable.py)."""
        raise ConfigError(f"{type(self).__name__} does not name its blocks; train all of it (trainable all)")

    def trained_rows(self) -> dict[str, list[int]]:
        """Parameters of which a partial fine-tune trains some rows only, by name → those rows: the rows of
        tokens new to a pretrained vocabulary (PermGen's sentence marks; engine/training/trainable.py)."""
        return {}

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())  # tied weights are counted once
