"""Generation speed: our engine vs Hugging Face `generate()` on the same weights and settings.

    python -m engine.benchmarks.generation [--bundle DIR] [--variants 5] [--new-tokens 100]

Both decode N variants of one prompt as one batch with a KV cache, sampling with the same
temperature / top-p. The HF model is a `GPT2LMHeadModel` holding a copy of the bundle's
backbone weights with the output layer tied to them, so both compute the same distribution.
Runs alternate between the two (after one warm-up each) and the median is reported.
Throughput counts the tokens actually generated (a variant that emits eos stops counting).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from pathlib import Path

import torch
from transformers import GPT2LMHeadModel

from engine.api import RESOURCES_MODELS
from engine.backbones.gpt2 import hf_config
from engine.bundle import Bundle, load_bundle
from engine.decoding import DecodeConfig, generate_variants

PROMPT = "Tom wanted to learn to play the guitar."


def hf_twin(bundle: Bundle) -> GPT2LMHeadModel:
    """A transformers LM with the bundle's softmax-head model weights (tied output layer)."""
    if bundle.model.head.name != "softmax":
        raise SystemExit(f"this benchmark needs a softmax-head bundle, got {bundle.model.head.name!r}")
    twin = GPT2LMHeadModel(hf_config(bundle.model.config))
    twin.transformer.load_state_dict(bundle.model.backbone.transformer.state_dict())
    twin.tie_weights()
    twin.train(False)
    return twin


def time_ours(bundle: Bundle, n: int, new_tokens: int, seed: int) -> tuple[float, int]:
    settings = DecodeConfig(max_new_tokens=new_tokens, top_p=0.9, seed=seed)
    start = time.perf_counter()
    variants = generate_variants(bundle.model, bundle.tokenizer, PROMPT, n, settings)
    return time.perf_counter() - start, sum(len(v.token_ids) for v in variants)


def time_hf(bundle: Bundle, twin: GPT2LMHeadModel, n: int, new_tokens: int, seed: int) -> tuple[float, int]:
    tokenizer = bundle.tokenizer
    ids = torch.tensor([[tokenizer.eos_id, *tokenizer.encode(PROMPT)]] * n)  # [N, P], same context as ours
    torch.manual_seed(seed)
    start = time.perf_counter()
    with torch.inference_mode():
        out = twin.generate(  # type: ignore[misc]  # transformers' stub types `self` oddly
            ids, attention_mask=torch.ones_like(ids), do_sample=True, top_p=0.9, top_k=0, max_new_tokens=new_tokens,
            eos_token_id=tokenizer.eos_id, pad_token_id=tokenizer.pad_id,
        )
    elapsed = time.perf_counter() - start
    new = out[:, ids.shape[1] :]  # [N, ≤new_tokens]; pad after a variant's eos
    return elapsed, int((new != tokenizer.pad_id).sum())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=RESOURCES_MODELS / "roc-stories-tiny")
    parser.add_argument("--variants", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    # transformers advises padding masks; every row here has the same length
    logging.getLogger("transformers").setLevel(logging.ERROR)
    bundle = load_bundle(args.bundle, torch.device("cpu"))
    twin = hf_twin(bundle)
    time_ours(bundle, args.variants, args.new_tokens, 0)  # warm-up
    time_hf(bundle, twin, args.variants, args.new_tokens, 0)
    ours, theirs = [], []
    for round_index in range(args.rounds):
        seconds, tokens = time_ours(bundle, args.variants, args.new_tokens, round_index)
        ours.append(tokens / seconds)
        seconds, tokens = time_hf(bundle, twin, args.variants, args.new_tokens, round_index)
        theirs.append(tokens / seconds)
    ours_rate, hf_rate = statistics.median(ours), statistics.median(theirs)
    print(f"bundle {args.bundle} · {args.variants} variants × up to {args.new_tokens} new tokens · "
          f"top-p 0.9 · {torch.get_num_threads()} threads · median of {args.rounds} alternating rounds")
    print(f"variorum engine : {ours_rate:8.1f} tokens/s")
    print(f"HF generate()   : {hf_rate:8.1f} tokens/s")
    print(f"ratio ours / HF : {ours_rate / hf_rate:8.2f}")


if __name__ == "__main__":
    main()
