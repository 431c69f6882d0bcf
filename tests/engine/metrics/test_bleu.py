"""BLEU / Self-BLEU: hand values, never self-referencing, and exact agreement with sacrebleu."""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest
import sacrebleu
from sacrebleu.metrics.bleu import BLEU

from engine.metrics.bleu import (
    bleu_from_stats,
    closest_other_length,
    corpus_bleu,
    hash_sample,
    pairwise_self_bleu,
    self_bleu,
    self_bleu_orders,
    self_bleu_stats,
    sentence_bleu,
    top1_and_oracle_bleu,
)


def random_texts(count: int, seed: int, vocab: int = 6, longest: int = 9) -> list[list[str]]:
    rng = random.Random(seed)
    return [[str(rng.randrange(vocab)) for _ in range(rng.randrange(longest))] for _ in range(count)]


def test_identical_texts_score_one_and_disjoint_texts_zero() -> None:
    text = [1, 2, 3, 4, 5, 6]
    assert self_bleu([text] * 4) == pytest.approx(1.0)
    disjoint = [[10 * i + j for j in range(6)] for i in range(4)]
    assert self_bleu(disjoint) == 0.0


def test_a_text_is_never_its_own_reference() -> None:
    # Text 0 shares nothing with the others: including itself would give it BLEU 1.
    texts = [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [6, 7, 8, 9, 10]]
    stats = self_bleu_stats(texts, 4)
    assert stats.correct[0].tolist() == [0, 0, 0, 0]
    scores = bleu_from_stats(stats)
    assert scores.tolist() == pytest.approx([0.0, 1.0, 1.0])
    assert self_bleu(texts) == pytest.approx(2 / 3)


def test_hand_computed_self_bleu_2() -> None:
    # hyp [a, b, a, b] vs refs {[a, b], [b, a]}: unigrams clip a:1, b:1 → 2/4; bigrams (a b)x2 clip 1,
    # (b a)x1 clip 1 → 2/3; closest ref length 2 < 4 so BP = 1.
    texts = [["a", "b", "a", "b"], ["a", "b"], ["b", "a"]]
    stats = self_bleu_stats(texts, 2)
    assert stats.correct[0].tolist() == [2, 2]
    assert stats.total[0].tolist() == [4, 3]
    assert bleu_from_stats(stats, "none")[0] == pytest.approx(math.sqrt(0.5 * 2 / 3))


@pytest.mark.parametrize("smooth", ["none", "floor", "add-k", "exp"])
@pytest.mark.parametrize("effective", [False, True])
def test_score_from_stats_matches_sacrebleu_compute_bleu(smooth: str, effective: bool) -> None:
    stats = self_bleu_stats(random_texts(40, seed=1), 4)
    ours = bleu_from_stats(stats, smooth, effective_order=effective)
    for i in range(len(ours)):
        expected = BLEU.compute_bleu(
            stats.correct[i].tolist(), stats.total[i].tolist(), int(stats.hyp_len[i]), int(stats.ref_len[i]),
            smooth, None, effective, 4,
        ).score / 100
        assert ours[i] == pytest.approx(expected, abs=1e-12)


def test_self_bleu_matches_sacrebleu_sentence_bleu_against_all_others() -> None:
    texts = random_texts(25, seed=2)
    ours = bleu_from_stats(self_bleu_stats(texts, 4), "floor")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, text in enumerate(texts):
            refs = [" ".join(t) for j, t in enumerate(texts) if j != i]
            expected = sacrebleu.sentence_bleu(
                " ".join(text), refs, tokenize="none", smooth_method="floor", use_effective_order=False
            ).score / 100
            assert ours[i] == pytest.approx(expected, abs=1e-12)


def test_self_bleu_with_sentence_defaults_is_sacrebleus_sentence_score_mean() -> None:
    # the app's readout (app/variants/diversity.py): exp smoothing + effective order, 13a tokens
    texts = ["The cat sat on the mat.", "A dog ran, far away!", "The cat ran on the mat?", "It's 3.5 km."]
    tokens = [BLEU(effective_order=True).tokenizer(t).split() for t in texts]
    bleu = BLEU(effective_order=True)
    expected = np.mean([bleu.sentence_score(t, [o for j, o in enumerate(texts) if j != i]).score / 100
                        for i, t in enumerate(texts)])
    ours = self_bleu(tokens, 4, smooth="exp", effective_order=True)
    assert ours == pytest.approx(expected, abs=1e-12) and 0 < ours < 1


def test_sentence_and_corpus_bleu_match_sacrebleu_with_two_references() -> None:
    texts = random_texts(30, seed=3)
    hyps, refs = texts[:10], [[texts[10 + i], texts[20 + i]] for i in range(10)]
    ours = sentence_bleu(hyps, refs)
    for i in range(10):
        expected = sacrebleu.sentence_bleu(" ".join(hyps[i]), [" ".join(r) for r in refs[i]], tokenize="none")
        assert ours[i] == pytest.approx(expected.score / 100, abs=1e-12)
    streams = [[" ".join(r[k]) for r in refs] for k in range(2)]
    expected_corpus = sacrebleu.corpus_bleu([" ".join(h) for h in hyps], streams, tokenize="none").score / 100
    assert corpus_bleu(hyps, refs) == pytest.approx(expected_corpus, abs=1e-12)


def test_self_bleu_is_invariant_to_input_order_and_cap_picks_same_texts() -> None:
    texts = random_texts(50, seed=4)
    shuffled = texts[::-1]
    assert self_bleu_orders(texts) == pytest.approx(self_bleu_orders(shuffled))
    capped = self_bleu(texts, max_hypotheses=10, seed=3)
    assert self_bleu(shuffled, max_hypotheses=10, seed=3) == pytest.approx(capped)
    chosen = {tuple(texts[i]) for i in hash_sample(texts, 10, 3)}
    assert chosen == {tuple(shuffled[i]) for i in hash_sample(shuffled, 10, 3)}


def test_single_text_is_a_clear_error_and_empty_texts_give_no_nan() -> None:
    with pytest.raises(ValueError, match="at least two texts"):
        self_bleu([[1, 2, 3]])
    scores = self_bleu_orders([[], [1], [1], []])
    assert all(np.isfinite(v) and 0 <= v <= 1 for v in scores.values())
    assert scores[1] == pytest.approx(0.5)  # the two one-token texts match each other fully


def test_closest_other_length_excludes_self_and_prefers_shorter() -> None:
    lengths = np.array([5, 3, 7, 5, 10])
    assert closest_other_length(lengths).tolist() == [5, 5, 5, 5, 7]
    assert closest_other_length(np.array([4, 2, 6])).tolist() == [2, 4, 4]


def test_pairwise_self_bleu_and_oracle() -> None:
    same = [[1, 2, 3, 4, 5]] * 3
    assert pairwise_self_bleu([same]) == pytest.approx(1.0)
    assert pairwise_self_bleu([[[1, 2, 3, 4], [5, 6, 7, 8]]]) == 0.0
    target = [1, 2, 3, 4, 5, 6]
    candidates = [[[9, 9, 9, 9, 9, 9], target]]
    top1, oracle = top1_and_oracle_bleu(candidates, [target])
    assert top1 == 0.0 and oracle == pytest.approx(1.0)
