"""Training checkpoints: weights (safetensors), optimizer + RNG state, and the step, for exact resume.

A checkpoint directory holds `model.safetensors`, `optimizer.pt` (loaded with
`weights_only=True`, never unpickling code) and `state.json` (step and the configs). It is
written with `engine.files.atomic_writes.atomic_directory`, so a crash (even `kill -9`) at any moment of a save
leaves a complete checkpoint: the previous one or the new one. `resume_state` is how a trainer's
`--resume` starts: no checkpoint is an error unless the caller allows a fresh start.
"""

from __future__ import annotations

import json
import math
import pickle
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from safetensors.torch import load_model, save_model

from engine.files.atomic_writes import atomic_directory, recover_directory
from engine.files.small_reads import UnusableFileError, read_small_json

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

STATE_FILE = "state.json"
OPTIMIZER_FILE = "optimizer.pt"
WEIGHTS_FILE = "model.safetensors"
# a dataclass a checkpoint saves in its state.json (the loop's early stop, its throughput)
D = TypeVar("D", bound="DataclassInstance")


def save_checkpoint(
    directory: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, step: int, meta: dict[str, Any]
) -> None:
    with atomic_directory(directory) as staging:
        save_model(model, str(staging / WEIGHTS_FILE))
        rng = {"cpu": torch.get_rng_state()}
        if torch.cuda.is_available():
            rng["cuda"] = torch.cuda.get_rng_state()
        torch.save({"optimizer": optimizer.state_dict(), "rng": rng}, staging / OPTIMIZER_FILE)
        (staging / STATE_FILE).write_text(json.dumps({"step": step, **meta}, indent=2))


def read_checkpoint_state(directory: Path) -> dict[str, Any] | None:
    """The checkpoint's `state.json`, or None when there is no complete checkpoint."""
    recover_directory(directory)  # a save killed mid-swap left the complete previous copy aside
    path = directory / STATE_FILE
    if not path.is_file():
        return None
    try:
        state = read_small_json(path)
    except UnusableFileError as error:
        raise CheckpointError(f"checkpoint {directory}: {error}") from None
    step = state.get("step") if isinstance(state, dict) else None
    if not isinstance(state, dict) or not isinstance(step, int) or isinstance(step, bool):
        raise CheckpointError(f"checkpoint {directory}: {STATE_FILE} does not hold a step; the checkpoint is damaged")
    if step < 0:
        raise CheckpointError(f"checkpoint {directory}: {STATE_FILE} holds step {step}, which no run reaches; "
                              "the checkpoint is damaged")
    return state


def state_section(state: dict[str, Any], key: str, kind: type[D], directory: Path) -> D:
    """The dataclass `kind` a checkpoint saved under `key` (its defaults when absent, as in older
    checkpoints), or a `CheckpointError`: every field a known one, each a number >= 0 (or a bool) of
    the field's type, since a damaged section would otherwise fail deep inside the loop."""
    value = state.get(key, {})
    defaults = asdict(kind())
    damaged = CheckpointError(f"checkpoint {directory}: {STATE_FILE} has a damaged {key!r} section")
    if not isinstance(value, dict) or not set(value) <= set(defaults):
        raise damaged
    for name, saved in value.items():
        if not _same_kind(saved, defaults[name]):
            raise damaged
    return kind(**value)


def state_seconds(state: dict[str, Any], directory: Path) -> float:
    """The training seconds a checkpoint records (0 when absent), or a `CheckpointError`."""
    seconds = state.get("train_seconds", 0.0)
    if not _same_kind(seconds, 0.0) or not math.isfinite(seconds):
        raise CheckpointError(f"checkpoint {directory}: {STATE_FILE} has a damaged 'train_seconds'")
    return float(seconds)


def _same_kind(value: object, default: object) -> bool:
    """Whether a saved value can stand for a field whose default is `default`: a bool for a bool, an int
    for an int, any number for a float; numbers not negative (NaN is not), ints within 64 bits (a larger
    one overflows where the loop divides by it)."""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(value, int):
        return 0 <= value < 2**63
    return isinstance(value, float) and not isinstance(default, int) and value >= 0


class CheckpointError(ValueError):
    """A checkpoint's files are damaged, tampered with or not a checkpoint's; nothing of them was used."""


class NoCheckpointError(ValueError):
    """`--resume` was asked for but the output folder holds no complete checkpoint."""


def resume_state(directory: Path, allow_fresh: bool) -> dict[str, Any] | None:
    """The checkpoint state to resume from; None (start at step 0) only when `allow_fresh`.

    Silently training from step 0 when the user asked to resume would overwrite the run's
    metrics and bundle with an unrelated, shorter run, so that is an error by default.
    """
    state = read_checkpoint_state(directory)
    if state is None and not allow_fresh:
        raise NoCheckpointError(
            f"--resume: no checkpoint in {directory}; check --out-dir, or add --allow-fresh-start "
            "to start from step 0 when there is none"
        )
    return state


def load_checkpoint(directory: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """Restore weights, optimizer and RNG state; return the step to continue from."""
    state = read_checkpoint_state(directory)
    if state is None:
        raise FileNotFoundError(f"no checkpoint in {directory}")
    saved = _read_saved_state(directory)
    try:
        load_model(model, str(directory / WEIGHTS_FILE), device=str(next(model.parameters()).device))
    except Exception as error:  # safetensors and torch raise their own types for a damaged or foreign file
        raise CheckpointError(f"checkpoint {directory}: {WEIGHTS_FILE} was not loaded ({_first_line(error)})") from None
    # how it steps (fused or not) is this run's choice: a checkpoint from before CPU runs fused keeps its numbers.
    # Set it before loading: torch places each state's `step` by the loaded group's policy (a fused CUDA step
    # needs it on the GPU, an unfused one keeps it on the CPU).
    stepping: list[dict[str, Any]] = [{key: group[key] for key in ("fused", "foreach") if key in group}
                                      for group in optimizer.param_groups]
    for group, kept in zip(saved["optimizer"]["param_groups"], stepping, strict=True):
        group.update(kept)
    optimizer.load_state_dict(saved["optimizer"])
    torch.set_rng_state(saved["rng"]["cpu"])
    if "cuda" in saved["rng"] and torch.cuda.is_available():
        torch.cuda.set_rng_state(saved["rng"]["cuda"])
    return int(state["step"])


def _read_saved_state(directory: Path) -> dict[str, Any]:
    """optimizer.pt's optimizer and RNG state, or a `CheckpointError`; `weights_only` never runs code from it."""
    refused = f"checkpoint {directory}: {OPTIMIZER_FILE} was not loaded"
    try:
        with warnings.catch_warnings():  # torch warns about the pickle protocol of a file it then refuses
            warnings.simplefilter("ignore")
            saved = torch.load(directory / OPTIMIZER_FILE, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise CheckpointError(f"{refused}: it holds more than tensors and plain data (tampered with?)") from None
    except Exception as error:  # a damaged zip, a truncated file, …: each its own type
        raise CheckpointError(f"{refused}: it is damaged ({_first_line(error)})") from None
    if not (isinstance(saved, dict) and isinstance(saved.get("optimizer"), dict)
            and isinstance(saved.get("rng"), dict) and "cpu" in saved["rng"]):
        raise CheckpointError(f"checkpoint {directory}: {OPTIMIZER_FILE} does not hold an optimizer and RNG state")
    return saved


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0].split(". ")[0][:120] if text else type(error).__name__
