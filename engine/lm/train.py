"""Training entry point: `variorum train …` or `python -m engine.lm.train …` (also under torchrun).

What is a language model's own: read the corpus, split it by document hash, train (or reuse) the
tokenizer, cut token blocks, and minimise the chosen objective (engine/objectives; POSG: its Eq. 4
on the observed tags). Everything else — AdamW and its schedule, accumulation, bf16 autocast,
validation perplexity every `eval_every` steps, checkpoints and `--resume`, early stopping, the
metrics log, loss curve and bundle — is the shared loop of engine/training/loop.py.

Distributed: under `torchrun`, each rank takes every world_size-th sequence of the same global
batch and DDP averages the gradients, so N processes follow the 1-process run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from engine.bundles.bundle import Bundle, BundleError, load_bundle
from engine.cli_args import add_dataclass_flags, check_start_flags, dataclass_from_flags
from engine.config import ConfigError, ModelConfig, TrainConfig, config_from_dict
from engine.data.blocks import BatchOrder, make_blocks
from engine.data.corpus import file_sha256, read_corpus, split_documents
from engine.heads.registry import fit_head, load_fitted_head
from engine.model import LanguageModel
from engine.objectives import ObjectiveContext, ObjectiveModule, build_objective
from engine.perplexity import block_perplexity
from engine.pos.tagger import TaggerUnavailableError
from engine.pos.training import PosTrainingData, prepare_pos_training
from engine.tokenizer import VariorumTokenizer, saved_tokenizer
from engine.torch_modes import eval_mode
from engine.training.card import render_card
from engine.training.frozen_prefix import install_frozen_prefix
from engine.training.loop import MicroBatch, TrainingLoop, add_run_flags, read_config_file
from engine.training.start_weights import (
    copy_start_weights,
    ensure_counts,
    imported_start,
    start_model_settings,
    start_tokenizer_dir,
)


class Trainer(TrainingLoop[LanguageModel]):
    """A language-model run on the shared loop: token blocks, the chosen objective, perplexity."""

    compilable = True  # every batch is [B, block_size]: torch.compile compiles once
    distributed = True
    watched_metric = "valid_loss"

    def __init__(
        self,
        model_config: ModelConfig,
        config: TrainConfig,
        tokenizer_dir: Path | None = None,
        command: str = "",
        show_progress: bool = True,
    ) -> None:
        if config.length_pool:
            raise ConfigError("length_pool is for PermGen: a language model trains on blocks of one length")
        super().__init__(config, command, show_progress)
        self.config = config
        self.train_docs, self.valid_docs = self._documents()
        start = load_bundle(Path(config.init_from)) if config.init_from else None
        self.tokenizer = self._tokenizer(start_tokenizer_dir(config.init_from, tokenizer_dir), model_config.vocab_size)
        ensure_counts(self.tokenizer, self.train_docs)  # an imported checkpoint's tokenizer has none
        model_config.vocab_size = self.tokenizer.vocab_size
        model_config, head_state = fit_head(model_config, self.tokenizer)  # F²: classes from the token counts
        self.pos = self._pos_data(model_config)  # POSG: tagged training text, else None
        torch.manual_seed(config.seed)  # identical initial weights on every rank
        model = self._start_model(model_config, head_state, start)
        self._set_model(model)
        self.model_config = self.model.config
        self.train_blocks, self.valid_blocks = self._blocks()
        if config.cache_frozen_blocks:  # the frozen blocks' output, computed once for every sequence
            sequences = torch.cat([self.train_blocks, self.valid_blocks])[:, :-1]  # [M, T] model inputs
            folder = Path(config.frozen_cache_dir) if config.frozen_cache_dir else self.out / "frozen-prefix"
            install_frozen_prefix(self.model.backbone, config, sequences, folder, self.show_progress and self.rank == 0)
        if self.device.type == "cuda":  # the whole token stream lives on the GPU: no copy per step
            self.train_blocks = self.train_blocks.to(self.device)
        self.order = BatchOrder(len(self.train_blocks), config.batch_size, config.seed)
        # POSG: the observed tag of every position, laid out exactly like train_blocks
        self.train_groups = self.pos.blocks(self.sequence_tokens) if self.pos is not None else None
        steps_per_epoch = -(-len(self.train_blocks) // config.batch_size)
        self.objective = build_objective(config, ObjectiveContext(
            self.model_config.vocab_size, steps_per_epoch, self.sequence_tokens, self.device))
        self.objective.check_model(self.model)

    def _start_model(self, model_config: ModelConfig, head_state: dict[str, torch.Tensor],
                     start: Bundle | None) -> LanguageModel:
        """The untrained model of `model_config`, with the start bundle's weights when there is one."""
        model = LanguageModel(model_config)
        load_fitted_head(model.head, head_state)
        if start is not None:
            copy_start_weights(model, start.model, self.config.init_from)
        if self.pos is not None:
            self.pos.install(model.head)  # V_ρ from the training split
        return model

    @property
    def sequence_tokens(self) -> int:
        """Tokens per training sequence: `seq_len`, or the model's whole context."""
        block = self.model_config.block_size
        if self.config.seq_len > block:
            raise ConfigError(f"seq_len {self.config.seq_len} is longer than the model's {block} positions")
        return self.config.seq_len or block

    # ----- setup -------------------------------------------------------------------------
    def _documents(self) -> tuple[list[str], list[str]]:
        if not self.config.train_files:
            raise ConfigError("no training data: pass --train-files FILE [FILE ...]")
        documents = read_corpus(Path(p) for p in self.config.train_files)
        if self.config.max_docs:
            documents = documents[: self.config.max_docs]
        return split_documents(documents, self.config.valid_fraction)

    def _tokenizer(self, tokenizer_dir: Path | None, vocab_size: int) -> VariorumTokenizer:
        own = self.out / "tokenizer"
        # A folder without its counts (from a Variorum that wrote it in place, killed mid-save) is trained
        # again: it would give F² and AGG all-zero counts.
        source = tokenizer_dir or (own if self.rank == 0 and saved_tokenizer(own) else None)
        if source is None and self.rank == 0:
            VariorumTokenizer.train(self.train_docs, vocab_size=vocab_size).save_folder(own)
        if self.world > 1:
            dist.barrier()
        return VariorumTokenizer.load(source or own)

    def _pos_data(self, model_config: ModelConfig) -> PosTrainingData | None:
        """POSG: tag the training split (rank 0 first, the others then read its tag cache),
        build V_ρ from it and name the head's groups in `model_config.pos_tags`. Other heads: None.

        Design: the tag of each target is data, like the target itself; it travels as a second block
        tensor (`train_groups`) into `LanguageModel.forward(..., target_groups)`, whose loss is then
        the head's Eq. 4. Validation and `variorum perplexity` pass no tags and get the marginal
        p(x) = Σ_ρ p(ρ)p(x|ρ), comparable with a softmax model's perplexity."""
        if model_config.head != "posg":
            return None
        if self.config.objective != "mle":
            raise ConfigError(f"the posg head trains with its own loss (paper Eq. 4); objective "
                              f"{self.config.objective!r} is not defined for it, use 'mle'")
        if self.world > 1 and self.rank != 0:
            dist.barrier()
        cache = Path(self.config.pos_cache_dir) if self.config.pos_cache_dir else None
        data = prepare_pos_training(self.train_docs, self.tokenizer, self.config.pos_backend, cache,
                                    progress=self.show_progress and self.rank == 0)
        if self.world > 1 and self.rank == 0:
            dist.barrier()
        model_config.pos_tags = list(data.vocabulary.tags)
        return data

    def _blocks(self) -> tuple[torch.Tensor, torch.Tensor]:
        train, valid = self.train_docs, self.valid_docs
        block = self.sequence_tokens
        eos = self.tokenizer.eos_id
        train_blocks = make_blocks(self.tokenizer.encode_batch(train), eos, block)
        valid_blocks = make_blocks(self.tokenizer.encode_batch(valid), eos, block) if valid else train_blocks[:0]
        return train_blocks, valid_blocks

    # ----- the loop's hooks --------------------------------------------------------------
    def _step_targets(self, step: int) -> torch.Tensor:
        """The targets of the whole global batch of `step` (every rank sees them): [B, block_size]."""
        return self.train_blocks[self.order.global_batch(step)][:, 1:].to(self.device)

    def loss_module(self) -> torch.nn.Module:
        if self.pos is not None:  # POSG: Eq. 4 on the observed tags is the model's own forward (MLE only)
            return self.model
        return ObjectiveModule(self.model, self.objective)

    def begin_step(self, step: int) -> None:
        self.objective.begin_step(step, self._step_targets(step))

    def micro_batches(self, step: int) -> list[MicroBatch]:
        ids = self.order.global_batch(step)[self.rank :: self.world]
        batches = []
        for micro in ids.chunk(self.config.grad_accum):
            block = self.train_blocks[micro].to(self.device)  # [b, block_size + 1]
            tags = () if self.train_groups is None else (self.train_groups[micro][:, 1:].to(self.device),)
            batches.append(MicroBatch((block[:, :-1], block[:, 1:], *tags), block[:, 1:].numel()))
        return batches

    @torch.no_grad()
    def evaluate(self) -> float:
        """Mean validation loss over the first `eval_batches` batches (same on every rank)."""
        blocks = self.valid_blocks if len(self.valid_blocks) else self.train_blocks
        losses = []
        size = max(1, self.config.batch_size // self.world)
        with eval_mode(self.model):
            for start in range(0, min(len(blocks), size * self.config.eval_batches), size):
                block = blocks[start : start + size].to(self.device)
                with self.autocast():
                    losses.append(float(self.model(block[:, :-1], block[:, 1:])))
        return sum(losses) / len(losses)

    def validation(self) -> dict[str, float]:
        loss = self.evaluate()
        return {"valid_loss": loss, "valid_ppl": math.exp(min(loss, 50))}

    def checkpoint_meta(self) -> dict[str, Any]:
        return {"model": self.model_config.to_dict()}

    def after_resume(self, step: int) -> None:
        self.objective.restore(step, self._step_targets)  # e.g. AGG's token memory replays earlier targets

    def final_summary(self, summary: dict[str, Any]) -> None:
        if len(self.valid_blocks):  # final number on the whole held-out set, as `variorum perplexity`
            summary["valid_loss"], summary["valid_ppl"] = block_perplexity(self.model, self.valid_blocks)

    def provenance(self, summary: dict[str, Any]) -> dict[str, Any]:
        files = [{"path": p, "sha256": file_sha256(Path(p))} for p in self.config.train_files]
        provenance: dict[str, Any] = {
            "data": files, "documents": {"train": len(self.train_docs), "valid": len(self.valid_docs)},
            "trainable": {"setting": self.trainable.setting, "parameters": self.trainable.trained,
                          "of": self.trainable.total}}
        if self.pos is not None:  # POSG: which tagger made V_ρ
            provenance["pos_tagger"] = self.pos.tagger
        return provenance

    def render_card(self, provenance: dict[str, Any]) -> str:
        return render_card(self.model, provenance, self.device, self.world)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="variorum train", description="Train a Variorum language model.")
    parser.add_argument("--config", type=Path, help="JSON file with 'model' and 'train' sections")
    parser.add_argument("--tokenizer", type=Path, help="reuse this tokenizer directory instead of training one")
    parser.add_argument("--init-from-hf", metavar="NAME-OR-DIR",
                        help="start from a pretrained GPT-2 checkpoint (a folder, or a name in the local Hugging Face "
                             "cache): imported into OUT_DIR/start as `variorum import` does, then --init-from it")
    add_run_flags(parser)
    add_dataclass_flags(parser, ModelConfig)
    parser.add_argument("--eps", dest="termination_eps", type=float, default=None,
                        help="ε of the ST/NMST termination (same as --termination-eps)")
    add_dataclass_flags(parser, TrainConfig)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = "variorum train " + " ".join(sys.argv[1:] if argv is None else argv)
    try:
        base = read_config_file(args.config) if args.config else {}
        train_config = dataclass_from_flags(TrainConfig, args, config_from_dict(TrainConfig, base.get("train", {})))
        if args.init_from_hf:
            train_config.init_from = str(imported_start(args.init_from_hf, train_config.init_from,
                                                        Path(train_config.out_dir)))
        check_start_flags(args, train_config.init_from)
        settings = {**start_model_settings(train_config.init_from), **base.get("model", {})}  # a start's by default
        model_config = dataclass_from_flags(ModelConfig, args, config_from_dict(ModelConfig, settings))
        trainer = Trainer(model_config, train_config, args.tokenizer, command, not args.no_progress)
        summary = trainer.run(resume=args.resume, chunk_steps=args.chunk_steps, allow_fresh=args.allow_fresh_start)
    except (OSError, ValueError, BundleError, TaggerUnavailableError) as error:
        # Bad flags, config or data (ConfigError, CorpusError and JSON errors are ValueErrors), an
        # unreadable file, a checkpoint that does not fit, or no POS tagger: one line saying what to fix.
        print(f"variorum train: error: {error}", file=sys.stderr)
        return 2
    if trainer.rank == 0:
        print(json.dumps(summary, indent=2))
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
