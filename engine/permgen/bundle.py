"""PermGen bundles: the one bundle format of engine/bundle.py with kind "permgen".

`config.json` = {format_version, kind: "permgen", model: the decoder ModelConfig (so bundle
pickers read the head as for any bundle), permgen: the encoder-decoder extras, provenance}.
`engine.bundle.save_bundle` writes it and `engine.bundle.load_model_bundle` reads it; this module
holds what a loaded one is and the PermGen-typed shortcuts the evaluation code uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from engine.bundle import PERMGEN_KIND, bundle_kind, load_model_bundle
from engine.permgen.model import PermGenModel
from engine.tokenizer import VariorumTokenizer


@dataclass
class PermGenBundle:
    """A loaded PermGen bundle (model in eval mode)."""

    path: Path
    model: PermGenModel
    tokenizer: VariorumTokenizer
    card: str
    provenance: dict[str, Any] = field(default_factory=dict)


def is_permgen_bundle(directory: Path) -> bool:
    """True when `directory/config.json` declares a PermGen bundle (never raises)."""
    return bundle_kind(directory) == PERMGEN_KIND


def load_permgen_bundle(directory: Path, device: str | torch.device = "cpu") -> PermGenBundle:
    """Load a PermGen bundle (`load_model_bundle` for kind "permgen"); `BundleError` naming what is wrong."""
    bundle = load_model_bundle(directory, device, PERMGEN_KIND)
    assert isinstance(bundle, PermGenBundle)  # guaranteed by the expected kind
    return bundle
