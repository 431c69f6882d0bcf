"""Model bundles: one directory format, one writer and one reader for every model family.

A bundle holds everything needed to run a model (docs/training-and-bundles.md):
`config.json` = {format_version, kind ("lm" | "permgen"), model: the (decoder) `ModelConfig`,
permgen: the encoder-decoder extras (PermGen only), provenance}, `model.safetensors` (float32,
float16 or bfloat16; loading copies them into float32 parameters), `tokenizer.json` +
`token_counts.json`, `card.md`, plus any files the head adds (`bundle_files`: POSG writes
`pos_vocab.json`, F² `freq_classes.json`).

Format versions: 1 had no `kind` for language models (PermGen bundles said "permgen"); 2 always
names it. Both are read as they are, so shipped bundles load unchanged; a newer or unknown version
is a `BundleError` saying so. Loading checks every file and raises a `BundleError` that names the
bundle and what is wrong — never a bare traceback: config fields are type- and range-checked
(engine.config), the weights are checked against the config before the model is allocated
(`build_checked`: shapes, dtypes, finite values), and JSON files that are not files or are nested
too deeply are refused.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_model

from engine.atomic import atomic_directory
from engine.bundled_model import BundledModel
from engine.config import (
    BUNDLE_DTYPES,
    BUNDLE_FORMAT_VERSION,
    ConfigError,
    ModelConfig,
    config_from_dict,
)
from engine.heads.base import OutputHead
from engine.model import LanguageModel
from engine.small_files import UnusableFileError, file_problem, read_small_json, read_small_text
from engine.tokenizer import TOKENIZER_FILE, TokenizerError, VariorumTokenizer

if TYPE_CHECKING:
    from engine.permgen.bundle import PermGenBundle
    from engine.permgen.model import PermGenModel

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
CARD_FILE = "card.md"
REQUIRED_FILES = (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE, CARD_FILE)
LM_KIND = "lm"
PERMGEN_KIND = "permgen"
KINDS = (LM_KIND, PERMGEN_KIND)
WEIGHT_DTYPES: dict[str, torch.dtype] = {name: getattr(torch, name) for name in BUNDLE_DTYPES}

M = TypeVar("M", bound=torch.nn.Module)


class BundleError(Exception):
    """A bundle cannot be used; the message says which bundle and why."""


@dataclass
class Bundle:
    """A loaded language-model bundle: model (in eval mode), tokenizer, card and provenance."""

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
    model: BundledModel,
    tokenizer: VariorumTokenizer,
    card: str,
    provenance: dict[str, Any] | None = None,
    weights_dtype: str = "float32",
) -> None:
    """Write a bundle of any family atomically: built in a temporary sibling, then moved into place."""
    sections = {"kind": model.kind, **model.bundle_sections()}
    if tokenizer.vocab_size != sections["model"]["vocab_size"]:
        raise BundleError(
            f"tokenizer has {tokenizer.vocab_size} tokens but the model expects {sections['model']['vocab_size']}"
        )
    if weights_dtype not in WEIGHT_DTYPES:
        raise BundleError(f"weights dtype must be one of {list(WEIGHT_DTYPES)}, got {weights_dtype!r}")
    stored = model if weights_dtype == "float32" else copy.deepcopy(model).to(WEIGHT_DTYPES[weights_dtype])
    with atomic_directory(directory) as staging:
        config = {"format_version": BUNDLE_FORMAT_VERSION, **sections, "provenance": provenance or {}}
        (staging / CONFIG_FILE).write_text(json.dumps(config, indent=2))
        save_model(stored, str(staging / WEIGHTS_FILE))  # de-duplicates tied weights
        tokenizer.save(staging)
        (staging / CARD_FILE).write_text(card)
        for name, content in model.head.bundle_files().items():  # head-specific files (POSG: pos_vocab.json)
            (staging / name).write_text(content)


def read_bundle_json(directory: Path, name: str = CONFIG_FILE) -> Any:
    """One JSON file of a bundle, or a `BundleError` (not a regular file, too large, not JSON, nested too deeply)."""
    try:
        return read_small_json(directory / name, name)
    except UnusableFileError as error:
        raise BundleError(f"bundle {directory}: {error}") from None


def read_bundle_card(directory: Path) -> str:
    """card.md (bytes that are not UTF-8 shown as U+FFFD), or a `BundleError` when it cannot be read."""
    try:
        return read_small_text(directory / CARD_FILE, CARD_FILE, errors="replace")
    except UnusableFileError as error:
        raise BundleError(f"bundle {directory}: {error}") from None


def read_bundle_config(directory: Path) -> dict[str, Any]:
    """config.json, checked, in the current layout (`kind` filled in for version 1 language models)."""
    config = read_bundle_json(directory)
    if not isinstance(config, dict):
        raise BundleError(f"bundle {directory}: {CONFIG_FILE} must hold a JSON object")
    version = config.get("format_version")
    readable = f"this Variorum reads versions 1 to {BUNDLE_FORMAT_VERSION}"
    if isinstance(version, int) and not isinstance(version, bool) and version > BUNDLE_FORMAT_VERSION:
        raise BundleError(f"bundle {directory}: format version {version} is newer than this Variorum can read "
                          f"(it reads versions 1 to {BUNDLE_FORMAT_VERSION}); update Variorum to load it")
    if version not in range(1, BUNDLE_FORMAT_VERSION + 1) or isinstance(version, bool):
        raise BundleError(f"bundle {directory}: format version {version!r} is unknown ({readable}); "
                          "re-export the bundle with a matching Variorum")
    kind = config.get("kind", LM_KIND if version == 1 else None)  # version 1 language models named no kind
    if kind not in KINDS:
        raise BundleError(f"bundle {directory}: kind {kind!r} in {CONFIG_FILE} is not one of {list(KINDS)}")
    if not isinstance(config.get("model"), dict) or (kind == PERMGEN_KIND and not isinstance(config.get("permgen"),
                                                                                          dict)):
        section = "'model' and 'permgen' sections" if kind == PERMGEN_KIND else "'model' section"
        raise BundleError(f"bundle {directory}: {CONFIG_FILE} has no {section}")
    _check_provenance(directory, config.get("provenance", {}))
    return {**config, "kind": kind}


def _check_provenance(directory: Path, provenance: Any) -> None:
    """The parts of `provenance` that evaluation reads must have their types, or it fails long after loading."""
    train = provenance.get("train", {}) if isinstance(provenance, dict) else None
    if not isinstance(train, dict):
        raise BundleError(f"bundle {directory}: 'provenance' in {CONFIG_FILE} and its 'train' section "
                          "must be JSON objects")
    files, fraction = train.get("train_files", []), train.get("valid_fraction", 0.0)
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise BundleError(f"bundle {directory}: provenance 'train_files' must be a list of file names")
    if isinstance(fraction, bool) or not isinstance(fraction, int | float):
        raise BundleError(f"bundle {directory}: provenance 'valid_fraction' must be a number")


def bundle_kind(directory: Path) -> str | None:
    """The family a bundle's config.json declares ("lm", "permgen"), or None when unreadable (never raises)."""
    try:
        return str(read_bundle_config(Path(directory))["kind"])
    except BundleError:
        return None


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
    try:
        model.load_state_dict(state, strict=False)  # tied copies are saved once; _check_weights saw to the rest
    except ValueError as error:  # a head's own checks of what it loaded (F²'s class map)
        raise BundleError(f"bundle {directory}: {error}") from None
    head = model.get_submodule("head")
    missing = head.controlled_head.missing_state() if isinstance(head, OutputHead) else ""
    if missing:
        raise BundleError(f"bundle {directory}: {missing}; the weights file is damaged")
    return model


