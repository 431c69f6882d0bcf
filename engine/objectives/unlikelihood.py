"""Unlikelihood training baselines (Welleck et al., 2020, "Neural text generation with unlikelihood training").

**Token level** (`ul-token`, Eq. 4 of that paper): at each position t (predicting x_{t+1}),
    L_t = −log p(x_{t+1}) − α Σ_{c ∈ C_t} log(1 − p(c | x_≤t)),
    C_t = {x_1, …, x_t} ∖ {x_{t+1}}
— the previous-context tokens of *the same sequence* (one row of the batch; the
reference code flattened the batch, so other sequences' tokens became negatives). A token
repeated in the context counts once (C_t is a set). p is the head's marginal distribution,
so this works with every head; 1 − p is clamped at 1e-5 as in the reference code. The MLE
term is the primary objective's (`mle`, or `agg` for the paper's UL + AGG combination), so
UL's own gradient is never gated. α defaults to 1.0 (AGG paper Table 11).

**Sequence level** (`ul-seq`, fine-tuning, §5.2 of that paper): on a share `rate` of the
optimizer steps (0.5 in the paper; the choice is a pure function of (seed, step), so every
DDP rank and a resumed run take the same branch), the first `prefix` tokens of each block are
continued greedily for `continuation` tokens (no gradient, eval mode: no dropout), and
    L = −Σ_t 1[x_t is inside a repeated n-gram] log(1 − p(x_t | x_<t)),  n = 4,
normalised by the number of continuation tokens. A position is marked when it belongs to an
n-gram that already occurred earlier in the continuation (all n positions are marked; the
reference code skipped the last n-gram of each sequence). The other steps use the base
objective (MLE for `ul-seq`, token-level UL for `ul-token+seq`). Fine-tune a trained model by
resuming its checkpoint with `--objective ul-seq` and a larger `--max-steps`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import torch

from engine.config import ConfigError
from engine.model import IGNORE_INDEX, LanguageModel
from engine.objectives.base import MleObjective, Objective, positions
from engine.tokenizer import EOS, SPECIAL_TOKENS
from engine.torch_modes import eval_mode

ONE_MINUS_FLOOR_TOKEN = 1e-5  # reference code's clamp for token-level UL
ONE_MINUS_FLOOR_SEQ = 1e-20  # reference code's clamp for sequence-level UL


def context_candidates(
    input_ids: torch.Tensor, targets: torch.Tensor, vocab_size: int, exclude: Sequence[int] = ()
) -> torch.Tensor:
    """C_t as a mask [B, T, V]: ids among input_ids[b, :t+1], minus targets[b, t], row by row.

    Built from each id's first position per row ([B, V], scatter-min), so it costs O(B·T·V)
    booleans and never mixes rows. Ignored targets get no candidates; `exclude` ids (padding)
    are never candidates.
    """
    batch, length = input_ids.shape
    steps = torch.arange(length, device=input_ids.device)
    first = torch.full((batch, vocab_size), length, dtype=torch.long, device=input_ids.device)
    first.scatter_reduce_(1, input_ids, steps.expand(batch, length), reduce="amin")  # first position of each id
    candidates = first[:, None, :] <= steps[None, :, None]  # seen at or before t, [B, T, V]
    candidates.scatter_(2, targets.clamp(min=0)[..., None], False)  # the true next token is never a negative
    candidates &= (targets != IGNORE_INDEX)[..., None]
    if exclude:
        candidates[..., list(exclude)] = False
    return candidates


def token_unlikelihood(log_probs: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """−Σ_{c ∈ C_t} log(1 − p(c)) per position: log_probs [B, T, V], candidates [B, T, V] → [B, T]."""
    one_minus = (1.0 - log_probs.exp()).clamp(min=ONE_MINUS_FLOOR_TOKEN)
    return -(one_minus.log() * candidates).sum(-1)


class TokenUnlikelihood(Objective):
    """`ul-token` (primary = MLE) and `agg+ul-token` (primary = AGG): primary loss + α · UL."""

    def __init__(self, primary: Objective, alpha: float = 1.0, exclude: Sequence[int] = ()) -> None:
        if alpha < 0:
            raise ConfigError(f"unlikelihood alpha must be >= 0, got {alpha}")
        self.primary = primary
        self.alpha = alpha
        self.exclude = list(exclude)
        self.name = "ul-token" if isinstance(primary, MleObjective) else f"{primary.name}+ul-token"

    def begin_step(self, step: int, targets: torch.Tensor) -> None:
        self.primary.begin_step(step, targets)

    def restore(self, step: int, global_targets: Callable[[int], torch.Tensor]) -> None:
        self.primary.restore(step, global_targets)

    def token_losses(
        self, model: LanguageModel, hidden: torch.Tensor, input_ids: torch.Tensor, targets: torch.Tensor
    ) -> torch.Tensor:
        batch, length, dim = hidden.shape
        steps = positions(targets).reshape(-1)
        log_probs = model.head.log_probs(hidden.reshape(-1, dim), steps).view(batch, length, -1)  # [B, T, V]
        mask = targets != IGNORE_INDEX
        if isinstance(self.primary, MleObjective):  # one pass: the NLL is in the same log-probs
            nll = -log_probs.gather(2, targets.clamp(min=0)[..., None]).squeeze(-1) * mask
        else:
            nll = self.primary.token_losses(model, hidden, input_ids, targets)
        candidates = context_candidates(input_ids, targets, log_probs.shape[-1], self.exclude)
        return nll + self.alpha * token_unlikelihood(log_probs, candidates) * mask


def repeated_ngram_mask(tokens: torch.Tensor, n: int = 4) -> torch.Tensor:
    """1 at every position of an n-gram that already occurred earlier in its row: [B, L] → [B, L] bool."""
    if n < 1:
        raise ValueError(f"n-gram size must be >= 1, got {n}")
    mask = torch.zeros(tokens.shape, dtype=torch.bool)
    for row, sequence in enumerate(tokens.tolist()):
        seen: set[tuple[int, ...]] = set()
        for start in range(len(sequence) - n + 1):
            gram = tuple(sequence[start : start + n])
            if gram in seen:
                mask[row, start : start + n] = True
            seen.add(gram)
    return mask.to(tokens.device)


def next_step(prefix: torch.Tensor) -> torch.Tensor:
    """Termination step t of the position after prefix [B, P], under the training convention: [B]."""
    eos = SPECIAL_TOKENS.index(EOS)
    if prefix.shape[1] < 2:
        return torch.ones(prefix.shape[0], dtype=torch.long, device=prefix.device)
    before = positions(prefix[:, 1:])[:, -1]
    return torch.where(prefix[:, -1] == eos, torch.ones_like(before), before + 1)


@torch.no_grad()
def greedy_rollout(model: LanguageModel, prefix: torch.Tensor, length: int) -> torch.Tensor:
    """Greedy (argmax of the marginal) continuation [B, length] of prefix [B, P], KV-cached."""
    cache = model.new_cache(prefix.shape[0], prefix.shape[1] + length)
    hidden = model.decode(prefix, cache)  # [B, P, D]
    steps = next_step(prefix)  # [B]; restarts at 1 after a generated eos, as in training
    eos = SPECIAL_TOKENS.index(EOS)
    out = []
    for _ in range(length):
        token = model.head.log_probs(hidden[:, -1], steps).argmax(-1)  # [B]
        out.append(token)
        steps = torch.where(token == eos, torch.ones_like(steps), steps + 1)
        hidden = model.decode(token[:, None], cache)  # [B, 1, D]
    return torch.stack(out, dim=1)


class SequenceUnlikelihood(Objective):
    """`ul-seq` / `ul-token+seq`: sequence-level UL on a share of steps, `base` on the others."""

    def __init__(self, base: Objective, rate: float = 0.5, prefix: int = 50, continuation: int = 100,
                 ngram: int = 4, seed: int = 0) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ConfigError(f"sequence-level UL rate must be in [0, 1], got {rate}")
        if prefix < 1 or continuation < ngram or ngram < 1:
            raise ConfigError(f"need prefix >= 1 and continuation >= n-gram size >= 1, got "
                              f"{prefix}, {continuation}, {ngram}")
        self.base, self.rate, self.prefix, self.continuation, self.ngram, self.seed = (
            base, rate, prefix, continuation, ngram, seed)
        self.name = "ul-seq" if isinstance(base, MleObjective) else f"{base.name}+seq"
        self.sequence_step = False

    def check_block(self, block_size: int) -> None:
        if self.prefix + self.continuation > block_size:
            raise ConfigError(f"ul prefix ({self.prefix}) + continuation ({self.continuation}) must fit in "
                              f"block_size {block_size}")

    def begin_step(self, step: int, targets: torch.Tensor) -> None:
        self.sequence_step = random.Random(self.seed * 1_000_003 + step).random() < self.rate
        self.base.begin_step(step, targets)

    def restore(self, step: int, global_targets: Callable[[int], torch.Tensor]) -> None:
        self.base.restore(step, global_targets)

    def token_losses(
        self, model: LanguageModel, hidden: torch.Tensor, input_ids: torch.Tensor, targets: torch.Tensor
    ) -> torch.Tensor:
        return self.base.token_losses(model, hidden, input_ids, targets)

    def loss(self, model: LanguageModel, input_ids: torch.Tensor, targets: torch.Tensor,
             *extra: torch.Tensor) -> torch.Tensor:
        if not self.sequence_step:
            return self.base.loss(model, input_ids, targets, *extra)
        self.check_block(model.config.block_size)
        if input_ids.shape[1] < self.prefix:
            raise ConfigError(f"blocks of {input_ids.shape[1]} tokens are shorter than the ul prefix {self.prefix}")
        return self.sequence_loss(model, input_ids[:, : self.prefix])

    def sequence_loss(self, model: LanguageModel, prefix: torch.Tensor) -> torch.Tensor:
        """Sequence-level UL of greedy continuations of `prefix` [B, P] (scalar)."""
        with eval_mode(model):
            rollout = greedy_rollout(model, prefix, self.continuation)  # [B, C]
        sequence = torch.cat((prefix, rollout), dim=1)  # [B, P + C]
        hidden = model.hidden_states(sequence[:, :-1])
        batch, _, dim = hidden.shape
        tail = hidden[:, prefix.shape[1] - 1 :]  # positions predicting the rollout, [B, C, D]
        steps = positions(sequence[:, 1:])[:, prefix.shape[1] - 1 :].reshape(-1)
        log_probs = model.head.log_probs(tail.reshape(-1, dim), steps).view(batch, self.continuation, -1)
        chosen = log_probs.gather(2, rollout[..., None]).squeeze(-1)  # log p(x_t), [B, C]
        one_minus = (1.0 - chosen.exp()).clamp(min=ONE_MINUS_FLOOR_SEQ)
        repeated = repeated_ngram_mask(rollout, self.ngram)
        return -(one_minus.log() * repeated).sum() / rollout.numel()
