"""What a paraphrase is, whichever paraphraser wrote it: a passage's sentences each replaced by an alternative,
with Self-BLEU / Self-WER against the writer's sentence (engine/metrics/paraphrase.py) on normalised words
(engine/data/text.py), so that casing and punctuation spacing do not count as changes. The PermGen paraphraser
(engine/permgen/paraphrase.py) and rewording (engine/rewording/stream.py) both return these, so the app, the CLI
and `variorum eval` read them alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.data.text import detokenize, normalize
from engine.decoding.stream import Variant
from engine.metrics.paraphrase import self_bleu_vs_source, self_wer
from engine.paraphrase.passage import reassemble

SENTENCE_SEED_STRIDE = 1_000_003
FINISH_DONE = "done"


@dataclass
class SentenceAlternative:
    """One rewritten sentence of a variant and how far it is from its source."""

    source: str  # the writer's sentence
    text: str  # the alternative for display (the source when `kept_source`)
    normalized: str  # the model's word tokens (what the metrics compare)
    self_bleu: float
    self_wer: float
    kept_source: bool = False


@dataclass
class ParaphraseVariant(Variant):
    """A paraphrased passage: its sentences' alternatives and the passage-level Self-BLEU / Self-WER."""

    alternatives: list[SentenceAlternative] = field(default_factory=list)
    self_bleu: float = float("nan")
    self_wer: float = float("nan")


def score_alternative(source: str, output: str, lowercase: bool = True) -> SentenceAlternative:
    """Alternative `output` (model text) of `source`, with its Self-BLEU / Self-WER vs the source."""
    kept = not output.strip()
    source_words = normalize(source, lowercase)
    words = source_words if kept else normalize(output, lowercase)
    text = source if kept else detokenize(output)
    return SentenceAlternative(source, text, words, self_bleu_vs_source([words], [source_words]),
                               self_wer([words], [source_words]), kept)


def complete_paraphrases(variants: list[ParaphraseVariant], passage: str, spans: list[tuple[int, int]],
                         outputs: list[list[str]], lowercase: bool) -> None:
    """Fill each variant's alternatives, text and Self-BLEU / Self-WER from `outputs` (per finished
    sentence, one output per variant; sentences not reached keep their source)."""
    sources = [passage[a:b] for a, b in spans]
    for variant in variants:
        i = variant.index
        variant.alternatives = [score_alternative(source, outputs[j][i] if j < len(outputs) else "", lowercase)
                                for j, source in enumerate(sources)]
        variant.text = reassemble(passage, spans, [a.text for a in variant.alternatives])
        words = [a.normalized for a in variant.alternatives]
        variant.self_bleu = self_bleu_vs_source(words, [normalize(s, lowercase) for s in sources])
        variant.self_wer = sum(a.self_wer for a in variant.alternatives) / len(variant.alternatives)
        variant.settings.update(self_bleu=variant.self_bleu, self_wer=variant.self_wer,
                                sentence_self_bleu=[a.self_bleu for a in variant.alternatives],
                                sentence_self_wer=[a.self_wer for a in variant.alternatives])
