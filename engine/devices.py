"""Device choice shared by training, evaluation and the app: auto = CUDA when present, else CPU."""

from __future__ import annotations

import os

import torch

from engine.config import ConfigError

DEVICE_CHOICES = ("auto", "cpu", "cuda")


def gpu_unavailable_reason() -> str:
    """Why the GPU cannot be used, in a writer's words ('' when it can)."""
    if torch.cuda.is_available():
        return ""
    if torch.version.cuda is None:
        return "this PyTorch build has no CUDA support (CPU-only install)"
    return "PyTorch has CUDA support but found no usable GPU or driver"


def resolve_device(name: str) -> torch.device:
    """`auto` → CUDA when present (this rank's GPU under torchrun), else CPU."""
    if name not in DEVICE_CHOICES:
        raise ConfigError(f"device must be one of {list(DEVICE_CHOICES)}, got {name!r}")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"no usable CUDA GPU: {gpu_unavailable_reason()}")
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")
