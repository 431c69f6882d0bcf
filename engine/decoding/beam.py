"""The one beam search, over the step interface (engine/decoding/step.py).

Rule (NMST paper Appendix A.3, also PermGen's beam inside a sentence): every alive hypothesis
expands its `width` best tokens (Eq. 17); of all expansions the best (width − |finished|) are
kept (Eq. 18; ties → the earlier row, then the better-ranked token); a kept one ending in a
finishing token (eos, ⟨E-t⟩) is finished and not expanded; the search stops when `width` are
finished, none is alive, or after `max_steps` expansions (the alive ones are then returned as
unfinished). The rows follow their beams through `DecodeRows.select`, so the KV cache, the
termination step t and the head's decoding state (ST's running product) move together.

A step's scores are the model's marginal log p(x) (`DecodeRows.log_probs`); with an allowed
mask [V] or [M, V] (`allowed(expansion, alive)`, e.g. PermGen's V ∪ {⟨E-t⟩}, and per hypothesis the
real-words mask of its partial word, engine/decoding/real_words.py) they are that distribution
restricted to the mask and renormalised, so width 1 is exactly greedy decoding from the
distribution a sampler draws from. A hypothesis's score is the sum of its steps' scores (float64);
each token also keeps its unrestricted marginal log-prob (`log_probs`, e.g. PermGen's Eq. 8).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import torch

from engine.decoding.processors import NEG_INF
from engine.decoding.step import DecodeRows


@dataclass
class Hypothesis:
    """A decoded sequence: its tokens (the finishing token last once finished) and scores."""

    tokens: list[int] = field(default_factory=list)
    log_probs: list[float] = field(default_factory=list)  # the model's marginal log p of each token
    score: float = 0.0  # Σ beam scores (restricted, renormalised log-probs when a mask applies)
    finished: bool = False


@dataclass
class BeamResult:
    """Finished hypotheses best first (ties → the one finished first), then the unfinished ones."""

    finished: list[Hypothesis]
    unfinished: list[Hypothesis]


def beam_search(
    rows: DecodeRows,
    width: int,
    max_steps: int,
    finishing: Collection[int],
    allowed: Callable[[int, Sequence[Hypothesis]], torch.Tensor | None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> BeamResult | None:
    """Beam search from `rows` (one row on entry); None when `should_stop` cancels it.

    `allowed(k, alive)` gives the bool mask [V] or [M, V] (or None) of the k-th expansion (0-based) of the
    alive hypotheses, in row order. `rows` is left
    holding the search's last alive rows."""
    if width < 1 or max_steps < 1:
        raise ValueError(f"beam width and the step limit must be >= 1, got {width}, {max_steps}")
    alive, finished = [Hypothesis()], list[Hypothesis]()
    for expansion in range(max_steps):
        if should_stop():
            return None
        marginal = rows.log_probs().double()  # [M, V]
        mask = allowed(expansion, alive) if allowed is not None else None
        scores = marginal if mask is None else torch.log_softmax(marginal.masked_fill(~mask, NEG_INF), dim=-1)
        totals = torch.tensor([h.score for h in alive], dtype=torch.float64, device=scores.device)[:, None] + scores
        best, tokens = totals.topk(min(width, totals.shape[1]), dim=-1)  # [M, width] each, Eq. 17
        best_list, token_list = best.tolist(), tokens.tolist()
        candidates = sorted(((best_list[r][j], r, token_list[r][j]) for r in range(len(alive))
                             for j in range(len(token_list[r]))), key=lambda c: -c[0])  # stable
        kept = [c for c in candidates if c[0] > NEG_INF][: width - len(finished)]  # Eq. 18
        grown = [Hypothesis([*alive[r].tokens, token], [*alive[r].log_probs, float(marginal[r, token])], score,
                            token in finishing) for score, r, token in kept]
        finished += [h for h in grown if h.finished]
        sources = [r for (_, r, token) in kept if token not in finishing]
        alive = [h for h in grown if not h.finished]
        if len(finished) >= width or not alive or expansion == max_steps - 1:
            break
        device = rows.hidden.device
        rows.select(torch.tensor(sources, device=device))
        rows.advance(torch.tensor([h.tokens[-1] for h in alive], device=device))
    return BeamResult(sorted(finished, key=lambda h: -h.score), sorted(alive, key=lambda h: -h.score))
