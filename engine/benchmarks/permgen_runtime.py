"""PermGen decoding speed: torch vs ONNX Runtime on the same bundle and request, side by side.

    python -m engine.benchmarks.permgen_runtime [--bundle DIR] [--candidates 1 5 8] [--rounds 5] [--runtime onnx-int8]

The bundle needs an ONNX export (`variorum export-onnx --bundle DIR`; the shipped story model has
one). For each number of candidates, rounds alternate between the two runtimes (after one warm-up
each), each writing the candidates of one request (a story / abstract from a title, or a
paraphrase of a passage) with top-p 0.9 and the round's seed; the medians of tokens/s and the ONNX /
torch ratio are printed, and whether both runtimes wrote the same text (they must: same seed).
`--runtime onnx-int8` times the int8 decoder instead, where the export offers it (its text may
differ a little: other numbers, checked within 2% held-out perplexity at export).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from engine.benchmarks.alternating import Timer, alternating_medians
from engine.decoding import DecodeConfig
from engine.front_door import RESOURCES_MODELS, Engine, GenerationRequest, LoadedModel

TITLE = "The lost dog"
PASSAGE = "Tom wanted to learn to play the guitar. He practiced every day after school."


def request(task: str, n: int, seed: int) -> GenerationRequest:
    settings = DecodeConfig(max_new_tokens=20, top_p=0.9, seed=seed)
    if task == "paraphrase":
        return GenerationRequest(task=task, prompt=PASSAGE, n=n, decode=settings)
    return GenerationRequest(task=task, title=TITLE, n=n, decode=settings)


def timer(model: LoadedModel, task: str, n: int, texts: dict[int, list[str]]) -> Timer:
    """seed → (seconds, tokens) of one request to `model`; its texts go to `texts[seed]`."""

    def run(seed: int) -> tuple[float, int]:
        start = time.perf_counter()
        variants = model.generate(request(task, n, seed))
        seconds = time.perf_counter() - start
        texts[seed] = [v.text for v in variants]
        return seconds, sum(len(v.token_ids) for v in variants)

    return run


def compare(models: list[LoadedModel], task: str, n: int, rounds: int) -> tuple[list[float], bool]:
    """Median tokens/s of each model over `rounds` alternating rounds, and whether their texts agreed."""
    texts: list[dict[int, list[str]]] = [{} for _ in models]
    rates = alternating_medians([timer(model, task, n, written) for model, written in zip(models, texts,
                                                                                          strict=True)], rounds)
    return rates, all(written == texts[0] for written in texts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=RESOURCES_MODELS / "permgen-story")
    parser.add_argument("--candidates", nargs="+", type=int, default=[1, 5, 8])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runtime", choices=["onnx", "onnx-int8"], default="onnx")
    args = parser.parse_args(argv)
    engine = Engine([])
    models = [engine.load(args.bundle, "cpu", runtime) for runtime in ("torch", args.runtime)]
    if models[1].runtime_note:  # torch, or fp32 where int8 was asked for: not what this run is to time
        raise SystemExit(models[1].runtime_note)
    task = models[0].capabilities.tasks[0]
    print(f"bundle {args.bundle} · {task} · cpu · {torch.get_num_threads()} threads · top-p 0.9 · "
          f"median of {args.rounds} alternating rounds · ONNX: {models[1].runtime}")
    print(f"{'candidates':>10} {'torch tok/s':>12} {'ONNX tok/s':>11} {'ONNX/torch':>11} {'same text':>10}")
    for n in args.candidates:
        (torch_rate, onnx_rate), same = compare(models, task, n, args.rounds)
        agreed = "yes" if same else "no (int8)" if args.runtime == "onnx-int8" else "NO"
        print(f"{n:>10} {torch_rate:12.1f} {onnx_rate:11.1f} {onnx_rate / torch_rate:11.2f} {agreed:>10}")


if __name__ == "__main__":
    main()
