"""AGG: fused = reference (loss and gradients), Eq. 23 case by case, gates and ablations, heads."""

from __future__ import annotations

import pytest
import torch

from engine.config import ConfigError
from engine.heads.base import OutputHead
from engine.objectives.agg import (
    AggGates,
    AggObjective,
    agg_loss_fused,
    agg_loss_reference,
    agg_nll,
    gate_rows,
    gated_weight_grad,
    logit_adapter,
)
from engine.objectives.token_memory import TokenCounterMemory

V, D, N = 7, 5, 9


def random_case(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, AggGates]:
    generator = torch.Generator().manual_seed(seed)
    hidden = torch.randn(N, D, generator=generator, dtype=torch.float64)
    weight = torch.randn(V, D, generator=generator, dtype=torch.float64)
    targets = torch.tensor([0, 1, 2, 3, 4, 5, 6, 2, 5])
    rare = torch.tensor([False, False, True, False, True, True, True])
    gate1 = torch.where(rare, torch.rand(V, generator=generator, dtype=torch.float64), 1.0)
    gate2 = torch.where(rare, torch.rand(V, generator=generator, dtype=torch.float64), 1.0)
    return hidden, weight, targets, AggGates(rare, gate1, gate2)


def grads(loss_fn: object, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
          gates: AggGates) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    h = hidden.clone().requires_grad_(True)
    w = weight.clone().requires_grad_(True)
    loss = loss_fn(h, w, targets, gates)  # type: ignore[operator]
    (loss * torch.linspace(0.5, 1.5, N, dtype=loss.dtype)).sum().backward()  # unequal weights per row
    assert h.grad is not None and w.grad is not None
    return loss.detach(), h.grad, w.grad


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fused_equals_reference_loss_and_gradients(seed: int) -> None:
    hidden, weight, targets, gates = random_case(seed)
    ref_loss, ref_h, ref_w = grads(agg_loss_reference, hidden, weight, targets, gates)
    fused_loss, fused_h, fused_w = grads(agg_loss_fused, hidden, weight, targets, gates)
    torch.testing.assert_close(fused_loss, ref_loss, atol=1e-6, rtol=0)
    torch.testing.assert_close(fused_h, ref_h, atol=1e-6, rtol=0)
    torch.testing.assert_close(fused_w, ref_w, atol=1e-6, rtol=0)


