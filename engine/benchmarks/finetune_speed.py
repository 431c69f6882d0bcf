"""Fine-tuning speed at GPT-2 124M's shape, for each trainable set: head only, the last 2 blocks, LoRA, all.

    python -m engine.benchmarks.finetune_speed                 # 8 steps of 8 × 128 tokens per set
    python -m engine.benchmarks.finetune_speed --steps 20 --sets head lora

Speed does not depend on the weights, so it writes a random checkpoint of GPT-2 124M's shape (as
engine/benchmarks/pretrained_shapes.py does), imports it, and fine-tunes it with `variorum train
--init-from BUNDLE --head f2 --termination nmst --trainable SET` on random text cut by its own
tokenizer, one run per set in the same process, one after the other. It prints, side by side, the
parameters each set trains and its training tokens/s (the loop's own count: the steps alone, not
validation or saving), and the precision (bf16 autocast where the CPU multiplies bf16 fast). The
first step of each run is left out of the rate (it allocates AdamW's moments and warms the caches).
Run it with nothing else on the machine: two cores are easily contended.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import torch

from engine.benchmarks.pretrained_shapes import write_random_gpt2
from engine.bundles.bundle import load_bundle_tokenizer
from engine.bundles.imported import import_checkpoint
from engine.config import ModelConfig, TrainConfig, config_from_dict
from engine.lm.train import Trainer
from engine.training.start_weights import start_model_settings

SETS = ("head", "last-2", "lora", "all")


def random_text(bundle: Path, documents: int, tokens: int, seed: int) -> list[str]:
    """`documents` texts of about `tokens` tokens each: random ids of the bundle's vocabulary, decoded."""
    tokenizer = load_bundle_tokenizer(bundle)
    rng = random.Random(seed)
    first = 8  # past our special tokens
    return [tokenizer.decode([rng.randrange(first, tokenizer.vocab_size) for _ in range(tokens)])
            for _ in range(documents)]


def time_set(bundle: Path, data: Path, setting: str, steps: int, batch: int, seq_len: int,
             out: Path) -> dict[str, float]:
    """Tokens/s of `steps` steps (after a first, untimed one) fine-tuning `bundle` with `setting`."""
    train = TrainConfig(train_files=[str(data)], out_dir=str(out), init_from=str(bundle), trainable=setting,
                        max_steps=steps + 1, batch_size=batch, seq_len=seq_len, eval_every=10_000,
                        save_every=10_000, warmup_steps=1, compile=False, valid_fraction=0.0, lr=1e-4)
    model = config_from_dict(ModelConfig, {**start_model_settings(str(bundle)), "head": "f2", "termination": "nmst"})
    trainer = Trainer(model, train, show_progress=False)
    first = trainer.train_step(0, trainer.training_module())  # untimed: AdamW state, caches
    began, tokens = time.perf_counter(), 0
    module = trainer.training_module()
    trainer.model.train()
    for step in range(1, steps + 1):
        tokens += trainer.train_step(step, module)[1]
    seconds = time.perf_counter() - began
    return {"trained": trainer.trainable.trained, "total": trainer.trainable.total, "tokens_per_s": tokens / seconds,
            "first_loss": first[0], "precision_bf16": trainer.precision.name == "bf16"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    parser.add_argument("--steps", type=int, default=8, help="timed steps per set (after one untimed step)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=128)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bundle = import_checkpoint(str(write_random_gpt2(root / "gpt2")), root / "imported", {"HOME": str(root)})
        data = root / "text.txt"
        data.write_text("\n\n".join(random_text(bundle, 64, 300, seed=0)), encoding="utf-8")
        print(f"random GPT-2 124M shape, imported; F² + NMST head; batch {args.batch_size} × {args.seq_len} tokens, "
              f"{args.steps} timed steps per set · {torch.get_num_threads()} threads")
        print(f"{'trainable':<10}{'parameters trained':>28}{'tokens/s':>12}")
        for setting in args.sets:
            result = time_set(bundle, data, setting, args.steps, args.batch_size, args.seq_len, root / setting)
            share = f"{result['trained']:,} of {result['total']:,}"
            print(f"{setting:<10}{share:>28}{result['tokens_per_s']:>12,.0f}"
                  + ("  (bf16 autocast)" if result["precision_bf16"] else "  (float32)"), flush=True)


if __name__ == "__main__":
    main()
