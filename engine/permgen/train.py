"""`variorum train-permgen …`: train a PermGen model (or the `--no-permute` baseline), in either layout.

π-SGD (paper §4.2, Eq. 7): every step draws a fresh order per example (engine/permgen/
permutation.py), marks the targets in those orders and minimises the batch mean of the
per-example summed NLL. `--no-permute` trains the same model, data, steps and seed on the natural
order only; with the default hierarchical positions that is the paper's Hi-BART ablation (Table 6),
and with `--positions absolute` it is the plain seq2seq baseline of Table 2 (BART's learned absolute
decoder positions, natural order; the sentence marks stay so that both decode the same way).
Optimisation, checkpoints, validation and the bundle are the shared loop of engine/training/loop.py.

`--init-from BUNDLE` fine-tunes a bundle, e.g. an imported BART (`variorum import`): the run takes its
sizes and tokenizer, turns its decoder positions into the run's (engine/permgen/start.py), and
when the bundle is built on a pretrained checkpoint, writes its own bundle on that checkpoint too,
storing only what the fine-tune changed (engine/bundles/base.py). A Llama language model (the pretrained
base, `variorum get-base`) starts the decoder-only layout (engine/permgen/decoder_model.py;
docs/permgen-decoder-only.md), usually with `--trainable lora` or `last-N`: its sentence marks' rows train
with whatever else trains, and the bundle is written on the base. `cache_frozen_blocks` does not apply:
π-SGD writes every step's targets in new orders, so no sequence's frozen-block states would be met twice,
and the marks' rows feed the frozen blocks and move at every step.

`--task paraphrase` trains sentence → paraphrase on ParaSCI / MRPC / TurkCorpus pairs (one target sentence),
each training pair read both ways (engine/permgen/paraphrase_readers.py `both_directions`). With
`--paraphrase-source content_words` the model reads a sentence's content words instead, locally shuffled
in training, and prose files train it too, as sentence → itself (engine/permgen/content_words.py).

`--length-pool N` draws each batch from a pool of N batches' worth of examples sorted by length, so
batches pad little (engine/data/blocks.py `LengthBatchOrder`).

`--head posg` (POS-guided softmax): the training targets are tagged sentence by sentence once
(engine/permgen/tagging.py; `--pos-backend`, `--pos-cache-dir` as for `variorum train`), V_ρ is
built from them and installed in the head (so the bundle and checkpoints carry it), and every
step's batch carries each target's observed group, moved with its sentence through that step's
order; the per-token term of Eq. 7 is then the POSG paper's Eq. 4 term −log p(ρ) − log p(x | ρ).
Held-out NLL uses the marginal p(x) = Σ_ρ p(ρ) p(x | ρ), comparable with a softmax model's.

A checkpoint (engine/training/checkpoint.py: weights, AdamW and RNG state, step) is written every
`--save-every` steps and at the end of a chunk; `--resume` continues from it exactly (batches and
π-SGD orders are functions of (seed, step)), `--chunk-steps K` stops after K more steps. At the
end a bundle is written to `<out_dir>/bundle` with a card holding the run's numbers and command.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any

import torch

from engine.bundled_model import BundleError
from engine.bundles.bundle import load_model_bundle
from engine.bundles.words import learn_case_table
from engine.cli_args import add_dataclass_flags, check_start_flags, dataclass_from_flags, flags_given
from engine.config import ConfigError, ModelConfig, TrainConfig, config_from_dict
from engine.data.blocks import BatchOrder, LengthBatchOrder
from engine.data.paragraphs import ParagraphExample
from engine.heads.posg import POSGHead
from engine.heads.registry import fit_head, load_fitted_head
from engine.permgen.card import render_permgen_card
from engine.permgen.config import PermGenConfig
from engine.permgen.content_words import noisy_content_words
from engine.permgen.data import DataStats, encode_examples, load_examples, split_examples, tokenizer_texts
from engine.permgen.heldout import target_nll
from engine.permgen.model import EncodedExample
from engine.permgen.network import PermGenNetwork, build_permgen_model
from engine.permgen.permutation import PermutationSampler
from engine.permgen.rephrasings import selected_pairs, training_directions
from engine.permgen.start import start_model, start_sizes
from engine.permgen.tagging import attach_groups, tag_targets
from engine.permgen.text import ProseForm
from engine.pos.tagger import TaggerUnavailableError
from engine.pos.training import PosTrainingData
from engine.tokenizer import VariorumTokenizer
from engine.training.loop import MicroBatch, TrainingLoop, add_run_flags, read_config_file
from engine.training.start_weights import ensure_counts, imported_start, start_tokenizer_dir


class PermGenTrainer(TrainingLoop[PermGenNetwork[Any]]):
    """One PermGen run on the shared loop; `orders_log[step]` keeps the orders each step used (for checks)."""

    watched_metric = "valid_nll_natural"

    def __init__(
        self, config: PermGenConfig, train: TrainConfig, valid_files: list[str] | None = None,
        tokenizer_dir: Path | None = None, command: str = "",
        show_progress: bool = True,
    ) -> None:
        if train.objective != "mle":
            raise ConfigError(f"PermGen trains with the π-SGD likelihood only, got objective {train.objective!r}")
        if train.cache_frozen_blocks:
            raise ConfigError("cache_frozen_blocks does not apply to PermGen: π-SGD writes every step's targets in new "
                              "orders and the sentence marks' rows train, so no frozen-block states could be reused")
        super().__init__(train, command, show_progress)
        self.stats = DataStats()
        self.config = config  # its model section is completed below, once the tokenizer is known
        self.task, self.source_form = config.task, config.paraphrase_source
        self.prose = ProseForm(config.task, config.lowercase, learn_case_table([Path(f) for f in config.case_from])
                               if config.case_from else None) if config.text_form == "prose" else None
        self.train_examples, self.valid_examples = self._examples(valid_files or [])
        start = load_model_bundle(Path(train.init_from)).model if train.init_from else None
        if isinstance(start, PermGenNetwork) and start.config.lowercase != config.lowercase:
            raise ConfigError(f"init_from {train.init_from}: give the bundle's \"lowercase\" "
                              f"({start.config.lowercase})")
        self.tokenizer = self._tokenizer(start_tokenizer_dir(train.init_from, tokenizer_dir), config)
        ensure_counts(self.tokenizer, [" ".join((e.title, *e.keywords, *e.sentences)) for e in self.train_examples])
        config.model.vocab_size = self.tokenizer.vocab_size
        config.model, head_state = fit_head(config.model, self.tokenizer)  # F²: classes from token counts
        self.pos = self._pos_data(config.model)  # POSG: tagged training targets and V_ρ, else None
        torch.manual_seed(train.seed)
        model = build_permgen_model(config)
        load_fitted_head(model.head, head_state)
        if start is not None:  # parameters new to the start (position tables) train in any setting
            self.fresh_parameters = start_model(model, start, self.tokenizer, train.init_from)
        if self.pos is not None:
            self.pos.install(model.head)  # V_ρ from the training targets
        self._set_model(model)
        self.train_data: list[EncodedExample] = self._encode(self.train_examples)
        if self.pos is not None:  # held-out examples stay untagged: they are scored by the marginal
            self.train_data = attach_groups(self.train_data, self.pos)
        self.valid_data: list[EncodedExample] = self._encode(self.valid_examples)
        self.batches = self._batch_order(train)
        self.sampler = PermutationSampler(train.seed, identity=not config.permute)
        self.orders_log: list[list[list[int]]] = []

    def _examples(self, valid_files: list[str]) -> tuple[list[ParagraphExample], list[ParagraphExample]]:
        if not self.train_config.train_files:
            raise ConfigError("no training data: pass --train-files FILE [FILE ...]")
        task, form = self.task, self.source_form
        examples = load_examples([Path(p) for p in self.train_config.train_files], self.stats,
                                 self.train_config.max_docs, task, form)
        if task == "paraphrase":
            kept = selected_pairs(examples, self.config)
            self.stats.dropped_pairs, examples = len(examples) - len(kept), kept
        if valid_files:
            train, valid = examples, selected_pairs(load_examples([Path(p) for p in valid_files], DataStats(),
                                                                  task=task, source_form=form), self.config)
        else:
            train, valid = split_examples(examples, self.train_config.valid_fraction)
        if task != "paraphrase":
            return train, valid
        train = training_directions(train, self.config)
        if form == "content_words":  # noisy training sources; held-out ones are read as when decoding
            seed = self.train_config.seed << 32  # one fixed shuffle per training pair, reproducible from the seed
            train = [dataclasses.replace(e, title=noisy_content_words(e.title, seed + i)) for i, e in enumerate(train)]
        return train, valid

    def _batch_order(self, train: TrainConfig) -> BatchOrder | LengthBatchOrder:
        if not train.length_pool:
            return BatchOrder(len(self.train_data), train.batch_size, train.seed)
        lengths = [len(e.source) + sum(len(s) + 2 for s in e.sentences) for e in self.train_data]  # + the marks
        return LengthBatchOrder(lengths, train.batch_size, train.seed, train.length_pool)

    def _pos_data(self, model: ModelConfig) -> PosTrainingData | None:
        """POSG: tag the training targets (cached), build V_ρ and name the head's groups in
        `model.pos_tags` (so the checkpoint and bundle configs rebuild the same head). Else None."""
        if model.head != "posg":
            return None
        cache = Path(self.train_config.pos_cache_dir) if self.train_config.pos_cache_dir else None
        data = tag_targets(self.train_examples, self.tokenizer, self.train_config.pos_backend, cache)
        model.pos_tags = list(data.vocabulary.tags)
        return data

    @property
    def mark_group(self) -> int | None:
        """Group of the marks in POSG training batches (the special group); None for other heads."""
        return self.pos.special_group if self.pos is not None else None

    def _encode(self, examples: list[ParagraphExample]) -> list[EncodedExample]:
        c = self.config
        return encode_examples(examples, self.tokenizer, c.max_source_len, c.max_sentence_len, self.stats, c.lowercase,
                               c.task, c.paraphrase_source, self.prose)

    def run(self, resume: bool = False, chunk_steps: int = 0, allow_fresh: bool = False) -> dict[str, Any]:
        """The shared loop; a prose model's bundle also gets the case table its texts were written with."""
        summary = super().run(resume, chunk_steps, allow_fresh)
        bundle = self.out / "bundle"
        if self.prose is not None and self.prose.case is not None and self.rank == 0 and bundle.is_dir():
            self.prose.case.write(bundle)
        return summary

    def _tokenizer(self, tokenizer_dir: Path | None, config: PermGenConfig) -> VariorumTokenizer:
        if tokenizer_dir is not None:
            return VariorumTokenizer.load(tokenizer_dir)
        texts = tokenizer_texts(self.train_examples, config.lowercase, config.task, config.paraphrase_source)
        tokenizer = VariorumTokenizer.train(texts, vocab_size=config.model.vocab_size)
        tokenizer.save_folder(self.out / "tokenizer")
        return tokenizer

    # ----- the loop's hooks --------------------------------------------------------------
    def micro_batches(self, step: int) -> list[MicroBatch]:
        """π-SGD: a fresh order per example of the step's batch, drawn for the whole batch (so the orders
        do not depend on --grad-accum); the loss of each micro-batch is Eq. 7 (Eq. 4 terms for posg)."""
        examples = [self.train_data[i] for i in self.batches.global_batch(step).tolist()]
        orders = self.sampler.orders(step, [len(e.sentences) for e in examples])
        self.orders_log.append(orders)
        size = len(examples) // self.train_config.grad_accum
        batches = []
        for start in range(0, len(examples), size):
            batch = self.model.collate(examples[start : start + size], orders[start : start + size], self.mark_group)
            tokens = int((batch.targets >= 0).sum())  # counted on the CPU: no GPU sync
            batches.append(MicroBatch((batch.to(self.device),), tokens))
        return batches

    def step(self, step: int) -> float:
        """One optimizer step (π-SGD) outside `run`; returns its loss."""
        return self.train_step(step, self.model)[0]

    def evaluate(self, natural: bool = True) -> float:
        """Mean per-token NLL of the held-out targets (natural order, or one fixed random order each)."""
        data = self.valid_data or self.train_data[: self.train_config.batch_size]
        size = self.train_config.batch_size
        return target_nll(self.model, data, size, natural, self.train_config.seed + 1,
                          size * self.train_config.eval_batches)

    def validation(self) -> dict[str, float]:
        natural, permuted = self.evaluate(True), self.evaluate(False)
        return {"valid_nll_natural": natural, "valid_ppl_natural": math.exp(min(natural, 50)),
                "valid_nll_permuted": permuted}

    def checkpoint_meta(self) -> dict[str, Any]:
        return {"permgen": self.config.to_dict()}

    def after_resume(self, step: int) -> None:
        head = self.model.head
        if self.pos is not None and isinstance(head, POSGHead) and head.vocabulary() != self.pos.vocabulary:
            # same tag names but other (token, tag) pairs: the tagger changed since the checkpoint, and
            # this run's observed tags could fall outside the checkpoint's V_ρ (an infinite loss)
            raise ConfigError(f"{self.out / 'checkpoint'} was trained on other POS tags of the targets (another "
                              f"tagger or model version than {self.pos.tagger}?); use a new --out-dir")

    def provenance(self, summary: dict[str, Any]) -> dict[str, Any]:
        provenance: dict[str, Any] = {"data": vars(self.stats),
                                      "examples": {"train": len(self.train_data), "valid": len(self.valid_data)}}
        if self.pos is not None:  # POSG: which tagger made V_ρ
            provenance["pos_tagger"] = self.pos.tagger
        return provenance

    def render_card(self, provenance: dict[str, Any]) -> str:
        return render_permgen_card(self.model, provenance, self.device)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="variorum train-permgen",
                                     description="Train a PermGen model (title + keywords → paragraph, or sentence → "
                                                 "paraphrase with --task paraphrase): an encoder-decoder, or a "
                                                 "decoder-only one on a pretrained Llama (--layout decoder-only).")
    parser.add_argument("--config", type=Path, help="JSON file with 'model', 'permgen' and 'train' sections "
                        "(flags given override it)")
    parser.add_argument("--valid-files", nargs="+", default=None, help="held-out files (default: hash split)")
    parser.add_argument("--tokenizer", type=Path, help="reuse this tokenizer directory")
    parser.add_argument("--init-from-hf", metavar="NAME-OR-DIR",
                        help="start from a pretrained BART checkpoint (a folder, or a name in the local Hugging Face "
                             "cache): imported into OUT_DIR/start as `variorum import` does, then --init-from it")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads for torch (0 = torch's default)")
    add_run_flags(parser)
    add_dataclass_flags(parser, ModelConfig, skip=("backbone", "block_size", "pos_tags"))
    add_dataclass_flags(parser, PermGenConfig, skip=("model",))
    add_dataclass_flags(parser, TrainConfig, skip=("objective",))
    return parser


def run_configs(args: argparse.Namespace) -> tuple[PermGenConfig, TrainConfig]:
    """Defaults, then the sizes of the --init-from bundle (engine/permgen/start.py), then the --config file's
    "model" / "permgen" / "train" sections, then the flags given."""
    base = read_config_file(args.config) if args.config else {}
    train_defaults = dataclasses.asdict(TrainConfig(out_dir="runs/permgen", lr=5e-4, warmup_steps=50))
    train = dataclass_from_flags(TrainConfig, args,
                                 config_from_dict(TrainConfig, {**train_defaults, **base.get("train", {})}))
    if args.init_from_hf:
        train.init_from = str(imported_start(args.init_from_hf, train.init_from, Path(train.out_dir)))
    check_start_flags(args, train.init_from)
    start_model, start_permgen = start_sizes(Path(train.init_from)) if train.init_from else ({}, {})
    defaults = dataclasses.asdict(ModelConfig(backbone="bart", n_layer=2, n_embd=128))
    model = dataclass_from_flags(ModelConfig, args, config_from_dict(
        ModelConfig, {**defaults, **start_model, **base.get("model", {})}))
    # checked once, with the flags: the defaults alone may not fit the start (a window too short for them)
    config = config_from_dict(PermGenConfig, {**start_permgen, **base.get("permgen", {}), "model": model,
                                              **flags_given(PermGenConfig, args)})
    return config, train


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)  # on a shared CPU, 1 thread can be much faster than oversubscribing
    try:
        config, train = run_configs(args)
        trainer = PermGenTrainer(config, train, args.valid_files, args.tokenizer,
                                 "variorum train-permgen " + " ".join(argv), not args.no_progress)
        summary = trainer.run(resume=args.resume, chunk_steps=args.chunk_steps, allow_fresh=args.allow_fresh_start)
    except (OSError, ValueError, BundleError, TaggerUnavailableError) as error:
        # an unreadable --config or start bundle, bad flags or data (ConfigError, ReaderError, an unknown
        # --pos-backend are ValueErrors), or no POS tagger for posg
        print(f"variorum train-permgen: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
