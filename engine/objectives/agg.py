"""AGG — adaptive gradient gating for rare token embeddings (Yu et al., §4.2, Eq. 7–10, App. A).

Notation: hidden states H [N, D], output embedding W [V, D], targets y [N], rare group V_r
and gates g1, g2 [V] from the token counter memory. Per position i the gate row is
G[i] = g1 if y_i ∉ V_r else g2, with G[i, y_i] = 1.

Two implementations of the same loss:

- `agg_loss_reference`: the paper as written — three logit passes with detach (Eq. 9),
  z0 = H·W̃ᵀ, z1 / z2 = g ⊙ H̃·Wᵀ + (1 − g) ⊙ H̃·W̃ᵀ, and Eq. 10's
  L_i = −log p0(y_i) − 1(y_i ∉ V_r) log p1(y_i) − 1(y_i ∈ V_r) log p2(y_i).
- `agg_loss_fused`: one logit pass through `GatedLogits`, whose backward returns the ungated
  dH = dZ·W and the gated dW = (G ⊙ dZ)ᵀ·H, computed without materialising G:
  the MLE matmul with its rows scaled by g1, plus a small matmul over the rare-target rows
  (`gated_weight_grad`). Eq. 10's value is exactly twice the
  NLL (all three logits have the same value); its gradient is that of one NLL term with the
  gated backward, so `agg_loss_fused` = nll + nll.detach().

The trainer uses `agg_nll`, the fused form without the constant second copy, so the logged
training loss is the NLL and compares directly with an MLE run; the gradient is identical.
The gradient for a rare embedding w_r is Eq. 23: (p_r − 1)h_i if y_i = r, g1_r p_r h_i if y_i
is not rare, g2_r p_r h_i if y_i is another rare token. With tied embeddings only the output
side is gated; the input lookup's gradient to the same matrix is untouched (as the authors do).

Heads: the plain softmax head works as is. Any other head can be trained with AGG if its
token distribution is built from logits H·Wᵀ and it exposes `output_weight` (W, [V, D]) and
`nll_from_logits(hidden, logits, targets, steps) -> [N]` (e.g. a termination head computing
p(eos_t) from h and the rest from the logits); other heads are refused with a clear error.
For such a head the fused form is the definition: W gets the gated gradient, every other
parameter (h, the eos gate u) exactly its NLL gradient. The reference passes h̃ to the z1/z2
terms, so h and W agree with the fused form, but the head's own extra parameters (u) get
their gradient from all three terms — the paper only defines Eq. 9–10 for a plain softmax.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from engine.config import ConfigError
from engine.heads.base import OutputHead
from engine.heads.softmax import SoftmaxHead
from engine.model import IGNORE_INDEX, LanguageModel
from engine.objectives.base import Objective, positions
from engine.objectives.token_memory import TokenCounterMemory, count_targets

# (hidden [N, D], logits [N, V], targets [N]) → NLL [N]; hidden feeds any non-logit part of a head
NllFromLogits = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def cross_entropy(hidden: torch.Tensor, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per-row −log softmax(logits)[target], at least in float32 (half precision is promoted) → [N]."""
    return F.cross_entropy(logits.float() if logits.element_size() < 4 else logits, targets, reduction="none")


def gate_rows(targets: torch.Tensor, rare: torch.Tensor, gate1: torch.Tensor, gate2: torch.Tensor) -> torch.Tensor:
    """The gate matrix G [N, V]: g1 or g2 by whether y_i is rare, 1 at each row's own target.

    The definition, for tests and documentation; the fused backward never materialises it.
    """
    table = torch.stack((gate1, gate2))  # [2, V]
    gates = table[rare[targets].long()]  # [N, V]
    return gates.scatter_(1, targets[:, None], 1.0)


