"""AGG's token counter memory (paper §4.1, Eq. 5): target counts of the last K training steps.

A ring buffer of K per-step count vectors m_1..m_K ([K, V]); a = Σ m_t is kept as a running
sum, so pushing a step costs O(V) whatever K is. Token i is rare iff a_i / K < α.

Choices where the paper is silent or ambiguous (each said here, once):

- **A step is one optimizer step.** Its counts are the targets of the whole global batch:
  every micro-batch of gradient accumulation and, under DDP, every rank (the counts are
  all-reduced when `torch.distributed` is initialized; the authors' code counted only its own
  GPU's tokens). The current step's counts are pushed *before* its loss is computed, as in the
  authors' code, so all micro-batches of one step see the same gates.
- **Before the memory is full** the denominator is the number of steps held, min(steps, K),
  not K (as the authors' code does). With a literal a_i / K every token would be "rare" for
  the whole first epoch, because the memory starts at zero. Once K steps have been seen this
  is exactly the paper's a_i / K.
- **ā_r = 0** (every rare token unseen in the window): g2 = 0 for the rare tokens, the limit
  the authors' code reaches with its a / (ā_r + 1e-7).
- **Static mode** (Table 10 ablation, "rare group fixed after 1 epoch"): after `static_after`
  steps the rare *group* is frozen; the counts and so the gate values a_k / K keep updating.
- Special tokens get no exemption (the authors' code exempted fairseq's four specials); our
  unused sentence marks simply stay rare and keep their initial embeddings' geometry.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from engine.config import ConfigError

IGNORE_INDEX = -100  # same sentinel as engine.model: such targets are not counted


def count_targets(targets: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Occurrences of each id among `targets` (any shape), IGNORE_INDEX excluded → [V] int64."""
    flat = targets.reshape(-1)
    flat = flat[flat != IGNORE_INDEX]
    if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= vocab_size):
        raise ValueError(f"target ids must lie in [0, {vocab_size}) or be {IGNORE_INDEX}")
    return torch.bincount(flat, minlength=vocab_size)


class TokenCounterMemory:
    """Counts of target tokens over the last `window` steps, and the rare group they define."""

    def __init__(
        self,
        vocab_size: int,
        window: int,
        alpha: float = 0.03,
        static_after: int = 0,
        device: torch.device | str = "cpu",
    ) -> None:
        if vocab_size < 1 or window < 1:
            raise ConfigError(f"token memory needs vocab_size >= 1 and window K >= 1, got {vocab_size}, {window}")
        if alpha <= 0.0:
            raise ConfigError(f"AGG alpha must be > 0, got {alpha}")
        if static_after < 0:
            raise ConfigError(f"static_after must be >= 0 (0 = dynamic grouping), got {static_after}")
        self.vocab_size = vocab_size
        self.window = window
        self.alpha = alpha
        self.static_after = static_after
        self.slots = torch.zeros(window, vocab_size, dtype=torch.long, device=device)  # m_1..m_K, [K, V]
        self.appearances = torch.zeros(vocab_size, dtype=torch.long, device=device)  # a = Σ m_t, [V]
        self.steps = 0  # steps pushed so far
        self._frozen_rare: torch.Tensor | None = None

    @property
    def held(self) -> int:
        """Steps currently in the window: min(steps, K)."""
        return min(self.steps, self.window)

    @property
    def frozen(self) -> bool:
        return self._frozen_rare is not None

    def push(self, counts: torch.Tensor, all_reduce: bool = True) -> None:
        """Add one step's counts [V] (this rank's; summed over ranks when distributed)."""
        if counts.shape != (self.vocab_size,):
            raise ValueError(f"counts must have shape ({self.vocab_size},), got {tuple(counts.shape)}")
        counts = counts.to(self.slots.device, torch.long).clone()
        if all_reduce and dist.is_available() and dist.is_initialized():
            dist.all_reduce(counts)  # global step counts, identical on every rank
        slot = self.steps % self.window
        self.appearances += counts - self.slots[slot]  # the step K steps ago is forgotten here
        self.slots[slot] = counts
        self.steps += 1
        if self.static_after and self.steps == self.static_after:
            self._frozen_rare = self._dynamic_rare()

    def rates(self) -> torch.Tensor:
        """a_i / K per token (float32 [V]); K = steps held while the window fills."""
        return self.appearances.float() / max(1, self.held)

    def _dynamic_rare(self) -> torch.Tensor:
        return self.rates() < self.alpha

    def rare(self) -> torch.Tensor:
        """Rare group V_r as a bool mask [V] (Eq. 5), frozen in static mode."""
        return self._frozen_rare.clone() if self._frozen_rare is not None else self._dynamic_rare()

    def gates(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(rare [V] bool, g1 [V], g2 [V]) for tokens other than the target (Eq. 7, 8).

        g1_k = a_k / K and g2_k = min(a_k / ā_r, 1) for rare k, 1 elsewhere; the loss sets
        the target's own gate to 1. g1 is clipped at 1, which only matters in static mode,
        where a frozen-rare token may have become frequent (a gate never amplifies).
        """
        rare = self.rare()
        a = self.appearances.float()
        g1 = torch.where(rare, self.rates().clamp(max=1.0), torch.ones_like(a))  # ≤ 1 even if frozen-rare
        mean_rare = a[rare].mean() if bool(rare.any()) else a.new_tensor(0.0)  # ā_r
        ratio = (a / mean_rare).clamp(max=1.0) if float(mean_rare) > 0 else torch.zeros_like(a)
        g2 = torch.where(rare, ratio, torch.ones_like(a))
        return rare, g1, g2
