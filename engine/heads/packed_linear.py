"""The vocabulary projection h·Wᵀ with a weight prepacked for oneDNN, for decoding on the CPU.

A decoding step multiplies a few rows (N variants) by the [V, D] output matrix. MKL's small-M
matrix product re-reads the weight in its plain layout every call; oneDNN with the weight
reordered once into its blocked layout does the same product in about half the time on a 2-core
AMD EPYC VM (docs/decoding_speed.md). The packed copy is made on first use and kept while the
weight is unchanged: it is keyed by the weight's storage and version counter, so an optimizer
step or `load_state_dict` (both in place) repacks. It lives outside the module (an opaque oneDNN
tensor cannot be deep-copied or saved), in a map whose entry dies with the weight.

Only inference (no autograd), float32 CPU tensors take this path; everything else — training,
other devices, half precision — is `nn.Linear` itself. The sums run in another order, so outputs
differ from `F.linear` by float rounding (~1e-6 on logits), never more.
"""

from __future__ import annotations

import weakref

import torch
import torch.nn.functional as F
from torch import nn

PACKED_ROWS_HINT = 8  # oneDNN picks the packed layout for about this many rows; any row count works

# id(weight) → (the weight, weakly; its storage and version when packed; the packed copy). Keyed by id:
# tensors compare elementwise, so they cannot be dictionary keys themselves.
_packed: dict[int, tuple[weakref.ref[torch.Tensor], tuple[int, int], torch.Tensor]] = {}


def _packs(weight: torch.Tensor, hidden: torch.Tensor) -> bool:
    """Whether hidden · weightᵀ can run on the prepacked weight (inference on float32 CPU tensors)."""
    return (
        not torch.is_grad_enabled()
        and hidden.device.type == "cpu" and weight.device.type == "cpu"
        and hidden.dtype == weight.dtype == torch.float32
        and torch._C._has_mkldnn
    )


def packed_weight(weight: torch.Tensor) -> torch.Tensor:
    """weight [V, D] in oneDNN's blocked layout, packed once per weight version."""
    ident, key = id(weight), (weight.data_ptr(), weight._version)
    cached = _packed.get(ident)
    if cached is None or cached[0]() is not weight or cached[1] != key:
        owner = weakref.ref(weight, lambda _: _packed.pop(ident, None))  # forget it with the weight
        cached = (owner, key, torch.ops.mkldnn._reorder_linear_weight(weight.detach(), PACKED_ROWS_HINT))
        _packed[ident] = cached
    return cached[2]


class PackedLinear(nn.Linear):
    """`nn.Linear` (same parameters, same state dict) whose inference on the CPU uses a prepacked weight."""

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:  # [..., D] → [..., V]
        if not _packs(self.weight, hidden):
            return F.linear(hidden, self.weight, self.bias)
        out: torch.Tensor = torch.ops.mkldnn._linear_pointwise(
            hidden.contiguous(), packed_weight(self.weight), self.bias, "none", [], "")
        return out