class GatedLogits(torch.autograd.Function):
    """z = H·Wᵀ forward; backward dH = dZ·W, dW = (G ⊙ dZ)ᵀ·H with G from `gate_rows`.

    Under CUDA autocast the forward's matmul runs in bf16 and the backward computes in the
    incoming gradient's dtype, returning each gradient in its input's dtype.
    """

    @staticmethod
    def forward(
        ctx: Any,
        hidden: torch.Tensor,  # [N, D]
        weight: torch.Tensor,  # [V, D]
        targets: torch.Tensor,  # [N]
        rare: torch.Tensor,  # [V] bool
        gate1: torch.Tensor,  # [V]
        gate2: torch.Tensor,  # [V]
    ) -> torch.Tensor:
        ctx.save_for_backward(hidden, weight, targets, rare, gate1, gate2)
        return F.linear(hidden, weight)  # [N, V]

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        (grad_logits,) = grads  # [N, V]
        hidden, weight, targets, rare, gate1, gate2 = ctx.saved_tensors
        grad_hidden = grad_weight = None
        if ctx.needs_input_grad[0]:
            grad_hidden = (grad_logits @ weight.to(grad_logits.dtype)).to(hidden.dtype)  # ungated, [N, D]
        if ctx.needs_input_grad[1]:
            grad_weight = gated_weight_grad(grad_logits, hidden.to(grad_logits.dtype), targets, rare,
                                            gate1.to(grad_logits.dtype), gate2.to(grad_logits.dtype))
            grad_weight = grad_weight.to(weight.dtype)
        return grad_hidden, grad_weight, None, None, None, None


def gated_weight_grad(
    grad_logits: torch.Tensor, hidden: torch.Tensor, targets: torch.Tensor, rare: torch.Tensor,
    gate1: torch.Tensor, gate2: torch.Tensor,
) -> torch.Tensor:
    """(G ⊙ dZ)ᵀ·H [V, D] without building G [N, V].

    Every row gated by g1 is a column scaling of the plain dZᵀ·H (the MLE matmul). Rows whose
    target is rare (few, by definition) then add (g2 − g1) ⊙ their own dZᵀ·H, and open their
    target column: + (1 − g2[y_i]) dZ[i, y_i] h_i. Non-rare targets need no such fix: g1 = 1 there.
    """
    grad = (grad_logits.t() @ hidden).mul_(gate1[:, None])  # [V, D]
    rows = torch.nonzero(rare[targets]).squeeze(1)  # positions with a rare target, [R]
    if rows.numel():
        dz_rare, h_rare, y_rare = grad_logits[rows], hidden[rows], targets[rows]  # [R, V], [R, D], [R]
        grad.add_((dz_rare.t() @ h_rare).mul_((gate2 - gate1)[:, None]))
        opened = (1 - gate2[y_rare]) * dz_rare.gather(1, y_rare[:, None]).squeeze(1)  # [R]
        grad.index_add_(0, y_rare, opened[:, None] * h_rare)
    return grad


@dataclass(frozen=True)
class AggGates:
    """The memory's state used by one loss evaluation (all [V])."""

    rare: torch.Tensor  # bool
    gate1: torch.Tensor
    gate2: torch.Tensor

    def without(self, gate1: bool = True, gate2: bool = True) -> AggGates:
        """Ablations (paper Table 9): a disabled gate is all ones (that gradient part ungated)."""
        ones = torch.ones_like(self.gate1)
        return AggGates(self.rare, self.gate1 if gate1 else ones, self.gate2 if gate2 else ones)


def agg_nll(
    hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, gates: AggGates,
    nll_from_logits: NllFromLogits = cross_entropy,
) -> torch.Tensor:
    """Per-token NLL [N] whose backward is AGG's (fused: one logit pass, gated dW)."""
    logits: torch.Tensor = GatedLogits.apply(  # type: ignore[no-untyped-call]
        hidden, weight, targets, gates.rare, gates.gate1, gates.gate2
    )  # [N, V]
    return nll_from_logits(hidden, logits, targets)


def agg_loss_fused(
    hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, gates: AggGates,
    nll_from_logits: NllFromLogits = cross_entropy,
) -> torch.Tensor:
    """Eq. 10 per token [N] (value 2·NLL), fused; same value and gradients as the reference."""
    nll = agg_nll(hidden, weight, targets, gates, nll_from_logits)
    return nll + nll.detach()


