"""The output-head interface: a two-level (grouped) next-token distribution.

Every head describes, per position, log p(group) over G groups and log p(token | group) over
each group's tokens (docs/architecture.md). A plain softmax is one group holding the whole vocabulary;
F² groups are frequency classes, POSG groups are POS tags, a termination head adds an eos
group. From that one description come:

- training: `token_nll` = −log p(group_t) − log p(x_t | group_t) for grouped heads, −log p(x_t)
  for one-group heads, computed without a [G × V] tensor per token;
- scoring: `log_probs`, the marginal log p(x) (a proper distribution over the vocabulary);
- decoding: `group_log_probs` then `token_log_probs_in_group` (two-stage sampling), or the
  marginal for "flat" sampling.

Decoding state. A head whose p(x_t) depends on earlier steps (ST's running log(1 − α)) keeps
per-row *decoding state*: `initial_state` over the encoded context, `next_state` after each
step, `select_state` when beams reorder rows, and the decoding methods (`decode_log_probs`,
`group_stage_scores`) take it. Heads without such state keep the defaults (state None), so no
decoder needs to know which head it drives (engine/decoding/step.py, engine/decoding/token_sampler.py).

`steps` is each position's termination step t (1-based count of generated tokens in the
sequence, see the termination heads); heads that do not depend on t ignore it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import torch
from torch import nn

from engine.controls import HeadCapabilities

HeadState = torch.Tensor | None  # per-row decoding state, [N, ...] (None: the head needs none)


def select_state(state: HeadState, rows: torch.Tensor) -> HeadState:
    """Rows `rows` [M] (any order, repeats allowed) of a decoding state, as beams reorder rows."""
    return None if state is None else state[rows]


class OutputHead(nn.Module, ABC):
    """Hidden states → grouped next-token distribution; see the module docstring."""

    name: str = "abstract"

    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.vocab_size = vocab_size

    @property
    @abstractmethod
    def num_groups(self) -> int:
        """G, the number of groups of the first sampling stage."""

    @abstractmethod
    def token_nll(
        self, hidden: torch.Tensor, targets: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Per-token training loss: hidden [N, D], targets [N] → [N] (no reduction)."""

    @abstractmethod
    def log_probs(self, hidden: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        """Marginal log p(x): hidden [N, D] → [N, V]; each row logsumexps to 0."""

    @abstractmethod
    def group_log_probs(self, hidden: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        """log p(group): hidden [N, D] → [N, G]."""

    @abstractmethod
    def token_log_probs_in_group(
        self, hidden: torch.Tensor, groups: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        """log p(x | group): hidden [N, D], groups [N] → [N, V], −inf outside the group."""

    # ----- optional hooks (defaults fit every head; POSG overrides them) -----------
    def token_log_prob(self, hidden: torch.Tensor, token: int, steps: torch.Tensor | None = None) -> torch.Tensor:
        """Marginal log p(x = token): hidden [N, D] → [N]. A head that can score one token without the
        whole distribution overrides this (F²: only the token's class)."""
        return self.log_probs(hidden, steps)[:, token]

    def token_nll_and_log_prob(self, hidden: torch.Tensor, targets: torch.Tensor, token: int,
                               steps: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(−log p(x_t) [N], log p(x = token) [N]): the termination heads' training loss asks both at every
        position. A head that can get both from one projection overrides this (F² with its group prior)."""
        return self.token_nll(hidden, targets, steps), self.token_log_prob(hidden, token, steps)

    def token_log_prob_by_group(self, hidden: torch.Tensor, token: int,
                                steps: torch.Tensor | None = None) -> torch.Tensor:
        """log p(x = token | group) for every group: hidden [N, D] → [N, G] (−inf where the group lacks it).
        One projection per group by default; a head whose groups partition the vocabulary overrides it (F²:
        only the token's class holds it), which the termination heads ask at every decoding step."""
        columns = []
        for g in range(self.num_groups):
            group = torch.full((hidden.shape[0],), g, dtype=torch.long, device=hidden.device)
            columns.append(self.token_log_probs_in_group(hidden, group, steps)[:, token])
        return torch.stack(columns, dim=-1)

    def token_nll_given_groups(
        self, hidden: torch.Tensor, targets: torch.Tensor, groups: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Training loss when each target's group is observed data (POSG: the tagged POS of x_t):
        −log p(group_t) − log p(x_t | group_t); hidden [N, D], targets [N], groups [N] → [N].
        Heads whose groups are not observed (a token's group is implied by the token) refuse."""
        raise ValueError(f"the {self.name!r} head takes no observed target groups (only 'posg' does)")

    def bundle_files(self) -> dict[str, str]:
        """Extra text files a bundle of this head carries (name → content), e.g. POSG's pos_vocab.json."""
        return {}

    def group_names(self) -> list[str]:
        """Human-readable group labels (shown by the app when colouring tokens)."""
        return [f"group {g}" for g in range(self.num_groups)]

    def capabilities(self) -> HeadCapabilities:
        """What this head's groups are and which group-stage controls it honours (engine/controls.py)."""
        return HeadCapabilities(self.name, self.num_groups)

    def missing_state(self) -> str:
        """What this head still lacks to compute anything (a loaded bundle must lack nothing); '' = ready."""
        return ""

    # ----- decoding (engine/decoding/): state, group stage, marginal -------------------------
    @property
    def controlled_head(self) -> OutputHead:
        """The head whose groups the group controls (F² classes, POS tags) address: itself by default."""
        return self

    @property
    def samples_marginal(self) -> bool:
        """Whether tokens are always drawn from the marginal in one stage, as for flat sampling."""
        return False

    def initial_state(self, hidden: torch.Tensor, steps: torch.Tensor) -> HeadState:
        """Decoding state after a context: hidden [N, W, D], steps [N, W] of its positions → state or None."""
        return None

    def next_state(self, hidden: torch.Tensor, steps: torch.Tensor, state: HeadState) -> HeadState:
        """The state after the step at hidden [N, D], steps [N]."""
        return state

    def decode_log_probs(self, hidden: torch.Tensor, steps: torch.Tensor, state: HeadState) -> torch.Tensor:
        """Marginal log p(x) [N, V] of one decoding step, given the rows' state."""
        return self.log_probs(hidden, steps)

    def group_stage_scores(
        self, hidden: torch.Tensor, steps: torch.Tensor, state: HeadState,
        shape: Callable[[torch.Tensor], torch.Tensor], restriction: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Group-stage scores [N, G] of two-stage sampling: `shape` (the group controls) applied to
        log p(g), plus `restriction` [N, G] = log p(allowed | g) when only some tokens may follow."""
        scores = self.group_log_probs(hidden, steps)
        return shape(scores if restriction is None else scores + restriction)

    def allowed_group_mass(self, hidden: torch.Tensor, steps: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """log p(A | g) [N, G]: each group's probability of the allowed tokens `allowed` [N, V] (−inf where a
        group has none). This default asks every group for its tokens; heads override it with one projection."""
        columns = []
        for g in range(self.num_groups):
            in_group = self.token_log_probs_in_group(hidden, torch.full_like(steps, g), steps)  # [N, V]
            columns.append(torch.logsumexp(in_group.masked_fill(~allowed, float("-inf")), dim=-1))
        return torch.stack(columns, dim=-1)

    def floor_marginal(self, scores: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """Processed marginal scores [N, V] before a one-stage draw; a head may raise a token's floor."""
        return scores
