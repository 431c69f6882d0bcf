"""Model bundles: a directory holding everything needed to run a model (DESIGN §2).

Layout: `config.json` (format version, model config, training provenance), `model.safetensors`,
`tokenizer.json` + `token_counts.json`, `card.md`, plus any files the head adds (`bundle_files`:
a POSG head writes `pos_vocab.json`, a readable copy of the V_ρ its weights carry). Loading
checks every file and raises a `BundleError` that names the bundle and what is wrong — never a
bare traceback.
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
from engine.config import (
    BUNDLE_FORMAT_VERSION,
    ConfigError,
    ModelConfig,
    config_from_dict,
)
from engine.model import LanguageModel
from engine.tokenizer import TOKENIZER_FILE, TokenizerError, VariorumTokenizer

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
CARD_FILE = "card.md"
REQUIRED_FILES = (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE, CARD_FILE)


class BundleError(Exception):
    """A bundle cannot be used; the message says which bundle and why."""


@dataclass
class Bundle:
    """A loaded bundle: model (in eval mode), tokenizer, card and provenance."""

    path: Path
    model: LanguageModel
    tokenizer: VariorumTokenizer
    card: str
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.name


def save_bundle(
    directory: Path,
    model: LanguageModel,
    tokenizer: VariorumTokenizer,
    card: str,
    provenance: dict[str, Any] | None = None,
) -> None:
    """Write a bundle atomically: built in a temporary sibling, then moved into place."""
    if tokenizer.vocab_size != model.config.vocab_size:
        raise BundleError(
            f"tokenizer has {tokenizer.vocab_size} tokens but the model expects {model.config.vocab_size}"
        )
    with atomic_directory(directory) as staging:
        config = {
            "format_version": BUNDLE_FORMAT_VERSION,
            "model": model.config.to_dict(),
            "provenance": provenance or {},
        }
        (staging / CONFIG_FILE).write_text(json.dumps(config, indent=2))
        save_model(model, str(staging / WEIGHTS_FILE))  # de-duplicates tied weights
        tokenizer.save(staging)
        (staging / CARD_FILE).write_text(card)
        for name, content in model.head.bundle_files().items():  # head-specific files (POSG: pos_vocab.json)
            (staging / name).write_text(content)


def _read_config(directory: Path) -> dict[str, Any]:
    try:
        config = json.loads((directory / CONFIG_FILE).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BundleError(f"bundle {directory}: {CONFIG_FILE} is not valid JSON ({error})") from None
    if not isinstance(config, dict) or "model" not in config:
        raise BundleError(f"bundle {directory}: {CONFIG_FILE} has no 'model' section")
    version = config.get("format_version")
    if version != BUNDLE_FORMAT_VERSION:
        raise BundleError(
            f"bundle {directory}: format version {version!r}, this Variorum reads version "
            f"{BUNDLE_FORMAT_VERSION}; re-export the bundle with a matching Variorum"
        )
    return config


def _load_weights(directory: Path, model: LanguageModel) -> None:
    path = directory / WEIGHTS_FILE
    try:
        state = load_file(str(path))
    except (SafetensorError, OSError) as error:
        raise BundleError(f"bundle {directory}: {WEIGHTS_FILE} is truncated or corrupt ({error})") from None
    expected = model.state_dict()
    missing = [k for k in expected if k not in state and not _is_tied_copy(model, k, state)]
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise BundleError(
            f"bundle {directory}: weights do not match the config (missing {missing[:5]}, "
            f"unexpected {unexpected[:5]})"
        )
    for key, tensor in state.items():
        if tensor.shape != expected[key].shape:
            raise BundleError(
                f"bundle {directory}: weight {key} has shape {tuple(tensor.shape)}, "
                f"config implies {tuple(expected[key].shape)}"
            )
    model.load_state_dict(state, strict=False)


def _is_tied_copy(model: LanguageModel, key: str, state: dict[str, torch.Tensor]) -> bool:
    """True if `key` is a tied parameter saved once under another name."""
    params = dict(model.named_parameters(remove_duplicate=False))
    if key not in params:
        return False
    return any(params[key] is params[other] for other in state if other in params)


def load_bundle(directory: Path, device: str | torch.device = "cpu") -> Bundle:
    """Load and validate a bundle; raise `BundleError` naming what is wrong."""
    directory = Path(directory)
    if not directory.is_dir():
        raise BundleError(f"bundle {directory} does not exist or is not a directory")
    missing = [name for name in REQUIRED_FILES if not (directory / name).is_file()]
    if missing:
        raise BundleError(f"bundle {directory} is missing {', '.join(missing)}")
    config = _read_config(directory)
    try:
        model_config = config_from_dict(ModelConfig, config["model"])
        tokenizer = VariorumTokenizer.load(directory)
    except (ConfigError, TypeError) as error:
        raise BundleError(f"bundle {directory}: invalid model config ({error})") from None
    except TokenizerError as error:
        raise BundleError(f"bundle {directory}: {error}") from None
    if tokenizer.vocab_size != model_config.vocab_size:
        raise BundleError(
            f"bundle {directory}: tokenizer has {tokenizer.vocab_size} tokens but the model was "
            f"built for {model_config.vocab_size}; the tokenizer does not belong to this model"
        )
    model = LanguageModel(model_config)
    _load_weights(directory, model)
    model.to(device).eval()
    card = (directory / CARD_FILE).read_text(errors="replace")
    return Bundle(directory, model, tokenizer, card, config.get("provenance", {}))
