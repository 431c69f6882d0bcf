"""Where a compiled CPU training step spends its time: a kernel profile of the new way of train_speed.

    python -m engine.benchmarks.train_profile --model permgen [--batch-size N] [--rows 25]
    python -m engine.benchmarks.train_profile --model lm --lm-recipe continue-posg-nmst --max-docs 4000

Builds the benchmark's new-way trainer of one model (engine/benchmarks/train_speed.py: the recipe's
model, data and batch, bf16 autocast, compiled, fused AdamW, PermGen's length pool), runs
`--warmup` steps (the first compiles), then `--steps` more under `torch.profiler` with inductor's
per-kernel profiling on, and prints tokens/s and the operators and generated kernels by self CPU
time: matrix products (`aten::mm`, `addmm`, `bmm`), dropout masks (`aten::bernoulli_`) and each
fused elementwise kernel (`graph_N_cpp_fused_…`) appear as their own rows.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import torch._inductor.config as inductor_config
from torch.profiler import ProfilerActivity, profile

from engine.benchmarks.train_speed import MODELS
from engine.benchmarks.train_speed import build_parser as speed_parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", choices=sorted(MODELS), default="lm")
    parser.add_argument("--batch-size", type=int, default=None, help="default: the recipe's")
    parser.add_argument("--lm-recipe", default="continue-f2-nmst",
                        help="recipes/<name>.json of the LM (e.g. continue-posg-nmst for the POSG head)")
    parser.add_argument("--max-docs", type=int, default=0, help="read at most this many documents, 0 = all")
    parser.add_argument("--warmup", type=int, default=4, help="steps before profiling (the first compiles)")
    parser.add_argument("--steps", type=int, default=6, help="profiled steps")
    parser.add_argument("--rows", type=int, default=25, help="rows of the table")
    parser.add_argument("--out", type=Path, default=Path("runs/train_speed"), help="tokenizers of the runs")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    inductor_config.cpp.enable_kernel_profile = True  # one profiler row per generated kernel
    speed_flags = ["--steps", str(args.warmup + args.steps), "--lm-recipe", args.lm_recipe,
                   "--max-docs", str(args.max_docs)]
    if args.batch_size:
        speed_flags += ["--batch-size", str(args.batch_size)]
    trainer = MODELS[args.model](speed_parser().parse_args(speed_flags), args.out / args.model, False)
    module = trainer.training_module()
    trainer.model.train()
    for step in range(args.warmup):
        trainer.train_step(step, module)
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        tick, tokens = time.perf_counter(), 0
        for step in range(args.warmup, args.warmup + args.steps):
            tokens += trainer.train_step(step, module)[1]
        seconds = time.perf_counter() - tick
    print(f"{args.model}: {tokens / seconds:,.0f} tokens/s over {args.steps} profiled steps "
          f"({torch.get_num_threads()} threads; the profiler slows it a little)")
    print(profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows,
                                        max_name_column_width=90))


if __name__ == "__main__":
    main()
