"""F² cost: training-step time of the F² head vs plain softmax on the same backbone, and MefMax time.

    python -m engine.benchmarks.f2_speed [--vocab-size 8192 --n-layer 4 --n-embd 256 --block-size 128
                                          --batch-size 8 --rounds 10 --mefmax-vocab 50000]

Both models are built from one config (same seed, so the same backbone weights) and differ only
in the head; the F² classes come from MefMax over a Zipfian count table (count ∝ 1/rank, as
natural-language token counts roughly are). One step = forward, loss, backward, AdamW update on
the same random batch. Rounds alternate softmax / F² after one warm-up step each, and the median
step times are compared (goal from the issue: F²/softmax ≤ 1.3). MefMax is timed on a Zipfian
table of `--mefmax-vocab` tokens (goal < 1 s), median of 5 runs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import numpy as np
import torch

from engine.config import ModelConfig
from engine.heads.frequency_classes import build_frequency_classes, fit_f2_config
from engine.heads.registry import load_fitted_head
from engine.model import LanguageModel


def zipf_counts(size: int, scale: float = 1e7) -> np.ndarray:
    """Counts ∝ 1/rank over `size` tokens (every token counted at least once)."""
    return np.maximum(1, (scale / np.arange(1, size + 1))).astype(np.int64)


def build(config: ModelConfig) -> LanguageModel:
    config, state = fit_f2_config(config, zipf_counts(config.vocab_size)) if config.head == "f2" else (config, {})
    torch.manual_seed(0)
    model = LanguageModel(config)
    load_fitted_head(model.head, state)
    return model.train()


def step_seconds(model: LanguageModel, optimizer: torch.optim.Optimizer, batch: torch.Tensor) -> float:
    start = time.perf_counter()
    loss = model(batch[:, :-1], batch[:, 1:])
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def compare_steps(base: ModelConfig, batch_size: int, rounds: int) -> dict[str, float]:
    models = {name: build(replace(base, head=name)) for name in ("softmax", "f2")}
    optimizers = {name: torch.optim.AdamW(m.parameters(), lr=1e-4) for name, m in models.items()}
    generator = torch.Generator().manual_seed(1)
    batch = torch.randint(0, base.vocab_size, (batch_size, base.block_size + 1), generator=generator)
    times: dict[str, list[float]] = {name: [] for name in models}
    for round_index in range(rounds + 1):
        for name, model in models.items():
            seconds = step_seconds(model, optimizers[name], batch)
            if round_index:  # round 0 is the warm-up
                times[name].append(seconds)
    medians = {name: statistics.median(values) for name, values in times.items()}
    k = models["f2"].config.f2_classes
    return {"softmax_s": medians["softmax"], "f2_s": medians["f2"], "ratio": medians["f2"] / medians["softmax"],
            "classes": float(k)}


def mefmax_seconds(size: int, runs: int = 5) -> tuple[float, int]:
    counts = zipf_counts(size)
    times, classes = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        classes = build_frequency_classes(counts).num_classes
        times.append(time.perf_counter() - start)
    return statistics.median(times), classes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--n-layer", type=int, default=4)
    parser.add_argument("--n-embd", type=int, default=256)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--block-size", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--mefmax-vocab", type=int, default=50_000)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    base = ModelConfig(vocab_size=args.vocab_size, n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd,
                       block_size=args.block_size, dropout=0.0)
    result = compare_steps(base, args.batch_size, args.rounds)
    print(f"backbone: {args.n_layer} layers x {args.n_embd}, vocabulary {args.vocab_size}, batch "
          f"{args.batch_size} x {args.block_size} tokens, {torch.get_num_threads()} CPU thread(s), "
          f"median of {args.rounds} alternating steps")
    print(f"softmax step {result['softmax_s'] * 1000:.1f} ms | F² step ({int(result['classes'])} MefMax classes) "
          f"{result['f2_s'] * 1000:.1f} ms | F²/softmax = {result['ratio']:.3f} (goal <= 1.3)")
    seconds, classes = mefmax_seconds(args.mefmax_vocab)
    print(f"MefMax on a {args.mefmax_vocab}-token Zipfian vocabulary: {seconds:.3f} s "
          f"(median of 5; {classes} classes; goal < 1 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
