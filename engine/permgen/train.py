"""`variorum train-permgen …`: train a PermGen encoder-decoder (or the `--no-permute` baseline).

π-SGD (paper §4.2, Eq. 7): every step draws a fresh order per example (engine/permgen/
permutation.py), marks the targets in those orders and minimises the batch mean of the
per-example summed NLL. `--no-permute` trains the same model, data, steps and seed on the natural
order only (with hierarchical positions, i.e. the paper's Hi-BART ablation of Table 6; Table 2's
"Transformer" baseline additionally has absolute positions). Optimisation reuses the LM trainer's
AdamW groups and warmup + cosine schedule (engine/train.py). At the end a bundle is written to
`<out_dir>/bundle` with a card holding the run's numbers and command.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import torch

from engine.backbones.bart import load_hf_bart
from engine.cli_args import add_dataclass_flags, dataclass_from_flags
from engine.config import ConfigError, ModelConfig, TrainConfig
from engine.data.blocks import BatchOrder
from engine.devices import resolve_device
from engine.heads.registry import fit_head, load_fitted_head
from engine.permgen.bundle import save_permgen_bundle
from engine.permgen.card import render_permgen_card
from engine.permgen.config import PermGenConfig
from engine.permgen.data import DataStats, encode_examples, load_examples, split_examples, tokenizer_texts
from engine.permgen.model import EncodedExample, PermGenModel, collate
from engine.permgen.permutation import PermutationSampler
from engine.permgen.readers import ParagraphExample
from engine.tokenizer import VariorumTokenizer
from engine.train import build_optimizer, learning_rate


class PermGenTrainer:
    """One PermGen training run; `orders_log[step]` keeps the orders each step used (for checks)."""

    def __init__(
        self, config: PermGenConfig, train: TrainConfig, valid_files: list[str] | None = None,
        tokenizer_dir: Path | None = None, init_from_hf: Path | None = None, command: str = "",
    ) -> None:
        if train.objective != "mle":
            raise ConfigError(f"PermGen trains with the π-SGD likelihood only, got objective {train.objective!r}")
        if config.model.head == "posg":
            raise ConfigError("PermGen training with the posg head needs tagged targets, not wired yet; "
                              "use softmax or f2 (decoding with a posg head works)")
        self.train_config, self.command = train, command
        self.out = Path(train.out_dir)
        self.device = resolve_device(train.device)
        self.stats = DataStats()
        self.train_examples, self.valid_examples = self._examples(valid_files or [])
        self.tokenizer = self._tokenizer(tokenizer_dir, config)
        config.model.vocab_size = self.tokenizer.vocab_size
        config.model, head_state = fit_head(config.model, self.tokenizer)  # F²: classes from token counts
        self.config = config
        torch.manual_seed(train.seed)
        backbone = None
        if init_from_hf is not None:
            backbone = load_hf_bart(init_from_hf, config.model.vocab_size, config.max_sentences,
                                    config.max_sentence_len, self.tokenizer.pad_id)
        self.model = PermGenModel(config, backbone).to(self.device)
        load_fitted_head(self.model.head, head_state)
        self.optimizer = build_optimizer(self.model, train)
        self.train_data: list[EncodedExample] = self._encode(self.train_examples)
        self.valid_data: list[EncodedExample] = self._encode(self.valid_examples)
        self.batches = BatchOrder(len(self.train_data), train.batch_size, train.seed)
        self.sampler = PermutationSampler(train.seed, identity=not config.permute)
        self.orders_log: list[list[list[int]]] = []

    def _examples(self, valid_files: list[str]) -> tuple[list[ParagraphExample], list[ParagraphExample]]:
        if not self.train_config.train_files:
            raise ConfigError("no training data: pass --train-files FILE [FILE ...]")
        examples = load_examples([Path(p) for p in self.train_config.train_files], self.stats,
                                 self.train_config.max_docs)
        if valid_files:
            return examples, load_examples([Path(p) for p in valid_files], DataStats())
        return split_examples(examples, self.train_config.valid_fraction)

    def _encode(self, examples: list[ParagraphExample]) -> list[EncodedExample]:
        c = self.config
        return encode_examples(examples, self.tokenizer, c.max_source_len, c.max_sentence_len, self.stats, c.lowercase)

    def _tokenizer(self, tokenizer_dir: Path | None, config: PermGenConfig) -> VariorumTokenizer:
        if tokenizer_dir is not None:
            return VariorumTokenizer.load(tokenizer_dir)
        texts = tokenizer_texts(self.train_examples, config.lowercase)
        tokenizer = VariorumTokenizer.train(texts, vocab_size=config.model.vocab_size)
        tokenizer.save(self.out / "tokenizer")
        return tokenizer

    def step(self, step: int) -> float:
        """One optimizer step (π-SGD); returns the Eq. 7 loss."""
        ids = self.batches.global_batch(step).tolist()
        examples = [self.train_data[i] for i in ids]
        orders = self.sampler.orders(step, [len(e.sentences) for e in examples])
        self.orders_log.append(orders)
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate(step, self.train_config)
        loss = self.model(collate(examples, orders).to(self.device))
        loss.backward()
        if self.train_config.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.train_config.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())

    @torch.no_grad()
    def evaluate(self, natural: bool = True) -> float:
        """Mean per-token NLL of the held-out targets (natural order, or one fixed random order each)."""
        data = self.valid_data or self.train_data[: self.train_config.batch_size]
        self.model.eval()
        total, count = 0.0, 0
        sampler = PermutationSampler(self.train_config.seed + 1, identity=natural)
        size = self.train_config.batch_size
        for start in range(0, min(len(data), size * self.train_config.eval_batches), size):
            chunk = data[start : start + size]
            batch = collate(chunk, sampler.orders(start, [len(e.sentences) for e in chunk])).to(self.device)
            total += float(self.model.token_nll(batch).sum())
            count += int((batch.targets >= 0).sum())
        self.model.train()
        return total / max(count, 1)

    def run(self) -> dict[str, Any]:
        """Train for max_steps, evaluating every eval_every steps; write the bundle; return a summary."""
        self.out.mkdir(parents=True, exist_ok=True)
        self.model.train()
        began = time.perf_counter()
        summary: dict[str, Any] = {}
        with (self.out / "metrics.jsonl").open("w") as log:
            for step in range(self.train_config.max_steps):
                record: dict[str, Any] = {"step": step + 1, "train_loss": self.step(step)}
                if (step + 1) % self.train_config.eval_every == 0 or step + 1 == self.train_config.max_steps:
                    natural, permuted = self.evaluate(True), self.evaluate(False)
                    record.update(valid_nll_natural=natural, valid_nll_permuted=permuted)
                    summary = {"step": step + 1, "valid_nll_natural": natural, "valid_ppl_natural": math.exp(natural),
                               "valid_nll_permuted": permuted}
                    print(f"step {step + 1}: loss {record['train_loss']:.3f}, held-out NLL/token natural order "
                          f"{natural:.4f}, random orders {permuted:.4f}", flush=True)
                log.write(json.dumps(record) + "\n")
        summary["train_seconds"] = time.perf_counter() - began
        self._export(summary)
        return summary

    def _export(self, summary: dict[str, Any]) -> None:
        provenance = {"train": self.train_config.to_dict(), "data": vars(self.stats), "summary": summary,
                      "examples": {"train": len(self.train_data), "valid": len(self.valid_data)},
                      "command": self.command}
        card = render_permgen_card(self.model, provenance, self.device)
        save_permgen_bundle(self.out / "bundle", self.model, self.tokenizer, card, provenance)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="variorum train-permgen",
                                     description="Train a PermGen encoder-decoder (title + keywords → paragraph).")
    parser.add_argument("--valid-files", nargs="+", default=None, help="held-out files (default: hash split)")
    parser.add_argument("--tokenizer", type=Path, help="reuse this tokenizer directory")
    parser.add_argument("--init-from-hf", type=Path, help="start from a local HF BART checkpoint directory")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads for torch (0 = torch's default)")
    add_dataclass_flags(parser, ModelConfig, skip=("backbone", "block_size", "pos_tags"))
    add_dataclass_flags(parser, PermGenConfig, skip=("model",))
    add_dataclass_flags(parser, TrainConfig, skip=("objective",))
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)  # on a shared CPU, 1 thread can be much faster than oversubscribing
    model = dataclass_from_flags(ModelConfig, args, ModelConfig(backbone="bart", n_layer=2, n_embd=128))
    config = dataclass_from_flags(PermGenConfig, args, PermGenConfig(model=model))
    config.model = model
    train = dataclass_from_flags(TrainConfig, args, TrainConfig(out_dir="runs/permgen", lr=5e-4, warmup_steps=50))
    trainer = PermGenTrainer(config, train, args.valid_files, args.tokenizer, args.init_from_hf,
                             "variorum train-permgen " + " ".join(argv))
    print(json.dumps(trainer.run(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