STORED_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
# Trained weights stay within a few units (the shipped bundles' largest is 2.5); values near float32's
# limit (3e38) are finite but make every product and softmax NaN, so they are refused as damage.
MAX_WEIGHT_MAGNITUDE = 1e4


def _read_weights(directory: Path) -> dict[str, torch.Tensor]:
    problem = file_problem(directory / WEIGHTS_FILE)  # safetensors calls an unreadable file missing
    if problem is not None:
        raise BundleError(f"bundle {directory}: {WEIGHTS_FILE} {problem}")
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
        if tensor.is_floating_point() and tensor.numel() and float(tensor.abs().max()) > MAX_WEIGHT_MAGNITUDE:
            raise BundleError(f"bundle {directory}: weight {key} holds values as large as "
                              f"{float(tensor.abs().max()):.3g}, which overflow float32 in the model's sums; "
                              "the file is damaged")


def _builder(directory: Path, config: dict[str, Any]) -> tuple[int, Callable[[], torch.nn.Module]]:
    """The vocabulary size the config implies and a builder of the family's model (`BundleError` if invalid)."""
    try:
        if config["kind"] == PERMGEN_KIND:  # imported here: engine.permgen builds on this module
            from engine.permgen.config import PermGenConfig
            from engine.permgen.model import PermGenModel

            permgen = PermGenConfig.from_dict({**config["permgen"], "model": config["model"]})
            return permgen.model.vocab_size, lambda: PermGenModel(permgen)
        model = config_from_dict(ModelConfig, config["model"])
        return model.vocab_size, lambda: LanguageModel(model)
    except (ConfigError, TypeError) as error:
        kind = "PermGen" if config["kind"] == PERMGEN_KIND else "model"
        raise BundleError(f"bundle {directory}: invalid {kind} config ({error})") from None