def test_fused_matches_reference_in_float32() -> None:
    hidden, weight, targets, gates = random_case(3)
    f32 = AggGates(gates.rare, gates.gate1.float(), gates.gate2.float())
    ref = grads(agg_loss_reference, hidden.float(), weight.float(), targets, f32)
    fused = grads(agg_loss_fused, hidden.float(), weight.float(), targets, f32)
    for a, b in zip(ref, fused, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


def test_value_is_twice_the_nll_and_h_gradient_is_ungated() -> None:
    hidden, weight, targets, gates = random_case(4)
    nll = torch.nn.functional.cross_entropy(hidden @ weight.T, targets, reduction="none")
    torch.testing.assert_close(agg_loss_reference(hidden, weight, targets, gates), 2 * nll)
    h = hidden.clone().requires_grad_(True)
    agg_nll(h, weight, targets, gates).sum().backward()
    h_plain = hidden.clone().requires_grad_(True)
    torch.nn.functional.cross_entropy(h_plain @ weight.T, targets, reduction="sum").backward()
    torch.testing.assert_close(h.grad, h_plain.grad)


def test_rare_embedding_gradient_is_eq23_case_by_case() -> None:
    """∇w_r L_i = (p_r − 1)h_i if y_i = r; g1_r p_r h_i if y_i ∉ V_r; g2_r p_r h_i otherwise."""
    hidden, weight, targets, gates = random_case(5)
    r = 5  # a rare token; rows 5 and 8 have target r, rows 2 and 7 another rare target (2), row 0 a frequent one
    probs = torch.softmax(hidden @ weight.T, dim=-1)
    for i in range(N):
        w = weight.clone().requires_grad_(True)
        agg_loss_fused(hidden[i : i + 1], w, targets[i : i + 1], gates).sum().backward()
        assert w.grad is not None
        y = int(targets[i])
        if y == r:
            expected = (probs[i, r] - 1) * hidden[i]
        elif not bool(gates.rare[y]):
            expected = gates.gate1[r] * probs[i, r] * hidden[i]
        else:
            expected = gates.gate2[r] * probs[i, r] * hidden[i]
        torch.testing.assert_close(w.grad[r], expected, atol=1e-12, rtol=0)
        # a frequent token's embedding (not the target) is never gated: plain p_k h_i
        k = 3 if y != 3 else 1
        torch.testing.assert_close(w.grad[k], probs[i, k] * hidden[i], atol=1e-12, rtol=0)


def test_gate_rows_pick_g1_or_g2_and_open_the_target() -> None:
    rare = torch.tensor([False, True, True])
    g1, g2 = torch.tensor([1.0, 0.1, 0.2]), torch.tensor([1.0, 0.5, 0.6])
    rows = gate_rows(torch.tensor([0, 1]), rare, g1, g2)
    expected = torch.tensor([[1.0, 0.1, 0.2], [1.0, 1.0, 0.6]])  # row 1: rare target → g2, own column opened
    torch.testing.assert_close(rows, expected)


def test_ablations_open_a_gate() -> None:
    gates = AggGates(torch.tensor([True, False]), torch.tensor([0.2, 1.0]), torch.tensor([0.3, 1.0]))
    assert gates.without(gate1=False).gate1.tolist() == [1.0, 1.0]
    assert gates.without(gate1=False).gate2.tolist() == pytest.approx([0.3, 1.0])
    assert gates.without(gate2=False).gate2.tolist() == [1.0, 1.0]


def test_objective_fused_and_reference_train_the_same(tiny_model: torch.nn.Module) -> None:
    torch.manual_seed(1)
    ids = torch.randint(0, 320, (2, 9))
    results = []
    for fused in (True, False):
        memory = TokenCounterMemory(320, window=3, alpha=0.5)
        memory.push(torch.bincount(ids[:, 1:].reshape(-1), minlength=320))
        objective = AggObjective(memory, fused=fused)
        tiny_model.zero_grad()
        loss = objective.loss(tiny_model, ids[:, :-1], ids[:, 1:])  # type: ignore[arg-type]
        loss.backward()
        results.append((loss.detach(), [p.grad.clone() for p in tiny_model.parameters() if p.grad is not None]))
    (loss_a, grads_a), (loss_b, grads_b) = results
    torch.testing.assert_close(loss_a, loss_b)
    plain = tiny_model(ids[:, :-1], ids[:, 1:])
    torch.testing.assert_close(loss_a, plain.detach())  # the logged value is the NLL
    for a, b in zip(grads_a, grads_b, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_head_without_logits_is_refused() -> None:
    class Opaque(OutputHead):
        name = "opaque"
        num_groups = 1  # type: ignore[assignment]

        def token_nll(self, hidden, targets, steps=None):  # type: ignore[no-untyped-def]
            return hidden.sum(-1)

        def log_probs(self, hidden, steps=None):  # type: ignore[no-untyped-def]
            return hidden

        def group_log_probs(self, hidden, steps=None):  # type: ignore[no-untyped-def]
            return hidden

        def token_log_probs_in_group(self, hidden, groups, steps=None):  # type: ignore[no-untyped-def]
            return hidden

    with pytest.raises(ConfigError, match="opaque"):
        logit_adapter(Opaque(4), torch.ones(1))


def test_agg_through_a_termination_head() -> None:
    """NMST exposes output_weight + nll_from_logits: AGG's value is its NLL; h and W
    gradients equal the reference's; the eos gate u gets exactly its MLE gradient (fused)."""
    pytest.importorskip("engine.heads.termination")
    from engine.model import LanguageModel
    from tests.conftest import tiny_config

    torch.manual_seed(2)
    model = LanguageModel(tiny_config(320, head="nmst")).eval()
    ids = torch.randint(2, 320, (2, 10))
    ids[0, 4] = 0  # an eos inside the window: termination steps restart after it
    memory = TokenCounterMemory(320, window=2, alpha=0.5)
    memory.push(torch.bincount(ids[:, 1:].reshape(-1), minlength=320))
    named: list[dict[str, torch.Tensor]] = []
    for fused in (True, False, None):  # None: plain MLE
        model.zero_grad()
        objective = AggObjective(memory, fused=bool(fused))
        loss = model(ids[:, :-1], ids[:, 1:]) if fused is None else objective.loss(model, ids[:, :-1], ids[:, 1:])
        loss.backward()
        named.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    fused_g, reference_g, mle_g = named
    gate_params = [n for n in fused_g if n.startswith("head.gate")]
    assert gate_params
    for name in fused_g:
        if name in gate_params:
            torch.testing.assert_close(fused_g[name], mle_g[name])
        else:
            torch.testing.assert_close(fused_g[name], reference_g[name], atol=1e-6, rtol=1e-5)
    assert not torch.allclose(fused_g["backbone.transformer.wte.weight"], mle_g["backbone.transformer.wte.weight"])


def test_gated_weight_grad_equals_the_gate_matrix_form() -> None:
    hidden, _, targets, gates = random_case(6)
    grad_logits = torch.randn(N, V, dtype=torch.float64)
    expected = (gate_rows(targets, gates.rare, gates.gate1, gates.gate2) * grad_logits).T @ hidden
    got = gated_weight_grad(grad_logits, hidden, targets, gates.rare, gates.gate1, gates.gate2)
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)


def test_agg_is_refused_where_the_output_embedding_is_frozen(tiny_model: torch.nn.Module) -> None:
    """AGG only gates the output embedding's gradient: frozen (as trainable last-N or lora leave a tied
    embedding), AGG would train exactly as MLE, so the run is refused before it starts."""
    objective = AggObjective(TokenCounterMemory(tiny_model.config.vocab_size, window=3, alpha=0.5))
    objective.check_model(tiny_model)  # everything trains: accepted
    tiny_model.head.proj.weight.requires_grad_(False)
    try:
        with pytest.raises(ConfigError, match=r"frozen.*exactly as mle"):
            objective.check_model(tiny_model)
    finally:
        tiny_model.head.proj.weight.requires_grad_(True)
