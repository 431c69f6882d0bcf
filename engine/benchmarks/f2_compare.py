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
import json
import sys
from pathlib import Path
from typing import Any

from engine.bundle import Bundle, load_bundle
from engine.config import ModelConfig, TrainConfig
from engine.decoding import DecodeConfig, VariantStream
from engine.evaluation.continuation import Window, make_windows
from engine.heads.frequency_classes import FREQUENCY_GROUPS, frequency_groups, group_shares
from engine.metrics.suite import continuation_metrics
from engine.train import Trainer

DECODERS = {  # name → (head, flat sampling)
    "softmax top-k 3": ("softmax", False),
    "F² top-k 3 (decoupled)": ("f2", False),
    "F² top-k 3 (flat, ablation)": ("f2", True),
}
COLUMNS = ["ppl", "length", "kld", "ms_jaccard_2", "self_bleu_2", "distinct_1", "distinct_2", "distinct_3", "rep",
           "uniq"]


def train_both(args: argparse.Namespace) -> tuple[dict[str, Bundle], list[str]]:
    """Train (or reuse) the softmax and F² bundles; returns them and the held-out documents."""
    bundles: dict[str, Bundle] = {}
    valid_docs: list[str] = []
    tokenizer_dir: Path | None = None
    for head in ("softmax", "f2"):
        out = args.out / head
        model = ModelConfig(vocab_size=args.vocab_size, n_layer=args.n_layer, n_head=args.n_head,
                            n_embd=args.n_embd, block_size=args.block_size, dropout=0.1, head=head)
        train = TrainConfig(train_files=[str(p) for p in args.train_files], out_dir=str(out),
                            batch_size=args.batch_size, max_steps=args.steps, warmup_steps=max(1, args.steps // 20),
                            lr=3e-3, min_lr=3e-4, eval_every=args.steps, save_every=args.steps, seed=args.seed,
                            max_docs=args.max_docs, device="cpu")
        trainer = Trainer(model, train, tokenizer_dir, command="engine.benchmarks.f2_compare", show_progress=False)
        valid_docs = trainer.valid_docs
        if args.retrain or not (out / "bundle" / "config.json").is_file():
            trainer.run()
        bundles[head] = load_bundle(out / "bundle")
        tokenizer_dir = out / "tokenizer"  # the F² model reuses the softmax run's tokenizer
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


def evaluate(bundles: dict[str, Bundle], valid_docs: list[str], args: argparse.Namespace) -> dict[str, Any]:
    tokenizer = bundles["softmax"].tokenizer
    windows = make_windows(tokenizer.encode_batch(valid_docs), tokenizer.eos_id, args.prefix_len,
                           args.continuation_len, args.windows)
    references = [w.reference for w in windows]
    groups = frequency_groups(tokenizer.counts)
    rows: dict[str, Any] = {}
    for name, (head, flat) in DECODERS.items():
        bundle = bundles[head]
        settings = DecodeConfig(max_new_tokens=args.continuation_len, top_k=3, flat_sampling=flat)
        generated = generate(bundle, windows, settings, args.seed)
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-files", type=Path, nargs="+", required=True)
    parser.add_argument("--out", type=Path, default=Path("runs/f2_compare"))
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
    result["command"] = "python -m engine.benchmarks.f2_compare " + " ".join(sys.argv[1:] if argv is None else argv)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "f2_compare.json").write_text(json.dumps(result, indent=2))
    print_table(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
