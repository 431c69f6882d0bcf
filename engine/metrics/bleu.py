"""BLEU from vectorised clipped counts: Self-BLEU, pairwise Self-BLEU, sentence and oracle BLEU.

Definition (all functions): BLEU-n of Papineni et al. with uniform weights over orders 1..n,
multi-reference clipping (a hypothesis n-gram is matched up to its largest count in any one
reference), and the brevity penalty against the *closest* reference length (ties → the shorter,
as in sacrebleu and NLTK). `bleu_from_stats` reproduces `sacrebleu.BLEU.compute_bleu` exactly
(same smoothing methods, same effective-order rule) — tests check this — but scores are
fractions in [0, 1], not percentages.

Self-BLEU-n (Zhu et al. 2018, Texygen): each text is the hypothesis once and **every other
text** is a reference; the score is the mean over hypotheses. Texygen's slow path also kept the
hypothesis among its own references (a bug in Texygen) — here a text is never its own
reference (`max_count_in_other_texts`), so N identical texts score 1 and N disjoint texts 0.
Smoothing defaults to sacrebleu's "floor" with 0.1, which is NLTK's `method1` used by Texygen.
The optional hypothesis cap picks hypotheses by a hash of their tokens, so the subset is the
same whatever the input order; references are always all the other texts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.metrics.ngrams import (
    NgramTable,
    Text,
    max_count_in_other_texts,
    ngram_tables,
    to_arrays,
)

SMOOTHING = ("none", "floor", "add-k", "exp")
DEFAULT_SMOOTH_VALUE = {"none": 0.0, "floor": 0.1, "add-k": 1.0, "exp": 0.0}
LOG_ZERO = -9999999999.0  # sacrebleu's my_log(0): a zero precision drives the score to 0


@dataclass(frozen=True)
class BleuStats:
    """Sufficient statistics of N hypotheses: correct/total [N, n], hyp_len/ref_len [N]."""

    correct: np.ndarray
    total: np.ndarray
    hyp_len: np.ndarray
    ref_len: np.ndarray

    def summed(self) -> BleuStats:
        """Corpus-level statistics (sums over hypotheses) as a one-row BleuStats."""
        return BleuStats(
            self.correct.sum(0, keepdims=True), self.total.sum(0, keepdims=True),
            self.hyp_len.sum(keepdims=True), self.ref_len.sum(keepdims=True),
        )


def bleu_from_stats(
    stats: BleuStats, smooth: str = "floor", smooth_value: float | None = None, effective_order: bool = False
) -> np.ndarray:
    """BLEU of each row of `stats` → [N] in [0, 1]; sacrebleu's compute_bleu, vectorised."""
    if smooth not in SMOOTHING:
        raise ValueError(f"unknown smoothing {smooth!r}; choose from {SMOOTHING}")
    value = DEFAULT_SMOOTH_VALUE[smooth] if smooth_value is None else smooth_value
    correct = stats.correct.astype(np.float64)
    total = stats.total.astype(np.float64)
    max_n = correct.shape[1]
    if smooth == "add-k" and max_n > 1:
        correct[:, 1:] += value
        total[:, 1:] += value
    hyp = stats.hyp_len.astype(np.float64)
    ref = stats.ref_len.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(hyp < ref, np.where(hyp > 0, np.exp(1 - ref / np.maximum(hyp, 1)), 0.0), 1.0)
        valid = np.cumprod(total > 0, axis=1).astype(bool)  # orders before the first empty one
        zero = (correct == 0) & valid
        precision = np.where(correct > 0, correct / total, 0.0)
        if smooth == "floor":
            precision = np.where(zero, value / total, precision)
        elif smooth == "exp":
            precision = np.where(zero, 1.0 / (2.0 ** np.cumsum(zero, axis=1) * total), precision)
        precision = np.where(valid, precision, 0.0)
        logs = np.where(precision > 0, np.log(np.where(precision > 0, precision, 1.0)), LOG_ZERO)
    order = valid.sum(1) if effective_order else np.full(len(hyp), max_n)
    used = np.arange(max_n)[None, :] < order[:, None]
    mean_log = np.where(order > 0, (logs * used).sum(1) / np.maximum(order, 1), LOG_ZERO)
    score = bp * np.exp(mean_log)
    no_match = ~(stats.correct > 0).any(axis=1)  # sacrebleu returns 0 before smoothing (#141)
    return np.where(no_match, 0.0, score)


