"""The papers' evaluation protocols for one bundle on one split, from the head interface only.

- LM table (F² Table 1, POSG Table 2): for each decoder, continuations of the split's windows →
  KLD, MS-Jaccard-1..3, Self-BLEU-1..4, Distinct-1..3, Rep, seq-rep-4, Uniq; plus PPL of the
  split's reference text (marginal log p, `engine.diagnostics.predictions`); given the training word
  set, the invented-word rate of the continuations (words that are not real words: training words,
  the word list, the words of the split's prefixes; engine/word_sources.py) and their unseen-word
  rate (words not in the training text), each continuation read after its prefix
  (engine/metrics/invented.py). A decoder with `words` decodes with real words only. Also the share of
  generated tokens per frequency group and the mean p(eos_t) per step.
- AGG table (AGG Table 3): PPL and Uniq (distinct argmax next-token predictions) per frequency
  group (frequent 30% / medium 50% / rare 20% of the vocabulary by the bundle's training token
  counts), and I(W) of the output embedding — computed by `engine.diagnostics` (one definition).
- NMST table (NMST §4): for each decoder, sequences from short prefixes (default 10 tokens)
  decoded up to L_max tokens → r_nt(L) at the requested L's and the whole curve.
Nothing here depends on a particular head: groups, p(eos) and log p(x) all come from
`OutputHead` (group_log_probs / token_log_probs_in_group / log_probs).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.bundles.bundle import Bundle
from engine.coherence.choice import choose_scorer
from engine.data.blocks import make_blocks
from engine.decoding.settings import DecodeConfig
from engine.decoding.stream import Variant
from engine.diagnostics.embedding import agg_group_ids, output_embedding
from engine.diagnostics.predictions import group_prediction_stats
from engine.evaluation.continuation import DEFAULT_BATCH, DraftPicker, Window, continue_prefixes, make_windows
from engine.evaluation.decoders import parse_decoder
from engine.evaluation.splits import EvalSplit
from engine.lm.loaded import lm_vocabulary
from engine.metrics.frequency import GROUP_NAMES, agg_group_per_token, group_shares, group_uniq, isotropy
from engine.metrics.invented import doubled_word_rate, word_rates
from engine.metrics.suite import continuation_metrics
from engine.metrics.termination import mean_by_step, non_termination_curve
from engine.model import LanguageModel
from engine.selection.choose import Draft, choose_drafts
from engine.tokenizer import VariorumTokenizer


@dataclass(frozen=True)
class ProtocolConfig:
    """Protocol settings; every field is written to the report."""

    prefix_len: int = 50
    continuation_len: int = 100
    max_windows: int | None = 200
    decoders: tuple[str, ...] = ("topp=0.9", "topp=0.9,words")  # real words off and on
    nmst_decoders: tuple[str, ...] = ("greedy",)
    nmst_prefix_len: int = 10
    nmst_max_length: int = 200
    nmst_windows: int = 64
    nmst_lengths: tuple[int, ...] = (50, 100, 200)
    self_bleu_cap: int | None = None
    seed: int = 0
    batch_size: int = DEFAULT_BATCH  # prefixes decoded as one batch; results do not depend on it
    # PermGen bundles (engine/evaluation/seq2seq.py): K candidates per source, beam width inside sentences
    candidates: int = 3
    max_sources: int | None = 100
    beam_width: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.batch_size <= 64:
            raise ValueError(f"batch size must be in [1, 64], got {self.batch_size}")
        if not 1 <= self.candidates <= 8:  # the app's GenerationRequest allows 1-8 variants
            raise ValueError(f"candidates per source must be in [1, 8], got {self.candidates}")
        if self.max_sources is not None and self.max_sources < 1:
            raise ValueError(f"max sources must be >= 1, got {self.max_sources}")
        if any(length > self.nmst_max_length or length < 1 for length in self.nmst_lengths):
            raise ValueError(f"every r_nt length must be in [1, nmst_max_length={self.nmst_max_length}]")
        for spec in self.decoders + self.nmst_decoders:
            parse_decoder(spec, 1)  # fail before any model runs

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


Progress = Callable[[int], None]


@dataclass
class BundleResult:
    """Everything measured for one bundle (JSON-ready after `to_dict`)."""

    lm: dict[str, dict[str, float | None]] = field(default_factory=dict)  # decoder → metrics
    shares: dict[str, list[float]] = field(default_factory=dict)  # decoder → frequency-group shares
    eos_curves: dict[str, list[float]] = field(default_factory=dict)  # decoder → mean p(eos_t)
    agg: dict[str, Any] = field(default_factory=dict)
    nmst: dict[str, dict[str, Any]] = field(default_factory=dict)  # decoder → r_nt values and curve

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def windows_for(bundle: Bundle, split: EvalSplit, config: ProtocolConfig) -> list[Window]:
    tokenizer = bundle.tokenizer
    encoded = tokenizer.encode_batch(split.documents)
    return make_windows(encoded, tokenizer.eos_id, config.prefix_len, config.continuation_len, config.max_windows)


def frequency_counts(bundle: Bundle, split: EvalSplit) -> np.ndarray:
    """The token counts that define the frequent / medium / rare groups: the bundle's training counts, or
    the evaluated text's own for an imported checkpoint, which carries none (the report says so)."""
    counts = bundle.tokenizer.counts
    return counts if counts.any() else bundle.tokenizer.count_tokens(split.documents)


def work_units(config: ProtocolConfig, windows: int) -> int:
    """Prefixes one bundle will decode (for the progress bar)."""
    return windows * len(config.decoders) + min(windows, config.nmst_windows) * len(config.nmst_decoders)


