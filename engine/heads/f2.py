"""F²-Softmax (Choi et al. 2020, §3.2, Eq. 2–4): frequency class first, then a token inside it.

    p(x | ctx) = p1(c(x) | ctx) · p2(x | c(x), ctx)
    p1(c)      = softmax_c(h·u_c)              over the K frequency classes (class embeddings u)
    p2(x | c)  = softmax_{x ∈ V_c}(h·o_x)      over the class's tokens only (token embeddings o)

Classes partition the vocabulary (engine/heads/frequency_classes.py: MefMax or an ablation), so
p(x) above is already the marginal: Σ_x p(x) = Σ_c p1(c)·Σ_{x∈V_c} p2(x|c) = 1, and the training
loss of Eq. 3, −log p1(c_t) − log p2(x_t | c_t), is exactly −log p(x_t). It is computed in log
space as two cross-entropies — over the K class logits, and over the token logits with the
tokens outside the target's class masked to −inf — so no [K × V] tensor is ever built.

With `group_prior` (engine/heads/group_prior.py) each class logit also gets the base's own log-mass
of the class, without gradient, and u starts at zero: on a pretrained base the head starts exactly
at the base's softmax.

The class map lives in persistent buffers (`freq_order`, `class_ends`, `class_mass`) saved with
the weights, so a loaded bundle has exactly its training classes without the token counts. A
freshly built head has no classes until `assign` (or a state-dict load) gives it some.
Class ids follow frequency: class 0 holds the most frequent tokens, class K−1 the rarest.
"""

from __future__ import annotations

import json
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from engine.controls import ClassGroups, HeadCapabilities
from engine.heads.base import OutputHead
from engine.heads.frequency_classes import FrequencyClasses
from engine.heads.group_prior import token_mass
from engine.packed_linear import PackedLinear

NEG_INF = float("-inf")
FREQ_CLASSES_FILE = "freq_classes.json"


def _float32(x: torch.Tensor) -> torch.Tensor:
    """Half-precision logits → float32 for the softmaxes; float64 stays (gradient checks)."""
    return x if x.dtype == torch.float64 else x.float()


