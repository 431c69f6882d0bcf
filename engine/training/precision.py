"""Training precision: float32, or bf16 autocast where the hardware multiplies bf16 fast.

`--precision auto` (the default) picks bf16 autocast on CUDA and on CPUs with bf16 matrix
instructions (AVX512-BF16 or AMX), float32 elsewhere with a one-line note saying why. Under bf16
autocast the weights, gradients and AdamW state stay float32; matrix products run in bf16 and
the heads compute their log-space losses from float32 logits (engine/heads), so only the
products' rounding changes (docs/cpu-training-speed.md).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from engine.config import PRECISIONS, ConfigError


def cpu_has_fast_bf16() -> bool:
    """Whether this CPU multiplies bf16 matrices in hardware (AVX512-BF16 or AMX tiles)."""
    return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())


@dataclass(frozen=True)
class Precision:
    """The precision a run trains in on its device, and why auto chose float32 ('' otherwise)."""

    name: str  # "float32" or "bf16"
    device_type: str  # "cpu" or "cuda": where the autocast applies
    note: str = ""

    def autocast(self) -> AbstractContextManager[Any]:
        """bf16 autocast on the run's device (products in bf16, reductions in float32), or nothing."""
        if self.name == "bf16":
            return torch.autocast(self.device_type, dtype=torch.bfloat16)
        return nullcontext()


def resolve_precision(requested: str, device: torch.device) -> Precision:
    """`auto` → bf16 on CUDA and on CPUs with bf16 instructions, else float32 with a note."""
    if requested not in PRECISIONS:
        raise ConfigError(f"precision must be one of {list(PRECISIONS)}, got {requested!r}")
    if requested != "auto":
        return Precision(requested, device.type)
    if device.type == "cuda" or cpu_has_fast_bf16():
        return Precision("bf16", device.type)
    note = "precision: float32 (this CPU has no AVX512-BF16 or AMX: bf16 would be emulated, slower)"
    return Precision("float32", device.type, note)
