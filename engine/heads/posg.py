"""POS Guided Softmax (Yang et al., 2022, §4.1, Eq. 2–4): next-POS, then next-token within the POS.

    p(ρ | ctx)    = softmax_ρ(h·o_ρ)                              over the P POS groups
    p(x | ρ, ctx) = exp(h·w_x) / Σ_{x' ∈ V_ρ} exp(h·w_x')  if x ∈ V_ρ, else 0     (Eq. 3)
    p(x | ctx)    = Σ_ρ p(ρ | ctx) p(x | ρ, ctx)                                    (Eq. 2 sum)

The groups are POS tags (plus our special / unseen groups, `engine.pos.vocab`). They overlap: a
token seen under several tags is in several V_ρ, so the marginal really is a sum over every group
holding x, not the product along one path (that is F², whose classes partition the vocabulary).

- **Training** (Eq. 4): the tag of each target is observed data, `token_nll_given_groups` returns
  −log p(ρ_t) − log p(x_t | ρ_t) with a masked log-softmax of the target's group: O(|V|) per token,
  no [P × V] tensor per token. A target outside its group's V_ρ has loss +inf (p = 0, as Eq. 3
  says); the trainer's data never produces one because V_ρ is built from the same tags.
- **Scoring / perplexity** (`log_probs`, and `token_nll` when no tags are given): the exact marginal,
  computed over the (group, token) membership pairs — E ≈ |V|·(tags per token) pairs — with a
  per-group max shift, in O(N·E) time; rows are processed in chunks to bound memory.
- **Decoding** (Eq. 5): `group_log_probs` then `token_log_probs_in_group`; the POS-stage controls
  (k_POS, POS bias) are group processors (`engine.decoding.pos_sampling`).

With `group_prior` (engine/heads/group_prior.py) each group logit also gets the base's own log-mass
of V_ρ, without gradient, and o_ρ starts at zero, so a head on a pretrained base starts near it.

The membership mask is a persistent buffer, so weights, checkpoints and bundles carry V_ρ; the tag
names are `ModelConfig.pos_tags`. The token embedding w_x is tied to the input embedding like the
softmax head; o_ρ is a separate [P, D] matrix. Neither has a bias (Eq. 3 has none).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from engine.controls import HeadCapabilities, PosGroups
from engine.heads.base import OutputHead
from engine.heads.group_prior import token_mass
from engine.packed_linear import PackedLinear
from engine.pos.tags import COARSE_GROUPS
from engine.pos.vocab import POS_VOCAB_FILE, PosVocabulary, PosVocabularyError

NEG_INF = float("-inf")
MARGINAL_CHUNK_ELEMENTS = 1 << 24  # rows × pairs per chunk of the marginal (64 MiB of float32)


class POSGHead(OutputHead):
    """Two-stage POS-guided distribution; see the module docstring."""

    name = "posg"
    membership: torch.Tensor  # bool [P, V], registered buffer

    def __init__(self, vocab_size: int, n_embd: int, tags: Sequence[str],
                 tied_embedding: nn.Embedding | None = None, group_prior: bool = False) -> None:
        super().__init__(vocab_size)
        if not tags:
            raise ValueError("the posg head needs at least one POS group")
        self.tags = tuple(tags)
        self.proj = PackedLinear(n_embd, vocab_size, bias=False)  # w_x
        if tied_embedding is not None:
            self.proj.weight = tied_embedding.weight
        self.pos_proj = nn.Linear(n_embd, len(self.tags), bias=False)  # o_ρ
        self.group_prior = group_prior
        if group_prior:
            nn.init.zeros_(self.pos_proj.weight)  # with the prior, p(ρ) starts at the base's group masses
        # No V_ρ yet: `set_vocabulary` (training) or loading weights fills it in.
        self.register_buffer("membership", torch.zeros(len(self.tags), vocab_size, dtype=torch.bool))
        self._pairs_cache: tuple[int, int, torch.device, torch.Tensor, torch.Tensor] | None = None
        self._groups_cache: tuple[tuple[int, int, int, torch.device], list[int], list[torch.Tensor]] | None = None
        self._members_cache: tuple[tuple[int, int, torch.device, torch.dtype], torch.Tensor] | None = None

    @property
    def num_groups(self) -> int:
        return len(self.tags)

    def set_vocabulary(self, vocabulary: PosVocabulary) -> None:
        """Install V_ρ; the vocabulary's groups must be this head's groups, in the same order."""
        if vocabulary.tags != self.tags or vocabulary.vocab_size != self.vocab_size:
            raise PosVocabularyError(
                f"POS vocabulary ({vocabulary.num_groups} groups, {vocabulary.vocab_size} tokens) does not fit "
                f"the head ({self.num_groups} groups {list(self.tags)[:5]}…, {self.vocab_size} tokens)"
            )
        with torch.no_grad():
            self.membership.copy_(vocabulary.membership())

    def vocabulary(self) -> PosVocabulary:
        """The head's V_ρ as a PosVocabulary (raises if it was never set)."""
        if not bool(self.membership.any(dim=0).all()):
            raise PosVocabularyError("the POSG head has no POS vocabulary for some tokens: call set_vocabulary "
                                     "(training does) or load weights that carry it")
        return PosVocabulary.from_membership(self.tags, self.membership)

    def bundle_files(self) -> dict[str, str]:
        return {POS_VOCAB_FILE: self.vocabulary().to_json()}

    # ----- the two factors ---------------------------------------------------------------
    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.proj(hidden).float()  # h·w_x, [N, V]
        return logits

    def group_log_probs(self, hidden: torch.Tensor, steps: torch.Tensor | None = None,
                        logits: torch.Tensor | None = None) -> torch.Tensor:
        """log p(ρ) [N, P]; with the prior, `logits` (h·w_x [N, V]) spare a projection when the caller has them."""
        group_logits = self.pos_proj(hidden).float()  # h·o_ρ, [N, P]
        if self.group_prior:
            if logits is None:
                with torch.no_grad():
                    logits = self.proj(hidden)
            group_logits = group_logits + token_mass(logits, self.membership)
        return F.log_softmax(group_logits, dim=-1)

    def token_log_probs_in_group(
        self, hidden: torch.Tensor, groups: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        mask = self.membership[groups]  # [N, V]
        return F.log_softmax(self.logits(hidden).masked_fill(~mask, NEG_INF), dim=-1)  # −inf outside V_ρ

    def allowed_group_mass(self, hidden: torch.Tensor, steps: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """log p(A | ρ) [N, G] from one projection: each group's mass of allowed tokens over its whole mass, both
        as products of the row's exponentiated logits [N, V] with the membership [V, G] (groups overlap, so no
        scatter). In float64, where e^(z − max) vanishes only 745 nats below the row's top token; a row where a
        group that has tokens still gets no mass falls back to the [N, G, V] logsumexp. An empty group gives
        NaN (0 / 0) either way, as before."""
        logits = self.logits(hidden)  # [N, V]
        weights = torch.exp((logits - logits.amax(dim=-1, keepdim=True)).double())  # [N, V], top token 1
        members = self._members_by_group(weights.dtype)  # [V, G]
        whole = weights @ members  # [N, G]
        kept = weights.masked_fill(~allowed, 0.0) @ members
        underflow = (whole == 0) & self.membership.any(dim=-1)[None, :]
        if bool(underflow.any()):
            in_group = logits[:, None, :].masked_fill(~self.membership[None], NEG_INF)  # [N, G, V]
            return torch.logsumexp(in_group.masked_fill(~allowed[:, None, :], NEG_INF), dim=-1) - torch.logsumexp(
                in_group, dim=-1)
        return (kept.log() - whole.log()).to(logits.dtype)

    def _members_by_group(self, dtype: torch.dtype) -> torch.Tensor:
        """The membership as a [V, G] matrix of `dtype`, remade when the mask changes."""
        key = (*self._membership_key(), dtype)
        if self._members_cache is None or self._members_cache[0] != key:
            self._members_cache = (key, self.membership.to(dtype).T.contiguous())
        return self._members_cache[1]

    # ----- training (Eq. 4) --------------------------------------------------------------
    def token_nll_given_groups(
        self, hidden: torch.Tensor, targets: torch.Tensor, groups: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        logits = self.logits(hidden)  # [N, V]
        mask = self.membership[groups]  # [N, V]
        log_norm = torch.logsumexp(logits.masked_fill(~mask, NEG_INF), dim=-1)  # log Σ_{x∈V_ρt} e^{h·w_x}, [N]
        target_logit = logits.gather(-1, targets[:, None])[:, 0]
        in_group = mask.gather(-1, targets[:, None])[:, 0]
        token_nll = torch.where(in_group, log_norm - target_logit, torch.full_like(log_norm, float("inf")))
        group_nll = -self.group_log_probs(hidden, logits=logits).gather(-1, groups[:, None])[:, 0]
        return group_nll + token_nll  # [N]

    def token_log_prob(self, hidden: torch.Tensor, token: int, steps: torch.Tensor | None = None) -> torch.Tensor:
        """Eq. 2 for one token x: log Σ_{ρ ∋ x} p(ρ) e^{h·w_x} / Σ_{x' ∈ V_ρ} e^{h·w_x'} → [N], projecting
        onto the members of x's groups only. The termination heads ask this for eos at every training
        position; eos is in the small special group, so this costs a few dot products, not the
        [N, E] marginal."""
        groups, members = self._groups_holding(token)
        token_logit = F.linear(hidden, self.proj.weight[token : token + 1]).float()[:, 0]  # [N]
        group_log_prob = self.group_log_probs(hidden)  # [N, P]
        terms = [group_log_prob[:, group] + token_logit
                 - torch.logsumexp(F.linear(hidden, self.proj.weight[ids]).float(), dim=-1)
                 for group, ids in zip(groups, members, strict=True)]  # each [N]
        if not terms:  # x is in no group: p(x) = 0
            return hidden.new_full((hidden.shape[0],), NEG_INF, dtype=torch.float32)
        return torch.logsumexp(torch.stack(terms, dim=-1), dim=-1)

    def _groups_holding(self, token: int) -> tuple[list[int], list[torch.Tensor]]:
        """The groups ρ ∋ token and each one's member ids [|V_ρ|], recomputed when the mask changes."""
        key = (token, *self._membership_key())
        if self._groups_cache is None or self._groups_cache[0] != key:
            groups = [int(g) for g in self.membership[:, token].nonzero()[:, 0].tolist()]
            members = [self.membership[g].nonzero()[:, 0] for g in groups]
            self._groups_cache = (key, groups, members)
        return self._groups_cache[1], self._groups_cache[2]

    def _membership_key(self) -> tuple[int, int, torch.device]:
        """What identifies the mask's current contents: the caches derived from it compare this."""
        return self.membership.data_ptr(), self.membership._version, self.membership.device

    # ----- the marginal (Eq. 2 sum) ------------------------------------------------------
    def _pairs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(group, token) ids [E] of every membership entry, recomputed when the mask changes."""
        key = self._membership_key()
        if self._pairs_cache is None or self._pairs_cache[:3] != key:
            group, token = self.membership.nonzero(as_tuple=True)
            self._pairs_cache = (*key, group, token)
        return self._pairs_cache[3], self._pairs_cache[4]

    def log_probs(self, hidden: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        group, token = self._pairs()
        rows = max(1, MARGINAL_CHUNK_ELEMENTS // max(1, group.numel()))
        chunks = [self._marginal(h, group, token) for h in torch.split(hidden, rows)]
        return torch.cat(chunks) if chunks else hidden.new_zeros(0, self.vocab_size, dtype=torch.float32)

    def _group_log_norm(self, logits: torch.Tensor, group: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
        """log Σ_{x∈V_ρ} exp(h·w_x) for each group: logits [n, V] → [n, P], with a per-group max shift."""
        n = logits.shape[0]
        pair_logits = logits[:, token]  # [n, E]
        group_idx = group.expand(n, -1)
        shift = logits.new_full((n, self.num_groups), NEG_INF).scatter_reduce(
            1, group_idx, pair_logits.detach(), "amax")  # [n, P]
        sums = logits.new_zeros(n, self.num_groups).scatter_add(1, group_idx, torch.exp(pair_logits - shift[:, group]))
        return torch.log(sums) + shift  # sums ≥ 1 (the max term contributes exp(0))

    def _marginal(self, hidden: torch.Tensor, group: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
        """log Σ_{ρ ∋ x} p(ρ) p(x | ρ) for hidden [n, D] → [n, V] (−inf for tokens in no group)."""
        n = hidden.shape[0]
        logits = self.logits(hidden)  # [n, V]
        log_norm = self._group_log_norm(logits, group, token)  # [n, P]
        group_log_probs = self.group_log_probs(hidden, logits=logits)  # [n, P]
        joint = (group_log_probs - log_norm)[:, group] + logits[:, token]  # log p(ρ)p(x|ρ), [n, E]
        token_idx = token.expand(n, -1)
        peak = logits.new_full((n, self.vocab_size), NEG_INF).scatter_reduce(1, token_idx, joint.detach(), "amax")
        total = logits.new_zeros(n, self.vocab_size).scatter_add(1, token_idx, torch.exp(joint - peak[:, token]))
        covered = torch.isfinite(peak)  # token in at least one group; then total ≥ 1
        log_total = torch.log(total.masked_fill(~covered, 1.0)) + peak.masked_fill(~covered, 0.0)
        return log_total.masked_fill(~covered, NEG_INF)

    def token_nll(
        self, hidden: torch.Tensor, targets: torch.Tensor, steps: torch.Tensor | None = None
    ) -> torch.Tensor:
        """−log p(x_t) from the marginal: used for perplexity, where tags are not given."""
        return -self.log_probs(hidden, steps).gather(-1, targets[:, None])[:, 0]

    # ----- metadata ----------------------------------------------------------------------
    def group_names(self) -> list[str]:
        return list(self.tags)

    def capabilities(self) -> HeadCapabilities:
        coarse = tuple(name for name, tags in COARSE_GROUPS.items() if any(t in self.tags for t in tags))
        return HeadCapabilities(self.name, self.num_groups, pos=PosGroups(tuple(self.tags), coarse))
