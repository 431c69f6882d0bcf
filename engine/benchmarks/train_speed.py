"""Training speed on the CPU: today's float32 path vs the default path, side by side, on the recipes' models.

    python -m engine.benchmarks.train_speed [--steps 12] [--batch-size N] [--models lm permgen]
    python -m engine.benchmarks.train_speed --no-new-compile --no-new-fused   # what bf16 alone gives
    python -m engine.benchmarks.train_speed --models permgen --new-length-pool 0   # without batches by length

Trains the Continue recipe's model (recipes/continue-f2-nmst.json: 6 × 384 GPT-2, F² head + NMST)
and the Story recipe's PermGen model (recipes/permgen-story.json: 4 + 4 × 256) on their recipes'
data (under $VARIORUM_DATA or ../shared/data), each twice from the same initial weights for the
same steps: the float32 way (no autocast, no compile, AdamW's per-parameter loop, shuffled batches)
and the default way of a recipe-length run on this machine (`--precision auto`, compiled, fused
AdamW, and PermGen's batches from the recipe's length pool; engine/training/loop.py). The LM's
batches are the same both ways; PermGen's new batches hold other examples of similar length.
`--new-precision`, `--no-new-compile`, `--no-new-fused` and `--new-length-pool 0` take parts of
the new way out, to see what each gives. Steps alternate between the two ways, so a
busy moment hits both. Prints the median tokens/s of each over the steps (the first step, which
compiles, is left out and its seconds shown apart), the median of the steps' new / old ratios,
and the held-out loss of both trained models, measured the same way in float32 (LM: mean NLL per
token of the first `--eval-batches` held-out batches; PermGen: natural-order NLL per target token).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from engine.config import PRECISIONS, ModelConfig, TrainConfig, config_from_dict
from engine.evaluation.splits import default_data_root
from engine.lm.train import Trainer
from engine.permgen.config import PermGenConfig
from engine.permgen.train import PermGenTrainer
from engine.training.loop import TrainingLoop
from engine.training.precision import Precision
from engine.training.speed import build_optimizer

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
RECIPE_DATA_PREFIX = "../shared/data/"  # how recipes name their data files


@dataclass
class Way:
    """One of the two trainings of a model: its trainer, the module it steps, and its timings."""

    name: str
    trainer: TrainingLoop[Any]
    module: torch.nn.Module
    first_seconds: float = 0.0
    rates: list[float] = dataclasses.field(default_factory=list)  # tokens/s of each step after the first

    def step(self, step: int) -> None:
        tick = time.perf_counter()
        _, tokens = self.trainer.train_step(step, self.module)
        seconds = time.perf_counter() - tick
        if step == 0:
            self.first_seconds = seconds  # compiling, on the default way
        else:
            self.rates.append(tokens / seconds)

    def held_out_loss(self) -> float:
        """The family's watched validation number, computed in float32 for both ways."""
        self.trainer.precision = Precision("float32", self.trainer.device.type)
        return self.trainer._validate()[self.trainer.watched_metric]


