"""Model bundles: a directory holding everything needed to run a model (DESIGN §2).

Layout: `config.json` (format version, model config, training provenance), `model.safetensors`,
`tokenizer.json` + `token_counts.json`, `card.md`, plus any files the head adds (`bundle_files`:
a POSG head writes `pos_vocab.json`, a readable copy of the V_ρ its weights carry). Loading
checks every file and raises a `BundleError` that names the bundle and what is wrong — never a
bare traceback: config fields are type- and range-checked (engine.config), the weights are
checked against the config before the model is allocated (`build_checked`: shapes, dtypes,
finite values), and JSON files that are not files or are nested too deeply are refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

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

M = TypeVar("M", bound=torch.nn.Module)


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


def read_bundle_json(directory: Path, name: str = CONFIG_FILE) -> Any:
    """One JSON file of a bundle, or a `BundleError` (unreadable, not JSON, nested too deeply)."""
    try:
        return json.loads((directory / name).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BundleError(f"bundle {directory}: {name} is not valid JSON ({error})") from None
    except RecursionError:  # json's parser recurses once per nesting level
        raise BundleError(f"bundle {directory}: {name} is nested too deeply to be a bundle file") from None
    except OSError as error:
        raise BundleError(f"bundle {directory}: cannot read {name} ({error.strerror})") from None


def _read_config(directory: Path) -> dict[str, Any]:
    config = read_bundle_json(directory)
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
        raise BundleError(f"bundle {directory}: {CONFIG_FILE} has no 'model' section")
    version = config.get("format_version")
    if version != BUNDLE_FORMAT_VERSION:
        raise BundleError(
            f"bundle {directory}: format version {version!r}, this Variorum reads version "
            f"{BUNDLE_FORMAT_VERSION}; re-export the bundle with a matching Variorum"
        )
    return config


def load_bundle_tokenizer(directory: Path) -> VariorumTokenizer:
    try:
        return VariorumTokenizer.load(directory)
    except TokenizerError as error:
        raise BundleError(f"bundle {directory}: {error}") from None


def build_checked(directory: Path, build: Callable[[], M]) -> M:
    """Build a model with `build()` after checking the weights file against it; then load the weights.

    The model is first built on torch's "meta" device (shapes only, no memory), so a config
    asking for more than its weights file holds fails here, naming the weight, before anything
    is allocated. Every weight must have its expected shape and dtype and be finite.
    """
    try:
        with torch.device("meta"):
            reference = build()
    except ConfigError as error:
        raise BundleError(f"bundle {directory}: invalid model config ({error})") from None
    state = _read_weights(directory)
    _check_weights(directory, state, reference)
    model = build()
    model.load_state_dict(state, strict=False)  # tied copies are saved once; _check_weights saw to the rest
    return model


STORED_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _read_weights(directory: Path) -> dict[str, torch.Tensor]:
    try:
        return load_file(str(directory / WEIGHTS_FILE))
    except (SafetensorError, OSError) as error:
        raise BundleError(f"bundle {directory}: {WEIGHTS_FILE} is truncated or corrupt ({error})") from None


def _check_weights(directory: Path, state: dict[str, torch.Tensor], reference: torch.nn.Module) -> None:
    expected = reference.state_dict()
    params = dict(reference.named_parameters(remove_duplicate=False))
    tied = {k for k in expected if k in params and any(params[k] is params[o] for o in state if o in params)}
    missing = [k for k in expected if k not in state and k not in tied]
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise BundleError(f"bundle {directory}: weights do not match the config (missing {missing[:5]}, "
                          f"unexpected {unexpected[:5]})")
    for key, tensor in state.items():
        want = expected[key]
        if tensor.shape != want.shape:
            raise BundleError(f"bundle {directory}: weight {key} has shape {tuple(tensor.shape)}, "
                              f"config implies {tuple(want.shape)}")
        # fp16/bf16 weights are stored to halve bundle size; load_state_dict upcasts them to the model's dtype
        upcast = tensor.dtype in STORED_FLOAT_DTYPES and want.is_floating_point()
        if tensor.dtype != want.dtype and not upcast:
            raise BundleError(f"bundle {directory}: weight {key} has dtype {tensor.dtype}, expected {want.dtype}")
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise BundleError(f"bundle {directory}: weight {key} holds NaN or infinite values; "
                              "the model diverged in training or the file is damaged")


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
    except (ConfigError, TypeError) as error:
        raise BundleError(f"bundle {directory}: invalid model config ({error})") from None
    tokenizer = load_bundle_tokenizer(directory)
    if tokenizer.vocab_size != model_config.vocab_size:
        raise BundleError(
            f"bundle {directory}: tokenizer has {tokenizer.vocab_size} tokens but the model was "
            f"built for {model_config.vocab_size}; the tokenizer does not belong to this model"
        )
    model = build_checked(directory, lambda: LanguageModel(model_config))
    model.to(device).eval()
    card = (directory / CARD_FILE).read_text(errors="replace")
    return Bundle(directory, model, tokenizer, card, config.get("provenance", {}))
