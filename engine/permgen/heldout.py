"""Held-out NLL of a PermGen model: the number its card reports, computable from a stored bundle.

`target_nll` is the trainer's evaluation (mean −log p per target token over the held-out
examples, natural order or one fixed random order per paragraph from `seed`); `bundle_held_out`
re-measures a saved bundle on the same hash split of its training files, so a card's numbers can
be checked on the weights as stored (e.g. after a bf16 copy).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from engine.data.paragraphs import ParagraphExample
from engine.permgen.bundle import PermGenBundle
from engine.permgen.data import DataStats, encode_examples, load_examples, split_examples
from engine.permgen.marks import mark_target
from engine.permgen.model import EncodedExample
from engine.permgen.network import PermGenNetwork
from engine.permgen.permutation import PermutationSampler
from engine.permgen.rephrasings import selected_pairs
from engine.permgen.runner import Seq2SeqRunner
from engine.permgen.text import read_prose_form
from engine.torch_modes import eval_mode


@torch.no_grad()
def target_nll(model: PermGenNetwork[Any], data: list[EncodedExample], batch_size: int, natural: bool = True,
               seed: int = 0, max_examples: int = 0, runner: Seq2SeqRunner[Any] | None = None,
               progress: Callable[[int], None] | None = None) -> float:
    """Mean per-token NLL of `data`'s targets (marginal p(token) for POSG); first `max_examples` if > 0;
    `progress` is told how many examples each batch scored.

    `runner` (engine/permgen/runner.py, e.g. ONNX Runtime's; the encoder-decoder layout) computes the decoder
    states instead of the model's own backbone, one example at a time: exported graphs take unpadded inputs
    only."""
    device = next(model.parameters()).device
    sampler = PermutationSampler(seed, identity=natural)
    total, count = 0.0, 0
    end = min(len(data), max_examples) if max_examples else len(data)
    size = batch_size if runner is None else 1
    with eval_mode(model):
        for start in range(0, end, size):
            chunk = data[start : min(start + size, end)]
            # no groups: the marginal NLL, also for tagged training examples
            batch = model.collate(chunk, sampler.orders(start, [len(e.sentences) for e in chunk])).to(device)
            hidden = None
            if runner is not None:
                hidden = runner.decode(batch.decoder_input, batch.sentence, batch.local, runner.start(batch.source, 1))
            total += float(model.token_nll(batch, hidden).sum())
            count += int((batch.targets >= 0).sum())
            if progress is not None:
                progress(len(chunk))
    return total / max(count, 1)


def target_tokens(data: list[EncodedExample]) -> int:
    """How many tokens `target_nll` scores over `data`: each target's words with its marks and end."""
    return sum(len(mark_target(e.sentences, range(1, len(e.sentences) + 1))) for e in data)  # 1-based orders


def held_out_examples(bundle: PermGenBundle, files: list[Path]) -> list[EncodedExample]:
    """The encoded examples of `files` that the bundle's training held out (its recorded valid_fraction)."""
    config = bundle.model.config
    examples = selected_pairs(load_examples(files, DataStats(), task=config.task,
                                            source_form=config.paraphrase_source), config)
    valid = split_examples(examples, float(bundle.provenance.get("train", {}).get("valid_fraction", 0.05)))[1]
    if not valid:
        raise ValueError(f"no held-out examples in {', '.join(map(str, files))}")
    return encode_for_bundle(bundle, valid)


def encode_for_bundle(bundle: PermGenBundle, examples: Sequence[ParagraphExample],
                      stats: DataStats | None = None) -> list[EncodedExample]:
    """`examples` as the bundle's model reads and writes them: its limits, case and text form."""
    config = bundle.model.config
    prose = read_prose_form(config.task, config.lowercase, config.text_form, bundle.path)
    return encode_examples(examples, bundle.tokenizer, config.max_source_len, config.max_sentence_len, stats,
                           config.lowercase, config.task, config.paraphrase_source, prose)


def bundle_held_out(bundle: PermGenBundle, files: list[Path], batch_size: int = 64) -> dict[str, Any]:
    """Natural-order and random-order held-out NLL of a bundle on the hash split of `files` that its
    training held out (its recorded valid_fraction and seed), as {examples, nll_natural, ppl_natural, …}."""
    data = held_out_examples(bundle, files)
    seed = int(bundle.provenance.get("train", {}).get("seed", 0)) + 1  # the trainer's fixed random orders
    natural = target_nll(bundle.model, data, batch_size, True, seed)
    permuted = target_nll(bundle.model, data, batch_size, False, seed)
    return {"examples": len(data), "nll_natural": round(natural, 4), "ppl_natural": round(math.exp(natural), 2),
            "nll_random_order": round(permuted, 4)}
