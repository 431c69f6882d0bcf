"""Fine-tuning: a training run that starts from a bundle's weights and tokenizer (`init_from`).

`"init_from": "resources/models/permgen-abstract"` in a config's `train` section (or `--init-from
DIR`) starts the run from that bundle instead of random weights: the model is built from the run's
own config as usual, then every tensor is copied from the bundle's model, so the run's config must
give the bundle's sizes (layers, width, heads, positions, head kind). A size that differs is one
error naming the tensor and both shapes, before any step. The bundle's tokenizer is the run's
tokenizer (its ids are what the embeddings were trained on), so `--tokenizer` cannot be given too.
What the run changes is only its data, task and schedule: e.g. a paraphrase model fine-tuned from
the shipped abstract model, which already writes fluent cased English.
"""

from __future__ import annotations

from pathlib import Path

import torch

from engine.config import ConfigError


def start_tokenizer_dir(init_from: str, tokenizer_dir: Path | None) -> Path | None:
    """The tokenizer folder a run uses: the start bundle's when there is one (never both)."""
    if not init_from:
        return tokenizer_dir
    if tokenizer_dir is not None:
        raise ConfigError("init_from brings its bundle's tokenizer; leave out --tokenizer")
    return Path(init_from)


def copy_start_weights(model: torch.nn.Module, start: torch.nn.Module, init_from: str) -> None:
    """Load `start`'s weights (the bundle's model) into `model`; ConfigError when their tensors differ."""
    ours, theirs = model.state_dict(), start.state_dict()
    only_one = sorted(set(ours) ^ set(theirs))
    if only_one:
        raise ConfigError(f"init_from {init_from}: its model has a different structure from this run's "
                          f"(e.g. {only_one[0]!r} is in only one of them); give the run the bundle's model settings")
    for name, tensor in ours.items():
        if theirs[name].shape != tensor.shape:
            raise ConfigError(f"init_from {init_from}: {name} is {tuple(theirs[name].shape)} in the bundle but "
                              f"{tuple(tensor.shape)} in this run; give the run the bundle's model settings")
    with torch.no_grad():
        model.load_state_dict({name: t.to(ours[name].dtype) for name, t in theirs.items()})
