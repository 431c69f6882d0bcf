"""Termination parametrizations: VA (plain softmax), ST (Welleck et al. 2020) and NMST (Choi et al.).

A `TerminationHead` wraps any inner `OutputHead` (softmax, F², POSG) and adds an *eos group*
holding only eos (docs/architecture.md). With z_t = u·h_t (u: the head's own gate vector) and σ the sigmoid:

- NMST (Definition 6, Eq. 10): α_t = p(eos_t) = σ(z_t) + (1 − σ(z_t))(1 − (1 − ε)^t);
- ST (Definition 5, Eq. 9):    α_t = 1 − Π_{t' ≤ t} (1 − ε) σ(z_t');
- any other token x ≠ eos:      p(x) = (1 − α_t) · p_inner(x | x ≠ eos).

p_inner(· | x ≠ eos) is the inner head's distribution with eos removed and renormalized: for
the softmax head exactly the paper's softmax over V∖{eos}; for grouped heads both levels are
renormalized (p(g | ¬eos) ∝ p(g)(1 − p(eos | g)), p(x | g, ¬eos) ∝ p(x | g)), so the marginal
sums to one whatever the inner head. Groups: the inner head's G groups, then the eos group (G).

Log space throughout (docs/architecture.md): log (1 − ε)^t = t·log1p(−ε); log(1 − (1 − ε)^t) =
log(−expm1(t·log1p(−ε))) (float32 `1 − exp` loses small t·ε); log α via logaddexp; log(1 − α)
= logsigmoid(−z) + t·log1p(−ε) (NMST) or Σ log((1 − ε)σ(z_t')) (ST, summed in float64). No
log(0) for t ≥ 1 and ε ∈ (0, 1): the bound is exact for t up to 10⁶ and ε from 1e-8 to 0.5.

**The step t.** t counts the tokens of the current *document*: t = 1 predicts the first token
after the eos that starts it; a c-token prompt is the start of a document, so its first generated
token has t = c + 1. This is the only definition that is the same in training (whole documents,
no prompt/continuation split) and decoding (with or without a prompt, with a KV cache or a
re-encoded sliding window). The paper's Eq. 10 indexes the continuation y given a context x;
the authors' GPT-2 code counts from the start of the whole sequence (context included, as here),
their WikiText-2 code counts from the end of a fixed-length context — with ε = 1e-5 and short
prompts the three differ by < c·ε in the bound. See `document_steps` for training windows.

**ST needs the past.** ST's α_t depends on every earlier z_t'. Called on whole sequences
(training, scoring) the head forms the product over each run of consecutive steps in the
flattened input (a run restarts wherever steps[i] ≠ steps[i − 1] + 1). An incremental decoder
carries the running log(1 − α) per row instead, as the head's decoding state (engine/heads/base.py:
`initial_state` from the prompt, `next_state` per step, `decode_log_probs` with it); beam search
reorders that state with its beams (the authors' ST beam search did not).

**Decoding.** Greedy, top-k and nucleus act on the distribution over V ∪ {eos} (NMST Eq. 8 ff.):
around a one-group head tokens come from the marginal in one stage (`samples_marginal`), and a
one-stage draw keeps p(eos) at the bound 1 − (1 − ε)^t after the processors (`floor_marginal`).
Around F² / POSG the group controls reshape only the inner head's groups (`group_stage_scores`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from engine.config import ConfigError
from engine.controls import HeadCapabilities, Termination
from engine.heads.base import HeadState, OutputHead
from engine.heads.softmax import SoftmaxHead

TERMINATIONS = ("va", "st", "nmst")
NEG_INF = float("-inf")


def log1mexp(x: torch.Tensor) -> torch.Tensor:
    """log(1 − exp(x)) for x ≤ 0, accurate at both ends (Mächler 2012); −inf at x = 0."""
    x = x.clamp(max=0.0)
    return torch.where(x > -math.log(2.0), torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))


def check_eps(eps: float) -> None:
    if not (isinstance(eps, float | int) and 0.0 < eps < 1.0 and math.isfinite(eps)):
        raise ConfigError(f"termination eps must be in (0, 1), got {eps!r}")


def nmst_log_eos(eos_logit: torch.Tensor, steps: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """NMST Eq. 10 in log space: z [N], t [N] (≥ 1) → (log α_t, log(1 − α_t)), each [N]."""
    z = eos_logit.float()
    log_keep = steps.to(z.dtype) * math.log1p(-eps)  # log (1 − ε)^t ≤ 0, [N]
    log_lower = log1mexp(log_keep)  # log f_lb(t) = log(1 − (1 − ε)^t)
    log_alpha = torch.logaddexp(F.logsigmoid(z), F.logsigmoid(-z) + log_lower)
    log_not = F.logsigmoid(-z) + log_keep  # 1 − α = (1 − σ)(1 − ε)^t
    return log_alpha, log_not


def st_log_factors(eos_logit: torch.Tensor, eps: float) -> torch.Tensor:
    """log((1 − ε) σ(z_t)) per position, float64 [N] (the ST product's factors)."""
    return F.logsigmoid(eos_logit.double()) + math.log1p(-eps)


def run_cumsum(values: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    """Cumulative sum of values [N] within runs of consecutive steps (restart where t_i ≠ t_{i−1} + 1)."""
    starts = torch.ones_like(steps, dtype=torch.bool)
    starts[1:] = steps[1:] != steps[:-1] + 1
    total = torch.cumsum(values, dim=0)
    before = total - values  # sum up to i − 1
    run_id = torch.cumsum(starts.long(), dim=0) - 1
    return total - before[starts][run_id]


def st_log_eos(
    eos_logit: torch.Tensor, steps: torch.Tensor, eps: float, prefix: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """ST Eq. 9: → (log α_t, log(1 − α_t), new running log(1 − α)), each [N].

    Without `prefix` the product runs over consecutive steps of the input (whole sequences);
    with `prefix` [N] (the running log(1 − α_{t−1}) of each row) it is one decoding step."""
    factors = st_log_factors(eos_logit, eps)
    log_not = factors + prefix.double() if prefix is not None else run_cumsum(factors, steps)
    log_alpha = log1mexp(log_not)
    return log_alpha.float(), log_not.float(), log_not


def document_steps(targets: torch.Tensor, eos_id: int) -> torch.Tensor:
    """Termination step t of every training position: targets [B, T] → [B, T] (1-based).

    t restarts at 1 after every eos target (the next position predicts a document's first
    token). The window's first position is taken as a document start: exact when the window
    starts with the eos separator; for a document that began before the window, t is counted
    from the window start (an undercount by the tokens before it — training windows hold no
    earlier positions to count, and ST's product misses their factors too)."""
    batch, length = targets.shape
    index = torch.arange(length, device=targets.device).expand(batch, length)
    starts = torch.zeros_like(targets, dtype=torch.bool)
    starts[:, 0] = True
    starts[:, 1:] = targets[:, :-1] == eos_id
    last_start = torch.cummax(torch.where(starts, index, torch.zeros_like(index)), dim=1).values
    return index - last_start + 1


def prompt_start_step(prompt_ids: list[int], eos_id: int) -> int:
    """Tokens of the current document already in `prompt_ids` (after its last eos): the first
    generated token has step t = this + 1."""
    last = max((i for i, token in enumerate(prompt_ids) if token == eos_id), default=-1)
    return len(prompt_ids) - 1 - last


def context_steps(ids: torch.Tensor, eos_id: int) -> torch.Tensor:
    """Termination step t predicted at every position of a decoding context ids [N, P] → [N, P]:
    position i predicts token i + 1, so the last position's t is the first new token's."""
    shifted = torch.cat([ids[:, 1:], ids[:, -1:]], dim=1)
    return document_steps(shifted, eos_id)


def st_prompt_state(head: TerminationHead, hidden: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    """ST's log(1 − α) before the first new token: Σ log((1 − ε)σ(z)) over the document's prompt
    positions in the encoded window; hidden [N, W, D], steps [N, W] (`context_steps`) → float64 [N]."""
    factors = st_log_factors(head.gate(hidden).squeeze(-1), head.eps)  # [N, W]
    state = torch.zeros(hidden.shape[0], dtype=torch.float64, device=hidden.device)
    for row in range(hidden.shape[0]):
        run = int(steps[row, -1]) - 1  # prompt positions of the current document before the last one
        width = min(run, steps.shape[1] - 1)
        if width > 0:
            state[row] = factors[row, -1 - width : -1].sum()
    return state


class TerminationHead(OutputHead):
    """An inner head plus an eos group with p(eos_t) from ST or NMST; see the module docstring."""

    def __init__(self, inner: OutputHead, kind: str, eps: float, eos_id: int, n_embd: int) -> None:
        if kind not in ("st", "nmst"):
            raise ConfigError(f"termination must be one of {list(TERMINATIONS)}; 'va' needs no wrapper, got {kind!r}")
        check_eps(eps)
        if not 0 <= eos_id < inner.vocab_size:
            raise ConfigError(f"eos id {eos_id} is outside the vocabulary of {inner.vocab_size} tokens")
        super().__init__(inner.vocab_size)
        self.inner = inner
        self.kind = kind
        self.eps = float(eps)
        self.eos_id = eos_id
        self.name = f"{inner.name}+{kind}"
        self.gate = nn.Linear(n_embd, 1, bias=False)  # u in z_t = u·h_t

    @property
    def num_groups(self) -> int:
        return self.inner.num_groups + 1

    @property
    def needs_decoding_state(self) -> bool:
        """ST carries log(1 − α) from step to step (`next_state`); NMST needs only (h_t, t)."""
        return self.kind == "st"

    # ----- decoding (engine/heads/base.py) ---------------------------------------------------
    @property
    def controlled_head(self) -> OutputHead:
        """Group controls address the inner head's groups; the eos group keeps exactly α_t."""
        return self.inner

    @property
    def samples_marginal(self) -> bool:
        """Around a one-group head the groups are only "eos" and "the rest": sample over V ∪ {eos}."""
        return self.inner.num_groups == 1

    def initial_state(self, hidden: torch.Tensor, steps: torch.Tensor) -> HeadState:
        """ST: log(1 − α) over the context's document positions (`st_prompt_state`); NMST: None."""
        return st_prompt_state(self, hidden, steps) if self.needs_decoding_state else None

    def next_state(self, hidden: torch.Tensor, steps: torch.Tensor, state: HeadState) -> HeadState:
        if not self.needs_decoding_state:
            return None
        return self.eos_terms(hidden, steps, self._st_state(hidden, state))[2]

    def _st_state(self, hidden: torch.Tensor, state: HeadState) -> torch.Tensor:
        """ST's running state, zeros (a document's start) when none was carried."""
        if state is not None:
            return state
        return torch.zeros(hidden.shape[0], dtype=torch.float64, device=hidden.device)

    def decode_log_probs(self, hidden: torch.Tensor, steps: torch.Tensor, state: HeadState) -> torch.Tensor:
        return self.log_probs(hidden, steps, self._st_state(hidden, state) if self.needs_decoding_state else None)

    def group_stage_scores(
        self, hidden: torch.Tensor, steps: torch.Tensor, state: HeadState,
        shape: Callable[[torch.Tensor], torch.Tensor], restriction: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """[N, G + 1]: `shape` reshapes only p(g | ¬eos), the inner head's groups; the eos group keeps
        exactly α_t, so no group control changes when text ends (NMST's guarantee holds)."""
        st_state = self._st_state(hidden, state) if self.needs_decoding_state else None
        log_alpha, log_not, _ = self.eos_terms(hidden, steps, st_state)
        inner = self.inner_group_log_probs(hidden, steps)  # [N, G]
        if restriction is None:
            return torch.cat([torch.log_softmax(shape(inner), dim=-1) + log_not[:, None], log_alpha[:, None]], dim=-1)
        restricted = inner + restriction[:, :-1]  # p(g | ¬eos) p(A | g), unnormalised
        kept = torch.logsumexp(restricted, dim=-1) + log_not  # log Σ_g (1 − α) p(g | ¬eos) p(A | g), [N]
        shaped = torch.log_softmax(shape(restricted), dim=-1) + kept[:, None]
        return torch.cat([shaped, (log_alpha + restriction[:, -1])[:, None]], dim=-1)

    def floor_marginal(self, scores: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """Processed scores [N, V] → log-probs with p(eos) ≥ 1 − (1 − ε)^t, the bound every ST / NMST α_t meets.

        Sampling from the marginal lets token processors reach eos: a huge temperature flattens p(eos)
        to about 1/V, a truncation may drop it. Raising eos back to the bound (the other tokens scaled
        by the mass left) keeps the guarantee that every decode ends; rows already above it are unchanged."""
        log_p = torch.log_softmax(scores.float(), dim=-1)  # [N, V]
        log_eos = log_p[:, self.eos_id]  # [N]
        log_bound = log1mexp(steps.float() * math.log1p(-self.eps))  # log(1 − (1 − ε)^t), [N]
        raised = torch.maximum(log_eos, log_bound)
        rest = log1mexp(raised) - log1mexp(log_eos)  # log of the non-eos mass's scale factor, [N]
        eos_column = torch.full_like(log_p[:, :1], self.eos_id, dtype=torch.long)
        floored = (log_p + rest[:, None]).scatter(-1, eos_column, raised[:, None])
        return torch.where((log_eos < log_bound)[:, None], floored, log_p)

    @property
    def eos_group(self) -> int:
        return self.inner.num_groups

    # ----- p(eos_t) ------------------------------------------------------------------------
    def eos_terms(
        self, hidden: torch.Tensor, steps: torch.Tensor | None, state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(log α_t [N], log(1 − α_t) [N], next ST state or None) for hidden [N, D], steps [N]."""
        if steps is None:
            raise ValueError(f"the {self.name!r} head needs each position's termination step t")
        z = self.gate(hidden).squeeze(-1)  # [N]
        if self.kind == "nmst":
            log_alpha, log_not = nmst_log_eos(z, steps, self.eps)
            return log_alpha, log_not, None
        return st_log_eos(z, steps, self.eps, state)

    # ----- the inner head without eos ------------------------------------------------------
    def _softmax_logits(self, hidden: torch.Tensor) -> torch.Tensor | None:
        """Inner softmax logits with eos masked (−inf) [N, V], or None for other inner heads."""
        if not isinstance(self.inner, SoftmaxHead):
            return None
        return self.inner.logits(hidden).float().index_fill(-1, torch.tensor([self.eos_id], device=hidden.device),
                                                              NEG_INF)

    def _inner_log_not_eos(self, hidden: torch.Tensor, steps: torch.Tensor | None) -> torch.Tensor:
        """log(1 − p_inner(eos)) [N] (generic inner heads)."""
        return log1mexp(self.inner.token_log_prob(hidden, self.eos_id, steps))

    def inner_log_probs(self, hidden: torch.Tensor, steps: torch.Tensor | None) -> torch.Tensor:
        """log p_inner(x | x ≠ eos) [N, V], −inf at eos."""
        logits = self._softmax_logits(hidden)
        if logits is not None:
            return F.log_softmax(logits, dim=-1)
        log_probs = self.inner.log_probs(hidden, steps)
        out = log_probs - log1mexp(log_probs[:, self.eos_id : self.eos_id + 1])
        return out.index_fill(-1, torch.tensor([self.eos_id], device=hidden.device), NEG_INF)

    # ----- OutputHead ----------------------------------------------------------------------
    def _with_eos(self, inner: torch.Tensor, log_alpha: torch.Tensor, log_not: torch.Tensor) -> torch.Tensor:
        out = inner + log_not[:, None]  # [N, V]
        return out.index_copy(-1, torch.tensor([self.eos_id], device=out.device), log_alpha[:, None].to(out.dtype))

    def log_probs(
        self, hidden: torch.Tensor, steps: torch.Tensor | None = None, state: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Marginal log p(x) [N, V]; `state` is ST's running log(1 − α_{t−1}) when decoding step by step."""
        log_alpha, log_not, _ = self.eos_terms(hidden, steps, state)
        return self._with_eos(self.inner_log_probs(hidden, steps), log_alpha, log_not)

    def _nll(self, inner_nll: torch.Tensor, targets: torch.Tensor, log_alpha: torch.Tensor,
             log_not: torch.Tensor) -> torch.Tensor:
        is_eos = targets == self.eos_id
        return torch.where(is_eos, -log_alpha, inner_nll - log_not)  # [N]

    def _safe(self, targets: torch.Tensor) -> torch.Tensor:
        """Targets with eos swapped for another id, so the unused inner branch stays finite."""
        return torch.where(targets == self.eos_id, (self.eos_id + 1) % self.vocab_size, targets)

    def token_nll(
        self, hidden: torch.Tensor, targets: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        log_alpha, log_not, _ = self.eos_terms(hidden, steps)
        logits = self._softmax_logits(hidden)
        if logits is not None:
            inner = F.cross_entropy(logits, self._safe(targets), reduction="none")
        else:  # −log p_inner(x) + log(1 − p_inner(eos)) = −log p_inner(x | ¬eos)
            nll, log_eos = self.inner.token_nll_and_log_prob(hidden, self._safe(targets), self.eos_id, steps)
            inner = nll + log1mexp(log_eos)
        return self._nll(inner, targets, log_alpha, log_not)

    def token_nll_given_groups(
        self, hidden: torch.Tensor, targets: torch.Tensor, groups: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        log_alpha, log_not, _ = self.eos_terms(hidden, steps)
        inner = self.inner.token_nll_given_groups(hidden, self._safe(targets), groups, steps)
        return self._nll(inner + self._inner_log_not_eos(hidden, steps), targets, log_alpha, log_not)

    # AGG (engine/objectives/agg.py) gates W in softmax(h·Wᵀ): offered for a softmax inner head.
    @property
    def output_weight(self) -> torch.Tensor | None:
        return self.inner.proj.weight if isinstance(self.inner, SoftmaxHead) else None

    def nll_from_logits(
        self, hidden: torch.Tensor, logits: torch.Tensor, targets: torch.Tensor, steps: torch.Tensor
    ) -> torch.Tensor:
        """token_nll with the inner logits h·Wᵀ [N, V] given (AGG's gated pass)."""
        log_alpha, log_not, _ = self.eos_terms(hidden, steps)
        masked = logits.float().index_fill(-1, torch.tensor([self.eos_id], device=logits.device), NEG_INF)
        inner = F.cross_entropy(masked, self._safe(targets), reduction="none")
        return self._nll(inner, targets, log_alpha, log_not)

    def group_log_probs(
        self, hidden: torch.Tensor, steps: torch.Tensor | None = None, state: torch.Tensor | None = None
    ) -> torch.Tensor:
        """[N, G + 1]: log((1 − α) p_inner(g | ¬eos)) for the inner groups, then log α."""
        log_alpha, log_not, _ = self.eos_terms(hidden, steps, state)
        conditional = self.inner_group_log_probs(hidden, steps)  # [N, G]
        return torch.cat([conditional + log_not[:, None], log_alpha[:, None]], dim=-1)

    def inner_group_log_probs(self, hidden: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        """log p_inner(g | ¬eos) [N, G]: the inner head's groups once eos is taken out."""
        if self.inner.num_groups == 1:
            return hidden.new_zeros(hidden.shape[0], 1, dtype=torch.float32)
        inner_groups = self.inner.group_log_probs(hidden, steps)  # [N, G]
        eos_in_group = self.inner.token_log_prob_by_group(hidden, self.eos_id, steps)  # [N, G]
        joint = inner_groups + log1mexp(eos_in_group)  # p(g, ¬eos) = p(g)(1 − p(eos | g))
        return joint - torch.logsumexp(joint, dim=-1, keepdim=True)

    def token_log_probs_in_group(
        self, hidden: torch.Tensor, groups: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        """log p(x | group) [N, V]: the eos group holds only eos; inner groups lose eos."""
        is_eos_group = (groups == self.eos_group)[:, None]
        inner_groups = groups.clamp(max=self.inner.num_groups - 1)
        if self.inner.num_groups == 1:
            inner = self.inner_log_probs(hidden, steps)
        else:
            in_group = self.inner.token_log_probs_in_group(hidden, inner_groups, steps)
            inner = in_group - log1mexp(in_group[:, self.eos_id : self.eos_id + 1])
            inner = inner.index_fill(-1, torch.tensor([self.eos_id], device=hidden.device), NEG_INF)
        eos_only = torch.full_like(inner, NEG_INF).index_fill(
            -1, torch.tensor([self.eos_id], device=hidden.device), 0.0)
        return torch.where(is_eos_group, eos_only, inner)

    def allowed_group_mass(self, hidden: torch.Tensor, steps: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """log p(A | g) [N, G]: an inner group's tokens without eos renormalised (as `token_log_probs_in_group`),
        the eos group's 0 or −inf, from the inner head's own masses."""
        if self.inner.num_groups == 1:
            return super().allowed_group_mass(hidden, steps, allowed)
        eos = torch.zeros_like(allowed)
        eos[:, self.eos_id] = True
        inner = self.inner.allowed_group_mass(hidden, steps, allowed & ~eos)  # [N, G_inner]
        inner = inner - log1mexp(self.inner.allowed_group_mass(hidden, steps, eos))
        eos_group = torch.where(allowed[:, self.eos_id], 0.0, NEG_INF)[:, None].to(inner.dtype)
        return torch.cat([inner, eos_group], dim=-1)

    def bundle_files(self) -> dict[str, str]:
        return self.inner.bundle_files()

    def group_names(self) -> list[str]:
        return [*self.inner.group_names(), "end of text"]

    def capabilities(self) -> HeadCapabilities:
        """The inner head's controls (F² classes, POSG tags act on the inner groups) plus termination."""
        return dataclasses.replace(self.inner.capabilities(), name=self.name, groups=self.num_groups,
                                   termination=Termination(self.kind, self.eps))
