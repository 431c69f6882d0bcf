"""One training loop for every model family (docs/training-and-bundles.md).

`TrainingLoop` does what every run does the same way: AdamW (weight decay on matrices only,
fused), linear warmup + cosine schedule, gradient accumulation, bf16 autocast where the device
multiplies bf16 fast (engine/training/precision.py), `torch.compile` (by default on the CPU, for runs of
COMPILE_MIN_STEPS or more), gradient clipping, validation every `eval_every` steps, early stopping,
a checkpoint every `save_every` steps and at the end of a chunk (exact `--resume`), the metrics
log (`metrics.jsonl`) and loss curve, a progress bar with the precision and tokens/s, and at the
end the bundle in `<out_dir>/bundle` through the one bundle writer (engine/bundles/bundle.py).

A family subclasses it and supplies only what is its own: the micro-batches of a step and the
module whose forward turns one into a loss, its validation numbers, its card and provenance
(engine/lm/train.py: language models with their objectives; engine/permgen/train.py: PermGen's
π-SGD permuted targets).
"""

from __future__ import annotations

import abc
import argparse
import json
import math
import os
import sys
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from engine.bundled_model import BundledModel
from engine.bundles.bundle import OnBase, save_bundle
from engine.bundles.words import training_words
from engine.config import ConfigError, TrainConfig
from engine.devices import resolve_device
from engine.files.small_reads import UnusableFileError, read_small_json
from engine.tokenizer import VariorumTokenizer
from engine.torch_modes import eval_mode
from engine.training.checkpoint import (
    CheckpointError,
    load_checkpoint,
    resume_state,
    save_checkpoint,
    state_seconds,
    state_section,
)
from engine.training.loss_plot import plot_loss_curve
from engine.training.metrics_log import METRICS_FILE, last_logged_step, trim_metrics_log
from engine.training.precision import resolve_precision
from engine.training.speed import Throughput, build_optimizer, compile_step, compile_wanted, mark_weights_updated
from engine.training.start_weights import start_base
from engine.training.trainable import LowRank, merge_lora, select_trainable
from engine.word_sources import write_bundle_words

M = TypeVar("M", bound=BundledModel)  # any family's model: the bundle writer saves it through this base


def learning_rate(step: int, config: TrainConfig) -> float:
    """Linear warmup to lr, then cosine decay to min_lr at max_steps."""
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    span = max(1, config.max_steps - config.warmup_steps)
    progress = min(1.0, (step - config.warmup_steps) / span)
    return config.min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (config.lr - config.min_lr)


class TrainingDivergedError(ValueError):
    """The loss or the weights stopped being finite numbers (too high a learning rate, bad data)."""


def check_finite_loss(step: int, loss: float, first: bool = False) -> None:
    """Stop at the first non-finite loss: every later step, checkpoint and bundle would be NaN. The `first`
    step of a run computes its loss on the weights it started from, before any update: no lower --lr helps."""
    if not math.isfinite(loss):
        advice = ("it is the first step of this run: the weights it started from (its --init-from bundle, or the "
                  "checkpoint it resumed) or the data hold NaN or infinite values" if first else
                  "lower --lr (or check the data) and start again, or --resume from the last checkpoint (it holds "
                  "finite weights)")
        raise TrainingDivergedError(f"training diverged at step {step}: the loss is {loss}; {advice}")


def check_finite_weights(step: int, model: torch.nn.Module) -> None:
    """Refuse to save weights holding NaN/inf (an update can break them while the loss was still finite)."""
    broken = [name for name, p in model.named_parameters() if not bool(torch.isfinite(p).all())]
    if broken:
        raise TrainingDivergedError(
            f"training diverged at step {step}: {len(broken)} weight tensor(s) hold NaN/inf (first: {broken[0]}); "
            "nothing was saved for this step; lower --lr and start again"
        )


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """The flags every trainer command shares: resuming, training in chunks, progress."""
    parser.add_argument("--resume", action="store_true", help="continue from <out-dir>/checkpoint")
    parser.add_argument("--allow-fresh-start", action="store_true",
                        help="with --resume: start from step 0 when there is no checkpoint (default: error)")
    parser.add_argument("--chunk-steps", type=int, default=0,
                        help="stop after this many steps with a checkpoint (train in chunks; 0 = to the end)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (logs only)")


def read_config_file(path: Path) -> dict[str, Any]:
    """A trainer's --config JSON ({"model": {...}, "train": {...}, ...}), or a ConfigError naming the file."""
    try:
        data = read_small_json(path, f"config file {path}")
    except UnusableFileError as error:
        raise ConfigError(str(error)) from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a JSON object with 'model' and/or 'train'")
    return data


