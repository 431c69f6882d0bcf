"""Geometry of a token embedding matrix W [V, D] (AGG paper §3.2, Eq. 3, Fig. 3c).

- `isotropy` I(W) = min_a Z(a) / max_a Z(a), Z(a) = Σ_i exp(w_i·a), a over the eigenvectors
  of WᵀW (Arora et al. 2016; Mu et al. 2018). Eigenvectors are taken as `torch.linalg.eigh`
  returns them (one sign each), as the published implementations do; Z is computed in log
  space (logsumexp), so large norms cannot overflow. 1 for an isotropic set such as the rows
  of an orthogonal matrix, → 0 when the vectors collapse into a narrow cone.
- `agg_group_ids`: frequent 30% / medium 50% / rare 20% of the vocabulary by training
  count (ties: lower id first; a group's size is floor(0.3·V), floor(0.8·V) − floor(0.3·V),
  and the rest).
- `group_cosine`: mean cosine similarity over all pairs (i in A, j in B), self-pairs excluded
  within a group.
- `normalized_singular_values`: singular values of W divided by the largest (Fig. 3c).
"""

from __future__ import annotations

import numpy as np
import torch

from engine.heads.softmax import SoftmaxHead
from engine.model import LanguageModel

GROUP_NAMES = ("frequent", "medium", "rare")
GROUP_SHARES = (0.3, 0.5, 0.2)


def isotropy(weight: torch.Tensor) -> float:
    """I(W) of Eq. 3 for rows `weight` [V, D] (float64 internally)."""
    w = weight.detach().double()
    if w.ndim != 2 or w.shape[0] == 0:
        raise ValueError(f"need a non-empty [V, D] matrix, got shape {tuple(w.shape)}")
    _, vectors = torch.linalg.eigh(w.T @ w)  # columns: unit eigenvectors of WᵀW, [D, D]
    log_z = torch.logsumexp(w @ vectors, dim=0)  # log Z(a) per eigenvector, [D]
    return float(torch.exp(log_z.min() - log_z.max()))


def agg_group_ids(counts: np.ndarray | torch.Tensor) -> dict[str, torch.Tensor]:
    """Token ids of the frequent / medium / rare groups from training counts [V]."""
    counts_t = torch.as_tensor(np.asarray(counts), dtype=torch.long)
    if counts_t.ndim != 1 or counts_t.numel() < 3:
        raise ValueError("need a count per token for at least 3 tokens")
    if int(counts_t.sum()) == 0:
        raise ValueError("all token counts are zero: the tokenizer carries no training counts (token_counts.json)")
    order = torch.sort(-counts_t, stable=True).indices  # most frequent first, ties by id
    size = counts_t.numel()
    first, second = int(size * GROUP_SHARES[0]), int(size * (GROUP_SHARES[0] + GROUP_SHARES[1]))
    return {"frequent": order[:first], "medium": order[first:second], "rare": order[second:]}


def group_cosine(weight: torch.Tensor, first: torch.Tensor, second: torch.Tensor) -> float:
    """Mean cos(w_i, w_j) over i ∈ first, j ∈ second (i ≠ j when the groups are the same)."""
    unit = torch.nn.functional.normalize(weight.detach().double(), dim=-1)
    a, b = unit[first], unit[second]
    total = float((a.sum(0) * b.sum(0)).sum())  # Σ_i Σ_j cos(w_i, w_j)
    if torch.equal(first, second):
        pairs = len(first) * (len(first) - 1)
        return (total - len(first)) / pairs if pairs else float("nan")  # drop the |A| self-pairs (cos = 1)
    return total / (len(first) * len(second))


def normalized_singular_values(weight: torch.Tensor) -> list[float]:
    """σ_k / σ_1 for the singular values of W, descending."""
    values = torch.linalg.svdvals(weight.detach().double())
    normalized: list[float] = (values / values[0]).tolist()
    return normalized


def output_embedding(model: LanguageModel) -> tuple[torch.Tensor, str]:
    """The matrix AGG acts on: the head's output embedding if it has one, else the input embedding."""
    head = model.head
    if isinstance(head, SoftmaxHead):
        return head.proj.weight, "output embedding (softmax head" + (", tied)" if model.config.tie_embeddings else ")")
    weight = getattr(head, "output_weight", None)
    if isinstance(weight, torch.Tensor):
        return weight, f"output embedding ({head.name} head)"
    return model.backbone.token_embedding.weight, f"input token embedding ({head.name} head has no output embedding)"


def embedding_report(weight: torch.Tensor, groups: dict[str, torch.Tensor]) -> dict[str, object]:
    """I(W) overall and per group, and the 3×3 mean cosine between groups."""
    report: dict[str, object] = {"isotropy": {"total": isotropy(weight)}}
    iso = report["isotropy"]
    assert isinstance(iso, dict)
    for name in GROUP_NAMES:
        iso[name] = isotropy(weight[groups[name]])
    report["cosine"] = {
        f"{a}-{b}": group_cosine(weight, groups[a], groups[b])
        for i, a in enumerate(GROUP_NAMES) for b in GROUP_NAMES[i:]
    }
    return report
