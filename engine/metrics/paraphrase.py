"""Paraphrase metrics (POSG §5.3, A.3) on whitespace/13a-tokenised words.

- `paraphrase_bleu`: corpus BLEU-4 of the outputs against the references, sacrebleu's
  `corpus_bleu` (13a tokenisation, exp smoothing), in [0, 1] (papers print ×100).
- `paraphrase_rouge`: mean ROUGE-1/2/L F1 of output vs reference (Google's rouge-score, with
  its default tokenizer and no stemming).
- `self_bleu_vs_source`: Cao & Wan 2020's Self-BLEU, as POSG A.3 says — *not* the LM Self-BLEU:
  corpus BLEU-4 of the outputs with their *source* sentences as references (lower = further
  from the input).
- `self_wer`: word error rate of each output against its source, averaged over pairs (Goyal &
  Durrett 2020; higher = more rewritten): the word-level edit distance (substitutions, deletions,
  insertions, each 1) over the source's word count, on whitespace-split words, which is jiwer's
  `wer` with its default transforms (a test compares them). Empty sources score 1.0 when the output
  is non-empty and 0.0 when both are empty (jiwer rejects an empty reference).

sacrebleu and rouge-score (the `metrics` extra) are imported when a score needs them, so the
paraphrase decoder, which reports Self-WER and Self-BLEU, imports this module without them.
"""

from __future__ import annotations

from collections.abc import Sequence


def _check(outputs: Sequence[str], others: Sequence[str], what: str) -> None:
    if len(outputs) != len(others):
        raise ValueError(f"{len(outputs)} outputs but {len(others)} {what}")
    if not outputs:
        raise ValueError("no outputs to score")


def _corpus_bleu(outputs: Sequence[str], references: Sequence[str]) -> float:
    import sacrebleu

    return float(sacrebleu.corpus_bleu(list(outputs), [list(references)]).score) / 100


def paraphrase_bleu(outputs: Sequence[str], references: Sequence[str]) -> float:
    _check(outputs, references, "references")
    return _corpus_bleu(outputs, references)


def self_bleu_vs_source(outputs: Sequence[str], sources: Sequence[str]) -> float:
    _check(outputs, sources, "sources")
    return _corpus_bleu(outputs, sources)


def paraphrase_rouge(outputs: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    _check(outputs, references, "references")
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])
    totals = {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    for output, reference in zip(outputs, references, strict=True):
        for key, score in scorer.score(reference, output).items():
            totals[key] += score.fmeasure
    return {key: value / len(outputs) for key, value in totals.items()}


def word_edit_distance(source: Sequence[str], output: Sequence[str]) -> int:
    """Fewest word substitutions, deletions and insertions turning `source` into `output`."""
    previous = list(range(len(output) + 1))  # distances from source[:0] to each output prefix
    for i, word in enumerate(source, 1):
        current = [i]
        for j, other in enumerate(output, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != other)))
        previous = current
    return previous[-1]


def _wer(source: str, output: str) -> float:
    source_words, output_words = source.split(), output.split()
    if not source_words:
        return 0.0 if not output_words else 1.0
    return word_edit_distance(source_words, output_words) / len(source_words)


def self_wer(outputs: Sequence[str], sources: Sequence[str]) -> float:
    _check(outputs, sources, "sources")
    return sum(_wer(s, o) for o, s in zip(outputs, sources, strict=True)) / len(outputs)
