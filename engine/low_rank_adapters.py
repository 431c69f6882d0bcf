"""What a projection wrapped with LoRA adapters multiplies by: its weight W and the adapters' update (α/r)·B·A.

peft's `inject_adapter_in_model` wraps each target projection in a `LoraLayer` whose own forward adds
(α/r)·B·A x. A backbone that reads its projections' weights rather than calling them (the Llama's blocks read
`BlockWeights` for their packed products) must add the update itself, or the adapters take no part in the
products and never receive a gradient. `adapted_weight` gives such a backbone a `LowRankWeight` while adapters
wrap a projection; its product takes LoRA's own path, W x + (α/r)·B (A x), so the backward computes the
gradients of A [r, in] and B [out, r] and never a full [out, in] one (multiplying by W + B·A would cost a whole
weight gradient per projection, half again a frozen block's backward). `lora_factors` is shared with the merge
after training (engine/training/trainable.py `merge_lora`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn


class LowRankWeight(NamedTuple):
    """A frozen weight W [out, in] with a trainable low-rank update up [out, r] · down [r, in] (up holds α/r)."""

    base: torch.Tensor  # [out, in]
    up: torch.Tensor  # (α/r)·B [out, r]
    down: torch.Tensor  # A [r, in]

    def product(self, hidden: torch.Tensor, base_product: torch.Tensor) -> torch.Tensor:
        """hidden [M, in] → [M, out]: `base_product` (hidden · Wᵀ, computed by the caller) plus the update."""
        return base_product + F.linear(F.linear(hidden, self.down), self.up)

    def dense(self) -> torch.Tensor:
        """W + up · down [out, in], the weight the adapters merge into."""
        return self.base + self.up @ self.down


def lora_factors(wrapper: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """(α/r)·B [out, r] and A [r, in] of peft's `LoraLayer` `wrapper` (adapter "default"), with their gradients."""
    down = wrapper.lora_A["default"].weight  # A [r, in]
    return wrapper.lora_B["default"].weight * wrapper.scaling["default"], down


def adapted_weight(layer: nn.Module) -> Any:
    """What a linear `layer` multiplies by: its own weight (a tensor, or a packed one at decoding), or while LoRA
    adapters wrap it unmerged, a `LowRankWeight`."""
    if not hasattr(layer, "lora_A") or getattr(layer, "merged", False):
        return layer.weight
    up, down = lora_factors(layer)
    return LowRankWeight(layer.get_base_layer().weight, up, down)  # type: ignore[operator]
