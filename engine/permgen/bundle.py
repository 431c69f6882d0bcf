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
from safetensors import SafetensorError
from safetensors.torch import load_file, save_model

from engine.atomic import atomic_directory
from engine.bundle import CARD_FILE, CONFIG_FILE, REQUIRED_FILES, WEIGHTS_FILE, BundleError
from engine.config import BUNDLE_FORMAT_VERSION, ConfigError
from engine.permgen.config import PermGenConfig
from engine.permgen.model import PermGenModel
from engine.tokenizer import TokenizerError, VariorumTokenizer

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
    try:
        raw = json.loads((directory / CONFIG_FILE).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BundleError(f"bundle {directory}: {CONFIG_FILE} is not valid JSON ({error})") from None
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


def _load_weights(directory: Path, model: PermGenModel) -> None:
    try:
        state = load_file(str(directory / WEIGHTS_FILE))
    except (SafetensorError, OSError) as error:
        raise BundleError(f"bundle {directory}: {WEIGHTS_FILE} is truncated or corrupt ({error})") from None
    expected = model.state_dict()
    params = dict(model.named_parameters(remove_duplicate=False))
    tied = {k for k in expected if k in params and any(params[k] is params[o] for o in state if o in params)}
    missing = [k for k in expected if k not in state and k not in tied]
    unexpected = sorted(set(state) - set(expected))
    wrong = [k for k, t in state.items() if k in expected and t.shape != expected[k].shape]
    if missing or unexpected or wrong:
        raise BundleError(f"bundle {directory}: weights do not match the config (missing {missing[:5]}, "
                          f"unexpected {unexpected[:5]}, wrong shape {wrong[:5]})")
    model.load_state_dict(state, strict=False)


def load_permgen_bundle(directory: Path, device: str | torch.device = "cpu") -> PermGenBundle:
    """Load and validate a PermGen bundle; raise `BundleError` naming what is wrong."""
    directory = Path(directory)
    missing = [name for name in REQUIRED_FILES if not (directory / name).is_file()]
    if missing:
        raise BundleError(f"bundle {directory} is missing {', '.join(missing)}")
    config, provenance = _read(directory)
    try:
        tokenizer = VariorumTokenizer.load(directory)
    except TokenizerError as error:
        raise BundleError(f"bundle {directory}: {error}") from None
    if tokenizer.vocab_size != config.model.vocab_size:
        raise BundleError(f"bundle {directory}: tokenizer has {tokenizer.vocab_size} tokens, "
                          f"the model was built for {config.model.vocab_size}")
    model = PermGenModel(config)
    _load_weights(directory, model)
    model.to(device).eval()
    card = (directory / CARD_FILE).read_text(errors="replace")
    return PermGenBundle(directory, model, tokenizer, card, provenance)
