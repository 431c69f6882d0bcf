"""Teacher-forced perplexity and Uniq per frequency group (AGG paper Table 3).

Over every held-out position, with the model's marginal next-token distribution:
- PPL of a group = exp(mean NLL over the positions whose *target* is in the group);
- Uniq of a group = number of distinct argmax next-token predictions that fall in the group
  (so the groups' Uniq add up to the total, as in Table 3).
"""

from __future__ import annotations

import math

import torch

from engine.model import LanguageModel
from engine.torch_modes import eval_mode


@torch.no_grad()
def group_prediction_stats(
    model: LanguageModel, blocks: torch.Tensor, groups: dict[str, torch.Tensor], batch_size: int = 16
) -> dict[str, dict[str, float]]:
    """{'ppl': {group: value, 'total': value}, 'uniq': {...}, 'tokens': {...}} over blocks [n, T + 1]."""
    if len(blocks) == 0:
        raise ValueError("no blocks to evaluate")
    device = next(model.parameters()).device
    vocab = model.config.vocab_size
    group_of = torch.full((vocab,), -1, dtype=torch.long)
    for index, ids in enumerate(groups.values()):
        group_of[ids] = index
    if bool((group_of < 0).any()):
        raise ValueError("the groups must cover the whole vocabulary")
    nll_sum = torch.zeros(len(groups), dtype=torch.float64)
    count = torch.zeros(len(groups), dtype=torch.long)
    predicted = torch.zeros(vocab, dtype=torch.bool)
    with eval_mode(model):
        for start in range(0, len(blocks), batch_size):
            block = blocks[start : start + batch_size].to(device)
            log_probs = model.next_log_probs(block[:, :-1])  # [b, T, V]
            targets = block[:, 1:]
            nll = -log_probs.gather(2, targets[..., None]).squeeze(-1).double().cpu()  # [b, T]
            target_group = group_of[targets.cpu()]
            nll_sum.index_add_(0, target_group.reshape(-1), nll.reshape(-1))
            count += torch.bincount(target_group.reshape(-1), minlength=len(groups))
            predicted[log_probs.argmax(-1).reshape(-1).cpu()] = True
    names = list(groups)
    total_nll = float(nll_sum.sum()) / max(1, int(count.sum()))
    ppl = {n: math.exp(min(float(nll_sum[i]) / int(count[i]), 50)) if count[i] else float("nan")
           for i, n in enumerate(names)}
    ppl["total"] = math.exp(min(total_nll, 50))
    uniq = {n: float(int(predicted[groups[n]].sum())) for n in names}
    uniq["total"] = float(int(predicted.sum()))
    tokens = {n: float(int(count[i])) for i, n in enumerate(names)}
    tokens["total"] = float(int(count.sum()))
    return {"ppl": ppl, "uniq": uniq, "tokens": tokens}