@dataclass
class MicroBatch:
    """The forward arguments of one micro-batch (on the device) and how many target tokens it trains on."""

    inputs: tuple[Any, ...]
    tokens: int


@dataclass
class EarlyStop:
    """Early stopping state: the best watched validation number so far and evaluations since it improved.

    Saved in every checkpoint, so a run trained in chunks stops where an uninterrupted one would."""

    best: float = math.inf
    best_step: int = 0
    evals_without_gain: int = 0
    stopped: bool = False

    def update(self, step: int, value: float, patience: int) -> bool:
        """Record one validation number (lower is better); True when training should stop now."""
        if value < self.best:
            self.best, self.best_step, self.evals_without_gain = value, step, 0
        else:
            self.evals_without_gain += 1
        self.stopped = 0 < patience <= self.evals_without_gain
        return self.stopped


def training_finished(state: dict[str, Any]) -> bool:
    """Whether a checkpoint's state.json ends its run: `max_steps` reached, or stopped early."""
    done = int(state.get("step", 0)) >= int(state.get("train", {}).get("max_steps", 1))
    return done or bool(state.get("early_stop", {}).get("stopped", False))


class TrainingLoop(abc.ABC, Generic[M]):
    """The shared loop; a family sets `model`, `tokenizer` and `optimizer` (`_set_model`) and the hooks."""

    compilable: ClassVar[bool] = False  # fixed batch shapes: compiled once (static shapes), also on CUDA
    distributed: ClassVar[bool] = False  # can run under torchrun (DDP)
    watched_metric: ClassVar[str]  # the validation number early stopping watches (lower is better)
    fresh_parameters: tuple[str, ...] = ()  # name prefixes of parameters the start bundle did not have

    model: M
    tokenizer: VariorumTokenizer
    optimizer: torch.optim.Optimizer

    def __init__(self, train: TrainConfig, command: str = "", show_progress: bool = True) -> None:
        self.train_config = train
        self.out = Path(train.out_dir)
        self.command = command
        self.show_progress = show_progress
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.device = resolve_device(train.device)
        self.precision = resolve_precision(train.precision, self.device)
        if self.world > 1 and not self.distributed:
            raise ConfigError(f"{type(self).__name__} trains in one process; run it without torchrun")
        if self.world > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")
        if train.batch_size % (self.world * train.grad_accum):
            raise ConfigError(
                f"batch_size {train.batch_size} must divide evenly over {self.world} process(es) "
                f"x {train.grad_accum} accumulation step(s)"
            )
        self.seconds_before = 0.0  # training time spent in earlier chunks of a resumed run
        self.early_stop = EarlyStop()
        self.throughput = Throughput()

    def _set_model(self, model: M) -> None:
        """Take the built (and started) model: freeze what `trainable` does not train, then build AdamW."""
        if self.train_config.trainable != "all" and not self.train_config.init_from:
            raise ConfigError(f"trainable {self.train_config.trainable} fine-tunes a pretrained start: "
                              "give --init-from BUNDLE (or --init-from-hf CHECKPOINT)")
        # frozen weights get no optimizer state; parameters new in this run train in every setting
        self.trainable = select_trainable(model, self.train_config, self.fresh_parameters)
        self.low_rank: LowRank = {}  # LoRA's updates, once merged at the end
        model.to(self.device)
        self.model = model
        self.optimizer = build_optimizer(self.model, self.train_config, undecayed=self.trainable.row_trained)

    # ----- what a family supplies --------------------------------------------------------
    @abc.abstractmethod
    def micro_batches(self, step: int) -> list[MicroBatch]:
        """This rank's share of step `step`'s batch, cut into `grad_accum` micro-batches."""

    def loss_module(self) -> torch.nn.Module:
        """The module whose forward(*micro_batch.inputs) is the loss to minimise."""
        return self.model

    def begin_step(self, step: int) -> None:
        """Called before the micro-batches of `step` (e.g. AGG's token memory sees the step's targets)."""

    @abc.abstractmethod
    def validation(self) -> dict[str, float]:
        """Validation numbers, among them `watched_metric`; the model is in eval mode meanwhile."""

    @abc.abstractmethod
    def checkpoint_meta(self) -> dict[str, Any]:
        """The model config sections a checkpoint stores; a resumed run must have the same ones."""

    def after_resume(self, step: int) -> None:
        """Called once the checkpoint of `step` is loaded (restore state the weights do not hold)."""

    def finish_training(self) -> None:
        """After the last step, before the final numbers and the bundle: merge LoRA's adapters into their
        weights (a plain model from here on: decoding, ONNX export and the bundle need no peft)."""
        if self.trainable.lora_targets:
            self.low_rank = merge_lora(self.model, self.trainable)

    def bundle_base(self) -> OnBase | None:
        """The pretrained checkpoint the bundle is written on (it then stores only what changed), if any:
        the start bundle's (engine/training/start_weights.py)."""
        return start_base(self.train_config.init_from, self.model.kind, self.low_rank,
                          partial=self.train_config.trainable != "all")

    def final_summary(self, summary: dict[str, Any]) -> None:
        """Add the final numbers (e.g. on the whole held-out set) before the bundle is written."""

    @abc.abstractmethod
    def provenance(self, summary: dict[str, Any]) -> dict[str, Any]:
        """What the bundle records about its data and run (the loop adds train, summary and command)."""

    @abc.abstractmethod
    def render_card(self, provenance: dict[str, Any]) -> str:
        """The bundle's card.md."""

    # ----- the loop ----------------------------------------------------------------------
    def autocast(self) -> AbstractContextManager[Any]:
        """bf16 autocast (matmuls in bf16, reductions in float32) when the run's precision is bf16."""
        return self.precision.autocast()

    def training_module(self) -> torch.nn.Module:
        """The loss module as `train_step` runs it: wrapped in DDP under torchrun, compiled when wanted."""
        module = self.loss_module()
        if self.world > 1:
            device_ids = None if self.device.index is None else [self.device.index]
            module = DistributedDataParallel(module, device_ids=device_ids)
        config = self.train_config
        frozen_states = config.cache_frozen_blocks  # looked up by the ids' bytes: not traceable
        if not frozen_states and compile_wanted(config.compile, self.device.type, self.compilable, config.max_steps):
            module = compile_step(module, self.device.type, self.compilable)
        return module

    def train_step(self, step: int, module: torch.nn.Module) -> tuple[float, int]:
        """One optimizer step on this rank's share of the batch; returns its mean loss and target tokens."""
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate(step, self.train_config)
        self.begin_step(step)
        micro_batches = self.micro_batches(step)
        total, tokens = 0.0, 0
        for index, batch in enumerate(micro_batches):
            last = index == len(micro_batches) - 1
            sync = nullcontext() if last or self.world == 1 else module.no_sync()  # type: ignore[operator]
            with sync, self.autocast():
                loss = module(*batch.inputs) / len(micro_batches)
                loss.backward()
            total += float(loss.detach())
            tokens += batch.tokens
        if self.train_config.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.train_config.grad_clip)
        self.optimizer.step()
        mark_weights_updated(self.optimizer)
        self.optimizer.zero_grad(set_to_none=True)
        return total, tokens * self.world

    def _validate(self) -> dict[str, float]:
        with eval_mode(self.model), torch.no_grad():
            return self.validation()

    def _log(self, record: dict[str, Any]) -> None:
        if self.rank == 0:
            with (self.out / METRICS_FILE).open("a") as log:
                log.write(json.dumps(record) + "\n")

    def _checkpoint(self, step: int, seconds: float) -> None:
        check_finite_weights(step, self.model)  # on every rank: DDP keeps the replicas equal
        if self.rank == 0:
            meta = {**self.checkpoint_meta(), "train": self.train_config.to_dict(), "train_seconds": seconds,
                    "early_stop": asdict(self.early_stop), "throughput": asdict(self.throughput)}
            save_checkpoint(self.out / "checkpoint", self.model, self.optimizer, step, meta)
        if self.world > 1:
            dist.barrier()

    def _resume(self, allow_fresh: bool) -> int:
        """Restore <out_dir>/checkpoint; return the step to go on from (0 without one, if allowed)."""
        directory = self.out / "checkpoint"
        state = resume_state(directory, allow_fresh)
        if state is None:
            return 0
        for key, value in self.checkpoint_meta().items():
            if state.get(key) != json.loads(json.dumps(value)):  # as stored (tuples → lists)
                raise ConfigError(f"{directory} was written for another model config ({key!r} differs); "
                                  "resume with the same flags or use a new --out-dir")
        seconds = state_seconds(state, directory)
        early_stop = state_section(state, "early_stop", EarlyStop, directory)
        throughput = state_section(state, "throughput", Throughput, directory)  # absent from older checkpoints
        self._check_resume_step(directory, state["step"])
        step = load_checkpoint(directory, self.model, self.optimizer)
        self.seconds_before, self.early_stop, self.throughput = seconds, early_stop, throughput
        self.after_resume(step)
        return step

    def _check_resume_step(self, directory: Path, step: int) -> None:
        """Refuse a checkpoint step this run cannot go on from: one past `max_steps` (the bundle's card would
        claim steps never trained) or past the steps the metrics log records (a damaged or edited state.json:
        the loop logs every step before its checkpoint)."""
        max_steps = self.train_config.max_steps
        if step > max_steps:
            raise CheckpointError(f"checkpoint {directory} is at step {step}, beyond max_steps {max_steps}: "
                                  "resume with the run's own max_steps, or use a new --out-dir")
        logged = last_logged_step(self.out / METRICS_FILE) if self.rank == 0 else step
        if step > logged:
            raise CheckpointError(f"checkpoint {directory} is at step {step} but {METRICS_FILE} records only "
                                  f"{logged} step(s): the run folder is damaged; start again in a new --out-dir")

    def run(self, resume: bool = False, chunk_steps: int = 0, allow_fresh: bool = False) -> dict[str, Any]:
        """Train to `max_steps` (or `chunk_steps` more steps, then checkpoint and return), or until
        early stopping; then write the bundle. Returns a summary (validation numbers, step, time).

        `resume` without a checkpoint in `<out_dir>/checkpoint` raises `NoCheckpointError` unless
        `allow_fresh` (then it starts at step 0)."""
        config = self.train_config
        self.out.mkdir(parents=True, exist_ok=True)
        start = self._resume(allow_fresh) if resume else 0
        if self.rank == 0:
            trim_metrics_log(self.out / METRICS_FILE, start)
        module = self.training_module()
        self.model.train()
        end = min(config.max_steps, start + chunk_steps) if chunk_steps else config.max_steps
        end = start if self.early_stop.stopped else end  # an early-stopped run is finished
        show = self.show_progress and self.rank == 0
        if self.precision.note and self.rank == 0:
            print(self.precision.note, file=sys.stderr)
        bar = tqdm(total=config.max_steps, initial=start, disable=not show, unit="step", dynamic_ncols=True,
                   desc=self.precision.name)
        began = time.perf_counter()
        summary: dict[str, Any] = {"step": start}  # replaced by each validation's numbers
        for step in range(start, end):
            tick = time.perf_counter()
            loss, tokens = self.train_step(step, module)
            check_finite_loss(step + 1, loss, first=step == start)
            rate = self.throughput.add(tokens, time.perf_counter() - tick)
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.3f}", tok_s=f"{rate:,.0f}")
            record: dict[str, Any] = {"step": step + 1, "train_loss": loss, "lr": learning_rate(step, config),
                                      "tokens_per_s": rate, "precision": self.precision.name}
            stop = False
            if (step + 1) % config.eval_every == 0 or step + 1 == end:
                metrics = self._validate()
                record.update(metrics)
                summary = {"step": step + 1, **metrics}
                numbers = ", ".join(f"{name} {value:.4f}" for name, value in metrics.items())
                bar.write(f"step {step + 1}: train loss {loss:.4f}, {numbers}, {rate:,.0f} tokens/s")
                stop = self.early_stop.update(step + 1, metrics[self.watched_metric], config.early_stop_patience)
            self._log(record)
            if (step + 1) % config.save_every == 0 or step + 1 == end or stop:
                self._checkpoint(step + 1, self.seconds_before + time.perf_counter() - began)
            if stop:
                bar.write(f"early stop at step {step + 1}: {self.watched_metric} has not improved for "
                          f"{config.early_stop_patience} evaluations (best {self.early_stop.best:.4f} "
                          f"at step {self.early_stop.best_step})")
                break
        bar.close()
        summary["train_seconds"] = self.seconds_before + time.perf_counter() - began
        summary.update(precision=self.precision.name, tokens_per_s=self.throughput.tokens_per_s)
        if self.early_stop.stopped:
            summary["stopped_early"] = True
        elif end < config.max_steps:
            return summary
        if self.watched_metric not in summary:  # resumed at its end: no step ran, so measure what the bundle holds
            summary.update(self._validate())
        self.finish_training()
        self.final_summary(summary)
        if self.rank == 0:
            self._export(summary)
        return summary

    def _export(self, summary: dict[str, Any]) -> None:
        if (self.out / METRICS_FILE).is_file():
            plot_loss_curve(self.out / METRICS_FILE, self.out / "loss_curve.png")
        provenance = {"train": self.train_config.to_dict(), **self.provenance(summary), "summary": summary,
                      "command": self.command}
        save_bundle(self.out / "bundle", self.model, self.tokenizer, self.render_card(provenance),
                    provenance, self.train_config.bundle_dtype, self.bundle_base())
        words = training_words(self.out / "bundle")  # the real-words control's training words (words.txt)
        if words is not None:
            write_bundle_words(self.out / "bundle", words)
