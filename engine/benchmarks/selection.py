"""Over-generate and select, measured side by side: the same held-out openings at K = 1, 2, 4, 8 drafts.

    python -m engine.benchmarks.selection --bundle B [--openings 10] [--drafts 1 2 4 8] [-n 4]
        [--max-new-tokens 60] [--files F …]

Each opening (the first four sentences of a story the bundle held out of training, by default from
roc_valid.json, so no Story Cloze story the scorer was fitted on) gets one batch of N variants per K with the
same seed and the settings a writer starts at on the model. Per K it prints the mean coherence score of the
shown variants (by the scorer that chooses drafts: the shipped one where the base is installed), the
Self-BLEU-4 within each batch (the app's readout) and Distinct-2 over each batch, both averaged over
batches, the share of variants that repeat a sentence, the words per variant, and the seconds per batch; then
each K's time and Self-BLEU against the first K's. `--show` prints every batch for reading. Times are wall-clock on this
machine: measure with nothing else running.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from engine.benchmarks.held_out_continuations import opening_and_ending
from engine.bundles.bundle import load_bundle
from engine.cli.generate_flags import model_starts
from engine.decode_fields import FIELDS
from engine.decoding import DecodeConfig
from engine.front_door import Engine, GenerationRequest, LoadedModel
from engine.metrics.bleu import self_bleu
from engine.metrics.diversity import distinct_n_corpus
from engine.metrics.sentence_repeats import repeated_sentence_share
from engine.perplexity import held_out_documents

DEFAULT_FILES = ["../shared/data/rocstories/diffusion_lm/roc_valid.json"]


def openings(bundle: Path, files: list[Path], count: int) -> list[str]:
    """The first four sentences of the first `count` five-sentence stories `bundle` held out of `files`."""
    pairs = [pair for story in held_out_documents(load_bundle(bundle), files)
             if (pair := opening_and_ending(story)) is not None]
    return [opening for opening, _ in pairs[:count]]


def writer_start(model: LoadedModel, max_new_tokens: int, seed: int) -> DecodeConfig:
    """The settings a writer starts at on this model (its bundle's and head's starts included)."""
    fields = [f for f in FIELDS if not f.request and f.name not in ("seed", "max_new_tokens")]
    starts: dict[str, Any] = {f.name: f.writer_start for f in fields if not f.starts_by_model}
    starts.update(model_starts([f for f in fields if f.starts_by_model], model.capabilities, False))
    return DecodeConfig(**{**starts, "max_new_tokens": max_new_tokens, "seed": seed})


def measure(model: LoadedModel, prompts: list[str], n: int, decode: DecodeConfig,
            show: bool = False) -> dict[str, float]:
    """One batch per prompt with `decode`; the metrics of the module docstring (`show`: print each batch)."""
    scorer = model.drafts_scorer().score
    seconds, scores, bleus, distincts, shown, prompt_of = [], [], [], [], [], []
    for number, prompt in enumerate(prompts):
        started = time.perf_counter()
        seeded = decode.with_seed((decode.seed or 0) + 97 * number)  # apart by more than K·N rows
        stream = model.stream(GenerationRequest(prompt=prompt, n=n, decode=seeded))
        for _ in stream:
            pass
        seconds.append(time.perf_counter() - started)
        texts = [v.text for v in stream.variants]
        if scorer is not None:
            scores.extend(scorer(prompt, texts))
        if show:
            print(f"\n[K={decode.drafts}, guidance {decode.guidance:g}, opening {number + 1}] {prompt}")
            for index, text in enumerate(texts, 1):
                print(f"  {index}:{text}")
        words = [t.lower().split() for t in texts]
        bleus.append(self_bleu(words, smooth="exp", effective_order=True))
        distincts.append(distinct_n_corpus(words, 2))
        shown.extend(texts)
        prompt_of.extend([prompt] * len(texts))
    return {"coherence": statistics.fmean(scores) if scores else float("nan"),
            "self_bleu4": 100 * statistics.fmean(bleus), "distinct2": 100 * statistics.fmean(distincts),
            "repeated_sentence_share": 100 * repeated_sentence_share(shown, prompt_of),
            "words_per_variant": statistics.fmean(len(t.split()) for t in shown),
            "seconds_per_batch": statistics.fmean(seconds)}


def side_by_side_parser(description: str, openings_default: int) -> argparse.ArgumentParser:
    """The arguments of a side-by-side benchmark over held-out openings (this one, engine/benchmarks/guidance.py)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--files", type=Path, nargs="+", default=[Path(p) for p in DEFAULT_FILES])
    parser.add_argument("--openings", type=int, default=openings_default)
    parser.add_argument("-n", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--show", action="store_true", help="print every batch's variants, for reading")
    return parser


def load_side_by_side(args: argparse.Namespace) -> tuple[list[str], LoadedModel, DecodeConfig]:
    """The held-out openings, the model on the CPU and the settings a writer starts at on it, announced."""
    prompts = openings(args.bundle, args.files, args.openings)
    model = Engine().load(args.bundle, device="cpu")
    print(f"{args.bundle} · {len(prompts)} openings · {args.n} variants × {args.max_new_tokens} tokens · "
          f"{model.drafts_scorer().note}")
    return prompts, model, writer_start(model, args.max_new_tokens, args.seed)


def write_json(path: Path | None, results: dict[Any, dict[str, float]]) -> None:
    """Each setting's results as JSON at `path` (None: nowhere)."""
    if path is not None:
        path.write_text(json.dumps({str(k): r for k, r in results.items()}, indent=2) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = side_by_side_parser(__doc__.splitlines()[0], 10)
    parser.add_argument("--drafts", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args(argv)
    prompts, model, decode = load_side_by_side(args)
    results = {k: measure(model, prompts, args.n, decode.replace(drafts=k), args.show) for k in args.drafts}
    base = results[args.drafts[0]]
    print(f"{'K':>3} {'coherence':>10} {'Self-BLEU-4':>12} {'Distinct-2':>11} {'repeats %':>10} {'s/batch':>8} "
          f"{'time ×':>7} {'Self-BLEU ×':>12}")
    for k, r in results.items():
        print(f"{k:>3} {r['coherence']:>10.3f} {r['self_bleu4']:>12.2f} {r['distinct2']:>11.2f} "
              f"{r['repeated_sentence_share']:>10.1f} {r['seconds_per_batch']:>8.2f} "
              f"{r['seconds_per_batch'] / base['seconds_per_batch']:>7.2f} "
              f"{r['self_bleu4'] / base['self_bleu4'] if base['self_bleu4'] else float('nan'):>12.2f}")
    write_json(args.json, results)


if __name__ == "__main__":
    main()
