"""A Llama loaded to generate with float16 weights (FBGEMM) against float32 (oneDNN's packed layout): what it
costs in held-out perplexity and what it gains in decoding speed, side by side in one run.

    python -m engine.benchmarks.half_weights --bundle resources/models/smollm2-continue-f2-nmst \
        --files ../shared/data/rocstories/diffusion_lm/roc_valid.json [--shapes 1x60 4x60] [--rounds 3]

The bundle is loaded twice and each copy kept as the app keeps a model it loads only to generate
(engine/packed_linear.py `keep_packed_weights_only`): one with its block and vocabulary weights in float32,
one with them rounded to float16. Both score the bundle's held-out split of `--files` (at most
`--max-tokens` tokens, in blocks of `--block` tokens), then decode each shape (variants × new tokens) in
alternating rounds with our measured thread count, and the script prints perplexity, tokens/s and the
ratios float16 / float32. Run it with nothing else on the machine: the ratio is only as fair as the cores.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from engine.benchmarks.alternating import Timer, alternating_medians
from engine.benchmarks.generation import parse_shape, time_ours
from engine.bundles.bundle import Bundle, load_bundle
from engine.data.blocks import make_blocks
from engine.packed_linear import half_products_available, keep_packed_weights_only
from engine.perplexity import block_perplexity, encode_documents, held_out_documents


def loaded_to_generate(path: Path, half: bool) -> Bundle:
    """The bundle as the app keeps it to generate on the CPU, in float16 (`half`) or float32."""
    bundle = load_bundle(path)
    if keep_packed_weights_only(bundle.model, half) == 0:
        raise SystemExit(f"{path}: its backbone keeps no packed weights (not a Llama?), so there is nothing to compare")
    return bundle


def held_out(bundle: Bundle, files: list[Path], block: int, max_tokens: int) -> torch.Tensor:
    """The bundle's held-out documents of `files` in blocks [B, block + 1], at most `max_tokens` tokens scored."""
    encoded = encode_documents(bundle.tokenizer, held_out_documents(bundle, files))
    blocks = make_blocks(encoded, bundle.tokenizer.eos_id, block)
    return blocks[: max(1, max_tokens // block)]


def decode_timer(bundle: Bundle, n: int, new_tokens: int) -> Timer:
    """seed → (seconds, tokens) of one decode of `n` variants × `new_tokens` on `bundle`."""
    return lambda seed: time_ours(bundle, n, new_tokens, seed)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--files", type=Path, nargs="+", required=True, help="held out as the bundle's training was")
    parser.add_argument("--shapes", nargs="+", type=parse_shape, default=[(1, 60), (4, 60)], metavar="NxT")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--block", type=int, default=512, help="tokens per scored block (default 512)")
    parser.add_argument("--max-tokens", type=int, default=16384, help="tokens scored at most (default 16384)")
    args = parser.parse_args(argv)
    if not half_products_available():
        raise SystemExit("this PyTorch build has no FBGEMM, so a model loaded to generate stays in float32")
    single, half = loaded_to_generate(args.bundle, False), loaded_to_generate(args.bundle, True)
    blocks = held_out(single, args.files, args.block, args.max_tokens)
    print(f"bundle {args.bundle} · {blocks.shape[0]} held-out blocks of {args.block} tokens · "
          f"median of {args.rounds} alternating rounds")
    losses = [block_perplexity(bundle.model, blocks, batch_size=4)[0] for bundle in (single, half)]
    print(f"held-out NLL per token: float32 {losses[0]:.5f} · float16 {losses[1]:.5f} · perplexity change "
          f"{100 * (torch.tensor(losses[1] - losses[0]).exp().item() - 1):+.3f}%")
    print(f"{'variants × tokens':>18} {'float32 tok/s':>14} {'float16 tok/s':>14} {'float16/float32':>16}")
    for n, new_tokens in args.shapes:
        plain, rounded = alternating_medians([decode_timer(bundle, n, new_tokens) for bundle in (single, half)],
                                             args.rounds)
        print(f"{f'{n} × {new_tokens}':>18} {plain:14.1f} {rounded:14.1f} {rounded / plain:16.2f}")


if __name__ == "__main__":
    main()