def closest_other_length(lengths: np.ndarray) -> np.ndarray:
    """For each text, the length of the closest *other* text (ties → shorter) → [N]."""
    order = np.argsort(lengths, kind="stable")
    ranked = lengths[order]
    big = np.iinfo(np.int64).max // 4
    left = np.r_[-big, ranked[:-1]]
    right = np.r_[ranked[1:], big]
    pick = np.where(ranked - left <= right - ranked, left, right)
    result = np.empty_like(lengths)
    result[order] = pick
    return result


def self_bleu_stats(texts: Sequence[Text], max_n: int = 4) -> BleuStats:
    """Statistics of every text against all the others as references."""
    return self_bleu_stats_from_tables(ngram_tables(to_arrays(texts), max_n))


def self_bleu_stats_from_tables(tables: dict[int, NgramTable]) -> BleuStats:
    """Self-BLEU statistics from already counted tables of orders 1..max_n (one text set)."""
    max_n = max(tables)
    num_texts = tables[1].num_texts
    if num_texts < 2:
        raise ValueError(f"Self-BLEU needs at least two texts, got {num_texts}")
    correct = np.zeros((num_texts, max_n), dtype=np.int64)
    for n, table in tables.items():
        clipped = np.minimum(table.count, max_count_in_other_texts(table))
        correct[:, n - 1] = np.bincount(table.text, weights=clipped, minlength=num_texts)
    total = np.stack([tables[n].totals for n in range(1, max_n + 1)], axis=1)
    lengths = tables[1].totals  # unigram count = length
    return BleuStats(correct, total, lengths, closest_other_length(lengths))


def hash_sample(texts: Sequence[Text], cap: int, seed: int = 0) -> np.ndarray:
    """Indices of up to `cap` texts, chosen by a seeded hash of their tokens (order-invariant)."""
    if cap < 1:
        raise ValueError(f"sample cap must be >= 1, got {cap}")
    if len(texts) <= cap:
        return np.arange(len(texts))
    keys = [hashlib.sha256(f"{seed}|{' '.join(map(str, t))}".encode()).hexdigest() for t in texts]
    return np.sort(np.argsort(keys, kind="stable")[:cap])


def self_bleu(
    texts: Sequence[Text], n: int = 4, max_hypotheses: int | None = None, seed: int = 0, smooth: str = "floor",
    effective_order: bool = False,
) -> float:
    """Mean Self-BLEU-n over (up to `max_hypotheses`) hypotheses; see the module docstring.

    `smooth="exp", effective_order=True` is sacrebleu's `sentence_score` with the other texts as
    references (the app's readout, app/variants/diversity.py)."""
    scores = bleu_from_stats(self_bleu_stats(texts, n), smooth, effective_order=effective_order)
    chosen = np.arange(len(texts)) if max_hypotheses is None else hash_sample(texts, max_hypotheses, seed)
    return float(scores[chosen].mean())


def self_bleu_orders(
    texts: Sequence[Text], max_n: int = 4, max_hypotheses: int | None = None, seed: int = 0, smooth: str = "floor"
) -> dict[int, float]:
    """{n: Self-BLEU-n} for n = 1..max_n from one counting pass (BLEU-n uses orders 1..n)."""
    return self_bleu_from_stats(self_bleu_stats(texts, max_n), texts, max_hypotheses, seed, smooth)


def self_bleu_from_stats(
    stats: BleuStats, texts: Sequence[Text], max_hypotheses: int | None, seed: int, smooth: str
) -> dict[int, float]:
    """{n: Self-BLEU-n} from statistics of max_n orders (hypothesis cap by hash of `texts`)."""
    max_n = stats.correct.shape[1]
    chosen = np.arange(len(texts)) if max_hypotheses is None else hash_sample(texts, max_hypotheses, seed)
    result = {}
    for n in range(1, max_n + 1):
        sliced = BleuStats(stats.correct[:, :n], stats.total[:, :n], stats.hyp_len, stats.ref_len)
        result[n] = float(bleu_from_stats(sliced, smooth)[chosen].mean())
    return result


def pair_stats(hyps: Sequence[Text], refs: Sequence[Sequence[Text]], max_n: int = 4) -> BleuStats:
    """Statistics of hyps[i] against its own reference set refs[i] (multi-reference clipping)."""
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} reference sets")
    if any(len(r) == 0 for r in refs):
        raise ValueError("every hypothesis needs at least one reference")
    flat_refs = [r for group in refs for r in group]
    arrays = to_arrays([*hyps, *flat_refs])
    tables = ngram_tables(arrays, max_n)
    owner = np.repeat(np.arange(len(hyps)), [len(r) for r in refs])  # hypothesis of each reference
    ref_index = len(hyps) + np.arange(len(flat_refs))
    correct = np.zeros((len(hyps), max_n), dtype=np.int64)
    for n, table in tables.items():
        correct[:, n - 1] = _multi_ref_matches(table, owner, len(hyps))
    total = np.stack([tables[n].totals[: len(hyps)] for n in range(1, max_n + 1)], axis=1)
    lengths = np.array([len(a) for a in arrays], dtype=np.int64)
    ref_len = np.array([_closest(int(lengths[i]), lengths[ref_index[owner == i]]) for i in range(len(hyps))])
    return BleuStats(correct, total, lengths[: len(hyps)], ref_len)