class F2Head(OutputHead):
    """Frequency-factorized softmax over K frequency classes; see the module docstring."""

    name = "f2"
    freq_order: torch.Tensor  # buffers, declared for the type checker
    class_ends: torch.Tensor
    class_mass: torch.Tensor
    token_class: torch.Tensor
    class_members: torch.Tensor

    def __init__(
        self,
        vocab_size: int,
        n_embd: int,
        num_classes: int,
        tied_embedding: nn.Embedding | None = None,
        method: str = "mefmax",
        group_prior: bool = False,
    ) -> None:
        super().__init__(vocab_size)
        if not 1 <= num_classes <= vocab_size:
            raise ValueError(f"F² head: number of classes must be in [1, {vocab_size}], got {num_classes}")
        self.method = method
        self.proj = PackedLinear(n_embd, vocab_size, bias=False)  # token embeddings o, [V, D]
        if tied_embedding is not None:
            self.proj.weight = tied_embedding.weight
        self.class_proj = nn.Linear(n_embd, num_classes, bias=False)  # class embeddings u, [K, D]
        self.group_prior = group_prior
        if group_prior:
            nn.init.zeros_(self.class_proj.weight)  # with the prior, p1 starts at the base's class masses
        self.register_buffer("freq_order", torch.arange(vocab_size))  # [V] ids, most frequent first
        self.register_buffer("class_ends", torch.zeros(num_classes, dtype=torch.long))  # [K]; zeros = unassigned
        self.register_buffer("class_mass", torch.zeros(num_classes))  # [K] training-token share
        self.register_buffer("token_class", torch.zeros(vocab_size, dtype=torch.long), persistent=False)  # [V]
        self.register_buffer("class_members", torch.zeros(0, vocab_size), persistent=False)  # [K, V] 0/1 (prior)
        self.assigned = False
        self.register_load_state_dict_post_hook(lambda module, _keys: module._refresh())  # type: ignore[no-untyped-call]

    # ----- classes -----------------------------------------------------------------------
    @property
    def num_groups(self) -> int:
        return int(self.class_ends.numel())

    def assign(self, classes: FrequencyClasses) -> None:
        """Take the class map from fitted `classes` (same K as the head was built with)."""
        if classes.num_classes != self.num_groups or len(classes.order) != self.vocab_size:
            raise ValueError(
                f"F² head has {self.num_groups} classes over {self.vocab_size} tokens; the fitted classes "
                f"have {classes.num_classes} over {len(classes.order)}"
            )
        self.method = classes.method
        self.load_state_dict(classes.head_state(), strict=False)

    def _refresh(self) -> None:
        """Validate the class buffers and rebuild `token_class` (after `assign` or a load)."""
        self.assigned = False  # until the new map is validated (a failed load leaves the head unusable)
        ends = self.class_ends
        if not bool(ends.any()):
            return  # placeholder: nothing was loaded into the class map yet
        problem = ""
        if bool((ends[1:] <= ends[:-1]).any()) or int(ends[0]) < 1 or int(ends[-1]) != self.vocab_size:
            problem = f"class ends must rise strictly from >= 1 to {self.vocab_size}"
        elif not torch.equal(torch.sort(self.freq_order).values, torch.arange(self.vocab_size, device=ends.device)):
            problem = "freq_order is not a permutation of the vocabulary"
        if problem:
            raise ValueError(f"F² head: invalid frequency classes ({problem})")
        sizes = torch.diff(ends, prepend=ends.new_zeros(1))
        classes = torch.repeat_interleave(torch.arange(self.num_groups, device=ends.device), sizes)
        self.token_class = torch.empty_like(classes).scatter_(0, self.freq_order, classes)
        if self.group_prior:
            self.class_members = F.one_hot(self.token_class, self.num_groups).T.float()  # [K, V]
        # plain ints for `token_log_prob`: a token's class, its rank in freq_order, each class's span of ranks
        # (read here, eagerly, so a compiled step never reads a tensor's value)
        self.class_of: list[int] = self.token_class.tolist()
        self.rank_of: list[int] = torch.argsort(self.freq_order).tolist()
        self.class_spans: list[tuple[int, int]] = list(zip([0, *ends[:-1].tolist()], ends.tolist(), strict=True))
        self.assigned = True

    def missing_state(self) -> str:
        return "" if self.assigned else "the F² head has no frequency classes (its class ends are all zero)"

    def _check_assigned(self) -> None:
        if not self.assigned:
            raise RuntimeError(
                "F² head has no frequency classes yet: fit them from the tokenizer's counts "
                "(engine.heads.registry.fit_head, as `variorum train` does) or load a trained bundle"
            )

    # ----- distributions -----------------------------------------------------------------
    def _logits(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """hidden [N, D] → (token logits h·oᵀ [N, V], class logits [N, K]), float32."""
        self._check_assigned()
        token_logits = _float32(self.proj(hidden))
        return token_logits, self._class_logits(hidden, token_logits)

    def _class_logits(self, hidden: torch.Tensor, token_logits: torch.Tensor | None = None) -> torch.Tensor:
        """h·uᵀ [N, K], plus the base's class log-masses with the prior (from `token_logits` when given)."""
        class_logits = _float32(self.class_proj(hidden))
        if not self.group_prior:
            return class_logits
        if token_logits is None:
            with torch.no_grad():
                token_logits = self.proj(hidden)
        return class_logits + token_mass(token_logits, self.class_members)

    def _in_class(self, classes: torch.Tensor) -> torch.Tensor:
        """Membership mask: classes [N] → [N, V], True where token x is in row's class."""
        return self.token_class[None, :] == classes[:, None]

    def _class_logsumexp(self, token_logits: torch.Tensor) -> torch.Tensor:
        """log Σ_{x∈V_c} exp z_x for every class: [N, V] → [N, K], via scatter (no [K × V])."""
        index = self.token_class.expand_as(token_logits)
        rows = token_logits.shape[0]
        peak = token_logits.new_full((rows, self.num_groups), NEG_INF)
        peak = peak.scatter_reduce(1, index, token_logits, "amax").detach()  # per-class max, [N, K]
        peak = peak.clamp(min=torch.finfo(peak.dtype).min)  # a class of −inf logits only (masked): its sum is 0
        shifted = torch.exp(token_logits - peak.gather(1, index))  # [N, V], each ≤ 1
        total = token_logits.new_zeros(rows, self.num_groups).scatter_add(1, index, shifted)
        return peak + torch.log(total)

    def token_nll(
        self, hidden: torch.Tensor, targets: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Eq. 3 per token: −log p1(c_t) − log p2(x_t | c_t) → [N]."""
        token_logits, class_logits = self._logits(hidden)
        classes = self.token_class[targets]  # [N]
        class_nll = F.cross_entropy(class_logits, classes, reduction="none")
        in_class_logits = token_logits.masked_fill(~self._in_class(classes), NEG_INF)  # [N, V]
        return class_nll + F.cross_entropy(in_class_logits, targets, reduction="none")

    def log_probs(self, hidden: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        """Eq. 2 in log space: log p1(c(x)) + z_x − logsumexp_{V_c(x)} z → [N, V]."""
        token_logits, class_logits = self._logits(hidden)
        per_class = F.log_softmax(class_logits, dim=-1) - self._class_logsumexp(token_logits)  # [N, K]
        return token_logits + per_class.gather(1, self.token_class.expand_as(token_logits))

    def token_nll_and_log_prob(self, hidden: torch.Tensor, targets: torch.Tensor, token: int,
                               steps: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Eq. 3 per target and Eq. 2 for one token x, [N] each. Without the prior, as two calls (x's class
        alone is projected); with it, both from the one projection the prior needs anyway."""
        if not self.group_prior:
            return super().token_nll_and_log_prob(hidden, targets, token, steps)
        token_logits, class_logits = self._logits(hidden)  # [N, V], [N, K]
        class_log_probs = F.log_softmax(class_logits, dim=-1)  # [N, K]
        classes = self.token_class[targets]  # [N]
        in_class_logits = token_logits.masked_fill(~self._in_class(classes), NEG_INF)  # [N, V]
        nll = F.cross_entropy(in_class_logits, targets, reduction="none") - class_log_probs.gather(
            1, classes[:, None])[:, 0]
        start, end = self.class_spans[self.class_of[token]]
        members = token_logits[:, self.freq_order[start:end]]  # [N, M]: x's class
        log_token = class_log_probs[:, self.class_of[token]] + token_logits[:, token] - torch.logsumexp(members, -1)
        return nll, log_token

    def token_log_prob(self, hidden: torch.Tensor, token: int, steps: torch.Tensor | None = None) -> torch.Tensor:
        """Eq. 2 for one token x: log p1(c(x)) + z_x − logsumexp_{V_c(x)} z → [N], projecting onto x's class
        only (the termination heads' log p(eos) at every training position, without a second [N, V] pass
        that needs a gradient; with the prior, p1 takes one without)."""
        self._check_assigned()
        group = self.class_of[token]
        start, end = self.class_spans[group]
        members = self.freq_order[start:end]  # [M] ids of x's class
        token_logits = _float32(F.linear(hidden, self.proj.weight[members]))  # [N, M]
        class_log_prob = F.log_softmax(self._class_logits(hidden), dim=-1)[:, group]  # [N]
        return class_log_prob + token_logits[:, self.rank_of[token] - start] - torch.logsumexp(token_logits, dim=-1)

    def token_log_prob_by_group(self, hidden: torch.Tensor, token: int,
                                steps: torch.Tensor | None = None) -> torch.Tensor:
        """log p2(x = token | c) [N, K]: −inf but in x's class, where it is projected onto that class only (the
        termination heads ask it for eos at every step; K full [N, V] projections cost most of a step)."""
        self._check_assigned()
        group = self.class_of[token]
        start, end = self.class_spans[group]
        token_logits = _float32(F.linear(hidden, self.proj.weight[self.freq_order[start:end]]))  # [N, M]
        in_class = token_logits[:, self.rank_of[token] - start] - torch.logsumexp(token_logits, dim=-1)  # [N]
        by_class = token_logits.new_full((hidden.shape[0], self.num_groups), NEG_INF)
        return by_class.index_copy(1, torch.tensor([group], device=hidden.device), in_class[:, None])

    def group_log_probs(self, hidden: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        """log p1(c): [N, K]."""
        self._check_assigned()
        return F.log_softmax(self._class_logits(hidden), dim=-1)

    def token_log_probs_in_group(
        self, hidden: torch.Tensor, groups: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        """log p2(x | c) (Eq. 4/7): [N, V], −inf outside each row's class."""
        self._check_assigned()
        token_logits = _float32(self.proj(hidden))
        return F.log_softmax(token_logits.masked_fill(~self._in_class(groups), NEG_INF), dim=-1)

    def allowed_group_mass(self, hidden: torch.Tensor, steps: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """log p2(A | c) [N, K] from one projection: per class, log Σ_{x∈A∩V_c} e^z − log Σ_{x∈V_c} e^z."""
        self._check_assigned()
        token_logits = _float32(self.proj(hidden))
        return self._class_logsumexp(token_logits.masked_fill(~allowed, NEG_INF)) - self._class_logsumexp(token_logits)

    def token_groups(self, tokens: torch.Tensor) -> torch.Tensor:
        """The class of each token id (any shape → same shape)."""
        self._check_assigned()
        return self.token_class[tokens]

    def most_likely_groups(
        self, hidden: torch.Tensor, tokens: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Group to report for a token drawn from the marginal: its one class (classes partition V)."""
        return self.token_groups(tokens)

    # ----- description -------------------------------------------------------------------
    def group_names(self) -> list[str]:
        k = self.num_groups
        if k == 1:
            return ["all tokens"]
        names = [f"class {c + 1}/{k}" for c in range(k)]
        names[0] += " (most frequent)"
        names[-1] += " (rarest)"
        return names

    def capabilities(self) -> HeadCapabilities:
        sizes = torch.diff(self.class_ends, prepend=self.class_ends.new_zeros(1))
        return HeadCapabilities(self.name, self.num_groups, classes=ClassGroups(tuple(int(s) for s in sizes)))

    def bundle_files(self) -> dict[str, str]:
        """`freq_classes.json`: a readable record of the classes (the weights file carries them)."""
        self._check_assigned()
        sizes = torch.diff(self.class_ends, prepend=self.class_ends.new_zeros(1))
        record: dict[str, Any] = {
            "method": self.method,
            "num_classes": self.num_groups,
            "class_ends": [int(e) for e in self.class_ends],
            "class_sizes": [int(s) for s in sizes],
            "class_mass": [round(float(m), 8) for m in self.class_mass],
            "zero_count_tokens": "appended to the rarest class",
            "freq_order": [int(t) for t in self.freq_order],
        }
        return {FREQ_CLASSES_FILE: json.dumps(record, indent=1)}
