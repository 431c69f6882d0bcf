"""Group-stage controls for frequency classes (F², docs/architecture.md) and the flat-sampling ablation.

These processors act on the first sampling stage, scores = log p(class) [N, K] (see
`DecodeConfig.group_processors`). Like every processor they are validated in `__init__` and
return new tensors. Class ids follow frequency (class 0 = most frequent, K−1 = rarest), which is
what gives `RarityBias` its meaning.

- `RarityBias(β)`: adds β·c/(K−1) to class c's score, i.e. multiplies p(c) by exp(β·c/(K−1))
  and renormalises. β > 0 moves mass toward rarer classes (the expected class index rises
  monotonically with β), β < 0 toward frequent ones, 0 leaves the model's p(c).
- `ClassTemperature(T)`: p(c)^(1/T), renormalised; T < 1 sharpens, T > 1 flattens.
- `ClassTopK(k)`: keep the k most probable classes (ties at the k-th are kept).
Applied in that order: the bias reshapes the distribution, the temperature and the top-k then
act on the reshaped one.

`check_group_controls` refuses class controls on a head that does not list them (a softmax
head has no classes; silently ignoring the setting would mislead the writer).
"""

from __future__ import annotations

import torch

from engine.decode_fields import CLASS_RARITY_BIAS
from engine.decoding.processors import DecodeSettingError, ScoreProcessor, Temperature, TopK
from engine.heads.base import OutputHead


class RarityBias(ScoreProcessor):
    """Tilt the class distribution toward rarer (β > 0) or more frequent (β < 0) classes."""

    def __init__(self, bias: float) -> None:
        CLASS_RARITY_BIAS.check(bias)  # finite and small enough that exp(β) stays a float32
        self.bias = bias

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        k = scores.shape[-1]
        if k == 1:
            return scores.clone()
        rarity = torch.arange(k, device=scores.device, dtype=scores.dtype) / (k - 1)  # [K], 0 … 1
        return scores + self.bias * rarity


class ClassTemperature(Temperature):
    """Divide class scores by T: T < 1 sharpens p(class), T > 1 flattens it."""

    setting = "class_temperature"


class ClassTopK(TopK):
    """Keep the k most probable classes; the others get −inf (ties at the k-th are kept)."""

    setting = "class_top_k"


def check_group_controls(active: list[str], head: OutputHead) -> None:
    """Raise if a set group control (by settings name) is not honoured by `head` (its capabilities)."""
    try:
        head.capabilities().check(active)
    except ValueError as error:
        raise DecodeSettingError(str(error)) from None


def most_likely_groups(
    head: OutputHead, hidden: torch.Tensor, tokens: torch.Tensor, steps: torch.Tensor | None
) -> torch.Tensor:
    """The group each token came from, for flat sampling: argmax_g p(g)·p(x | g) → [N].

    For heads whose groups partition the vocabulary (F²) that is the token's only group.
    """
    token_groups = getattr(head, "token_groups", None)
    if callable(token_groups):
        groups: torch.Tensor = token_groups(tokens)
        return groups
    joint = head.group_log_probs(hidden, steps).clone()  # [N, G]
    for g in range(head.num_groups):
        in_group = head.token_log_probs_in_group(hidden, torch.full_like(tokens, g), steps)  # [N, V]
        joint[:, g] += in_group.gather(1, tokens[:, None])[:, 0]
    return joint.argmax(dim=-1)
