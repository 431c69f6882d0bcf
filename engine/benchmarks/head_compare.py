"""Shared parts of the tiny head comparisons (`f2_compare`, `posg_compare`).

Both train two models that differ only in the output head (same data, split, tokenizer, steps,
seed), continue the same held-out windows through `VariantStream` (the app's decoder) and write
a JSON result next to a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.bundles.bundle import Bundle, load_bundle
from engine.config import ModelConfig, TrainConfig
from engine.decoding import DecodeConfig, VariantStream
from engine.evaluation.continuation import Window
from engine.evaluation.splits import default_data_root
from engine.lm.train import Trainer

# The ROCStories files the bundled models were trained on, under $VARIORUM_DATA or ../shared/data.
ROC_TRAIN_FILES = ("rocstories/diffusion_lm/roc_valid.json",
                   "rocstories/story_cloze_2016/cloze_test_val__spring2016-cloze_test_ALL_val.tsv",
                   "rocstories/story_cloze_2016/cloze_test_test__spring2016-cloze_test_ALL_test.tsv")


def default_train_files() -> list[str]:
    """Strings, so --help shows them as paths (run_comparison turns them into Paths)."""
    return [str(default_data_root() / name) for name in ROC_TRAIN_FILES]


def comparison_parser(description: str, default_out: Path) -> argparse.ArgumentParser:
    """The flags every head comparison takes (model size, steps, windows, seed); --help shows the defaults."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--train-files", type=Path, nargs="+", default=default_train_files(),
                        help="training text; the default is the bundled models' ROCStories files")
    parser.add_argument("--out", type=Path, default=default_out, help="bundles and the JSON result")
    parser.add_argument("--steps", type=int, default=300, help="training steps per model")
    parser.add_argument("--vocab-size", type=int, default=2048, help="BPE vocabulary")
    parser.add_argument("--n-layer", type=int, default=2, help="transformer layers")
    parser.add_argument("--n-head", type=int, default=4, help="attention heads")
    parser.add_argument("--n-embd", type=int, default=128, help="model width")
    parser.add_argument("--block-size", type=int, default=64, help="context length in tokens")
    parser.add_argument("--batch-size", type=int, default=16, help="training batch")
    parser.add_argument("--max-docs", type=int, default=0, help="read at most this many documents, 0 = all")
    parser.add_argument("--prefix-len", type=int, default=20, help="prefix tokens per window")
    parser.add_argument("--continuation-len", type=int, default=40, help="continuation tokens per window")
    parser.add_argument("--windows", type=int, default=100, help="held-out windows continued per decoder")
    parser.add_argument("--seed", type=int, default=1337, help="training and sampling seed")
    parser.add_argument("--retrain", action="store_true", help="train again even if --out has the bundles")
    return parser


def train_heads(args: argparse.Namespace, heads: tuple[str, ...], command: str) -> tuple[dict[str, Bundle], list[str]]:
    """Train (or reuse, unless --retrain) one bundle per head in args.out/<head>; the first run's
    tokenizer is reused by the others. Returns the bundles and the held-out documents."""
    bundles: dict[str, Bundle] = {}
    valid_docs: list[str] = []
    tokenizer_dir: Path | None = None
    for head in heads:
        out = args.out / head
        model = ModelConfig(vocab_size=args.vocab_size, n_layer=args.n_layer, n_head=args.n_head,
                            n_embd=args.n_embd, block_size=args.block_size, dropout=0.1, head=head)
        train = TrainConfig(train_files=[str(p) for p in args.train_files], out_dir=str(out),
                            batch_size=args.batch_size, max_steps=args.steps, warmup_steps=max(1, args.steps // 20),
                            lr=3e-3, min_lr=3e-4, eval_every=args.steps, save_every=args.steps, seed=args.seed,
                            max_docs=args.max_docs, device="cpu")
        reuse = not args.retrain and (out / "bundle" / "config.json").is_file()
        if reuse and (out / "valid_docs.json").is_file():
            valid_docs = json.loads((out / "valid_docs.json").read_text())
        else:  # the trainer's split gives the held-out documents (runs from before valid_docs.json too)
            trainer = Trainer(model, train, tokenizer_dir, command=command, show_progress=False)
            valid_docs = trainer.valid_docs
            if not reuse:
                trainer.run()
        (out / "valid_docs.json").write_text(json.dumps(valid_docs))
        bundles[head] = load_bundle(out / "bundle")
        tokenizer_dir = out / "tokenizer"
    return bundles, valid_docs


def continue_windows(bundle: Bundle, windows: list[Window], settings: DecodeConfig, seed: int) -> list[list[int]]:
    """One continuation per window (eos removed), seed `seed + i`, through VariantStream."""
    eos = bundle.tokenizer.eos_id
    outputs = []
    for i, window in enumerate(windows):
        stream = VariantStream(bundle.model, bundle.tokenizer, window.prefix, 1, settings.with_seed(seed + i))
        for _ in stream:
            pass
        outputs.append([t for t in stream.variants[0].token_ids if t != eos])
    return outputs


def save_result(result: dict[str, Any], args: argparse.Namespace, name: str, argv: list[str] | None) -> None:
    """Record the reproducing command in `result` and write it to args.out/<name>.json."""
    result["command"] = f"python -m engine.benchmarks.{name} " + " ".join(sys.argv[1:] if argv is None else argv)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(json.dumps(result, indent=2))


Evaluate = Callable[[dict[str, Bundle], list[str], argparse.Namespace], dict[str, Any]]


def run_comparison(name: str, description: str, heads: tuple[str, ...], evaluate: Evaluate,
                   print_table: Callable[[dict[str, Any]], None], argv: list[str] | None) -> int:
    """A comparison's whole `main`: parse flags, train (or reuse) one bundle per head, evaluate,
    write runs/<name>/<name>.json and print the table."""
    parser = comparison_parser(description, Path(f"runs/{name}"))
    args = parser.parse_args(argv)
    args.train_files = [Path(path) for path in args.train_files]
    missing = [str(path) for path in args.train_files if not path.is_file()]
    if missing:
        parser.error(f"training data not found: {', '.join(missing)} (set VARIORUM_DATA to the data folder "
                     "or pass --train-files FILE ...)")
    bundles, valid_docs = train_heads(args, heads, f"engine.benchmarks.{name}")
    result = evaluate(bundles, valid_docs, args)
    save_result(result, args, name, argv)
    print_table(result)
    return 0