def check_bundle_folder(directory: Path) -> None:
    """`BundleError` unless `directory` is a folder, saying what it is instead."""
    if not directory.is_dir():
        what = "is a file, not a bundle folder" if directory.exists() else "does not exist"
        raise BundleError(f"bundle {directory} {what}")


def load_model_bundle(
    directory: Path, device: str | torch.device = "cpu", expect: str | None = None
) -> Bundle | PermGenBundle:
    """The one bundle reader: load and validate a bundle of any family (or of family `expect`).

    Returns a `Bundle` (language model) or a `PermGenBundle`; raises `BundleError` naming what is wrong.
    """
    directory = Path(directory)
    check_bundle_folder(directory)
    missing = [name for name in REQUIRED_FILES if not (directory / name).exists()]  # the readers name other kinds
    if missing:
        raise BundleError(f"bundle {directory} is missing {', '.join(missing)}")
    config = read_bundle_config(directory)
    if expect is not None and config["kind"] != expect:
        raise BundleError(f"bundle {directory} holds a {config['kind']!r} model, not a {expect!r} one; "
                          "`variorum generate --bundle` and the app load either kind")
    vocab_size, build = _builder(directory, config)
    tokenizer = load_bundle_tokenizer(directory)
    if tokenizer.vocab_size != vocab_size:
        raise BundleError(
            f"bundle {directory}: tokenizer has {tokenizer.vocab_size} tokens but the model was "
            f"built for {vocab_size}; the tokenizer does not belong to this model"
        )
    model = build_checked(directory, build)
    model.to(device).eval()
    card = read_bundle_card(directory)
    provenance = config.get("provenance", {})
    if isinstance(model, LanguageModel):
        return Bundle(directory, model, tokenizer, card, provenance)
    from engine.permgen.bundle import PermGenBundle

    return PermGenBundle(directory, cast("PermGenModel", model), tokenizer, card, provenance)


def load_bundle(directory: Path, device: str | torch.device = "cpu") -> Bundle:
    """Load a language-model bundle (`load_model_bundle` for kind "lm")."""
    bundle = load_model_bundle(directory, device, LM_KIND)
    assert isinstance(bundle, Bundle)  # guaranteed by `expect`
    return bundle
