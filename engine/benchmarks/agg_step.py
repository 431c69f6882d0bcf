"""Training-step time of AGG (fused and reference) relative to MLE, same model and batch.

    python -m engine.benchmarks.agg_step [--vocab 8192 --layers 4 --dim 256 --block 128 --batch 8 --rounds 5]

One full optimizer step each (forward, backward, AdamW), on one randomly initialised model and
one batch of Zipf-distributed token ids (so the rare group is realistic: the token memory is
filled with counts of the same distribution first). Objectives run in alternating rounds after
a warm-up step each; the median step time is reported, with the ratios to MLE. The goal for
the fused form is ≤ 1.25 × MLE.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

from engine.config import ModelConfig
from engine.model import LanguageModel
from engine.objectives import AggObjective, MleObjective, Objective, TokenCounterMemory, count_targets


def zipf_ids(vocab: int, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """Token ids with p(rank k) ∝ 1/k, ranks shuffled over the vocabulary."""
    weights = 1.0 / torch.arange(1, vocab + 1, dtype=torch.float64)
    ranks = torch.multinomial(weights, int(torch.tensor(shape).prod()), replacement=True, generator=generator)
    return torch.randperm(vocab, generator=generator)[ranks].view(shape)


def step_seconds(model: LanguageModel, optimizer: torch.optim.Optimizer, objective: Objective,
                 block: torch.Tensor) -> float:
    start = time.perf_counter()
    loss = objective.loss(model, block[:, :-1], block[:, 1:])
    loss.backward()  # type: ignore[no-untyped-call]
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.benchmarks.agg_step", description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--block", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--alpha", type=float, default=0.03)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    generator = torch.Generator().manual_seed(args.seed)
    torch.manual_seed(args.seed)
    config = ModelConfig(vocab_size=args.vocab, n_layer=args.layers, n_head=4, n_embd=args.dim,
                         block_size=args.block, dropout=0.0)
    base = LanguageModel(config)
    block = zipf_ids(args.vocab, (args.batch, args.block + 1), generator)
    memory = TokenCounterMemory(args.vocab, window=50, alpha=args.alpha)
    for _ in range(50):
        memory.push(count_targets(zipf_ids(args.vocab, (args.batch, args.block), generator), args.vocab))
    objectives: dict[str, Objective] = {
        "mle": MleObjective(),
        "agg-fused": AggObjective(memory, fused=True),
        "agg-reference": AggObjective(memory, fused=False),
    }
    runs = {}
    for name in objectives:  # identical starting weights and optimizer per objective
        model = copy.deepcopy(base).train()
        runs[name] = (model, torch.optim.AdamW(model.parameters(), lr=1e-4))
    times: dict[str, list[float]] = {name: [] for name in objectives}
    for round_index in range(args.rounds + 1):
        for name, objective in objectives.items():
            seconds = step_seconds(*runs[name], objective, block)
            if round_index:  # round 0 is the warm-up
                times[name].append(seconds)
    rare_share = float(memory.rare().float().mean())
    print(f"model: {base.num_parameters():,} parameters, vocab {args.vocab}, batch {args.batch} x {args.block} "
          f"tokens, torch threads {torch.get_num_threads()}, rare group {rare_share:.1%} of the vocabulary")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        print(f"{name:>14}: median step {value * 1000:8.1f} ms over {args.rounds} rounds")
    print(f"fused AGG / MLE     = {medians['agg-fused'] / medians['mle']:.3f}")
    print(f"reference AGG / MLE = {medians['agg-reference'] / medians['mle']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
