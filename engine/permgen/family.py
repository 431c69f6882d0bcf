"""The PermGen family (kind "permgen"): the encoder-decoder that writes stories, abstracts and paraphrases.

What the registry (engine/families) needs to build, load and measure it; the model is
engine/permgen/model.py, its loaded model engine/permgen/api.py and its trainer
engine/permgen/train.py. Each member imports what it uses when it runs, so finding the family
(to list bundles, say) loads neither transformers' BART nor the decoders.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from engine.families import ModelBuilder, ModelFamily

if TYPE_CHECKING:
    from engine.loaded_model import LoadedModel


class PermGenFamily:
    """PermGen bundles: "model" (the decoder) and "permgen" (the encoder-decoder extras), one task each."""

    kind = "permgen"
    name = "PermGen"
    config_sections = ("model", "permgen")

    def tasks(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        return (str(config.get("permgen", {}).get("task", "story")),)

    def model_builder(self, config: Mapping[str, Any]) -> ModelBuilder:
        from engine.permgen.config import PermGenConfig
        from engine.permgen.model import PermGenModel

        permgen = PermGenConfig.from_dict({**config["permgen"], "model": config["model"]})
        return permgen.model.vocab_size, lambda: PermGenModel(permgen)

    def load(self, directory: Path, device: torch.device, runtime: str) -> LoadedModel:
        from engine.permgen.api import PermGenLoadedModel
        from engine.permgen.bundle import load_permgen_bundle

        return PermGenLoadedModel(load_permgen_bundle(directory, device), device, runtime)

    def training_words(self, config: Mapping[str, Any], files: list[Path] | None) -> frozenset[str] | None:
        from engine.permgen.data import permgen_training_words

        permgen = config.get("permgen", {})
        return permgen_training_words(config.get("provenance", {}), str(permgen.get("task", "story")),
                                      bool(permgen.get("lowercase", True)), files)

    def held_out_perplexity(self, directory: Path, files: list[Path], fraction: float | None,
                            everything: bool) -> dict[str, Any]:
        """The held-out target NLL in natural and random sentence order (engine/permgen/heldout.py), on the
        hash split the bundle's training held out: `fraction` and `everything` do not apply."""
        from engine.permgen.bundle import load_permgen_bundle
        from engine.permgen.heldout import bundle_held_out

        return bundle_held_out(load_permgen_bundle(directory), files)


FAMILY: ModelFamily = PermGenFamily()