def recipe_sections(name: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """The recipe's config sections, its data under the data root, and this run's train settings."""
    sections: dict[str, Any] = json.loads((RECIPES / f"{name}.json").read_text())
    train = sections["train"]
    train["train_files"] = [str(default_data_root() / path.removeprefix(RECIPE_DATA_PREFIX))
                            for path in train["train_files"]]
    missing = [path for path in train["train_files"] if not Path(path).is_file()]
    if missing:
        raise SystemExit(f"training data not found: {', '.join(missing)} (set VARIORUM_DATA to the data folder)")
    train.update(out_dir=str(out), batch_size=args.batch_size or train["batch_size"], max_steps=args.steps,
                 device="cpu", eval_batches=args.eval_batches, max_docs=args.max_docs)
    return sections


def lm_trainer(args: argparse.Namespace, out: Path, old: bool) -> Trainer:
    sections = recipe_sections(args.lm_recipe, args, out)
    train = config_from_dict(TrainConfig, {**sections["train"], **way_settings(args, old)})
    tokenizer = out / "tokenizer" if (out / "tokenizer" / "tokenizer.json").is_file() else None
    return Trainer(config_from_dict(ModelConfig, sections["model"]), train, tokenizer, show_progress=False)


def permgen_trainer(args: argparse.Namespace, out: Path, old: bool) -> PermGenTrainer:
    sections = recipe_sections(args.permgen_recipe, args, out)
    defaults = dataclasses.asdict(ModelConfig(backbone="bart"))
    model = config_from_dict(ModelConfig, {**defaults, **sections["model"]})
    config = config_from_dict(PermGenConfig, {**sections["permgen"], "model": model})
    # the float32 way: plain shuffled batches; the new way: the recipe's length pool unless asked otherwise
    pool = 0 if old else args.new_length_pool
    overrides = {} if pool is None else {"length_pool": pool}
    train = config_from_dict(TrainConfig, {**sections["train"], **way_settings(args, old), **overrides})
    tokenizer = out / "tokenizer" if (out / "tokenizer" / "tokenizer.json").is_file() else None
    return PermGenTrainer(config, train, tokenizer_dir=tokenizer, show_progress=False)


def way_settings(args: argparse.Namespace, old: bool) -> dict[str, Any]:
    """The float32 path: no autocast, no compile (AdamW's loop is set in `ways`); the new one: the
    default of a recipe-length run (compiled), or what --new-precision / --no-new-compile ask."""
    return {"precision": "float32", "compile": False} if old else {"precision": args.new_precision,
                                                                   "compile": args.new_compile}


def ways(make: Callable[[argparse.Namespace, Path, bool], TrainingLoop[Any]], args: argparse.Namespace,
         out: Path) -> list[Way]:
    """The float32 way and the default way of one model, from the same seed (same initial weights)."""
    made = []
    for old in (True, False):
        trainer = make(args, out, old)  # the second reuses the first's tokenizer in `out`
        if old or not args.new_fused:
            trainer.optimizer = build_optimizer(trainer.model, trainer.train_config, fused=False)
        made.append(Way(way_name(trainer, args, old), trainer, trainer.training_module()))
    return made


def way_name(trainer: TrainingLoop[Any], args: argparse.Namespace, old: bool) -> str:
    """The precision, and what the new way leaves out when asked to."""
    if old:
        return "float32"
    left_out = [name for name, kept in (("eager", args.new_compile), ("loop", args.new_fused)) if not kept]
    return "+".join([trainer.precision.name, *left_out])


def compare(name: str, pair: list[Way], steps: int) -> str:
    """Train both ways step by step in turn; the table row of the model."""
    for step in range(steps):
        for way in pair:
            way.trainer.model.train()
            way.step(step)
    old, new = pair
    rates = [statistics.median(way.rates) for way in pair]
    # the ratio of each step's pair (same batch, back to back), so a busy moment cancels out
    ratio = statistics.median(b / a for a, b in zip(old.rates, new.rates, strict=True))
    losses = [way.held_out_loss() for way in pair]
    return (f"{name:<8} {old.name + ' → ' + new.name:<17} {rates[0]:>9,.0f} {rates[1]:>9,.0f} "
            f"{ratio:>6.2f}× {losses[0]:>8.4f} {losses[1]:>8.4f} "
            f"{100 * (losses[1] - losses[0]) / losses[0]:>+7.2f}% {old.first_seconds:>7.1f} {new.first_seconds:>7.1f}")


MODELS: dict[str, Callable[[argparse.Namespace, Path, bool], TrainingLoop[Any]]] = {
    "lm": lm_trainer, "permgen": permgen_trainer}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=["lm", "permgen"])
    parser.add_argument("--steps", type=int, default=12, help="training steps of each way (the first is warm-up)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="sequences (LM) or examples (PermGen) per step; default: the recipe's")
    parser.add_argument("--eval-batches", type=int, default=8, help="held-out batches scored at the end")
    parser.add_argument("--max-docs", type=int, default=0, help="read at most this many documents, 0 = all")
    parser.add_argument("--new-precision", choices=PRECISIONS, default="auto", help="the new way's precision")
    parser.add_argument("--new-compile", action=argparse.BooleanOptionalAction, default=True,
                        help="compile the new way's step (what a recipe-length run does on the CPU)")
    parser.add_argument("--new-fused", action=argparse.BooleanOptionalAction, default=True,
                        help="the new way's AdamW fused (else its per-parameter loop)")
    parser.add_argument("--new-length-pool", type=int, default=None,
                        help="PermGen: the new way's batches from pools of this many batches sorted by length "
                             "(TrainConfig.length_pool; default: the recipe's; 0 = shuffled, as the float32 way)")
    parser.add_argument("--lm-recipe", default="continue-f2-nmst", help="recipes/<name>.json of the LM")
    parser.add_argument("--permgen-recipe", default="permgen-story", help="recipes/<name>.json of PermGen")
    parser.add_argument("--out", type=Path, default=Path("runs/train_speed"), help="tokenizers of the runs")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.steps < 2:
        raise SystemExit("--steps must be >= 2 (the first step is warm-up)")
    batch = "the recipe's batch" if args.batch_size is None else f"batch {args.batch_size}"
    print(f"cpu · {torch.get_num_threads()} threads · {args.steps} steps × {batch} each way, "
          "alternating · median tokens/s without the first step · held-out loss in float32")
    print(f"{'model':<8} {'precision':<17} {'old tok/s':>9} {'new tok/s':>9} {'ratio':>7} {'old loss':>8} "
          f"{'new loss':>8} {'Δ loss':>8} {'old 1st':>7} {'new 1st':>7}")
    for name in args.models:
        print(compare(name, ways(MODELS[name], args, args.out / name), args.steps), flush=True)


if __name__ == "__main__":
    main()
