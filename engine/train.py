"""Training entry point: `variorum train …` or `python -m engine.train …` (also under torchrun).

One run: read the corpus, split it by document hash, train (or reuse) the tokenizer, cut token
blocks, and optimise with AdamW (linear warmup, cosine decay, gradient clipping, gradient
accumulation). Validation perplexity every `eval_every` steps, a checkpoint every
`save_every` steps (exact resume: `--resume`), a metrics log (`metrics.jsonl`), a loss-curve
PNG and, at the end, a model bundle in `<out_dir>/bundle`.

Distributed: under `torchrun`, each rank takes every world_size-th sequence of the same global
batch and DDP averages the gradients, so N processes follow the 1-process run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any, cast

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from engine.backbones import load_hf_gpt2_backbone
from engine.bundle import save_bundle
from engine.checkpoint import load_checkpoint, resume_state, save_checkpoint
from engine.cli_args import add_dataclass_flags, dataclass_from_flags
from engine.config import ConfigError, ModelConfig, TrainConfig, config_from_dict
from engine.data.blocks import BatchOrder, make_blocks
from engine.data.corpus import file_sha256, read_corpus, split_documents
from engine.devices import resolve_device
from engine.evaluate import block_perplexity
from engine.heads.registry import fit_head, load_fitted_head
from engine.model import LanguageModel
from engine.objectives import ObjectiveContext, ObjectiveModule, build_objective
from engine.plots import plot_loss_curve
from engine.pos.tagger import TaggerUnavailableError
from engine.pos.training import PosTrainingData, prepare_pos_training
from engine.tokenizer import VariorumTokenizer
from engine.training_card import render_card


def learning_rate(step: int, config: TrainConfig) -> float:
    """Linear warmup to lr, then cosine decay to min_lr at max_steps."""
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    span = max(1, config.max_steps - config.warmup_steps)
    progress = min(1.0, (step - config.warmup_steps) / span)
    return config.min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (config.lr - config.min_lr)


def build_optimizer(model: torch.nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only (not on biases and layer norms); fused on CUDA."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    fused = bool(params) and all(p.is_cuda for p in params)  # one kernel per step instead of one per tensor
    return torch.optim.AdamW(groups, lr=config.lr, betas=(config.beta1, config.beta2), fused=fused)


class TrainingDivergedError(ValueError):
    """The loss or the weights stopped being finite numbers (too high a learning rate, bad data)."""


def check_finite_loss(step: int, loss: float) -> None:
    """Stop at the first non-finite loss: every later step, checkpoint and bundle would be NaN."""
    if not math.isfinite(loss):
        raise TrainingDivergedError(
            f"training diverged at step {step}: the loss is {loss}; lower --lr (or check the data) and "
            "start again, or --resume from the last checkpoint (it holds finite weights)"
        )


def check_finite_weights(step: int, model: torch.nn.Module) -> None:
    """Refuse to save weights holding NaN/inf (an update can break them while the loss was still finite)."""
    broken = [name for name, p in model.named_parameters() if not bool(torch.isfinite(p).all())]
    if broken:
        raise TrainingDivergedError(
            f"training diverged at step {step}: {len(broken)} weight tensor(s) hold NaN/inf (first: {broken[0]}); "
            "nothing was saved for this step; lower --lr and start again"
        )


class Trainer:
    """Runs one training job end to end; see the module docstring."""

    def __init__(
        self,
        model_config: ModelConfig,
        config: TrainConfig,
        tokenizer_dir: Path | None = None,
        init_from_hf: Path | None = None,
        command: str = "",
        show_progress: bool = True,
    ) -> None:
        self.config = config
        self.out = Path(config.out_dir)
        self.command = command
        self.show_progress = show_progress
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.device = resolve_device(config.device)
        if self.world > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")
        if config.batch_size % (self.world * config.grad_accum):
            raise ConfigError(
                f"batch_size {config.batch_size} must divide evenly over {self.world} process(es) "
                f"x {config.grad_accum} accumulation step(s)"
            )
        self.train_docs, self.valid_docs = self._documents()
        self.tokenizer = self._tokenizer(tokenizer_dir, model_config.vocab_size)
        model_config.vocab_size = self.tokenizer.vocab_size
        model_config, head_state = fit_head(model_config, self.tokenizer)  # F²: classes from the token counts
        self.pos = self._pos_data(model_config)  # POSG: tagged training text, else None
        self.model_config = model_config
        torch.manual_seed(config.seed)  # identical initial weights on every rank
        backbone = load_hf_gpt2_backbone(init_from_hf) if init_from_hf else None
        if backbone is not None and backbone.config.vocab_size != model_config.vocab_size:
            raise ConfigError(
                f"{init_from_hf} has a {backbone.config.vocab_size}-token vocabulary, "
                f"the tokenizer has {model_config.vocab_size}"
            )
        self.model = LanguageModel(backbone.config if backbone else model_config, backbone).to(self.device)
        load_fitted_head(self.model.head, head_state)
        if self.pos is not None:
            self.pos.install(self.model.head)  # V_ρ from the training split
        self.model_config = self.model.config
        self.optimizer = build_optimizer(self.model, config)
        self.train_blocks, self.valid_blocks = self._blocks()
        if self.device.type == "cuda":  # the whole token stream lives on the GPU: no copy per step
            self.train_blocks = self.train_blocks.to(self.device)
        self.order = BatchOrder(len(self.train_blocks), config.batch_size, config.seed)
        # POSG: the observed tag of every position, laid out exactly like train_blocks
        self.train_groups = self.pos.blocks(self.model_config.block_size) if self.pos is not None else None
        steps_per_epoch = -(-len(self.train_blocks) // config.batch_size)
        self.objective = build_objective(config, ObjectiveContext(
            self.model_config.vocab_size, steps_per_epoch, self.model_config.block_size, self.device))
        self.seconds_before = 0.0  # training time spent in earlier chunks of a resumed run

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
        source = tokenizer_dir or (own if (own / "tokenizer.json").is_file() else None)
        if source is None and self.rank == 0:
            VariorumTokenizer.train(self.train_docs, vocab_size=vocab_size).save(own)
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
        block = self.model.config.block_size
        eos = self.tokenizer.eos_id
        train_blocks = make_blocks(self.tokenizer.encode_batch(train), eos, block)
        valid_blocks = make_blocks(self.tokenizer.encode_batch(valid), eos, block) if valid else train_blocks[:0]
        return train_blocks, valid_blocks

    # ----- loop --------------------------------------------------------------------------
    def _autocast(self) -> Any:
        if self.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return nullcontext()

    def _train_step(self, step: int, ddp: torch.nn.Module) -> float:
        """One optimizer step on this rank's share of the global batch; returns its mean loss."""
        ids = self.order.global_batch(step)[self.rank :: self.world]
        micro_batches = ids.chunk(self.config.grad_accum)
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate(step, self.config)
        total = 0.0
        self.objective.begin_step(step, self.train_blocks[ids][:, 1:].to(self.device))
        for index, micro in enumerate(micro_batches):
            block = self.train_blocks[micro].to(self.device)  # [b, block_size + 1]
            last = index == len(micro_batches) - 1
            sync = nullcontext() if last or self.world == 1 else ddp.no_sync()  # type: ignore[operator]
            with sync, self._autocast():
                tags = () if self.train_groups is None else (self.train_groups[micro][:, 1:].to(self.device),)
                loss = ddp(block[:, :-1], block[:, 1:], *tags) / len(micro_batches)
                loss.backward()
            total += float(loss.detach())
        if self.config.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return total

    @torch.no_grad()
    def evaluate(self) -> float:
        """Mean validation loss over the first `eval_batches` batches (same on every rank)."""
        blocks = self.valid_blocks if len(self.valid_blocks) else self.train_blocks
        self.model.eval()
        losses = []
        size = max(1, self.config.batch_size // self.world)
        for start in range(0, min(len(blocks), size * self.config.eval_batches), size):
            block = blocks[start : start + size].to(self.device)
            with self._autocast():
                losses.append(float(self.model(block[:, :-1], block[:, 1:])))
        self.model.train()
        return sum(losses) / len(losses)

    def _log(self, record: dict[str, Any]) -> None:
        if self.rank == 0:
            with (self.out / "metrics.jsonl").open("a") as log:
                log.write(json.dumps(record) + "\n")

    def _trim_metrics_log(self, start: int) -> None:
        """Keep only records up to the step we start from: a run killed after its last
        checkpoint redoes those steps, and a fresh run starts a fresh log."""
        path = self.out / "metrics.jsonl"
        if path.is_file():
            kept = [line for line in path.read_text().splitlines() if line and json.loads(line)["step"] <= start]
            path.write_text("".join(line + "\n" for line in kept))

    def _checkpoint(self, step: int, seconds: float) -> None:
        check_finite_weights(step, self.model)  # on every rank: DDP keeps the replicas equal
        if self.rank == 0:
            meta = {"model": self.model_config.to_dict(), "train": self.config.to_dict(), "train_seconds": seconds}
            save_checkpoint(self.out / "checkpoint", self.model, self.optimizer, step, meta)
        if self.world > 1:
            dist.barrier()

    def run(self, resume: bool = False, chunk_steps: int = 0, allow_fresh: bool = False) -> dict[str, Any]:
        """Train to `max_steps` (or `chunk_steps` more steps, then checkpoint and return).

        `resume` without a checkpoint in `<out_dir>/checkpoint` raises `NoCheckpointError`
        unless `allow_fresh` (then it starts at step 0).

        Returns a summary: final validation loss/perplexity and timing. A bundle is exported
        only when `max_steps` is reached.
        """
        self.out.mkdir(parents=True, exist_ok=True)
        start = 0
        state = resume_state(self.out / "checkpoint", allow_fresh) if resume else None
        if state is not None:
            start = load_checkpoint(self.out / "checkpoint", self.model, self.optimizer)
            self.objective.restore(  # e.g. AGG's token memory replays the earlier steps' targets
                start, lambda s: self.train_blocks[self.order.global_batch(s)][:, 1:].to(self.device))
            self.seconds_before = float(state.get("train_seconds", 0.0))
        if self.rank == 0:
            self._trim_metrics_log(start)
        ddp: torch.nn.Module = ObjectiveModule(self.model, self.objective)
        if self.pos is not None:  # POSG: Eq. 4 on the observed tags is the model's own forward (MLE only)
            ddp = self.model
        if self.world > 1:
            device_ids = None if self.device.index is None else [self.device.index]
            ddp = DistributedDataParallel(ddp, device_ids=device_ids)
        if self.config.compile and self.device.type == "cuda":  # fixed [B, block] shapes: compiles once
            ddp = cast(torch.nn.Module, torch.compile(ddp))
        self.model.train()
        tokens_per_step = self.config.batch_size * self.model.config.block_size
        bar = tqdm(total=self.config.max_steps, initial=start, disable=not self.show_progress or self.rank != 0,
                   unit="step", dynamic_ncols=True)
        began = time.perf_counter()
        summary: dict[str, Any] = {}
        end = min(self.config.max_steps, start + chunk_steps) if chunk_steps else self.config.max_steps
        for step in range(start, end):
            tick = time.perf_counter()
            loss = self._train_step(step, ddp)
            check_finite_loss(step + 1, loss)
            rate = tokens_per_step / max(time.perf_counter() - tick, 1e-9)
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.3f}", tok_s=f"{rate:,.0f}")
            record: dict[str, Any] = {"step": step + 1, "train_loss": loss, "lr": learning_rate(step, self.config),
                                      "tokens_per_s": rate}
            done = step + 1 == end
            if (step + 1) % self.config.eval_every == 0 or done:
                valid = self.evaluate()
                record.update(valid_loss=valid, valid_ppl=math.exp(min(valid, 50)))
                summary = {"valid_loss": valid, "valid_ppl": record["valid_ppl"], "step": step + 1}
                bar.write(f"step {step + 1}: validation loss {valid:.4f}, perplexity {record['valid_ppl']:.2f}, "
                          f"{rate:,.0f} tokens/s")
            self._log(record)
            if (step + 1) % self.config.save_every == 0 or done:
                self._checkpoint(step + 1, self.seconds_before + time.perf_counter() - began)
        bar.close()
        summary["train_seconds"] = self.seconds_before + time.perf_counter() - began
        if end < self.config.max_steps:
            return summary
        if len(self.valid_blocks):  # final number on the whole held-out set, as `variorum perplexity`
            summary["valid_loss"], summary["valid_ppl"] = block_perplexity(self.model, self.valid_blocks)
        if self.rank == 0:
            if (self.out / "metrics.jsonl").is_file():
                plot_loss_curve(self.out / "metrics.jsonl", self.out / "loss_curve.png")
            self._export_bundle(summary)
        return summary

    def _export_bundle(self, summary: dict[str, Any]) -> None:
        files = [{"path": p, "sha256": file_sha256(Path(p))} for p in self.config.train_files]
        provenance = {
            "train": self.config.to_dict(),
            "data": files,
            "documents": {"train": len(self.train_docs), "valid": len(self.valid_docs)},
            "summary": summary,
            "command": self.command,
        }
        if self.pos is not None:  # POSG: which tagger made V_ρ
            provenance["pos_tagger"] = self.pos.tagger
        card = render_card(self.model, provenance, self.device, self.world)
        save_bundle(self.out / "bundle", self.model, self.tokenizer, card, provenance)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="variorum train", description="Train a Variorum language model.")
    parser.add_argument("--config", type=Path, help="JSON file with 'model' and 'train' sections")
    parser.add_argument("--tokenizer", type=Path, help="reuse this tokenizer directory instead of training one")
    parser.add_argument("--init-from-hf", type=Path, help="start from a local HF GPT-2 checkpoint directory")
    parser.add_argument("--resume", action="store_true", help="continue from <out-dir>/checkpoint")
    parser.add_argument("--allow-fresh-start", action="store_true",
                        help="with --resume: start from step 0 when there is no checkpoint (default: error)")
    parser.add_argument("--chunk-steps", type=int, default=0,
                        help="stop after this many steps with a checkpoint (train in chunks; 0 = to the end)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (logs only)")
    add_dataclass_flags(parser, ModelConfig)
    parser.add_argument("--eps", dest="termination_eps", type=float, default=None,
                        help="ε of the ST/NMST termination (same as --termination-eps)")
    add_dataclass_flags(parser, TrainConfig)
    return parser


def read_config_file(path: Path) -> dict[str, Any]:
    """The --config JSON ({"model": {...}, "train": {...}}), or a ConfigError naming the file."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ConfigError(f"config file {path} is not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a JSON object with 'model' and/or 'train'")
    return data


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = "variorum train " + " ".join(sys.argv[1:] if argv is None else argv)
    try:
        base = read_config_file(args.config) if args.config else {}
        model_config = dataclass_from_flags(ModelConfig, args, config_from_dict(ModelConfig, base.get("model", {})))
        train_config = dataclass_from_flags(TrainConfig, args, config_from_dict(TrainConfig, base.get("train", {})))
        trainer = Trainer(model_config, train_config, args.tokenizer, args.init_from_hf, command, not args.no_progress)
        summary = trainer.run(resume=args.resume, chunk_steps=args.chunk_steps, allow_fresh=args.allow_fresh_start)
    except (OSError, ValueError, TaggerUnavailableError) as error:
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
