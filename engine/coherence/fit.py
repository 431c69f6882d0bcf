"""Fitting the coherence scorer: a linear score w·z(x) of standardised feature rows, trained on pairs.

Story Cloze gives pairs (right ending, wrong ending) of one context; our own negatives give more pairs
(a fitting continuation against a continuation of another prompt, or one that repeats a sentence). For a
pair (a, b) where a should score higher, p(a over b) = σ(w·(z(a) − z(b))): logistic regression on feature
differences, both orders included so the fit has no offset to learn. The L2 strength is the one with the
best accuracy under k-fold cross-validation of the training pairs (folds by pair, in order), then the
weights are refitted on every pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

L2_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)


@dataclass(frozen=True)
class LinearScore:
    """score(x) = weights · (x − mean) / std, for feature rows x [N, F]."""

    mean: torch.Tensor  # [F]
    std: torch.Tensor  # [F]
    weights: torch.Tensor  # [F]

    def __call__(self, features: torch.Tensor) -> torch.Tensor:
        """Scores [N] of feature rows [N, F]."""
        return ((features - self.mean) / self.std) @ self.weights


@dataclass(frozen=True)
class FitReport:
    """The chosen L2 strength and the cross-validated pair accuracy of every strength tried."""

    l2: float
    cv_accuracy: dict[float, float]


def pair_accuracy(score: LinearScore, better: torch.Tensor, worse: torch.Tensor) -> float:
    """Share of pairs whose better row [P, F] scores above its worse row [P, F]."""
    return float((score(better) > score(worse)).float().mean())


def fit_pairs(better: torch.Tensor, worse: torch.Tensor, l2: float, steps: int = 200) -> LinearScore:
    """Pairwise logistic regression (see the module docstring) on rows [P, F] by L-BFGS."""
    rows = torch.cat([better, worse]).double()
    mean, std = rows.mean(dim=0), rows.std(dim=0).clamp(min=1e-6)
    diff = ((better.double() - mean) / std) - ((worse.double() - mean) / std)  # [P, F]
    weights = torch.zeros(diff.shape[1], dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([weights], max_iter=steps, line_search_fn="strong_wolfe")

    def loss() -> torch.Tensor:
        optimizer.zero_grad()
        # σ(d·w) for (better, worse) and σ(−d·w) for the swapped pair have the same loss: softplus(−d·w).
        value = torch.nn.functional.softplus(-(diff @ weights)).mean() + l2 * weights.square().sum()
        value.backward()  # type: ignore[no-untyped-call]
        return value

    optimizer.step(loss)  # type: ignore[no-untyped-call]
    return LinearScore(mean.float(), std.float(), weights.detach().float())


def fit_with_cv(better: torch.Tensor, worse: torch.Tensor, folds: int = 5) -> tuple[LinearScore, FitReport]:
    """The weights of the L2 strength with the best k-fold accuracy, refitted on all pairs."""
    if len(better) != len(worse) or len(better) < folds:
        raise ValueError(f"need at least {folds} pairs of equal-sized rows, got {len(better)} and {len(worse)}")
    fold_of = torch.arange(len(better)) % folds
    accuracy = {}
    for l2 in L2_GRID:
        hits = 0.0
        for fold in range(folds):
            train, held = fold_of != fold, fold_of == fold
            score = fit_pairs(better[train], worse[train], l2)
            hits += pair_accuracy(score, better[held], worse[held]) * int(held.sum())
        accuracy[l2] = hits / len(better)
    best = max(L2_GRID, key=lambda value: (accuracy[value], value))  # ties: the stronger penalty
    return fit_pairs(better, worse, best), FitReport(best, accuracy)
