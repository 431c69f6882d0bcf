"""Paraphrase metrics (POSG §5.3, A.3) on whitespace/13a-tokenised words.

- `paraphrase_bleu`: corpus BLEU-4 of the outputs against the references, sacrebleu's
  `corpus_bleu` (13a tokenisation, exp smoothing), in [0, 1] (papers print ×100).
- `paraphrase_rouge`: mean ROUGE-1/2/L F1 of output vs reference (Google's rouge-score, with
  its default tokenizer and no stemming).
- `self_bleu_vs_source`: Cao & Wan 2020's Self-BLEU, as POSG A.3 says — *not* the LM Self-BLEU:
  corpus BLEU-4 of the outputs with their *source* sentences as references (lower = further
  from the input).
- `self_wer`: word error rate (jiwer) of each output against its source, averaged over pairs
  (Goyal & Durrett 2020; higher = more rewritten). Empty sources score 1.0 when the output is
  non-empty and 0.0 when both are empty (jiwer rejects an empty reference).
"""

from __future__ import annotations

from collections.abc import Sequence

import jiwer
import sacrebleu
from rouge_score import rouge_scorer


def _check(outputs: Sequence[str], others: Sequence[str], what: str) -> None:
    if len(outputs) != len(others):
        raise ValueError(f"{len(outputs)} outputs but {len(others)} {what}")
    if not outputs:
        raise ValueError("no outputs to score")


def paraphrase_bleu(outputs: Sequence[str], references: Sequence[str]) -> float:
    _check(outputs, references, "references")
    return float(sacrebleu.corpus_bleu(list(outputs), [list(references)]).score) / 100


def self_bleu_vs_source(outputs: Sequence[str], sources: Sequence[str]) -> float:
    _check(outputs, sources, "sources")
    return float(sacrebleu.corpus_bleu(list(outputs), [list(sources)]).score) / 100


def paraphrase_rouge(outputs: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    _check(outputs, references, "references")
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])
    totals = {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    for output, reference in zip(outputs, references, strict=True):
        for key, score in scorer.score(reference, output).items():
            totals[key] += score.fmeasure
    return {key: value / len(outputs) for key, value in totals.items()}


def _wer(source: str, output: str) -> float:
    if not source.split():
        return 0.0 if not output.split() else 1.0
    return float(jiwer.wer(source, output))


def self_wer(outputs: Sequence[str], sources: Sequence[str]) -> float:
    _check(outputs, sources, "sources")
    return sum(_wer(s, o) for o, s in zip(outputs, sources, strict=True)) / len(outputs)
