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

from engine.benchmarks.selection import load_side_by_side, measure, side_by_side_parser, write_json


def main(argv: list[str] | None = None) -> None:
    parser = side_by_side_parser(__doc__.splitlines()[0], 20)
    parser.add_argument("--guidance", type=float, nargs="+", default=[1.0, 1.5, 2.0])
    parser.add_argument("--drafts", type=int, default=1)
    args = parser.parse_args(argv)
    prompts, model, decode = load_side_by_side(args)
    decode = decode.replace(drafts=args.drafts)
    print(f"{args.drafts} draft(s) per variant shown")
    results = {g: measure(model, prompts, args.n, decode.replace(guidance=g), args.show) for g in args.guidance}
    base = results[args.guidance[0]]
    print(f"{'γ':>5} {'coherence':>10} {'Self-BLEU-4':>12} {'Distinct-2':>11} {'repeats %':>10} {'words':>6} "
          f"{'s/batch':>8} {'time ×':>7}")
    for g, r in results.items():
        print(f"{g:>5g} {r['coherence']:>10.3f} {r['self_bleu4']:>12.2f} {r['distinct2']:>11.2f} "
              f"{r['repeated_sentence_share']:>10.1f} {r['words_per_variant']:>6.1f} {r['seconds_per_batch']:>8.2f} "
              f"{r['seconds_per_batch'] / base['seconds_per_batch']:>7.2f}")
    write_json(args.json, results)


if __name__ == "__main__":
    main()
