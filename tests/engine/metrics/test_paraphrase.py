"""Paraphrase metrics: BLEU/ROUGE vs reference, Self-BLEU/Self-WER vs source."""

from __future__ import annotations

import random

import pytest
import sacrebleu

from engine.metrics.paraphrase import (
    content_words_added,
    content_words_kept,
    distinct_rewrites,
    distinct_word_rewrites,
    paraphrase_bleu,
    paraphrase_rouge,
    self_bleu_vs_source,
    self_wer,
    word_edit_distance,
)


def test_identical_outputs_and_hand_values() -> None:
    sentences = ["the model writes many different drafts .", "a second sentence of the test set ."]
    assert paraphrase_bleu(sentences, sentences) == pytest.approx(1.0)
    assert paraphrase_rouge(sentences, sentences) == pytest.approx({"rouge1": 1.0, "rouge2": 1.0, "rougeL": 1.0})
    assert self_wer(sentences, sentences) == 0.0
    assert self_wer(["a x c d"], ["a b c d"]) == pytest.approx(0.25)
    assert self_wer([""], [""]) == 0.0 and self_wer(["word"], [""]) == 1.0


def test_bleu_vs_sacrebleu_and_source_direction() -> None:
    outputs = ["the cat sat on a mat today", "we study diverse generation"]
    refs = ["the cat sat on the mat", "we study diverse text generation"]
    assert paraphrase_bleu(outputs, refs) == pytest.approx(sacrebleu.corpus_bleu(outputs, [refs]).score / 100)
    assert self_bleu_vs_source(outputs, refs) == paraphrase_bleu(outputs, refs)
    rouge = paraphrase_rouge(["the cat"], ["the dog"])
    assert rouge["rouge1"] == pytest.approx(0.5) and rouge["rouge2"] == 0.0
    with pytest.raises(ValueError, match="references"):
        paraphrase_bleu(outputs, refs[:1])


def test_self_wer_equals_jiwer() -> None:
    """Our word edit distance gives jiwer's WER, substitutions, deletions, insertions and repeats alike."""
    jiwer = pytest.importorskip("jiwer")
    rng = random.Random(7)
    vocabulary = ["the", "dog", "ran", "home", "a", "cat", "sat"]
    for _ in range(200):
        source = " ".join(rng.choices(vocabulary, k=rng.randint(1, 9)))
        output = " ".join(rng.choices(vocabulary, k=rng.randint(0, 9)))
        assert self_wer([output], [source]) == pytest.approx(jiwer.wer(source, output)), (source, output)


def test_hand_counted_edit_distances() -> None:
    assert word_edit_distance(["a", "b", "c"], ["a", "c"]) == 1  # one deletion
    assert word_edit_distance(["a", "b"], ["b", "a"]) == 2  # no transpositions: two edits
    assert word_edit_distance([], ["x", "y"]) == 2 and word_edit_distance(["x"], []) == 1


def test_several_references_per_output() -> None:
    outputs = ["the cat sat on a mat today", "we study diverse generation"]
    refs = [["the cat sat on the mat", "a cat sat on a mat today"], ["we study diverse text generation", "we study it"]]
    streams = [[r[0] for r in refs], [r[1] for r in refs]]
    assert paraphrase_bleu(outputs, refs) == pytest.approx(sacrebleu.corpus_bleu(outputs, streams).score / 100)
    assert paraphrase_bleu(outputs, refs) > paraphrase_bleu(outputs, [r[0] for r in refs])  # a closer reference helps
    assert paraphrase_rouge(["the dog"], [["the cat", "the dog"]])["rouge1"] == pytest.approx(1.0)  # the best one
    with pytest.raises(ValueError, match="same number"):
        paraphrase_bleu(outputs, [refs[0], refs[1][:1]])


def test_content_words_kept_and_distinct_rewrites_by_hand() -> None:
    source = "The old Cat sat on the mat ."  # content words: old, cat, sat, mat (the, on: stop words)
    assert content_words_kept(["a cat sat on a rug ."], [source]) == pytest.approx(2 / 4)
    assert content_words_kept(["it was so ."], ["it is ."]) == 1.0  # nothing to keep
    # a cat sat on a rug: cat, sat, rug; only "rug" is not a word of the source
    assert content_words_added(["a cat sat on a rug .", "the old cat sat on the mat ."], [source] * 2) == (
        pytest.approx((1 / 3 + 0) / 2))
    assert content_words_added(["it was so ."], ["it is ."]) == 0.0  # nothing said
    groups = [["a b", "a  b", "c"], ["x y", "x y", "x y"]]
    assert distinct_rewrites(groups, ["c", "x y"]) == pytest.approx((1 + 0) / 2)  # "a b" once; copies do not count
    punctuated = [["spring , so it", "spring so it", "Spring so it !", "autumn so it"]]
    assert distinct_rewrites(punctuated, ["spring so it ."]) == 4
    assert distinct_word_rewrites(punctuated, ["spring so it ."]) == 1  # only "autumn" changes a word
    assert distinct_word_rewrites(groups, ["c", "x y"]) == distinct_rewrites(groups, ["c", "x y"])
