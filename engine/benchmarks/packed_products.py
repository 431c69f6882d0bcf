"""The blocks' products on prepacked oneDNN weights against MKL's plain products, in whole decodes.

    python -m engine.benchmarks.packed_products [--bundle DIR] [--shapes 1x100 3x100 5x100 8x200] [--rounds 15]

The decoder's step multiplies N rows by each block weight through `engine.packed_linear.project` (GPT-2's
[D, V] layout, prepacked for two or more rows) or `engine.packed_linear.linear` (a Llama's [V, D], prepacked
for every row count). For each shape (variants × new tokens) this times `generate_variants` as shipped and
with plain `torch.addmm` / `F.linear` put in their place (in this process only), alternating the two, and
prints the median tokens/s and packed / plain. The vocabulary projection stays packed in both. The packed
copies are what packing adds to the process's memory: their size is printed too. First it times one row
through each kind of block matrix of the bundle (all layers' copies in turn, so none stays in cache), plain
and packed, per matrix. Run it with `OMP_NUM_THREADS=2`
to match the machines the CPU figures in docs/decoding_speed.md come from.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
import torch.nn.functional as F

from engine import packed_linear
from engine.benchmarks.alternating import alternating_medians
from engine.benchmarks.generation import parse_shape, time_ours
from engine.bundles.bundle import Bundle, load_bundle
from engine.front_door import RESOURCES_MODELS


def plain_product(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.addmm(bias, hidden, weight)


def plain_linear(hidden: torch.Tensor, weight: packed_linear.Weight) -> torch.Tensor:
    return F.linear(hidden, packed_linear.plain_tensor(weight))


@contextmanager
def plain_products() -> Iterator[None]:
    """The decoder's block products as `torch.addmm` / `F.linear` while inside."""
    shipped = packed_linear.project, packed_linear.linear
    packed_linear.project, packed_linear.linear = plain_product, plain_linear
    try:
        yield
    finally:
        packed_linear.project, packed_linear.linear = shipped


def _best_pass_us(weights: list[torch.Tensor], product: Callable[[torch.Tensor, torch.Tensor], object],
                  rounds: int) -> float:
    """µs per matrix for one row through every matrix of `weights` in turn (best of two timings)."""
    row = torch.randn(1, weights[0].shape[1])
    best = float("inf")
    for _ in range(2):
        product(row, weights[0])
        start = time.perf_counter()
        for _ in range(rounds):
            for weight in weights:
                product(row, weight)
        best = min(best, (time.perf_counter() - start) / rounds / len(weights) * 1e6)
    return best


def single_row_products(bundle: Bundle, rounds: int = 20) -> dict[str, tuple[float, float]]:
    """Per kind of block matrix ([out, in] weights, a Llama's): µs for one row through each layer's copy, plain
    and packed, each layer's copy in turn so that none stays in cache."""
    blocks, _ = bundle.model.block_stack()
    kinds: dict[str, list[torch.Tensor]] = {}
    for block in blocks:
        for name, parameter in block.named_parameters():
            if parameter.dim() == 2:
                kinds.setdefault(name, []).append(parameter.detach())
    with torch.no_grad():
        return {name: (_best_pass_us(weights, F.linear, rounds),
                       _best_pass_us([packed_linear.packed_weight(w) for w in weights], _packed_row, rounds))
                for name, weights in kinds.items()}


def _packed_row(row: torch.Tensor, packed: torch.Tensor) -> torch.Tensor:
    return packed_linear._packed_product(row, packed, None)


def block_weight_bytes(bundle: Bundle) -> int:
    """Bytes of the block stack's matrices: what their packed copies add (the same float32 values)."""
    blocks, _ = bundle.model.block_stack()
    return sum(p.numel() * p.element_size() for block in blocks for p in block.parameters() if p.dim() == 2)


def time_plain(bundle: Bundle, n: int, new_tokens: int, seed: int) -> tuple[float, int]:
    with plain_products():
        return time_ours(bundle, n, new_tokens, seed)


def compare(bundle: Bundle, n: int, new_tokens: int, rounds: int) -> tuple[float, float]:
    """Median tokens/s (packed, plain) over `rounds` alternating runs after one warm-up each."""
    packed, plain = alternating_medians([lambda seed: time_ours(bundle, n, new_tokens, seed),
                                         lambda seed: time_plain(bundle, n, new_tokens, seed)], rounds)
    return packed, plain


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=RESOURCES_MODELS / "roc-stories-tiny")
    parser.add_argument("--shapes", nargs="+", type=parse_shape, default=[(1, 100), (3, 100), (5, 100), (8, 200)],
                        metavar="NxT", help="variants x new tokens (default: 1x100 3x100 5x100 8x200)")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    bundle = load_bundle(args.bundle, torch.device("cpu"))
    print(f"bundle {args.bundle} · cpu · top-p 0.9 · {torch.get_num_threads()} threads · "
          f"median of {args.rounds} alternating rounds")
    print(f"packed copies of the blocks' matrices: "
          f"{block_weight_bytes(bundle) / 2**20:.0f} MiB")
    if bundle.model.config.backbone == "llama":
        print(f"{'one row through':>28} {'plain µs':>9} {'packed µs':>10}")
        for name, (plain, packed) in single_row_products(bundle).items():
            print(f"{name:>28} {plain:9.1f} {packed:10.1f}")
    print(f"{'variants × tokens':>18} {'packed tok/s':>13} {'plain tok/s':>12} {'packed/plain':>13}")
    for n, new_tokens in args.shapes:
        packed, plain = compare(bundle, n, new_tokens, args.rounds)
        print(f"{f'{n} × {new_tokens}':>18} {packed:13.1f} {plain:12.1f} {packed / plain:13.2f}")


if __name__ == "__main__":
    main()
