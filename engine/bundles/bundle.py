"""Model bundles: one directory format, one writer and one reader for every model family.

A bundle holds everything needed to run a model (docs/training-and-bundles.md):
`config.json` = {format_version, kind: the model family (engine/families: "lm", "permgen", …),
model: the (decoder) `ModelConfig`, the family's own sections (PermGen: permgen, the encoder-decoder
extras), provenance, optionally decode_starts: where a writer starts on the model, e.g. {"temperature": 0.8,
"top_p": 0.9}, engine/controls.py}, `model.safetensors` (float32,
float16 or bfloat16; loading copies them into float32 parameters), `tokenizer.json` +
`token_counts.json`, `card.md`, plus any files the head adds (`bundle_files`: POSG writes
`pos_vocab.json`, F² `freq_classes.json`). A bundle built on a writer's pretrained checkpoint names it
in a `base` section and stores only what changed (engine/bundles/base.py).

Format versions: 1 had no `kind` for language models (PermGen bundles said "permgen"); 2 always
names it. Both are read as they are, so shipped bundles load unchanged; a newer or unknown version
is a `BundleError` saying so. Loading checks every file and raises a `BundleError` that names the
bundle and what is wrong — never a bare traceback: config fields are type- and range-checked
(engine.config), the weights are checked against the config before the model is allocated
(`build_checked`: shapes, dtypes, finite values), and JSON files that are not files or are nested
too deeply are refused.

The family named by `kind` (engine/families) says which sections its config.json holds and builds its
model; this module knows no family. A loaded bundle is a `ModelBundle` of the family's model:
`load_bundle` gives a language model's (`Bundle`), engine/permgen/bundle.py a PermGen one's.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeAlias, TypeVar

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file, save_model

from engine.bundled_model import BundledModel, BundleError
from engine.bundles.base import Base, LowRank, stored_tensors, tied_names, with_base
from engine.config import BUNDLE_DTYPES, BUNDLE_FORMAT_VERSION, ConfigError
from engine.controls import DecodeStarts, read_decode_starts
from engine.families import ModelBuilder, ModelFamily, family_kinds, model_family
from engine.files.atomic_writes import atomic_directory
from engine.files.small_reads import UnusableFileError, file_problem, links_out_of, read_small_json, read_small_text
from engine.heads.base import OutputHead
from engine.model import LanguageModel
from engine.tokenizer import TOKENIZER_FILE, TokenizerError, VariorumTokenizer

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
CARD_FILE = "card.md"
REQUIRED_FILES = (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE, CARD_FILE)
LM_KIND = LanguageModel.kind  # version 1 bundles of language models named no kind
WEIGHT_DTYPES: dict[str, torch.dtype] = {name: getattr(torch, name) for name in BUNDLE_DTYPES}

M = TypeVar("M", bound=torch.nn.Module)
B = TypeVar("B", bound=BundledModel)


@dataclass
class ModelBundle(Generic[B]):
    """A loaded bundle of any family: model (in eval mode), tokenizer, card, provenance, and where a writer
    starts on it (config.json "decode_starts", checked; the loaded model's `Capabilities` carry them)."""

    path: Path
    model: B
    tokenizer: VariorumTokenizer
    card: str
    provenance: dict[str, Any] = field(default_factory=dict)
    decode_starts: DecodeStarts = ()

    @property
    def name(self) -> str:
        return self.path.name


Bundle: TypeAlias = ModelBundle[LanguageModel]  # a loaded language-model bundle (`load_bundle`)


@dataclass(frozen=True)
class OnBase:
    """A model written as changes to a base (a pretrained checkpoint or a bundle): the reference, the base
    model's tensors and the low-rank updates of the model's weights (LoRA), if any."""

    reference: Base
    state: dict[str, torch.Tensor]
    low_rank: LowRank = field(default_factory=dict)


def save_bundle(
    directory: Path,
    model: BundledModel,
    tokenizer: VariorumTokenizer,
    card: str,
    provenance: dict[str, Any] | None = None,
    weights_dtype: str = "float32",
    on_base: OnBase | None = None,
) -> None:
    """Write a bundle of any family atomically: built in a temporary sibling, then moved into place.

    With `on_base`, the bundle names its base checkpoint and stores only what differs from it."""
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
        if on_base is None:
            save_model(stored, str(staging / WEIGHTS_FILE))  # de-duplicates tied weights
        else:
            config["base"] = on_base.reference.to_dict()
            changed = stored_tensors(model, on_base.state, on_base.low_rank)  # compared in the model's float32
            dtype = WEIGHT_DTYPES[weights_dtype]
            save_file({k: v.to(dtype) if v.is_floating_point() else v for k, v in changed.items()},
                      str(staging / WEIGHTS_FILE))
        (staging / CONFIG_FILE).write_text(json.dumps(config, indent=2))
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
    if kind not in family_kinds():
        raise BundleError(f"bundle {directory}: kind {kind!r} in {CONFIG_FILE} is not one of {family_kinds()}")
    sections = model_family(kind).config_sections
    if not all(isinstance(config.get(section), dict) for section in sections):
        names = " and ".join(repr(section) for section in sections)
        raise BundleError(f"bundle {directory}: {CONFIG_FILE} has no {names} section{'s' * (len(sections) > 1)}")
    _check_provenance(directory, config.get("provenance", {}))
    bundle_decode_starts(directory, config)  # a bad start is refused when the bundle is listed, not first when used
    return {**config, "kind": kind}


def bundle_decode_starts(directory: Path, config: dict[str, Any]) -> DecodeStarts:
    """Where a writer starts on this bundle's model, from its config.json's optional "decode_starts" object
    (engine/controls.py `read_decode_starts`); `BundleError` naming the bundle, the field and its range."""
    if "decode_starts" not in config:
        return ()
    try:
        return read_decode_starts(config["decode_starts"])
    except ValueError as error:
        raise BundleError(f"bundle {directory}: \"decode_starts\" in {CONFIG_FILE}: {error}") from None


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
    """The family a bundle's config.json declares ("lm", "permgen", …), or None when unreadable (never raises)."""
    try:
        return str(read_bundle_config(Path(directory))["kind"])
    except BundleError:
        return None


def load_bundle_tokenizer(directory: Path) -> VariorumTokenizer:
    try:
        return VariorumTokenizer.load(directory)
    except TokenizerError as error:
        raise BundleError(f"bundle {directory}: {error}") from None


def build_checked(directory: Path, build: Callable[[], M], config: dict[str, Any] | None = None) -> M:
    """Build a model with `build()` after checking the weights file against it; then load the weights.

    A bundle whose `config` names a base checkpoint gets the base's tensors (checked against their
    sha256) for every weight its file does not store, and its low-rank updates applied.

    The model is first built on torch's "meta" device (shapes only, no memory), so a config
    asking for more than its weights file holds fails here, naming the weight, before anything
    is allocated. Every weight must have its expected shape and dtype and be finite.
    """
    try:
        with torch.device("meta"):
            reference = build()
    except ConfigError as error:
        raise BundleError(f"bundle {directory}: invalid model config ({error})") from None
    state = with_base(directory, _read_weights(directory), reference, config or {})
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
    tied = tied_names(reference, state)
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


def _builder(directory: Path, config: dict[str, Any]) -> ModelBuilder:
    """The vocabulary size the config implies and a builder of the family's model (`BundleError` if invalid)."""
    family = model_family(config["kind"])
    try:
        return family.model_builder(config)
    except (ConfigError, TypeError) as error:
        raise BundleError(f"bundle {directory}: invalid {family.name} config ({error})") from None


def check_bundle_folder(directory: Path) -> None:
    """`BundleError` unless `directory` is a folder, saying what it is instead."""
    if not directory.is_dir():
        what = "is a file, not a bundle folder" if directory.exists() else "does not exist"
        raise BundleError(f"bundle {directory} {what}")


def _checked_config(directory: Path) -> dict[str, Any]:
    """config.json of the bundle folder `directory`, after checking it holds every required file
    (`read_bundle_config`); `BundleError` naming what is wrong."""
    directory = Path(directory)
    check_bundle_folder(directory)
    missing = [name for name in REQUIRED_FILES if not (directory / name).exists()]  # the readers name other kinds
    if missing:
        raise BundleError(f"bundle {directory} is missing {', '.join(missing)}")
    if outside := links_out_of(directory):  # the readers follow links: a bundle from elsewhere may point anywhere
        raise BundleError(f"bundle {directory}: {outside[0].relative_to(directory)} is a link to "
                          f"{outside[0].resolve()}, outside the bundle folder; copy the file in instead")
    return read_bundle_config(directory)


def bundle_family(directory: Path) -> ModelFamily:
    """The family of the bundle in `directory` (`_checked_config`'s kind), to load or measure it."""
    return model_family(_checked_config(directory)["kind"])


def load_model_bundle(
    directory: Path, device: str | torch.device = "cpu", expect: str | None = None
) -> ModelBundle[BundledModel]:
    """The one bundle reader: load and validate a bundle of any family (or of the family of kind `expect`).

    Raises `BundleError` naming what is wrong; `load_typed_bundle` types the model by its class.
    """
    directory = Path(directory)
    config = _checked_config(directory)
    if expect is not None and config["kind"] != expect:
        raise BundleError(f"bundle {directory} holds a {config['kind']!r} model, not a {expect!r} one; "
                          "`variorum generate --bundle` and the app load any kind")
    vocab_size, build = _builder(directory, config)
    tokenizer = load_bundle_tokenizer(directory)
    if tokenizer.vocab_size != vocab_size:
        raise BundleError(
            f"bundle {directory}: tokenizer has {tokenizer.vocab_size} tokens but the model was "
            f"built for {vocab_size}; the tokenizer does not belong to this model"
        )
    model = build_checked(directory, build, config)
    model.to(device).eval()
    return ModelBundle(directory, model, tokenizer, read_bundle_card(directory), config.get("provenance", {}),
                       bundle_decode_starts(directory, config))


def load_typed_bundle(directory: Path, device: str | torch.device, model_type: type[B]) -> ModelBundle[B]:
    """Load a bundle of the family whose models are `model_type`s (`load_model_bundle` for its kind)."""
    bundle = load_model_bundle(directory, device, model_type.kind)
    model = bundle.model
    assert isinstance(model, model_type)  # the family of `model_type.kind` builds a `model_type`
    return ModelBundle(bundle.path, model, bundle.tokenizer, bundle.card, bundle.provenance, bundle.decode_starts)


def load_bundle(directory: Path, device: str | torch.device = "cpu") -> Bundle:
    """Load a language-model bundle (`load_model_bundle` for kind "lm")."""
    return load_typed_bundle(directory, device, LanguageModel)


__all__ = [  # BundleError is defined with BundledModel (engine/bundled_model.py) and read from here
    "CARD_FILE",
    "CONFIG_FILE",
    "LM_KIND",
    "MAX_WEIGHT_MAGNITUDE",
    "REQUIRED_FILES",
    "STORED_FLOAT_DTYPES",
    "WEIGHTS_FILE",
    "WEIGHT_DTYPES",
    "Bundle",
    "BundleError",
    "ModelBundle",
    "OnBase",
    "build_checked",
    "bundle_decode_starts",
    "bundle_family",
    "bundle_kind",
    "check_bundle_folder",
    "load_bundle",
    "load_bundle_tokenizer",
    "load_model_bundle",
    "load_typed_bundle",
    "read_bundle_card",
    "read_bundle_config",
    "read_bundle_json",
    "save_bundle",
]
