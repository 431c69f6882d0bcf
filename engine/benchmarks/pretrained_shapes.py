"""Decoding speed at real pretrained shapes: random GPT-2 124M and BART-base checkpoints, imported, ours vs HF.

    python -m engine.benchmarks.pretrained_shapes [--shapes 4x100] [--rounds 3] [--only gpt2|bart]

Speed does not depend on the weights, so nothing is downloaded: the script writes random checkpoints
of the real shapes with a byte-level BPE vocabulary of the same size (its merges are random pairs of
earlier pieces, so the table and the tokenizer are the real size, though not the real words) into a
temporary folder, imports each the way a writer's checkpoint is imported (`variorum import`,
engine/bundles/imported.py), then times it:

- GPT-2 124M (`GPT2LMHeadModel`, 12 × 768, 1,024 positions, 50,257 tokens), a Continue model: the
  time to the first token of one variant after the prompt (median of `--rounds` + 2 runs after a
  warm-up; loading excluded), the wait a writer has before text appears; then the generation
  benchmark (engine/benchmarks/generation.py): our decoder and transformers' `generate()` on the
  same weights, alternating, tokens/s and the ratio;
- BART-base (`BartForConditionalGeneration`, 6 + 6 layers × 768, 12 heads, feed-forward 3,072, 1,024
  positions, 50,265 tokens), a PermGen story model: the time to the first text of one variant after
  the title, then our sentence-based decoder against `generate()` on the same weights and source
  (engine/benchmarks/bart_generation.py).
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
from transformers import BartConfig, BartForConditionalGeneration, GPT2Config, GPT2LMHeadModel

from engine.benchmarks import bart_generation, generation
from engine.bundles.bundle import load_bundle
from engine.decoding import DecodeConfig, generate_variants

GPT2_VOCAB = 50_257  # 50,000 merges + 256 bytes + <|endoftext|>
BART_VOCAB = 50_265  # 4 special tokens + 256 bytes + 50,004 merges + <mask>


def random_bpe(size: int, seed: int = 0) -> tuple[dict[str, int], list[str]]:
    """A byte-level BPE of `size` pieces: the 256 bytes, then merges of random pairs of earlier pieces."""
    rng = random.Random(seed)
    pieces = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {piece: i for i, piece in enumerate(pieces)}
    merges = []
    while len(vocab) < size:
        left, right = rng.choice(pieces), rng.choice(pieces)
        if left + right not in vocab and len(left + right) <= 10:
            merges.append(f"{left} {right}")
            vocab[left + right] = len(vocab)
            pieces.append(left + right)
    return vocab, merges


def _write_tokenizer(folder: Path, vocab: dict[str, int], merges: list[str]) -> None:
    folder.mkdir(parents=True)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")


def write_random_gpt2(folder: Path, seed: int = 0) -> Path:
    """A random GPT-2 124M checkpoint with a random byte-level BPE of GPT-2's size (see the module docstring)."""
    vocab, merges = random_bpe(GPT2_VOCAB - 1, seed)
    vocab["<|endoftext|>"] = len(vocab)
    _write_tokenizer(folder, vocab, merges)
    torch.manual_seed(seed)
    eos = vocab["<|endoftext|>"]
    GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), bos_token_id=eos, eos_token_id=eos)).save_pretrained(folder)
    return folder


def write_random_bart(folder: Path, seed: int = 0) -> Path:
    """A random BART-base checkpoint with a random byte-level BPE of its size, BART's special tokens where
    bart-base has them (`<s>` `<pad>` `</s>` `<unk>` at 0–3, `<mask>` last)."""
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    pieces, merges = random_bpe(BART_VOCAB - len(specials) - 1, seed)
    vocab = {token: i for i, token in enumerate(specials)}
    vocab.update({piece: len(specials) + i for piece, i in pieces.items()})
    vocab["<mask>"] = len(vocab)
    _write_tokenizer(folder, vocab, merges)
    torch.manual_seed(seed)
    config = BartConfig(vocab_size=len(vocab), d_model=768, encoder_layers=6, decoder_layers=6,
                        encoder_attention_heads=12, decoder_attention_heads=12, encoder_ffn_dim=3072,
                        decoder_ffn_dim=3072, max_position_embeddings=1024, pad_token_id=1, bos_token_id=0,
                        eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=None)
    BartForConditionalGeneration(config).save_pretrained(folder)
    return folder


def _import(checkpoint: Path, bundle: Path) -> None:
    subprocess.run([sys.executable, "-m", "engine.cli", "import", str(checkpoint), "--out", str(bundle)], check=True)


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
    parser.add_argument("--only", choices=["gpt2", "bart"], help="time one shape (default: both)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        if args.only in (None, "gpt2"):
            checkpoint = write_random_gpt2(Path(scratch) / "gpt2-124m-random")
            bundle = Path(scratch) / "gpt2-bundle"
            _import(checkpoint, bundle)
            print(f"random GPT-2 124M shape, imported: {bundle} · {torch.get_num_threads()} threads")
            print(f"first token (1 variant, prompt {generation.PROMPT!r}): "
                  f"{first_token_seconds(bundle, args.rounds) * 1000:.0f} ms")
            generation.main(["--bundle", str(bundle), "--rounds", str(args.rounds), "--shapes", *args.shapes])
        if args.only in (None, "bart"):
            checkpoint = write_random_bart(Path(scratch) / "bart-base-random")
            bundle = Path(scratch) / "bart-bundle"
            _import(checkpoint, bundle)
            print(f"random BART-base shape, imported as PermGen (story): {bundle} · {torch.get_num_threads()} "
                  f"threads · top-p 0.9 · median of {args.rounds} alternating rounds")
            bart_generation.compare(bundle, checkpoint, [generation.parse_shape(s) for s in args.shapes], args.rounds)


if __name__ == "__main__":
    main()
