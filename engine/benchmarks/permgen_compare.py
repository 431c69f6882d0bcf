"""PermGen vs the plain seq2seq baseline: same data, steps, seed and decoding; K candidates per input.

    python -m engine.benchmarks.permgen_compare --steps 150 --train-examples 2000 --test-inputs 40

Trains both tiny models (engine/permgen/train.py) on the first `--train-examples` Plan-and-Write
dev stories, then writes K candidates for the first `--test-inputs` test stories' title + storyline
(nucleus sampling, paper mode: up to 10 sentences, ⟨EOP⟩ after the first) and reports, on the
normalised word tokens (paper §5.4, definitions in engine/metrics): top-1 BLEU-4 (rank 1 by Eq. 8),
oracle BLEU-4 (best of K by sentence BLEU), pairwise Self-BLEU-4 among each input's K candidates,
Distinct-2 over all candidates. The baseline is the paper's Table 2 seq2seq: `--no-permute` (natural
order only) with `--positions absolute` (plain BART learned decoder positions); `--baseline-positions
hierarchical` gives the Hi-BART ablation (Table 6) instead. PermGen candidates start at different
sentences (sampling without replacement); the baseline's start with its most likely sentence.
Tiny CPU models: the numbers show the pipeline works end to end, not the paper's effect sizes.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch

from engine.config import ModelConfig, TrainConfig
from engine.decoding.settings import DecodeConfig
from engine.metrics.bleu import pairwise_self_bleu, top1_and_oracle_bleu
from engine.metrics.diversity import distinct_n_corpus
from engine.permgen.config import PermGenConfig
from engine.permgen.control import OrderControl
from engine.permgen.decode import PermGenStream
from engine.permgen.readers import read_examples
from engine.permgen.text import format_source
from engine.permgen.train import PermGenTrainer

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "rocstories" / "plan_and_write"
DEV = DATA / "ROCStories_all_merge_tokenize.titlesepkeysepstory.dev.txt"
TEST = DATA / "ROCStories_all_merge_tokenize.titlesepkeysepstory.test.txt"


def train(permute: bool, args: argparse.Namespace, tokenizer_dir: Path | None) -> PermGenTrainer:
    model = ModelConfig(backbone="bart", vocab_size=args.vocab, n_layer=2, n_head=4, n_embd=args.width, dropout=0.1)
    positions = "hierarchical" if permute else args.baseline_positions
    config = PermGenConfig(model=model, encoder_layers=2, max_source_len=48, max_sentence_len=40, permute=permute,
                           positions=positions)
    out = Path(args.out) / ("permgen" if permute else "no_permute")
    train_config = TrainConfig(train_files=[str(DEV)], out_dir=str(out), max_docs=args.train_examples,
                               batch_size=args.batch, max_steps=args.steps, lr=2e-3, min_lr=2e-4, warmup_steps=20,
                               eval_every=args.steps, eval_batches=4, seed=args.seed, device="cpu")
    trainer = PermGenTrainer(config, train_config, [str(TEST)], tokenizer_dir, command="permgen_compare")
    trainer.valid_data = trainer.valid_data[: args.batch * 4]
    trainer.run()
    return trainer


def evaluate(trainer: PermGenTrainer, args: argparse.Namespace) -> dict[str, Any]:
    tests = trainer.valid_examples[: args.test_inputs]
    settings = DecodeConfig(top_p=0.9, seed=args.seed, max_new_tokens=38)
    control = OrderControl(distinct_starts=trainer.config.permute)
    candidates: list[list[list[str]]] = []
    began = time.perf_counter()
    for example in tests:
        source = trainer.tokenizer.encode(format_source(example.title, example.keywords))
        stream = PermGenStream(trainer.model, trainer.tokenizer, source, args.k, settings, control)
        list(stream)
        ranked = sorted(stream.candidates, key=lambda v: v.rank)
        candidates.append([" ".join(v.sentences[t] for t in sorted(v.sentences)).split() for v in ranked])
    targets = [" ".join(e.sentences).split() for e in tests]
    top1, oracle = top1_and_oracle_bleu(candidates, targets, 4)
    return {"top1_bleu4": top1, "oracle_bleu4": oracle, "self_bleu4": pairwise_self_bleu(candidates, 4),
            "distinct2": distinct_n_corpus([c for group in candidates for c in group], 2),
            "decode_seconds": time.perf_counter() - began, "valid_nll_natural": trainer.evaluate(True),
            "example": candidates[0][0][:40]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--train-examples", type=int, default=2000)
    parser.add_argument("--test-inputs", type=int, default=40)
    parser.add_argument("--k", type=int, default=3, help="candidates per input")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="runs/permgen_compare")
    parser.add_argument("--baseline-positions", default="absolute", choices=["absolute", "hierarchical"],
                        help="absolute = plain seq2seq (Table 2), hierarchical = Hi-BART ablation (Table 6)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if not DEV.is_file():
        raise SystemExit(f"needs the shared data: {DEV}")
    print(f"train data: {len(read_examples(DEV)[: args.train_examples])} stories of {DEV.name}")
    results: dict[str, Any] = {}
    permgen = train(True, args, None)
    results["permgen"] = evaluate(permgen, args)
    baseline = train(False, args, Path(args.out) / "permgen" / "tokenizer")  # same tokenizer
    results[f"no_permute_{args.baseline_positions}"] = evaluate(baseline, args)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
