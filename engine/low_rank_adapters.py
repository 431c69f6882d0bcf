"""What a projection wrapped with LoRA adapters stands for: its weight W plus the adapters' low-rank update.

peft's `inject_adapter_in_model` wraps each target projection in a `LoraLayer` whose own forward adds
(α/r)·B·A x. A backbone that reads its projections' weights rather than calling them (the Llama's blocks read
`BlockWeights` for their packed products) must build the same sum itself, or the adapters take no part in the
products and never receive a gradient. `lora_factors` and `adapted_weight` are that sum, shared by the
forward (engine/backbones/llama.py) and the merge after training (engine/training/trainable.py `merge_lora`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def lora_factors(wrapper: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """(α/r)·B [out, r] and A [r, in] of peft's `LoraLayer` `wrapper` (adapter "default"), with their gradients."""
    down = wrapper.lora_A["default"].weight  # A [r, in]
    return wrapper.lora_B["default"].weight * wrapper.scaling["default"], down


def adapted_weight(layer: nn.Module) -> torch.Tensor:
    """The weight [out, in] a linear `layer` multiplies by: its own, or while LoRA adapters wrap it (and are not
    merged into it), W + (α/r)·B·A, differentiable in A and B."""
    if not hasattr(layer, "lora_A") or getattr(layer, "merged", False):
        return layer.weight  # type: ignore[return-value]  # an nn.Linear's, or a packed weight at decoding
    up, down = lora_factors(layer)
    base: torch.Tensor = layer.get_base_layer().weight  # type: ignore[operator]
    return base + up @ down
