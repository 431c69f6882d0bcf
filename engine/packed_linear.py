"""Products with a weight prepacked for oneDNN, for decoding on the CPU.

A decoding step multiplies a few rows (N variants) by each weight matrix. MKL's small-M matrix
product re-reads the weight in its plain layout every call; oneDNN with the weight reordered once
into its blocked layout does the same product faster on a 2-core AMD EPYC VM (docs/decoding_speed.md):
about half the time for the [V, D] vocabulary projection (`PackedLinear`, the heads' `proj`), and
for the GPT-2 blocks' products of two or more rows (`project`; a single row is faster through MKL's
matrix-vector path). The packed copy is made on first use and kept while the weight is unchanged:
it is keyed by the weight's storage and version counter, so an optimizer step or `load_state_dict`
(both in place) repacks. It lives outside the module (an opaque oneDNN tensor cannot be
deep-copied or saved), in a map whose entry dies with the weight.

Only inference (no autograd), float32 CPU tensors take this path; everything else — training,
other devices, half precision — is the plain product. The sums run in another order, so outputs
differ from it by float rounding (~1e-6), never more.

A model loaded only to generate can drop the plain copies of its Llama blocks' weights and keep the packed
ones alone (`keep_packed_only`): the packed layout holds the same numbers, and those products read nothing else.
Or it keeps them rounded to float16 in FBGEMM's packed layout (`HalfWeight`): half the bytes per step for a
step bound by memory bandwidth, float32 rows in and out; docs/decoding_speed.md has what it costs and saves.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

from engine.low_rank_adapters import LowRankWeight

PACKED_ROWS_HINT = 8  # oneDNN picks the packed layout for about this many rows; any row count works

# (id(weight), transposed) → (the weight, weakly; its storage and version when packed; the packed copy).
# Keyed by id: tensors compare elementwise, so they cannot be dictionary keys themselves.
_packed: dict[tuple[int, bool], tuple[weakref.ref[torch.Tensor], tuple[int, int], torch.Tensor]] = {}


def packs(weight: torch.Tensor, hidden: torch.Tensor) -> bool:
    """Whether hidden · weightᵀ can run on the prepacked weight (inference on float32 CPU tensors; a weight
    made under inference mode has no version counter to key its packed copy by, so it stays plain).
    Device and dtype are checked first: on a GPU or in bf16 nothing else is looked at, which keeps
    the recorded GPU step (engine/decoding/graphed_step.py) free of CPU-only bookkeeping."""
    return (
        hidden.device.type == "cpu" and weight.device.type == "cpu"
        and hidden.dtype == weight.dtype == torch.float32
        and not torch.is_grad_enabled() and not weight.is_inference()
        and torch._C._has_mkldnn
    )


def packed_weight(weight: torch.Tensor, transposed: bool = False) -> torch.Tensor:
    """weight [V, D] in oneDNN's blocked layout for hidden · weightᵀ, packed once per weight version;
    `transposed`: weight is [D, V] (GPT-2's Conv1D layout), for hidden · weight."""
    ident, key = (id(weight), transposed), (weight.data_ptr(), weight._version)
    cached = _packed.get(ident)
    if cached is None or cached[0]() is not weight or cached[1] != key:
        owner = weakref.ref(weight, lambda _: _packed.pop(ident, None))  # forget it with the weight
        plain = weight.detach().t().contiguous() if transposed else weight.detach()  # [V, D]
        cached = (owner, key, torch.ops.mkldnn._reorder_linear_weight(plain, PACKED_ROWS_HINT))
        _packed[ident] = cached
    return cached[2]


def project(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """hidden [M, D] · weight [D, V] + bias [V] → [M, V]: on the prepacked weight for M ≥ 2 rows."""
    if hidden.shape[0] < 2 or not packs(weight, hidden):
        return torch.addmm(bias, hidden, weight)
    return _packed_product(hidden, packed_weight(weight, transposed=True), bias)


def _packed_product(hidden: torch.Tensor, packed: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """hidden [..., D] times a packed weight (+ bias) → [..., V]."""
    out: torch.Tensor = torch.ops.mkldnn._linear_pointwise(hidden.contiguous(), packed, bias, "none", [], "")
    return out


class PackedLinear(nn.Linear):
    """`nn.Linear` (same parameters, same state dict) whose inference on the CPU uses a prepacked weight.

    Inside `one_product_per_input` it also computes each input's product once: one decoding step asks a
    two-stage head for the marginal, the group stage and the token stage of the same rows (F²'s class
    sampling, once per class), and each asks for the [V, D] vocabulary projection, which reads the whole
    matrix (113 MB for SmolLM2's 49k tokens, as much as a third of its 30 blocks' weights)."""

    memo: dict[int, tuple[torch.Tensor, torch.Tensor]] | None = None  # id(input) → (input, product)
    float16: HalfWeight | None = None  # a float16 copy of the weight a model loaded only to generate reads instead

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:  # [..., D] → [..., V]
        if self.memo is None:
            return self._product(hidden)
        known = self.memo.get(id(hidden))
        if known is not None and known[0] is hidden:
            return known[1]
        product = self._product(hidden)
        self.memo[id(hidden)] = (hidden, product)
        return product

    def _product(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.float16 is not None and not torch.is_grad_enabled():
            return self.float16.product(hidden)
        if not packs(self.weight, hidden):
            return F.linear(hidden, self.weight, self.bias)
        return _packed_product(hidden, packed_weight(self.weight), self.bias)


@contextmanager
def one_product_per_input(module: nn.Module) -> Iterator[None]:
    """Within the block every `PackedLinear` of `module` computes its product once per input tensor (by
    identity: the decoding code never changes a tensor it was given, so the same tensor means the same
    rows); the products are dropped when the block ends. For inference only: a product is shared."""
    layers = [layer for layer in module.modules() if isinstance(layer, PackedLinear)]
    for layer in layers:
        layer.memo = {}
    try:
        yield
    finally:
        for layer in layers:
            layer.memo = None


class HalfWeight:
    """A bias-free layer's weight [V, D] rounded to float16 and prepacked for FBGEMM's product, which reads float32
    rows [M, D] and writes float32 [M, V], converting each weight back to float32 inside the kernel: the product of
    the rows with the float16-rounded weight, at half the bytes read of float32. Not a tensor (FBGEMM keeps it in
    an opaque object): only `linear` reads it, under inference."""

    def __init__(self, weight: torch.Tensor) -> None:  # [V, D], float32 on the CPU
        self.shape = weight.shape
        self.params = torch.ops.quantized.linear_prepack_fp16(weight.detach().contiguous(), None)

    def product(self, hidden: torch.Tensor) -> torch.Tensor:  # [M, D] → [M, V]
        out: torch.Tensor = torch.ops.quantized.linear_dynamic_fp16(hidden.contiguous(), self.params)
        return out

    def to_dense(self) -> torch.Tensor:
        """The float16-rounded weight [V, D] back, in float32."""
        dense: torch.Tensor = torch.ops.quantized.linear_unpack_fp16(self.params)[0]
        return dense


# what a block product multiplies by: a tensor, float16 kept for FBGEMM, or a fine-tune's weight with its LoRA update
Weight = torch.Tensor | HalfWeight | LowRankWeight
HALF_LIMIT = 65504.0  # float16's largest finite value: a weight beyond it stays in float32


def plain_tensor(weight: Weight) -> torch.Tensor:
    """`weight` when it is a tensor (a model loaded to train, score or export); a `HalfWeight` belongs to a model
    loaded only to generate, whose products only `linear` computes."""
    if isinstance(weight, LowRankWeight):
        return weight.dense()
    if isinstance(weight, HalfWeight):
        raise TypeError("this model was loaded only to generate (its block weights are kept in float16 for FBGEMM); "
                        "load the bundle again to export or train it")
    return weight


def half_products_available() -> bool:
    """Whether this PyTorch has FBGEMM's float16-weight product (x86 builds do; ARM builds have no FBGEMM)."""
    return "fbgemm" in torch.backends.quantized.supported_engines


def linear(hidden: torch.Tensor, weight: Weight) -> torch.Tensor:
    """hidden [M, D] · weight [V, D]ᵀ → [M, V] (nn.Linear's layout, no bias; a Llama block's products): on the
    prepacked weight for every row count. Unlike GPT-2's smaller matrices (`project`), a single row is faster
    packed too at SmolLM2's sizes: on two threads, 130 against 204 µs for the [960, 576] query-key-value
    product, 367 against 641 µs for the [3072, 576] gate-and-up one (docs/decoding_speed.md)."""
    if isinstance(weight, LowRankWeight):  # a LoRA fine-tune: LoRA's own path, the update through rank r
        return weight.product(hidden, linear(hidden, weight.base))
    if isinstance(weight, HalfWeight) or weight.is_mkldnn:  # kept packed only (`keep_packed_only`)
        if hidden.requires_grad and torch.is_grad_enabled():  # neither packed product has a backward
            raise RuntimeError("this model was loaded only to generate (its block weights are kept packed): it can "
                               "score under torch.no_grad() but not train; load the bundle again to train it")
        return weight.product(hidden) if isinstance(weight, HalfWeight) else _packed_product(hidden, weight, None)
    if not packs(weight, hidden):
        return F.linear(hidden, weight)
    return _packed_product(hidden, packed_weight(weight), None)


def keep_packed_only(layers: Iterable[nn.Linear], half: bool = False) -> int:
    """Replace each bias-free float32 CPU layer's weight [V, D] by its packed copy, for a model loaded only to
    generate (the app's, the CLI's): the plain copy is then never read, and dropping it halves what the
    products hold (405 MiB for SmolLM2's 30 blocks). The packed copy holds the same numbers (`to_dense()`
    gives the weight back exactly) but only `linear` can use it: such a layer no longer trains, exports or
    moves to another device. With `half` (where `half_products_available`), the copy is a `HalfWeight`
    instead, rounded to float16, unless the weight holds a value float16 cannot. Layers in another dtype
    or on another device are left as they are. Returns the bytes of plain weights freed."""
    half = half and half_products_available()
    if not torch._C._has_mkldnn and not half:
        return 0
    freed = 0
    with torch.no_grad():
        for layer in layers:
            weight = layer.weight
            if isinstance(weight, HalfWeight):  # kept already
                continue
            plain_cpu_float = weight.device.type == "cpu" and weight.dtype == torch.float32 and not weight.is_mkldnn
            if not plain_cpu_float or layer.bias is not None:
                continue
            if half and float(weight.abs().max()) <= HALF_LIMIT:
                del layer.weight  # a parameter slot holds tensors only
                layer.weight = HalfWeight(weight)  # a plain attribute now; only `linear` reads it
            elif torch._C._has_mkldnn:
                layer.weight = nn.Parameter(packed_weight(weight), requires_grad=False)  # the warm-up's copy, if made
            else:
                continue
            freed += weight.numel() * weight.element_size()
    return freed


def keep_packed_weights_only(model: nn.Module, half: bool = False) -> int:
    """For a model loaded only to generate, on the CPU: drop the plain copies of its block weights where its
    backbone keeps packed ones (a Llama: 405 MiB for SmolLM2), in float16 with `half` (`HalfWeight`); returns
    the bytes freed. Other backbones keep theirs (GPT-2's single rows run faster on the plain weight)."""
    release = getattr(getattr(model, "backbone", None), "keep_packed_weights_only", None)
    freed = int(release(half)) if release is not None else 0
    if freed and half and half_products_available():
        keep_half_vocabulary_projection(model)
    return freed


def keep_half_vocabulary_projection(model: nn.Module) -> None:
    """Give each bias-free float32 `PackedLinear` of `model` (a head's [V, D] vocabulary projection) a float16 copy
    that its inference reads instead of oneDNN's float32 one, which is dropped: the weight itself stays, as the
    token embedding shares it. For SmolLM2's 49k tokens a step then reads 57 MB there instead of 113 MB."""
    with torch.no_grad():
        for layer in model.modules():
            weight = layer.weight if isinstance(layer, PackedLinear) else None
            if (weight is None or layer.bias is not None or weight.dtype != torch.float32
                    or weight.device.type != "cpu" or float(weight.abs().max()) > HALF_LIMIT):
                continue
            layer.float16 = HalfWeight(weight)
            _packed.pop((id(weight), False), None)
