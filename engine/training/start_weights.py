"""Fine-tuning: a training run that starts from a bundle's weights and tokenizer (`init_from`).

`"init_from": "resources/models/permgen-abstract"` in a config's `train` section (or `--init-from
DIR`) starts the run from that bundle instead of random weights. The run's model settings default
to the bundle's (`start_model_settings`): a writer fine-tuning an imported GPT-2 names only what
changes, e.g. `--head f2 --termination nmst`. The model is built from the run's config, then every
backbone tensor is copied from the bundle's model, so sizes that differ are one error naming the
tensor and both shapes, before any step. The head is copied too when the run keeps the bundle's
head (same kind, classes, POS groups and termination); a different head starts fresh (F²'s classes
fitted from the token counts, as in any run) over the pretrained backbone.

The bundle's tokenizer is the run's tokenizer (its ids are what the embeddings were trained on), so
`--tokenizer` cannot be given too. An imported checkpoint's tokenizer has no training counts; the run
counts its own training text (`ensure_counts`), which F² classes, AGG's groups and `variorum eval`
read. A bundle built on a pretrained checkpoint (engine/bundles/base.py) gives the run's bundle the
same base (`start_base`), so it stores only what the run changed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import torch

from engine.bundles.base import BundleBase, read_base
from engine.bundles.bundle import BundleError, OnBase, read_bundle_config, read_bundle_json
from engine.bundles.imported import import_checkpoint
from engine.checkpoints.hf_cache import find_checkpoint
from engine.config import ConfigError
from engine.tokenizer import VariorumTokenizer

HEAD_SETTINGS = ("head", "tie_embeddings", "f2_class_method", "f2_classes", "pos_tags", "group_prior",
                 "termination", "termination_eps")


def start_tokenizer_dir(init_from: str, tokenizer_dir: Path | None) -> Path | None:
    """The tokenizer folder a run uses: the start bundle's when there is one (never both)."""
    if not init_from:
        return tokenizer_dir
    if tokenizer_dir is not None:
        raise ConfigError("init_from brings its bundle's tokenizer; leave out --tokenizer")
    return Path(init_from)


def _is_pretrained_checkpoint(directory: Path) -> bool:
    """True for a transformers folder: its config.json names a model type and no bundle format version."""
    try:
        config = read_bundle_json(directory)
    except BundleError:
        return False
    return isinstance(config, dict) and "format_version" not in config and "model_type" in config


def start_bundle_config(init_from: str) -> dict[str, Any]:
    """The start bundle's config.json, whose sections are a fine-tune's defaults ({} without a start).
    `ConfigError` when `init_from` is a pretrained checkpoint rather than a bundle, saying how to start from it."""
    if not init_from:
        return {}
    directory = Path(init_from)
    if _is_pretrained_checkpoint(directory):
        raise ConfigError(f"init_from {init_from} is a pretrained checkpoint, not a Variorum bundle: start from it "
                          f"with --init-from-hf {init_from} (or `variorum import {init_from}` first)")
    return read_bundle_config(directory)


def start_model_settings(init_from: str) -> dict[str, Any]:
    """The start bundle's "model" section: the defaults of a run that fine-tunes it ({} without one)."""
    return dict(start_bundle_config(init_from).get("model", {}))


def ensure_counts(tokenizer: VariorumTokenizer, documents: list[str]) -> None:
    """Give a tokenizer without training counts (an imported checkpoint's) the counts of `documents`."""
    if not tokenizer.counts.any():
        tokenizer.counts = tokenizer.count_tokens(documents)


def start_base(init_from: str, kind: str, low_rank: dict[str, tuple[torch.Tensor, torch.Tensor]],
               partial: bool = False) -> OnBase | None:
    """The base a run's bundle is written on: the start bundle's base, if it has one; else, for a `partial`
    fine-tune (not every weight trained), the start bundle itself. A base that moved or changed during the
    run costs the run nothing: its bundle then holds every weight."""
    if not init_from:
        return None
    directory = Path(init_from)
    try:
        reference = read_base(directory, read_bundle_config(directory))
        if reference is None and partial:
            reference = BundleBase.of(directory)
        return None if reference is None else OnBase(reference, reference.state(directory, kind), low_rank)
    except BundleError as error:
        print(f"note: writing every weight into the bundle: {error}", file=sys.stderr)
        return None


