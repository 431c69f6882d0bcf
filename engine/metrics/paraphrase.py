"""Paraphrase metrics (POSG §5.3, A.3) on whitespace/13a-tokenised words.

- `paraphrase_bleu`: corpus BLEU-4 of the outputs against the references, sacrebleu's
  `corpus_bleu` (13a tokenisation, exp smoothing), in [0, 1] (papers print ×100). An output may
  have several references (a list of strings, e.g. TurkCorpus's 8 rewrites): sacrebleu's multi-
  reference BLEU (n-gram counts clipped by the most in any one reference; the closest reference
  length for the brevity penalty). Every output needs the same number of references.
- `paraphrase_rouge`: mean ROUGE-1/2/L F1 of output vs reference (Google's rouge-score, with
  its default tokenizer and no stemming); with several references, the best of them
  (rouge-score's `score_multi`).
- `self_bleu_vs_source`: Cao & Wan 2020's Self-BLEU, as POSG A.3 says — *not* the LM Self-BLEU:
  corpus BLEU-4 of the outputs with their *source* sentences as references (lower = further
  from the input).
- `self_wer`: word error rate of each output against its source, averaged over pairs (Goyal &
  Durrett 2020; higher = more rewritten): the word-level edit distance (substitutions, deletions,
  insertions, each 1) over the source's word count, on whitespace-split words, which is jiwer's
  `wer` with its default transforms (a test compares them). Empty sources score 1.0 when the output
  is non-empty and 0.0 when both are empty (jiwer rejects an empty reference).
- `content_words_kept`: the share of a source's content words (alphabetic words that are not
  English stop words, case ignored) that the output also contains, averaged over pairs; a
  source with no content word counts as fully kept. A rewrite may change everything else, but
  should keep these (names, nouns, numbers as words).
- `content_words_added`: the other way round, the share of an output's content words that are not words of
  its source, averaged over pairs (an output with no content word adds nothing): what a rewrite says that its
  source did not, such as a synonym or a new claim.
- `distinct_rewrites`: per source, how many of its K outputs differ from the source and from one
  another; averaged over sources (at most K).
- `distinct_word_rewrites`: the same, counting only outputs that differ in their words: two texts that differ
  in case or punctuation alone ("spring , so" and "spring so") are one.

sacrebleu and rouge-score (the `metrics` extra) are imported when a score needs them, so the
paraphrase decoder, which reports Self-WER and Self-BLEU, imports this module without them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.data.stop_words import SPACY_ENGLISH_STOP_WORDS

References = Sequence[str] | Sequence[Sequence[str]]  # one reference per output, or a list of them


def _check(outputs: Sequence[object], others: Sequence[object], what: str) -> None:
    if len(outputs) != len(others):
        raise ValueError(f"{len(outputs)} outputs but {len(others)} {what}")
    if not outputs:
        raise ValueError("no outputs to score")


def reference_sets(references: References) -> list[list[str]]:
    """Each output's references as a list (a single string becomes a list of one)."""
    return [[r] if isinstance(r, str) else list(r) for r in references]


def _corpus_bleu(outputs: Sequence[str], references: References) -> float:
    import sacrebleu

    sets = reference_sets(references)
    if len({len(s) for s in sets}) > 1 or not sets[0]:
        raise ValueError("every output needs the same number (at least one) of references")
    streams = [list(stream) for stream in zip(*sets, strict=True)]  # sacrebleu: one list per reference index
    return float(sacrebleu.corpus_bleu(list(outputs), streams).score) / 100


def paraphrase_bleu(outputs: Sequence[str], references: References) -> float:
    _check(outputs, references, "references")
    return _corpus_bleu(outputs, references)


def self_bleu_vs_source(outputs: Sequence[str], sources: Sequence[str]) -> float:
    _check(outputs, sources, "sources")
    return _corpus_bleu(outputs, sources)


def paraphrase_rouge(outputs: Sequence[str], references: References) -> dict[str, float]:
    _check(outputs, references, "references")
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])
    totals = {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    for output, refs in zip(outputs, reference_sets(references), strict=True):
        for key, score in scorer.score_multi(refs, output).items():
            totals[key] += score.fmeasure
    return {key: value / len(outputs) for key, value in totals.items()}


def word_edit_distance(source: Sequence[str], output: Sequence[str]) -> int:
    """Fewest word substitutions, deletions and insertions turning `source` into `output`."""
    # A rewrite shares most of its source: the words both begin and end with cost nothing, and leaving
    # them out of the table makes an unchanged sentence linear instead of quadratic in its length.
    start = 0
    while start < min(len(source), len(output)) and source[start] == output[start]:
        start += 1
    end = 0
    while end < min(len(source), len(output)) - start and source[-1 - end] == output[-1 - end]:
        end += 1
    source, output = source[start : len(source) - end], output[start : len(output) - end]
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


def content_words(text: str) -> set[str]:
    """The lowercased alphabetic words of `text` that are not English stop words."""
    return {w for w in text.lower().split() if w.isalpha() and w not in SPACY_ENGLISH_STOP_WORDS}


def content_words_kept(outputs: Sequence[str], sources: Sequence[str]) -> float:
    _check(outputs, sources, "sources")
    shares = []
    for output, source in zip(outputs, sources, strict=True):
        wanted = content_words(source)
        shares.append(len(wanted & set(output.lower().split())) / len(wanted) if wanted else 1.0)
    return sum(shares) / len(shares)


def content_words_added(outputs: Sequence[str], sources: Sequence[str]) -> float:
    _check(outputs, sources, "sources")
    shares = []
    for output, source in zip(outputs, sources, strict=True):
        said = content_words(output)
        shares.append(len(said - set(source.lower().split())) / len(said) if said else 0.0)
    return sum(shares) / len(shares)


def distinct_rewrites(groups: Sequence[Sequence[str]], sources: Sequence[str]) -> float:
    _check(groups, sources, "sources")
    return sum(len({" ".join(o.split()) for o in group} - {" ".join(s.split())})
               for group, s in zip(groups, sources, strict=True)) / len(groups)


def distinct_word_rewrites(groups: Sequence[Sequence[str]], sources: Sequence[str]) -> float:
    _check(groups, sources, "sources")
    return sum(len({_words(o) for o in group} - {_words(s)})
               for group, s in zip(groups, sources, strict=True)) / len(groups)


def _words(text: str) -> tuple[str, ...]:
    """`text`'s words and numbers, case and punctuation dropped."""
    return tuple(re.findall(r"\w+", text.casefold()))
