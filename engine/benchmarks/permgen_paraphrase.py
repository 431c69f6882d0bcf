"""A tiny sentence → paraphrase run: train on ParaSCI-ACL, paraphrase held-out sentences, POSG §5.3 metrics.

    python -m engine.benchmarks.permgen_paraphrase --steps 150 --train-pairs 3000 --test-inputs 40

Trains a small paraphrase model (engine/permgen/train.py, `--task paraphrase`) on the first
`--train-pairs` ParaSCI-ACL train pairs, then writes `--k` alternatives for each of the first
`--test-inputs` ParaSCI-ACL val sources with each decoder (nucleus sampling p = 0.9, and beam of
width `--beam`: its K best) through the same `ParaphraseStream` the app uses, and reports, on the
normalised word tokens (engine/metrics/paraphrase.py): BLEU-4 and ROUGE-1/2/L of the first
alternative against the reference (quality), Self-BLEU-4 and Self-WER of all alternatives against
their source (distance from the input), and Distinct-2 over all alternatives. Tiny CPU models:
the numbers show the pipeline works end to end, not the paper's effect sizes.
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
from engine.metrics.diversity import distinct_n_corpus
from engine.metrics.paraphrase import paraphrase_bleu, paraphrase_rouge, self_bleu_vs_source, self_wer
from engine.permgen.config import PermGenConfig
from engine.permgen.paraphrase import ParaphraseStream
from engine.permgen.train import PermGenTrainer

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "paraphrase" / "parasci" / "ParaSCI-ACL"
TRAIN, VALID = DATA / "train.src.txt", DATA / "val.src.txt"


def train(args: argparse.Namespace) -> PermGenTrainer:
    model = ModelConfig(backbone="bart", vocab_size=args.vocab, n_layer=2, n_head=4, n_embd=args.width, dropout=0.1)
    config = PermGenConfig(model=model, encoder_layers=2, max_source_len=64, max_sentence_len=64, task="paraphrase")
    train_config = TrainConfig(train_files=[str(TRAIN)], out_dir=args.out, max_docs=args.train_pairs,
                               batch_size=args.batch, max_steps=args.steps, lr=2e-3, min_lr=2e-4, warmup_steps=20,
                               eval_every=args.steps, eval_batches=4, seed=args.seed, device="cpu")
    trainer = PermGenTrainer(config, train_config, [str(VALID)], command="permgen_paraphrase")
    trainer.valid_data = trainer.valid_data[: args.batch * 4]
    trainer.run()
    return trainer


def evaluate(trainer: PermGenTrainer, settings: DecodeConfig, beam: int, args: argparse.Namespace) -> dict[str, Any]:
    tests = trainer.valid_examples[: args.test_inputs]
    firsts, sources, references, outputs, repeated = [], [], [], [], []
    began = time.perf_counter()
    for example in tests:
        stream = ParaphraseStream(trainer.model, trainer.tokenizer, example.title, args.k, settings, beam)
        list(stream)
        alternatives = [v.alternatives[0].normalized for v in stream.candidates]  # one sentence per source
        firsts.append(alternatives[0])
        sources.append(example.title)
        references.append(example.sentences[0])
        outputs += alternatives
        repeated += [example.title] * len(alternatives)
    return {"bleu4_vs_reference": paraphrase_bleu(firsts, references), **paraphrase_rouge(firsts, references),
            "self_bleu4_vs_source": self_bleu_vs_source(outputs, repeated),
            "self_wer_vs_source": self_wer(outputs, repeated),
            "distinct2": distinct_n_corpus([o.split() for o in outputs], 2),
            "decode_seconds": time.perf_counter() - began, "example": [sources[0], firsts[0]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--train-pairs", type=int, default=3000)
    parser.add_argument("--test-inputs", type=int, default=40)
    parser.add_argument("--k", type=int, default=3, help="alternatives per source")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="runs/permgen_paraphrase")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if not TRAIN.is_file():
        raise SystemExit(f"needs the shared data: {TRAIN}")
    trainer = train(args)
    settings = DecodeConfig(top_p=0.9, seed=args.seed, max_new_tokens=40)
    results = {"nucleus_0.9": evaluate(trainer, settings, 1, args),
               f"beam_{args.beam}": evaluate(trainer, settings, args.beam, args),
               "valid_nll": trainer.evaluate(True)}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
