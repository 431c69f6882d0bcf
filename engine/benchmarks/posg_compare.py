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
import json
import sys
from pathlib import Path
from typing import Any

from engine.bundle import Bundle, load_bundle
from engine.config import ModelConfig, TrainConfig
from engine.decoding import DecodeConfig, VariantStream
from engine.evaluation.continuation import Window, make_windows
from engine.metrics.suite import continuation_metrics
from engine.pos.backends import load_tagger
from engine.pos.diversity import pos_statistics
from engine.train import Trainer

DECODERS: dict[str, tuple[str, dict[str, Any]]] = {  # name → (head, decoding settings)
    "softmax nucleus 0.5": ("softmax", {"top_p": 0.5}),
    "POSG k_POS 20, nucleus 0.5": ("posg", {"top_p": 0.5, "pos_top_k": 20}),
    "POSG flat nucleus 0.5 (w/o POSG-sampling)": ("posg", {"top_p": 0.5, "flat_sampling": True}),
    "POSG adjectives x0.1": ("posg", {"top_p": 0.5, "pos_top_k": 20, "pos_bias": {"adjectives": 0.1}}),
    "POSG adjectives x10": ("posg", {"top_p": 0.5, "pos_top_k": 20, "pos_bias": {"adjectives": 10.0}}),
}
COLUMNS = ["ppl", "self_bleu_4", "rep", "distinct_1", "distinct_pos_1", "distinct_2", "distinct_pos_2", "distinct_3",
           "distinct_pos_3", "adjectives_per_sentence"]


def train_both(args: argparse.Namespace) -> tuple[dict[str, Bundle], list[str]]:
    """Train (or reuse) the softmax and POSG bundles; returns them and the held-out documents."""
    bundles: dict[str, Bundle] = {}
    valid_docs: list[str] = []
    tokenizer_dir: Path | None = None
    for head in ("softmax", "posg"):
        out = args.out / head
        model = ModelConfig(vocab_size=args.vocab_size, n_layer=args.n_layer, n_head=args.n_head,
                            n_embd=args.n_embd, block_size=args.block_size, dropout=0.1, head=head)
        train = TrainConfig(train_files=[str(p) for p in args.train_files], out_dir=str(out),
                            batch_size=args.batch_size, max_steps=args.steps, warmup_steps=max(1, args.steps // 20),
                            lr=3e-3, min_lr=3e-4, eval_every=args.steps, save_every=args.steps, seed=args.seed,
                            max_docs=args.max_docs, device="cpu")
        if args.retrain or not (out / "bundle" / "config.json").is_file():
            trainer = Trainer(model, train, tokenizer_dir, command="engine.benchmarks.posg_compare",
                              show_progress=False)
            valid_docs = trainer.valid_docs
            trainer.run()
        else:
            valid_docs = json.loads((out / "valid_docs.json").read_text())
        (out / "valid_docs.json").write_text(json.dumps(valid_docs))
        bundles[head] = load_bundle(out / "bundle")
        tokenizer_dir = out / "tokenizer"  # the POSG model reuses the softmax run's tokenizer
    return bundles, valid_docs


def generate(bundle: Bundle, windows: list[Window], settings: DecodeConfig, seed: int) -> list[list[int]]:
    """One continuation per window (eos removed), seed `seed + i`, through VariantStream."""
    eos = bundle.tokenizer.eos_id
    outputs = []
    for i, window in enumerate(windows):
        stream = VariantStream(bundle.model, bundle.tokenizer, window.prefix, 1, settings.with_seed(seed + i))
        for _ in stream:
            pass
        outputs.append([t for t in stream.variants[0].token_ids if t != eos])
    return outputs


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
        metrics = score(bundle, generate(bundle, windows, settings, args.seed), references, args.seed)
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-files", type=Path, nargs="+", required=True)
    parser.add_argument("--out", type=Path, default=Path("runs/posg_compare"))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--vocab-size", type=int, default=2048)
    parser.add_argument("--n-layer", type=int, default=2)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--n-embd", type=int, default=128)
    parser.add_argument("--block-size", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-docs", type=int, default=0)
    parser.add_argument("--prefix-len", type=int, default=20)
    parser.add_argument("--continuation-len", type=int, default=40)
    parser.add_argument("--windows", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--retrain", action="store_true")
    args = parser.parse_args(argv)
    bundles, valid_docs = train_both(args)
    result = evaluate(bundles, valid_docs, args)
    result["command"] = "python -m engine.benchmarks.posg_compare " + " ".join(sys.argv[1:] if argv is None else argv)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "posg_compare.json").write_text(json.dumps(result, indent=2))
    print_table(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
