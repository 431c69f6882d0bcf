"""Decoding speed at a real pretrained shape: a random GPT-2 124M checkpoint, imported, ours vs HF.

    python -m engine.benchmarks.pretrained_shapes [--shapes 4x100] [--rounds 3]

Speed does not depend on the weights, so nothing is downloaded: the script writes a random
`GPT2LMHeadModel` of GPT-2's own shape (12 × 768, 1,024 positions, 50,257 tokens) with a byte-level
BPE vocabulary of the same size (its merges are random pairs of earlier pieces, so the table and the
tokenizer are GPT-2's size, though not its words) into a temporary folder, imports it the way a
writer's checkpoint is imported (`variorum import`, engine/bundles/imported.py), then

- prints the time to the first token of one variant after the prompt (median of `--rounds` + 2 runs
  after a warm-up; loading excluded), the wait a writer has before text appears;
- runs the generation benchmark (engine/benchmarks/generation.py) on the imported bundle: our
  decoder and transformers' `generate()` on the same weights, alternating, tokens/s and the ratio.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from tokenizers import pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel

from engine.benchmarks import generation
from engine.bundles.bundle import load_bundle
from engine.decoding import DecodeConfig, generate_variants

GPT2_VOCAB = 50_257  # 50,000 merges + 256 bytes + <|endoftext|>


def write_random_gpt2(folder: Path, seed: int = 0) -> Path:
    """A random GPT-2 124M checkpoint with a random byte-level BPE of GPT-2's size (see the module docstring)."""
    rng = random.Random(seed)
    pieces = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {piece: i for i, piece in enumerate(pieces)}
    merges = []
    while len(vocab) < GPT2_VOCAB - 1:
        left, right = rng.choice(pieces), rng.choice(pieces)
        if left + right not in vocab and len(left + right) <= 10:
            merges.append(f"{left} {right}")
            vocab[left + right] = len(vocab)
            pieces.append(left + right)
    vocab["<|endoftext|>"] = len(vocab)
    folder.mkdir(parents=True)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    torch.manual_seed(seed)
    eos = vocab["<|endoftext|>"]
    GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), bos_token_id=eos, eos_token_id=eos)).save_pretrained(folder)
    return folder


def first_token_seconds(bundle_dir: Path, rounds: int) -> float:
    """Median seconds from the request to the first token of one variant (model already loaded)."""
    bundle = load_bundle(bundle_dir)
    settings = DecodeConfig(max_new_tokens=1, top_p=0.9, real_words=False)
    times = []
    for seed in range(rounds + 3):  # the first run warms up
        start = time.perf_counter()
        generate_variants(bundle.model, bundle.tokenizer, generation.PROMPT, 1, settings.with_seed(seed))
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["4x100"], help="variants x new tokens (default 4x100)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        checkpoint = write_random_gpt2(Path(scratch) / "gpt2-124m-random")
        bundle = Path(scratch) / "bundle"
        subprocess.run([sys.executable, "-m", "engine.cli", "import", str(checkpoint), "--out", str(bundle)],
                       check=True)
        print(f"random GPT-2 124M shape, imported: {bundle} · {torch.get_num_threads()} threads")
        print(f"first token (1 variant, prompt {generation.PROMPT!r}): "
              f"{first_token_seconds(bundle, args.rounds) * 1000:.0f} ms")
        generation.main(["--bundle", str(bundle), "--rounds", str(args.rounds), "--shapes", *args.shapes])


if __name__ == "__main__":
    main()
