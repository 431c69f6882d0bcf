"""ST / NMST termination heads: Eq. 9–10 in log space, the NMST lower bound, proper distributions."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from engine.bundles.bundle import load_bundle, save_bundle
from engine.config import ConfigError, ModelConfig
from engine.heads.base import OutputHead
from engine.heads.softmax import SoftmaxHead
from engine.heads.termination import (
    TerminationHead,
    document_steps,
    log1mexp,
    nmst_log_eos,
    prompt_start_step,
    st_log_eos,
)
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config

EOS = 0
STEPS = torch.tensor([1, 2, 10, 1_000, 100_000, 1_000_000])
EPSILONS = [1e-8, 1e-5, 1e-3, 0.1, 0.5]


def nmst_float64(z: torch.Tensor, steps: torch.Tensor, eps: float) -> torch.Tensor:
    """Eq. 10 computed directly, in float64: α = (1 − σ)(1 − (1 − ε)^t) + σ."""
    sigma = torch.sigmoid(z.double())
    lower = -torch.expm1(steps.double() * math.log1p(-eps))
    return (1 - sigma) * lower + sigma


@pytest.mark.parametrize("eps", EPSILONS)
def test_nmst_matches_float64_and_respects_the_lower_bound(eps: float) -> None:
    torch.manual_seed(0)
    z = torch.randn(len(STEPS)) * 20  # logits from strongly "continue" to strongly "stop"
    log_alpha, log_not = nmst_log_eos(z, STEPS, eps)
    expected = nmst_float64(z, STEPS, eps)
    assert torch.isfinite(log_alpha).all() and torch.isfinite(log_not).all()
    torch.testing.assert_close(log_alpha.double(), expected.log(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(log_not.double().exp(), 1 - expected, rtol=1e-4, atol=1e-12)
    bound = -torch.expm1(STEPS.double() * math.log1p(-eps))  # Definition 6: α_t ≥ 1 − (1 − ε)^t
    assert (log_alpha.double() >= bound.log() - 1e-6).all()


def test_the_bound_survives_where_float32_one_minus_exp_does_not() -> None:
    steps, eps = torch.tensor([1.0]), 1e-8
    naive = torch.log(1 - torch.exp(steps * math.log1p(-eps)))  # float32: 1 − exp(−1e-8) == 0
    assert naive.item() == float("-inf")
    log_alpha, _ = nmst_log_eos(torch.tensor([-200.0]), steps, eps)  # σ ≈ 0: α is the bound itself
    assert log_alpha.item() == pytest.approx(math.log(1e-8), rel=1e-6)


def test_st_is_monotone_and_matches_float64() -> None:
    torch.manual_seed(1)
    z, eps = torch.randn(12) * 3, 1e-3
    steps = torch.arange(1, 13)
    log_alpha, _, _ = st_log_eos(z, steps, eps)
    product = torch.cumprod((1 - eps) * torch.sigmoid(z.double()), dim=0)
    torch.testing.assert_close(log_alpha.double().exp(), 1 - product, rtol=1e-5, atol=1e-7)
    assert (log_alpha[1:] >= log_alpha[:-1]).all()  # Welleck et al.: p(eos_t) never decreases


def test_st_step_by_step_equals_the_whole_sequence_and_runs_restart() -> None:
    torch.manual_seed(2)
    z, eps = torch.randn(6), 0.05
    whole, _, _ = st_log_eos(z, torch.tensor([1, 2, 3, 1, 2, 3]), eps)  # two documents back to back
    state = torch.zeros(1, dtype=torch.float64)
    stepwise = []
    for t in range(3):
        log_alpha, _, state = st_log_eos(z[t : t + 1], torch.tensor([t + 1]), eps, state)
        stepwise.append(log_alpha)
    torch.testing.assert_close(whole[:3], torch.cat(stepwise))
    torch.testing.assert_close(whole[3:], st_log_eos(z[3:], torch.arange(1, 4), eps)[0])  # fresh product


def test_nmst_need_not_be_monotone_but_st_is() -> None:
    z = torch.tensor([6.0, -6.0, 6.0])  # "may stop here" after a sentence, then "go on"
    nmst, _ = nmst_log_eos(z, torch.arange(1, 4), 1e-5)
    st, _, _ = st_log_eos(z, torch.arange(1, 4), 1e-5)
    assert nmst[1] < nmst[0] - 1.0 and nmst[2] > nmst[1] + 1.0  # p(eos) drops then rises
    assert st[1] >= st[0] and st[2] >= st[1]


def test_log1mexp_is_accurate_at_both_ends() -> None:
    x = torch.tensor([-1e-10, -1e-3, -0.5, -5.0, -50.0], dtype=torch.float64)
    torch.testing.assert_close(log1mexp(x), torch.log(-torch.expm1(x)))
    assert log1mexp(torch.tensor([0.0])).item() == float("-inf")


def test_document_steps_restart_after_every_eos() -> None:
    targets = torch.tensor([[5, 6, EOS, 7, 8, EOS, EOS, 9]])
    assert document_steps(targets, EOS).tolist() == [[1, 2, 3, 1, 2, 3, 1, 1]]
    assert prompt_start_step([EOS, 4, 5, 6], EOS) == 3 and prompt_start_step([EOS], EOS) == 0
    assert prompt_start_step([4, EOS, 5], EOS) == 1


class TwoGroupHead(OutputHead):
    """A tiny partition head for composition tests: group 0 = ids < 7 (eos among them), group 1 = the rest."""

    name = "two-group"

    def __init__(self, vocab_size: int, n_embd: int) -> None:
        super().__init__(vocab_size)
        self.groups = torch.nn.Linear(n_embd, 2)
        self.tokens = torch.nn.Linear(n_embd, vocab_size)
        self.register_buffer("member", (torch.arange(vocab_size) >= 7).long())

    @property
    def num_groups(self) -> int:
        return 2

    def token_log_probs_in_group(
        self, hidden: torch.Tensor, groups: torch.Tensor, steps: object = None
    ) -> torch.Tensor:
        logits = self.tokens(hidden).masked_fill(self.member[None, :] != groups[:, None], float("-inf"))
        return F.log_softmax(logits, dim=-1)

    def group_log_probs(self, hidden: torch.Tensor, steps: object = None) -> torch.Tensor:
        return F.log_softmax(self.groups(hidden), dim=-1)

    def log_probs(self, hidden: torch.Tensor, steps: object = None) -> torch.Tensor:
        groups = self.group_log_probs(hidden)
        out = torch.full((hidden.shape[0], self.vocab_size), float("-inf"))
        for g in range(2):
            in_group = self.token_log_probs_in_group(hidden, torch.full((hidden.shape[0],), g))
            out = torch.logaddexp(out, groups[:, g : g + 1] + in_group)
        return out

    def token_nll(self, hidden: torch.Tensor, targets: torch.Tensor, steps: object = None) -> torch.Tensor:
        return -self.log_probs(hidden).gather(-1, targets[:, None])[:, 0]


def heads(kind: str, eps: float) -> list[TerminationHead]:
    torch.manual_seed(3)
    return [TerminationHead(SoftmaxHead(40, 16), kind, eps, EOS, 16),
            TerminationHead(TwoGroupHead(40, 16), kind, eps, EOS, 16)]


@pytest.mark.parametrize("kind", ["st", "nmst"])
@pytest.mark.parametrize("eps", [1e-5, 0.3])
def test_random_weights_give_proper_grouped_distributions(kind: str, eps: float) -> None:
    hidden, steps = torch.randn(7, 16) * 3, torch.tensor([1, 2, 3, 4, 1, 2, 500])
    targets = torch.tensor([EOS, 3, 9, EOS, 20, 5, 39])
    for head in heads(kind, eps):
        marginal = head.log_probs(hidden, steps)
        torch.testing.assert_close(marginal.logsumexp(-1), torch.zeros(7), atol=1e-5, rtol=0)
        groups = head.group_log_probs(hidden, steps)
        torch.testing.assert_close(groups.logsumexp(-1), torch.zeros(7), atol=1e-5, rtol=0)
        joint = torch.full_like(marginal, float("-inf"))  # Σ_g p(g) p(x | g) must give the marginal
        for g in range(head.num_groups):
            in_group = head.token_log_probs_in_group(hidden, torch.full((7,), g), steps)
            torch.testing.assert_close(in_group.logsumexp(-1), torch.zeros(7), atol=1e-5, rtol=0)
            joint = torch.logaddexp(joint, groups[:, g : g + 1] + in_group)
        torch.testing.assert_close(joint, marginal, atol=1e-4, rtol=1e-4)
        nll = head.token_nll(hidden, targets, steps)
        torch.testing.assert_close(nll, -marginal.gather(-1, targets[:, None])[:, 0], atol=1e-4, rtol=1e-4)
        assert torch.equal(groups[:, -1], marginal[:, EOS])  # the eos group is eos alone


def test_nmst_head_bound_holds_for_any_weights() -> None:
    eps = 1e-3
    for scale in (0.1, 10.0, 1000.0):
        for head in heads("nmst", eps):
            with torch.no_grad():
                head.gate.weight.mul_(scale)
            hidden = torch.randn(len(STEPS), 16) * scale
            log_eos = head.log_probs(hidden, STEPS)[:, EOS].double()
            assert (log_eos >= torch.log(-torch.expm1(STEPS.double() * math.log1p(-eps))) - 1e-5).all()


def test_agg_entry_points_agree_with_token_nll() -> None:
    head = heads("nmst", 1e-4)[0]
    hidden, targets, steps = torch.randn(5, 16), torch.tensor([EOS, 1, 2, 3, 4]), torch.arange(1, 6)
    assert head.output_weight is not None
    logits = hidden @ head.output_weight.T
    from_logits = head.nll_from_logits(hidden, logits, targets, steps)
    torch.testing.assert_close(from_logits, head.token_nll(hidden, targets, steps))
    assert heads("nmst", 1e-4)[1].output_weight is None  # AGG refuses heads it cannot gate


def test_config_validates_termination() -> None:
    with pytest.raises(ConfigError, match="termination must be one of"):
        ModelConfig(termination="nsmt")
    with pytest.raises(ConfigError, match="termination_eps"):
        ModelConfig(termination="nmst", termination_eps=0.0)
    with pytest.raises(ConfigError, match="already sets"):
        ModelConfig(head="nmst", termination="st")
    with pytest.raises(ValueError, match="termination step"):
        heads("nmst", 0.1)[0].log_probs(torch.randn(2, 16))


@pytest.mark.parametrize("config", [{"termination": "nmst", "termination_eps": 0.02}, {"head": "st"}])
def test_training_gradients_and_bundle_round_trip(
    config: dict[str, object], tokenizer: VariorumTokenizer, tmp_path: Path
) -> None:
    torch.manual_seed(4)
    model = LanguageModel(tiny_config(tokenizer.vocab_size, **config))
    ids = torch.tensor([[EOS, *tokenizer.encode("Tom went home."), EOS, *tokenizer.encode("He slept.")]])
    loss = model(ids[:, :-1], ids[:, 1:])
    loss.backward()
    assert torch.isfinite(loss) and model.head.gate.weight.grad is not None
    assert float(model.head.gate.weight.grad.norm()) > 0
    save_bundle(tmp_path / "b", model.eval(), tokenizer, "# t\n", {})
    loaded = load_bundle(tmp_path / "b").model
    assert isinstance(loaded.head, TerminationHead) and loaded.head.eps == model.head.eps
    assert loaded.config.termination == model.config.termination
    torch.testing.assert_close(loaded.next_log_probs(ids), model.next_log_probs(ids))