def imported_start(checkpoint: str, init_from: str, out_dir: Path) -> Path:
    """`--init-from-hf`: the pretrained `checkpoint` (a folder, or a name in the local caches) imported as the
    run's start bundle `<out_dir>/start`, kept so that `--resume` does not import it again."""
    if init_from:
        raise ConfigError("start from a bundle (init_from) or from a pretrained checkpoint (--init-from-hf), not both")
    start = out_dir / "start"
    if not start.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        return import_checkpoint(checkpoint, start)
    imported = find_checkpoint(checkpoint, os.environ).path.resolve()
    base = read_bundle_config(start).get("base") or {}
    if Path(str(base.get("checkpoint", ""))).resolve() != imported:
        raise ConfigError(f"{start} holds another checkpoint's import ({base.get('name')}); use a new --out-dir")
    return start


def _head_settings(model: torch.nn.Module) -> object:
    """The config holding a model's head settings: its `ModelConfig` (a PermGen config's "model" section)."""
    config = getattr(model, "config", None)
    return getattr(config, "model", config)


def _same_head(model: torch.nn.Module, start: torch.nn.Module) -> bool:
    ours, theirs = _head_settings(model), _head_settings(start)
    return all(getattr(ours, name, None) == getattr(theirs, name, None) for name in HEAD_SETTINGS)


def copy_start_weights(model: torch.nn.Module, start: torch.nn.Module, init_from: str) -> None:
    """Load `start`'s weights (the bundle's model) into `model`, its head only when the run keeps that head;
    `ConfigError` when a tensor the run copies differs in shape or is missing from either."""
    keep_head = _same_head(model, start)
    ours = {k: v for k, v in model.state_dict().items() if keep_head or not k.startswith("head.")}
    theirs = {k: v for k, v in start.state_dict().items() if keep_head or not k.startswith("head.")}
    only_one = sorted(set(ours) ^ set(theirs))
    if only_one:
        raise ConfigError(f"init_from {init_from}: its model has a different structure from this run's "
                          f"(e.g. {only_one[0]!r} is in only one of them); give the run the bundle's model settings")
    for name, tensor in ours.items():
        if theirs[name].shape != tensor.shape:
            raise ConfigError(f"init_from {init_from}: {name} is {tuple(theirs[name].shape)} in the bundle but "
                              f"{tuple(tensor.shape)} in this run; give the run the bundle's model settings")
    with torch.no_grad():
        model.load_state_dict({name: t.to(ours[name].dtype) for name, t in theirs.items()}, strict=False)
    untie_from_start(model, start)


def untie_from_start(model: torch.nn.Module, start: torch.nn.Module) -> None:
    """A run that unties the output embedding of a tied start (`tie_embeddings` false over a tied base) starts
    its head's token table W [V, D] as the start's token embedding, not at random: the run then begins at the
    start's own distribution, and training (AGG's gated gradient, say) moves the output side alone."""
    ours, theirs = _head_settings(model), _head_settings(start)
    if getattr(ours, "tie_embeddings", True) or not getattr(theirs, "tie_embeddings", False):
        return
    token_embedding = getattr(start.get_submodule("backbone"), "token_embedding", None)
    if not isinstance(token_embedding, torch.nn.Embedding):
        return
    embedding = token_embedding.weight  # [V, D]
    with torch.no_grad():
        for name, parameter in model.get_submodule("head").named_parameters():
            if (name == "proj.weight" or name.endswith(".proj.weight")) and parameter.shape == embedding.shape:
                parameter.copy_(embedding.to(parameter.dtype))
