"""What `variorum eval` adds for story and abstract bundles beyond PermGen's own tables: per-word perplexity,
the sentence order asked for, and the title word said over and over (engine/metrics/story.py).

- `ppl_natural_word`: the natural-order target NLL summed over the split's paragraphs (words, sentence marks
  and the paragraph's end) per word of the target, a word being a whitespace-separated string of the target
  text and each paragraph's end counting as one, as `variorum perplexity` counts for language models. So
  bundles with different tokenizers (today's small Story model and one on the pretrained base) compare.
  Sentences longer than the model's cap are cut as in training; `cut_sentences` says how many were.
- `order_followed`: source i asks its K candidates for one full order, a random permutation of its target's
  sentence count drawn with seed + i (the writer's "full order" control); the share of candidates that
  follow it.
- `title_word_repeated`: the share of the ranked candidates (the model's own order) in which one sentence says
  a content word of the title twice or more; for the human row, the share of the target stories.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

from engine.decoding.settings import DecodeConfig
from engine.decoding.stream import Variant
from engine.evaluation.splits import EvalSplit
from engine.front_door import GenerationRequest
from engine.loaded_model import LoadedModel
from engine.metrics.story import follows_order, repeats_title_word, share
from engine.permgen.bundle import PermGenBundle
from engine.permgen.data import DataStats, target_sentences
from engine.permgen.decode import FINISH_EOP
from engine.permgen.heldout import encode_for_bundle, target_nll, target_tokens
from engine.tokenizer import MAX_SENTENCES

Progress = Callable[[int], None]


def split_perplexity(bundle: PermGenBundle, split: EvalSplit, batch_size: int = 4,
                     progress: Progress | None = None) -> dict[str, float]:
    """Natural-order perplexity of the bundle on every paragraph of the split, per target token (the trainer's
    measure, engine/permgen/heldout.py) and per word (see the module docstring); `progress` is told how many
    paragraphs each batch scored.

    Four paragraphs a batch: on the 2-core CPU a model on the pretrained base scores abstracts faster at four than at
    32 (`python -m engine.benchmarks.scoring_batch`: less padding, smaller [rows, positions, D] activations)."""
    config = bundle.model.config
    stats = DataStats()
    data = encode_for_bundle(bundle, split.examples, stats)
    nll = target_nll(bundle.model, data, batch_size, progress=progress)  # mean per target token
    tokens = target_tokens(data)
    words = sum(len(" ".join(target_sentences(e, config.lowercase)).split()) + 1 for e in split.examples)
    return {"ppl_natural": math.exp(nll), "ppl_natural_word": math.exp(nll * tokens / max(words, 1)),
            "cut_sentences": float(stats.cut_sentences)}


def asked_order(sentences: int, seed: int) -> list[int]:
    """A random full order of sentences 1 … `sentences`, the same for the same seed."""
    return random.Random(seed).sample(range(1, sentences + 1), sentences)


def order_followed(
    model: LoadedModel, split: EvalSplit, settings: DecodeConfig, k: int, seed: int, count: int, progress: Progress,
) -> float | None:
    """The share of candidates that follow the full sentence order their source asked for."""
    followed: list[bool] = []
    for i, example in enumerate(split.examples[:count]):
        order = asked_order(min(len(example.sentences), MAX_SENTENCES), seed + i)
        request = GenerationRequest(task=split.task, title=example.title, keywords=list(example.keywords), n=k,
                                    decode=settings.with_seed(seed + i * k), num_sentences=len(order),
                                    sentence_order=order)
        stream = model.stream(request)
        for _ in stream:
            pass
        for variant in stream.variants:
            written, sentences = getattr(variant, "order", []), getattr(variant, "sentences", {})
            followed.append(follows_order(order, written, sentences, variant.finish_reason == FINISH_EOP))
        progress(1)
    return share(followed)


def title_word_repeated(split: EvalSplit, candidates: Sequence[Sequence[Variant]]) -> float | None:
    """The share of `candidates` (per source, its variants) in which a sentence says a title word twice."""
    return share([repeats_title_word(example.title, list(getattr(variant, "sentences", {}).values()))
                  for example, variants in zip(split.examples, candidates, strict=False) for variant in variants])


def human_title_word_repeated(split: EvalSplit, count: int) -> float | None:
    """The share of the split's first `count` target stories in which a sentence says a title word twice."""
    return share([repeats_title_word(e.title, e.sentences) for e in split.examples[:count]])
