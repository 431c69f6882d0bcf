"""The token-mass prior on F² and POSG group logits: where it starts, and that it adds no gradient path."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from engine.config import ConfigError
from engine.heads.group_prior import token_mass
from engine.heads.posg import POSGHead
from engine.pos.vocab import PosVocabulary
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config
from tests.engine.heads.f2_support import build_f2_model, f2_head

TAGS = ("NN", "VB", "<special>")
TOKEN_TAGS = ((2,), (0, 1), (0,), (1,), (0,), (1,))


def test_token_mass_is_the_log_sum_of_each_groups_token_probabilities() -> None:
    logits = torch.tensor([[0.0, 1.0, -2.0], [300.0, -50.0, 299.0]])
    members = torch.tensor([[True, True, False], [False, False, True], [True, False, True]])
    expected = torch.stack([torch.logsumexp(logits.masked_fill(~m, float("-inf")), -1) for m in members], -1)
    assert torch.allclose(token_mass(logits, members), expected, atol=1e-5)


def test_token_mass_of_a_group_far_below_the_top_is_finite() -> None:
    logits = torch.tensor([[0.0, -500.0]])
    mass = token_mass(logits, torch.tensor([[False, True]]))
    assert torch.isfinite(mass).all() and float(mass) < -80


def test_f2_with_the_prior_starts_exactly_at_the_softmax_of_its_token_logits(tokenizer: VariorumTokenizer) -> None:
    model = build_f2_model(tokenizer, group_prior="token-mass")
    head = f2_head(model)
    assert not head.class_proj.weight.any()  # u starts at zero
    hidden = torch.randn(7, head.proj.weight.shape[1]) * 3
    softmax = F.log_softmax(head.proj(hidden).float(), -1)
    assert torch.allclose(head.log_probs(hidden), softmax, atol=1e-4)
    targets = torch.randint(0, head.vocab_size, (7,))
    assert torch.allclose(head.token_nll(hidden, targets), -softmax.gather(1, targets[:, None])[:, 0], atol=1e-4)
    eos = int(targets[0])
    assert torch.allclose(head.token_log_prob(hidden, eos), softmax[:, eos], atol=1e-4)


def test_f2_prior_gives_the_token_embeddings_only_the_in_class_gradient(tokenizer: VariorumTokenizer) -> None:
    """The offset has no gradient: the token embeddings learn from −log p2(x | c) alone, as in Eq. 3."""
    head = f2_head(build_f2_model(tokenizer, group_prior="token-mass"))
    hidden = torch.randn(5, head.proj.weight.shape[1])
    targets = torch.randint(0, head.vocab_size, (5,))
    head.token_nll(hidden, targets).sum().backward()
    with_prior = head.proj.weight.grad.clone()
    head.proj.weight.grad = None
    classes = head.token_class[targets]
    in_class = head.proj(hidden).float().masked_fill(head.token_class[None] != classes[:, None], float("-inf"))
    F.cross_entropy(in_class, targets, reduction="sum").backward()
    assert torch.allclose(with_prior, head.proj.weight.grad, atol=1e-5)


def test_posg_with_the_prior_starts_at_each_groups_token_mass() -> None:
    torch.manual_seed(0)
    head = POSGHead(len(TOKEN_TAGS), 4, TAGS, group_prior=True)
    head.set_vocabulary(PosVocabulary(TAGS, TOKEN_TAGS))
    assert not head.pos_proj.weight.any()
    hidden = torch.randn(3, 4) * 3
    probs = F.softmax(head.proj(hidden).float(), -1)  # [3, V]
    members = head.membership.float()  # [G, V]
    expected = probs @ members.T / (probs @ members.T).sum(-1, keepdim=True)  # p(ρ) ∝ Σ_{x∈V_ρ} e^{z_x}
    assert torch.allclose(head.group_log_probs(hidden).exp(), expected, atol=1e-5)
    marginal = head.log_probs(hidden).exp()  # p(x) ∝ n_x e^{z_x}
    counts = members.sum(0)
    assert torch.allclose(marginal, probs * counts / (probs * counts).sum(-1, keepdim=True), atol=1e-5)
    targets, groups = torch.tensor([1, 3, 4]), torch.tensor([1, 1, 0])
    nll = head.token_nll_given_groups(hidden, targets, groups)
    log_groups = head.group_log_probs(hidden).gather(1, groups[:, None])[:, 0]
    in_group = F.log_softmax(head.proj(hidden).float().masked_fill(~head.membership[groups], float("-inf")), -1)
    assert torch.allclose(nll, -log_groups - in_group.gather(1, targets[:, None])[:, 0], atol=1e-5)


def test_the_prior_is_refused_on_a_head_without_groups() -> None:
    with pytest.raises(ConfigError, match="group_prior"):
        tiny_config(50, head="softmax", group_prior="token-mass")
    with pytest.raises(ConfigError, match="group_prior"):
        tiny_config(50, head="f2", group_prior="base")


def test_f2_with_the_prior_scores_targets_and_one_token_from_one_projection(tokenizer: VariorumTokenizer) -> None:
    """The shared pass the termination heads use equals the two separate calls."""
    head = f2_head(build_f2_model(tokenizer, group_prior="token-mass"))
    with torch.no_grad():
        head.class_proj.weight.normal_()
    hidden = torch.randn(6, head.proj.weight.shape[1]) * 2
    targets = torch.randint(0, head.vocab_size, (6,))
    nll, log_token = head.token_nll_and_log_prob(hidden, targets, 3)
    assert torch.allclose(nll, head.token_nll(hidden, targets), atol=1e-5)
    assert torch.allclose(log_token, head.token_log_prob(hidden, 3), atol=1e-5)
    assert torch.allclose(log_token, head.log_probs(hidden)[:, 3], atol=1e-5)