def _gated(plain: torch.Tensor, detached: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    return gate * plain + (1 - gate) * detached  # Eq. 6: value of `plain`, gradient scaled by gate


def agg_loss_reference(
    hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, gates: AggGates,
    nll_from_logits: NllFromLogits = cross_entropy,
) -> torch.Tensor:
    """Eq. 9–10 per token [N], written like the paper: three logit passes with detach."""
    hidden_c, weight_c = hidden.detach(), weight.detach()  # h̃, W̃
    z0 = F.linear(hidden, weight_c)  # gradient to h only, [N, V]
    z_emb = F.linear(hidden_c, weight)  # gradient to W only
    z_const = F.linear(hidden_c, weight_c)  # no gradient
    shape = (targets.shape[0], weight.shape[0])  # [N, V]; each row's own target is never gated
    g1 = gates.gate1.expand(shape).clone().scatter_(1, targets[:, None], 1.0)
    g2 = gates.gate2.expand(shape).clone().scatter_(1, targets[:, None], 1.0)
    z1, z2 = _gated(z_emb, z_const, g1), _gated(z_emb, z_const, g2)
    target_rare = gates.rare[targets]  # 1(y_i ∈ V_r), [N]
    nll0 = nll_from_logits(hidden, z0, targets)
    nll1, nll2 = (nll_from_logits(hidden_c, z, targets) for z in (z1, z2))  # gradient to W only
    return nll0 + torch.where(target_rare, nll2, nll1)


@dataclass(frozen=True)
class LogitAdapter:
    """What AGG needs from a head: its output embedding and its NLL as a function of H·Wᵀ."""

    weight: torch.Tensor  # [V, D]
    nll_from_logits: NllFromLogits


def logit_adapter(head: OutputHead, steps: torch.Tensor) -> LogitAdapter:
    """The adapter for `head` at positions with termination steps `steps` [N], or a ConfigError."""
    if isinstance(head, SoftmaxHead):
        return LogitAdapter(head.proj.weight, cross_entropy)
    weight = getattr(head, "output_weight", None)
    method = getattr(head, "nll_from_logits", None)
    if isinstance(weight, torch.Tensor) and callable(method):
        return LogitAdapter(weight, lambda h, logits, targets: method(h, logits, targets, steps))
    raise ConfigError(
        f"AGG gates the gradient of the output embedding W in softmax(h·Wᵀ); head {head.name!r} does not "
        "expose `output_weight` and `nll_from_logits(hidden, logits, targets, steps)` (see engine/objectives/agg.py)"
    )


class AggObjective(Objective):
    """`--objective agg`: NLL with AGG's gated embedding gradient, gates from a token memory."""

    name = "agg"

    def __init__(self, memory: TokenCounterMemory, use_gate1: bool = True, use_gate2: bool = True,
                 fused: bool = True) -> None:
        self.memory = memory
        self.use_gate1 = use_gate1
        self.use_gate2 = use_gate2
        self.fused = fused  # the reference form exists for tests and the benchmark

    def begin_step(self, step: int, targets: torch.Tensor) -> None:
        self.memory.push(count_targets(targets, self.memory.vocab_size))

    def restore(self, step: int, global_targets: Callable[[int], torch.Tensor]) -> None:
        # Replaying every earlier step rebuilds the window and, in static mode, the frozen group.
        for past in range(self.memory.steps, step):
            self.memory.push(count_targets(global_targets(past), self.memory.vocab_size), all_reduce=False)

    def check_model(self, model: LanguageModel) -> None:
        """AGG only changes the output embedding's gradient: with that embedding frozen (`trainable` last-N or
        lora leave a tied embedding with the frozen input side) it would train exactly as MLE does."""
        weight = logit_adapter(model.head, torch.zeros(0, dtype=torch.long)).weight
        if not weight.requires_grad:
            raise ConfigError("objective agg gates the gradient of the output embedding, which this run keeps "
                              "frozen (a tied embedding trains only with trainable all): AGG would train exactly "
                              "as mle; use --trainable all, or --objective mle")

    def current_gates(self) -> AggGates:
        rare, gate1, gate2 = self.memory.gates()
        return AggGates(rare, gate1, gate2).without(gate1=self.use_gate1, gate2=self.use_gate2)

    def token_losses(
        self, model: LanguageModel, hidden: torch.Tensor, input_ids: torch.Tensor, targets: torch.Tensor
    ) -> torch.Tensor:
        batch, length = targets.shape
        flat_hidden = hidden.reshape(batch * length, -1)  # [N, D]
        safe = targets.clamp(min=0).reshape(-1)  # ignored rows: any id; their loss is masked below
        adapter = logit_adapter(model.head, positions(targets).reshape(-1))
        gates = self.current_gates()
        if self.fused:
            nll = agg_nll(flat_hidden, adapter.weight, safe, gates, adapter.nll_from_logits)
        else:
            paper = agg_loss_reference(flat_hidden, adapter.weight, safe, gates, adapter.nll_from_logits)
            nll = paper - paper.detach() / 2  # value: the NLL (half of Eq. 10); gradient: Eq. 10's
        return nll.view(batch, length) * (targets != IGNORE_INDEX)
