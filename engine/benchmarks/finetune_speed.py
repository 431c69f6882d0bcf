"""Fine-tuning speed at real pretrained shapes, for each trainable set: head only, the last 2 blocks, LoRA, all.

    python -m engine.benchmarks.finetune_speed                          # GPT-2 124M and BART-base, 8 steps each
    python -m engine.benchmarks.finetune_speed --shapes gpt2 --steps 20 --sets head lora

Speed does not depend on the weights, so it writes random checkpoints of GPT-2 124M's and BART-base's
shapes (engine/benchmarks/pretrained_shapes.py), imports them, and fine-tunes each with every set:

- GPT-2: `variorum train --init-from BUNDLE --head f2 --termination nmst --trainable SET`, on random text
  cut by its own tokenizer into sequences of `--seq-len` tokens;
- BART: `variorum train-permgen --init-from BUNDLE --task story --trainable SET`, on random stories of
  five 15-word sentences in Plan-and-Write's layout (its hierarchical positions are new in the run, so
  they train in every set).

One run per set, in this process, one after the other. It prints, side by side, the parameters each
set trains and its training tokens/s (target tokens of the timed steps over their seconds; the first
step, which allocates AdamW's moments, is left out), and the precision (bf16 autocast where the CPU
multiplies bf16 fast). Run it with nothing else on the machine: two cores are easily contended.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from engine.benchmarks.pretrained_shapes import write_random_bart, write_random_gpt2
from engine.bundles.bundle import load_bundle_tokenizer
from engine.bundles.imported import import_checkpoint
from engine.config import ModelConfig, TrainConfig, config_from_dict
from engine.training.loop import TrainingLoop
from engine.training.start_weights import start_model_settings

SETS = ("head", "last-2", "lora", "all")
SHAPES = ("gpt2", "bart")
Trainer = Callable[[TrainConfig], TrainingLoop[Any]]


def random_text(bundle: Path, documents: int, tokens: int, seed: int) -> list[str]:
    """`documents` texts of about `tokens` tokens each: random ids of the bundle's vocabulary, decoded."""
    tokenizer = load_bundle_tokenizer(bundle)
    rng = random.Random(seed)
    first = 8  # past our special tokens
    return [tokenizer.decode([rng.randrange(first, tokenizer.vocab_size) for _ in range(tokens)])
            for _ in range(documents)]


def random_stories(stories: int, seed: int) -> list[str]:
    """Plan-and-Write lines (title <EOT> keywords <EOL> </s> sentence …) of random lowercase words."""
    rng = random.Random(seed)

    def words(n: int) -> str:
        return " ".join("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 8))) for _ in range(n))

    return [f"{words(3)} <EOT> {words(5)} <EOL> " + " ".join(f"</s> {words(15)} ." for _ in range(5))
            for _ in range(stories)]


def gpt2_trainer(bundle: Path, data: Path) -> Trainer:
    from engine.lm.train import Trainer as LanguageTrainer

    settings = {**start_model_settings(str(bundle)), "head": "f2", "termination": "nmst"}
    return lambda train: LanguageTrainer(config_from_dict(ModelConfig, settings), train, show_progress=False)


def bart_trainer(bundle: Path, data: Path) -> Trainer:
    from engine.permgen.train import PermGenTrainer, build_parser, run_configs

    def make(train: TrainConfig) -> TrainingLoop[Any]:
        args = build_parser().parse_args(["--init-from", str(bundle), "--task", "story", "--max-sentence-len", "32"])
        config, _ = run_configs(args)
        return PermGenTrainer(config, train, show_progress=False)

    return make


def time_set(make: Trainer, bundle: Path, data: Path, setting: str, args: argparse.Namespace,
             out: Path) -> dict[str, Any]:
    """Tokens/s of `args.steps` steps (after a first, untimed one) fine-tuning `bundle` with `setting`."""
    train = TrainConfig(train_files=[str(data)], out_dir=str(out), init_from=str(bundle), trainable=setting,
                        max_steps=args.steps + 1, batch_size=args.batch_size, seq_len=args.seq_len,
                        eval_every=10_000, save_every=10_000, warmup_steps=1, compile=False, valid_fraction=0.0,
                        lr=1e-4)
    trainer = make(train)
    module = trainer.training_module()
    trainer.model.train()
    trainer.train_step(0, module)  # untimed: AdamW's state, caches
    began, tokens = time.perf_counter(), 0
    for step in range(1, args.steps + 1):
        tokens += trainer.train_step(step, module)[1]
    return {"trained": trainer.trainable.trained, "total": trainer.trainable.total,
            "tokens_per_s": tokens / (time.perf_counter() - began), "precision": trainer.precision.name}


def prepare(shape: str, root: Path) -> tuple[Path, Path, Trainer]:
    """The imported random checkpoint of `shape`, its training text, and how to build a run on it."""
    write, make = (write_random_gpt2, gpt2_trainer) if shape == "gpt2" else (write_random_bart, bart_trainer)
    bundle = import_checkpoint(str(write(root / shape)), root / f"{shape}-imported", {"HOME": str(root)})
    data = root / ("text.txt" if shape == "gpt2" else "stories.titlesepkeysepstory.txt")  # PermGen reads it by name
    lines = random_text(bundle, 64, 300, seed=0) if shape == "gpt2" else random_stories(256, seed=0)
    data.write_text(("\n\n" if shape == "gpt2" else "\n").join(lines) + "\n", encoding="utf-8")
    return bundle, data, make(bundle, data)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    parser.add_argument("--steps", type=int, default=8, help="timed steps per set (after one untimed step)")
    parser.add_argument("--batch-size", type=int, default=8, help="sequences (GPT-2) or stories (BART) per step")
    parser.add_argument("--seq-len", type=int, default=128, help="GPT-2's tokens per sequence")
    args = parser.parse_args(argv)
    print(f"random checkpoints, imported; batch {args.batch_size}, {args.steps} timed steps per set · "
          f"{torch.get_num_threads()} threads")
    for shape in args.shapes:
        with tempfile.TemporaryDirectory() as tmp:
            bundle, data, make = prepare(shape, Path(tmp))
            what = (f"GPT-2 124M shape, F² + NMST head, {args.seq_len}-token sequences" if shape == "gpt2"
                    else "BART-base shape, PermGen story, 5 sentences × 15 words")
            print(f"\n{what}\n{'trainable':<10}{'parameters trained':>28}{'tokens/s':>12}  precision", flush=True)
            for setting in args.sets:
                result = time_set(make, bundle, data, setting, args, Path(tmp) / setting)
                share = f"{result['trained']:,} of {result['total']:,}"
                print(f"{setting:<10}{share:>28}{result['tokens_per_s']:>12,.0f}  {result['precision']}", flush=True)


if __name__ == "__main__":
    main()
