"""PermGen bundles: the one bundle format of engine/bundles/bundle.py with kind "permgen".

`config.json` = {format_version, kind: "permgen", model: the decoder ModelConfig (so bundle
pickers read the head as for any bundle), permgen: PermGen's own settings, its layout among them, provenance}.
`engine.bundles.bundle.save_bundle` writes it and `engine.bundles.bundle.load_model_bundle` reads it (through the
PermGen family, engine/permgen/family.py); this module holds the PermGen-typed shortcuts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeAlias

import torch

from engine.bundles.bundle import ModelBundle, load_typed_bundle
from engine.permgen.network import PermGenNetwork

PermGenBundle: TypeAlias = ModelBundle[PermGenNetwork[Any]]  # a loaded PermGen bundle of either layout (eval mode)


def load_permgen_bundle(directory: Path, device: str | torch.device = "cpu") -> PermGenBundle:
    """Load a PermGen bundle (`load_model_bundle` for kind "permgen"); `BundleError` naming what is wrong."""
    # the family builds the layout's concrete class; every one is a PermGenNetwork
    return load_typed_bundle(directory, device, PermGenNetwork)  # type: ignore[type-abstract]

