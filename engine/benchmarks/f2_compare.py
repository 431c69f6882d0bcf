"""A short F² vs plain-softmax comparison (F² paper Table 1 / Fig. 2 / Table 3, in miniature).

    python -m engine.benchmarks.f2_compare --train-files FILE [FILE ...] --out runs/f2_compare \\
        [--steps 300 --vocab-size 2048 --n-layer 2 --n-embd 128 --block-size 64 --windows 100]

Trains two tiny models with identical data, split, tokenizer, steps and seed that differ only in
the head (softmax / F² with MefMax classes), then continues the same held-out prefixes with top-k
sampling (k = 3, as the paper's WikiText-103 table): softmax, F² decoupled (Eq. 7: class, then
top-k inside the class) and F² flat (top-k over the marginal: the Table 3 ablation). Windows
follow the continuation protocol of `engine.evaluation.continuation` (prefix P, continuation C,
eos-separated held-out stream); each window is generated through `VariantStream` (the app's
path, which implements flat sampling) with seed `seed + window index`.

Reported per decoder: validation PPL (marginal, from training), mean continuation length, KLD, MS-Jaccard, Self-BLEU,
Distinct-n, Rep and Uniq (`engine.metrics.suite`, one definition each), and the share of
generated tokens in the F² §4.3 frequency groups (training mass: frequent = top 40%, medium
40–70%, rare 70–90%, very rare = bottom 10%), next to the human continuations.
Existing bundles in --out are reused (pass --retrain to train again).
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.benchmarks.head_compare import continue_windows, run_comparison
from engine.bundles.bundle import Bundle
from engine.decoding import DecodeConfig
from engine.evaluation.continuation import make_windows
from engine.heads.frequency_classes import FREQUENCY_GROUPS, group_shares, mass_group_per_token
from engine.metrics.suite import continuation_metrics

DECODERS = {  # name → (head, flat sampling)
    "softmax top-k 3": ("softmax", False),
    "F² top-k 3 (decoupled)": ("f2", False),
    "F² top-k 3 (flat, ablation)": ("f2", True),
}
COLUMNS = ["ppl", "length", "kld", "ms_jaccard_2", "self_bleu_2", "distinct_1", "distinct_2", "distinct_3", "rep",
           "uniq"]


def evaluate(bundles: dict[str, Bundle], valid_docs: list[str], args: argparse.Namespace) -> dict[str, Any]:
    tokenizer = bundles["softmax"].tokenizer
    windows = make_windows(tokenizer.encode_batch(valid_docs), tokenizer.eos_id, args.prefix_len,
                           args.continuation_len, args.windows)
    references = [w.reference for w in windows]
    groups = mass_group_per_token(tokenizer.counts)
    rows: dict[str, Any] = {}
    for name, (head, flat) in DECODERS.items():
        bundle = bundles[head]
        settings = DecodeConfig(max_new_tokens=args.continuation_len, top_k=3, flat_sampling=flat)
        generated = continue_windows(bundle, windows, settings, args.seed)
        metrics = continuation_metrics(generated, references, seed=args.seed)
        metrics["ppl"] = bundle.provenance.get("summary", {}).get("valid_ppl")
        metrics["length"] = sum(map(len, generated)) / len(generated)  # tokens before eos (cap: C)
        rows[name] = {"metrics": metrics, "shares": group_shares((t for g in generated for t in g), groups)}
    human = continuation_metrics(references, None, seed=args.seed)
    human["length"] = sum(map(len, references)) / len(references)
    rows["human"] = {"metrics": human, "shares": group_shares((t for r in references for t in r), groups)}
    return {"windows": len(windows), "f2_classes": bundles["f2"].model.config.f2_classes, "rows": rows}


def _cell(value: object) -> str:
    if value is None:
        return "–"
    return f"{value:.0f}" if isinstance(value, int) or (isinstance(value, float) and value > 100) else f"{value:.3f}"


def print_table(result: dict[str, Any]) -> None:
    header = ["decoder", *COLUMNS, *FREQUENCY_GROUPS]
    print(f"{result['windows']} held-out windows; F² has {result['f2_classes']} MefMax classes")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, row in result["rows"].items():
        cells = [_cell(row["metrics"].get(c)) for c in COLUMNS] + [_cell(row["shares"][g]) for g in FREQUENCY_GROUPS]
        print("| " + " | ".join([name, *cells]) + " |")


def main(argv: list[str] | None = None) -> int:
    return run_comparison("f2_compare", __doc__.splitlines()[0], ("softmax", "f2"), evaluate, print_table, argv)


if __name__ == "__main__":
    raise SystemExit(main())
