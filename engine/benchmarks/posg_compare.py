"""A short POSG vs plain-softmax comparison (POSG paper Tables 2, 3, 7 and 9, in miniature).

    python -m engine.benchmarks.posg_compare --train-files FILE [FILE ...] --out runs/posg_compare \\
        [--steps 300 --vocab-size 2048 --n-layer 2 --n-embd 128 --block-size 64 --windows 100]

Trains two tiny models with identical data, split, tokenizer, steps and seed that differ only in
the head (softmax / POSG on the spaCy-tagged training split), then continues the same held-out
prefixes (`engine.evaluation.continuation` windows, one continuation per window with seed
`seed + window`, through `VariantStream`, the app's decoder):

- softmax, nucleus α = 0.5 (the paper's baseline decoding);
- POSG, k_POS = 20 then nucleus α_token = 0.5 inside the sampled tag (Eq. 5);
- POSG flat: nucleus 0.5 over the marginal p(x) ("w/o POSG-sampling", Table 7);
- POSG with the adjective probability ×0.1 and ×10 (Table 9; the POSG row is ×1).

Reported per decoder: validation PPL (marginal, from training), Self-BLEU-4, Rep, Distinct-n
(`engine.metrics.suite`, per text) next to distinct n-POS (Table 3, same definition) and
adjectives per sentence (`engine.pos.diversity`; the generated text is tagged by the same spaCy
tagger), next to the human continuations. Existing bundles in --out are reused (--retrain trains
again).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from engine.benchmarks.head_compare import continue_windows, run_comparison
from engine.bundles.bundle import Bundle
from engine.decoding import DecodeConfig
from engine.evaluation.continuation import make_windows
from engine.metrics.suite import continuation_metrics
from engine.pos.backends import load_tagger
from engine.pos.diversity import pos_statistics

DECODERS: dict[str, tuple[str, dict[str, Any]]] = {  # name → (head, decoding settings)
    "softmax nucleus 0.5": ("softmax", {"top_p": 0.5}),
    "POSG k_POS 20, nucleus 0.5": ("posg", {"top_p": 0.5, "pos_top_k": 20}),
    "POSG flat nucleus 0.5 (w/o POSG-sampling)": ("posg", {"top_p": 0.5, "flat_sampling": True}),
    "POSG adjectives x0.1": ("posg", {"top_p": 0.5, "pos_top_k": 20, "pos_bias": {"adjectives": 0.1}}),
    "POSG adjectives x10": ("posg", {"top_p": 0.5, "pos_top_k": 20, "pos_bias": {"adjectives": 10.0}}),
}
COLUMNS = ["ppl", "self_bleu_4", "rep", "distinct_1", "distinct_pos_1", "distinct_2", "distinct_pos_2", "distinct_3",
           "distinct_pos_3", "adjectives_per_sentence"]


def score(bundle: Bundle, texts: list[list[int]], references: list[list[int]] | None, seed: int) -> dict[str, Any]:
    """Text metrics of the continuation table plus the POS statistics of the decoded text."""
    metrics: dict[str, Any] = dict(continuation_metrics(texts, references, seed=seed))
    decoded = [bundle.tokenizer.decode(t) for t in texts]
    metrics.update(pos_statistics(decoded, load_tagger()))
    return metrics


def evaluate(bundles: dict[str, Bundle], valid_docs: list[str], args: argparse.Namespace) -> dict[str, Any]:
    tokenizer = bundles["softmax"].tokenizer
    windows = make_windows(tokenizer.encode_batch(valid_docs), tokenizer.eos_id, args.prefix_len,
                           args.continuation_len, args.windows)
    references = [w.reference for w in windows]
    rows: dict[str, Any] = {}
    for name, (head, controls) in DECODERS.items():
        bundle = bundles[head]
        settings = DecodeConfig(max_new_tokens=args.continuation_len, **controls)
        metrics = score(bundle, continue_windows(bundle, windows, settings, args.seed), references, args.seed)
        metrics["ppl"] = bundle.provenance.get("summary", {}).get("valid_ppl")
        rows[name] = metrics
        print(f"done: {name}", file=sys.stderr, flush=True)
    rows["human"] = score(bundles["softmax"], references, None, args.seed)
    return {"windows": len(windows), "pos_groups": bundles["posg"].model.head.num_groups, "rows": rows}


def _cell(value: object) -> str:
    if value is None:
        return "–"
    return f"{value:.1f}" if isinstance(value, float) and value > 100 else f"{value:.3f}"


def print_table(result: dict[str, Any]) -> None:
    header = ["decoder", *COLUMNS]
    print(f"{result['windows']} held-out windows; the POSG head has {result['pos_groups']} POS groups")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, row in result["rows"].items():
        print("| " + " | ".join([name, *(_cell(row.get(c)) for c in COLUMNS)]) + " |")


def main(argv: list[str] | None = None) -> int:
    return run_comparison("posg_compare", __doc__.splitlines()[0], ("softmax", "posg"), evaluate, print_table, argv)


if __name__ == "__main__":
    raise SystemExit(main())
