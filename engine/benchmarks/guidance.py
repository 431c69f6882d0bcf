"""Guidance measured side by side: the same held-out openings continued at several guidance strengths γ.

    python -m engine.benchmarks.guidance --bundle B [--openings 20] [--guidance 1 1.5 2] [-n 4]
        [--max-new-tokens 60] [--drafts 1] [--files F …] [--show]

Each opening (as in engine/benchmarks/selection.py: the first four sentences of a five-sentence story the bundle
held out of training, roc_valid.json by default) gets one batch of N variants per γ, with the same seeds and the
settings a writer starts at on the model, drafts fixed (1 by default, so guidance alone is measured). Per γ it
prints the mean coherence score of the variants after their opening (the shipped scorer where the base is
installed: docs/coherence.md; guidance does not optimise it, so it is an outside measure of keeping to the text),
Self-BLEU-4 and Distinct-2 within each batch, the share of variants repeating a sentence, the words per variant,
the seconds per batch, and the time against the first γ. Times are wall-clock on this machine: measure with
nothing else running.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from engine.benchmarks.selection import DEFAULT_FILES, measure, openings, writer_start
from engine.front_door import Engine


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--files", type=Path, nargs="+", default=[Path(p) for p in DEFAULT_FILES])
    parser.add_argument("--openings", type=int, default=20)
    parser.add_argument("--guidance", type=float, nargs="+", default=[1.0, 1.5, 2.0])
    parser.add_argument("--drafts", type=int, default=1)
    parser.add_argument("-n", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--show", action="store_true", help="print every batch's variants, for reading")
    args = parser.parse_args(argv)
    prompts = openings(args.bundle, args.files, args.openings)
    model = Engine().load(args.bundle, device="cpu")
    decode = writer_start(model, args.max_new_tokens, args.seed).replace(drafts=args.drafts)
    print(f"{args.bundle} · {len(prompts)} openings · {args.n} variants × {args.max_new_tokens} tokens · "
          f"{args.drafts} draft(s) each · {model.drafts_scorer().note}")
    results = {g: measure(model, prompts, args.n, decode.replace(guidance=g), args.show) for g in args.guidance}
    base = results[args.guidance[0]]
    print(f"{'γ':>5} {'coherence':>10} {'Self-BLEU-4':>12} {'Distinct-2':>11} {'repeats %':>10} {'words':>6} "
          f"{'s/batch':>8} {'time ×':>7}")
    for g, r in results.items():
        print(f"{g:>5g} {r['coherence']:>10.3f} {r['self_bleu4']:>12.2f} {r['distinct2']:>11.2f} "
              f"{r['repeated_sentence_share']:>10.1f} {r['words_per_variant']:>6.1f} {r['seconds_per_batch']:>8.2f} "
              f"{r['seconds_per_batch'] / base['seconds_per_batch']:>7.2f}")
    if args.json is not None:
        args.json.write_text(json.dumps({str(g): r for g, r in results.items()}, indent=2) + "\n")


if __name__ == "__main__":
    main()