def _closest(hyp_len: int, ref_lens: np.ndarray) -> int:
    return int(min(ref_lens.tolist(), key=lambda r: (abs(r - hyp_len), r)))


def _multi_ref_matches(table: NgramTable, owner: np.ndarray, num_hyps: int) -> np.ndarray:
    """Σ_g min(c_h(g), max_{r ∈ refs(h)} c_r(g)) for every hypothesis h → [num_hyps].

    Rows of texts ≥ num_hyps are references; owner[r − num_hyps] is the hypothesis of reference r.
    """
    is_ref = table.text >= num_hyps
    keys = owner[table.text[is_ref] - num_hyps] * table.num_grams + table.gram[is_ref]
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]) if keys.size else order
    ref_keys = sorted_keys[starts]  # one per (hypothesis, gram) seen in its references
    best = np.maximum.reduceat(table.count[is_ref][order], starts) if keys.size else order
    hyp_text = table.text[~is_ref]
    hyp_keys = hyp_text * table.num_grams + table.gram[~is_ref]
    at = np.searchsorted(ref_keys, hyp_keys)
    found = at < len(ref_keys)
    found[found] = ref_keys[at[found]] == hyp_keys[found]
    matched = np.minimum(table.count[~is_ref][found], best[at[found]])
    return np.bincount(hyp_text[found], weights=matched, minlength=num_hyps).astype(np.int64)


def sentence_bleu(
    hyps: Sequence[Text], refs: Sequence[Sequence[Text]], n: int = 4, smooth: str = "exp",
    effective_order: bool = True,
) -> np.ndarray:
    """Sentence-level BLEU of each hypothesis against its references → [N] (sacrebleu's defaults)."""
    return bleu_from_stats(pair_stats(hyps, refs, n), smooth, effective_order=effective_order)


def corpus_bleu(hyps: Sequence[Text], refs: Sequence[Sequence[Text]], n: int = 4) -> float:
    """Corpus BLEU-n (statistics summed over hypotheses), as sacrebleu.corpus_bleu (exp smoothing)."""
    return float(bleu_from_stats(pair_stats(hyps, refs, n).summed(), "exp")[0])


def pairwise_self_bleu(candidates: Sequence[Sequence[Text]], n: int = 4, smooth: str = "exp") -> float:
    """PermGen's pairwise Self-BLEU: mean sentence BLEU over ordered pairs (i ≠ j) of each source's
    K candidates (single reference per pair), averaged over all pairs of all sources."""
    hyps: list[Text] = []
    refs: list[list[Text]] = []
    for group in candidates:
        for i, hyp in enumerate(group):
            for j, ref in enumerate(group):
                if i != j:
                    hyps.append(hyp)
                    refs.append([ref])
    if not hyps:
        raise ValueError("pairwise Self-BLEU needs a source with at least two candidates")
    return float(sentence_bleu(hyps, refs, n, smooth).mean())


def top1_and_oracle_bleu(
    candidates: Sequence[Sequence[Text]], targets: Sequence[Text], n: int = 4
) -> tuple[float, float]:
    """(top-1 BLEU-n, oracle BLEU-n) over sources with K ranked candidates each (PermGen §5).

    Top-1 uses each source's first candidate; oracle keeps, per source, the candidate with the
    best sentence BLEU against the target (ties → the earlier), then both are corpus BLEU.
    """
    if len(candidates) != len(targets) or any(len(c) == 0 for c in candidates):
        raise ValueError("need one non-empty candidate list per target")
    flat = [c for group in candidates for c in group]
    owner = np.repeat(np.arange(len(targets)), [len(c) for c in candidates])
    scores = sentence_bleu(flat, [[targets[int(i)]] for i in owner], n)
    best: list[Text] = []
    offset = 0
    for group in candidates:
        best.append(group[int(np.argmax(scores[offset : offset + len(group)]))])
        offset += len(group)
    references = [[t] for t in targets]
    return corpus_bleu([g[0] for g in candidates], references, n), corpus_bleu(best, references, n)
