"""PermGen model bundles: the layout of engine/bundle.py plus a "permgen" config section.

`config.json` = {format_version, kind: "permgen", model: the decoder ModelConfig (so bundle
pickers read the head as for any bundle), permgen: the encoder-decoder extras, provenance}.
Weights are safetensors (tied weights saved once); loading checks every file and raises
`BundleError` naming what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_model

from engine.atomic import atomic_directory
from engine.bundle import (
    CARD_FILE,
    CONFIG_FILE,
    REQUIRED_FILES,
    WEIGHTS_FILE,
    BundleError,
    build_checked,
    load_bundle_tokenizer,
    read_bundle_json,
)
from engine.config import BUNDLE_FORMAT_VERSION, ConfigError
from engine.permgen.config import PermGenConfig
from engine.permgen.model import PermGenModel
from engine.tokenizer import VariorumTokenizer

KIND = "permgen"


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
    try:
        return bool(json.loads((Path(directory) / CONFIG_FILE).read_text()).get("kind") == KIND)
    except (OSError, ValueError, AttributeError):
        return False


def save_permgen_bundle(
    directory: Path, model: PermGenModel, tokenizer: VariorumTokenizer, card: str,
    provenance: dict[str, Any] | None = None,
) -> None:
    """Write a bundle atomically (temporary sibling, then renamed into place)."""
    if tokenizer.vocab_size != model.config.model.vocab_size:
        raise BundleError(f"tokenizer has {tokenizer.vocab_size} tokens, the model {model.config.model.vocab_size}")
    with atomic_directory(directory) as staging:
        extras = model.config.to_dict()
        config = {"format_version": BUNDLE_FORMAT_VERSION, "kind": KIND, "model": extras.pop("model"),
                  "permgen": extras, "provenance": provenance or {}}
        (staging / CONFIG_FILE).write_text(json.dumps(config, indent=2))
        save_model(model, str(staging / WEIGHTS_FILE))
        tokenizer.save(staging)
        for name, text in model.head.bundle_files().items():
            (staging / name).write_text(text)
        (staging / CARD_FILE).write_text(card)


def _read(directory: Path) -> tuple[PermGenConfig, dict[str, Any]]:
    raw = read_bundle_json(directory)
    if not isinstance(raw, dict) or raw.get("kind") != KIND or "permgen" not in raw or "model" not in raw:
        raise BundleError(f"bundle {directory}: {CONFIG_FILE} is not a PermGen config (kind/model/permgen)")
    if raw.get("format_version") != BUNDLE_FORMAT_VERSION:
        raise BundleError(f"bundle {directory}: format version {raw.get('format_version')!r}, "
                          f"this Variorum reads {BUNDLE_FORMAT_VERSION}")
    try:
        config = PermGenConfig.from_dict({**raw["permgen"], "model": raw["model"]})
    except (ConfigError, TypeError) as error:
        raise BundleError(f"bundle {directory}: invalid PermGen config ({error})") from None
    return config, raw.get("provenance", {})


def load_permgen_bundle(directory: Path, device: str | torch.device = "cpu") -> PermGenBundle:
    """Load and validate a PermGen bundle; raise `BundleError` naming what is wrong."""
    directory = Path(directory)
    missing = [name for name in REQUIRED_FILES if not (directory / name).is_file()]
    if missing:
        raise BundleError(f"bundle {directory} is missing {', '.join(missing)}")
    config, provenance = _read(directory)
    tokenizer = load_bundle_tokenizer(directory)
    if tokenizer.vocab_size != config.model.vocab_size:
        raise BundleError(f"bundle {directory}: tokenizer has {tokenizer.vocab_size} tokens, "
                          f"the model was built for {config.model.vocab_size}")
    model = build_checked(directory, lambda: PermGenModel(config))
    model.to(device).eval()
    card = (directory / CARD_FILE).read_text(errors="replace")
    return PermGenBundle(directory, model, tokenizer, card, provenance)