def draft_picker(model: LanguageModel, tokenizer: VariorumTokenizer) -> DraftPicker:
    """The app's choice among a window's drafts, keeping one: the scorer `choose_scorer` gives this model (the
    shipped one on the pretrained base, else the model's own pmi), then `choose_drafts`."""
    choice = choose_scorer((model, tokenizer), next(model.parameters()).device)
    print(f"eval: {choice.note}", file=sys.stderr)

    def pick(prefix: Sequence[int], drafts: Sequence[Variant]) -> int:
        prompt = tokenizer.decode(list(prefix))
        texts = [v.text for v in drafts]
        scored = [Draft(text, score) for text, score in zip(texts, choice.scores(prompt, texts), strict=True)]
        return choose_drafts(scored, 1, prompt)[0]

    return pick


def evaluate_bundle(bundle: Bundle, split: EvalSplit, config: ProtocolConfig, progress: Progress,
                    train_words: frozenset[str] | None = None) -> BundleResult:
    """Run the three protocols for one bundle (with `train_words`, also the invented-word rate)."""
    result = BundleResult()
    windows = windows_for(bundle, split, config)
    groups = agg_group_per_token(frequency_counts(bundle, split))
    references = [w.reference for w in windows]
    model, tokenizer = bundle.model, bundle.tokenizer
    prompts = [tokenizer.decode(w.prefix) for w in windows]
    real = lm_vocabulary(train_words, tokenizer, next(model.parameters()).device).speller(prompts)
    picker: list[DraftPicker] = []  # made once, by the first decoder that asks for drafts

    def pick(settings: DecodeConfig) -> DraftPicker | None:
        if settings.drafts > 1 and not picker:
            picker.append(draft_picker(model, tokenizer))
        return picker[0] if settings.drafts > 1 else None

    for spec in config.decoders:
        settings = parse_decoder(spec, config.continuation_len)
        outs = continue_prefixes(model, tokenizer, [w.prefix for w in windows], settings, config.seed, progress,
                                 config.batch_size, real if settings.real_words else None, pick(settings))
        generated = [c.token_ids for c in outs]
        result.lm[spec] = continuation_metrics(generated, references, config.self_bleu_cap, config.seed)
        texts = [tokenizer.decode(ids) for ids in generated]
        result.lm[spec]["doubled_word_rate"] = doubled_word_rate(texts, prompts)
        if train_words is not None:
            result.lm[spec].update(word_rates(texts, real.words.members, train_words, prompts))
        result.shares[spec] = group_shares(generated, groups)
        result.eos_curves[spec] = mean_by_step([c.eos_probs for c in outs])
    result.agg = agg_metrics(bundle, split)
    for spec in config.decoders:
        result.lm[spec]["ppl"] = result.agg["ppl_total"]
    prefixes = [w.prefix[: config.nmst_prefix_len] for w in windows[: config.nmst_windows]]
    for spec in config.nmst_decoders:
        settings = parse_decoder(spec, config.nmst_max_length)
        outs = continue_prefixes(model, tokenizer, prefixes, settings, config.seed, progress, config.batch_size,
                                 real if settings.real_words else None, pick(settings))
        curve = non_termination_curve([c.length for c in outs], config.nmst_max_length)
        result.nmst[spec] = {"r_nt": {str(length): curve[length - 1] for length in config.nmst_lengths}, "curve": curve}
    return result


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None  # a group with no targets has no PPL


def agg_metrics(bundle: Bundle, split: EvalSplit) -> dict[str, Any]:
    """AGG Table 3 for one bundle: PPL and prediction Uniq per group and total, and I(W).

    Uses the one definition in `engine.diagnostics` (marginal log-probs, same groups, I(W) of
    the matrix AGG acts on: the head's output embedding).
    """
    tokenizer, model = bundle.tokenizer, bundle.model
    blocks = make_blocks(tokenizer.encode_batch(split.documents), tokenizer.eos_id, model.config.block_size)
    groups = agg_group_ids(frequency_counts(bundle, split))
    stats = group_prediction_stats(model, blocks, groups)
    names = [*GROUP_NAMES, "total"]
    weight, _ = output_embedding(model)
    return {
        **{f"ppl_{name}": _finite(stats["ppl"][name]) for name in names},
        **{f"uniq_{name}": int(stats["uniq"][name]) for name in names},
        "isotropy": isotropy(weight),
        "tokens": int(stats["tokens"]["total"]),
    }


def human_metrics(bundle: Bundle, split: EvalSplit, config: ProtocolConfig) -> dict[str, Any]:
    """The human rows, measured in the first bundle's tokenization (as the papers do with one BPE)."""
    windows = windows_for(bundle, split, config)
    references = [w.reference for w in windows]
    groups = agg_group_per_token(frequency_counts(bundle, split))
    blocks = make_blocks(bundle.tokenizer.encode_batch(split.documents), bundle.tokenizer.eos_id,
                         bundle.model.config.block_size)
    targets = [blocks[:, 1:].reshape(-1).tolist()]
    uniq = group_uniq(targets, groups)
    return {
        "lm": {**continuation_metrics(references, None, config.self_bleu_cap, config.seed),
               "doubled_word_rate": doubled_word_rate([bundle.tokenizer.decode(r) for r in references],
                                                      [bundle.tokenizer.decode(w.prefix) for w in windows])},
        "shares": group_shares(references, groups),
        "agg": {**{f"uniq_{n}": u for n, u in zip(GROUP_NAMES, uniq, strict=True)}, "uniq_total": sum(uniq)},
        "windows": len(windows),
    }
