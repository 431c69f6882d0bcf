"""POSG head maths on a tiny hand-made vocabulary, checked against brute force (paper Eq. 2–4)."""

from __future__ import annotations

import math

import pytest
import torch

from engine.heads.posg import POSGHead
from engine.pos.vocab import PosVocabulary, PosVocabularyError

TAGS = ("NN", "VB", "JJ", "<special>")
# token → groups: token 1 is NN and VB ("run"), token 4 is NN and JJ, token 0 is the special (eos)
TOKEN_TAGS = ((3,), (0, 1), (0,), (1,), (0, 2), (2,), (1,))
VOCAB = PosVocabulary(TAGS, TOKEN_TAGS)


def make_head(seed: int = 0, scale: float = 1.0) -> POSGHead:
    torch.manual_seed(seed)
    head = POSGHead(len(TOKEN_TAGS), 6, TAGS)
    with torch.no_grad():
        head.proj.weight.mul_(scale * 5)
        head.pos_proj.weight.mul_(5)
    head.set_vocabulary(VOCAB)
    return head


def brute_force(head: POSGHead, h: torch.Tensor) -> tuple[list[float], list[list[float]]]:
    """p(ρ) and p(x | ρ) for one hidden vector, by the definition (float64 loops)."""
    z = (head.proj.weight.double() @ h.double()).tolist()
    o = (head.pos_proj.weight.double() @ h.double()).tolist()
    p_group = [math.exp(v) / sum(math.exp(u) for u in o) for v in o]
    members = [[x for x, groups in enumerate(TOKEN_TAGS) if g in groups] for g in range(len(TAGS))]
    p_token = []
    for g in range(len(TAGS)):
        norm = sum(math.exp(z[x]) for x in members[g])
        p_token.append([math.exp(z[x]) / norm if x in members[g] else 0.0 for x in range(len(TOKEN_TAGS))])
    return p_group, p_token


def test_marginal_is_a_distribution_and_equals_the_sum_over_groups() -> None:
    head = make_head()
    hidden = torch.randn(5, 6)
    marginal = head.log_probs(hidden).exp()
    assert torch.allclose(marginal.sum(-1), torch.ones(5), atol=1e-5)
    for row in range(5):
        p_group, p_token = brute_force(head, hidden[row])
        expected = [sum(p_group[g] * p_token[g][x] for g in range(len(TAGS))) for x in range(len(TOKEN_TAGS))]
        assert marginal[row].tolist() == pytest.approx(expected, rel=1e-4, abs=1e-7)


def test_marginal_survives_group_logit_levels_far_apart() -> None:
    """Only within-group logit differences matter, so one group's level may sit far below another's:
    a single global max shift would underflow; the per-group shift keeps p(x | group) exact."""
    head = POSGHead(4, 2, ("NN", "VB"))
    head.set_vocabulary(PosVocabulary(("NN", "VB"), ((0,), (0,), (1,), (1,))))
    with torch.no_grad():
        head.proj.weight.copy_(torch.tensor([[0.0, 0.0], [1.0, 0.0], [-300.0, 0.0], [-301.0, 0.0]]))
        head.pos_proj.weight.zero_()  # p(NN) = p(VB) = 1/2
    log_p = head.log_probs(torch.tensor([[1.0, 0.0]]))[0].tolist()
    expected = [math.log(0.5) - math.log1p(math.e), math.log(0.5) - math.log1p(math.exp(-1)),
                math.log(0.5) - math.log1p(math.exp(-1)), math.log(0.5) - math.log1p(math.e)]
    assert log_p == pytest.approx(expected, abs=1e-5)


def test_loss_equals_minus_log_group_minus_log_token_in_group() -> None:
    head = make_head(seed=1)
    hidden = torch.randn(4, 6)
    targets = torch.tensor([1, 1, 4, 0])
    groups = torch.tensor([0, 1, 2, 3])  # "run" as NN, then as VB; token 4 as JJ; eos as special
    loss = head.token_nll_given_groups(hidden, targets, groups).detach()
    for row in range(4):
        p_group, p_token = brute_force(head, hidden[row])
        g, x = int(groups[row]), int(targets[row])
        assert float(loss[row]) == pytest.approx(-math.log(p_group[g]) - math.log(p_token[g][x]), rel=1e-5)


def test_loss_is_infinite_for_a_target_outside_its_group() -> None:
    head = make_head()
    loss = head.token_nll_given_groups(torch.randn(1, 6), torch.tensor([5]), torch.tensor([0])).detach()  # JJ as NN
    assert math.isinf(float(loss[0]))


def test_loss_gradient_matches_the_brute_force_gradient() -> None:
    head = make_head(seed=2)
    hidden = torch.randn(3, 6, dtype=torch.float64)
    head.double()
    targets, groups = torch.tensor([1, 3, 4]), torch.tensor([1, 1, 0])
    head.token_nll_given_groups(hidden, targets, groups).sum().backward()
    fast = head.proj.weight.grad.clone()  # type: ignore[union-attr]
    head.zero_grad()
    z = hidden @ head.proj.weight.t()
    o = hidden @ head.pos_proj.weight.t()
    reference = torch.zeros(())
    for row in range(3):
        g, x = int(groups[row]), int(targets[row])
        members = [t for t, tags in enumerate(TOKEN_TAGS) if g in tags]
        reference = reference - torch.log_softmax(o[row], -1)[g] - (z[row, x] - torch.logsumexp(z[row, members], -1))
    reference.backward()
    assert torch.allclose(fast, head.proj.weight.grad, atol=1e-10)  # type: ignore[arg-type]


def test_token_nll_without_tags_is_the_marginal_nll() -> None:
    head = make_head(seed=3)
    hidden = torch.randn(4, 6)
    targets = torch.tensor([0, 1, 4, 6])
    expected = -head.log_probs(hidden).gather(-1, targets[:, None])[:, 0]
    assert torch.allclose(head.token_nll(hidden, targets), expected)
    joint = head.token_nll_given_groups(hidden, targets, torch.tensor([3, 0, 2, 1]))
    marginal = head.token_nll(hidden, targets)
    assert torch.allclose(marginal[[0, 3]], joint[[0, 3]])  # tokens 0 and 6 are in one group only
    assert (marginal[[1, 2]] < joint[[1, 2]]).all()  # two groups: the marginal adds the other path


def test_one_tokens_log_prob_and_its_gradient_are_the_marginals() -> None:
    head = make_head(seed=7)  # the head's logits are float32 whatever the input
    hidden = torch.randn(5, 6, requires_grad=True)
    params = [hidden, head.proj.weight, head.pos_proj.weight]
    marginal = head.log_probs(hidden)
    for token in range(len(TOKEN_TAGS)):  # one group (0, 2, 3, 5, 6) and two groups (1, 4)
        ours = head.token_log_prob(hidden, token)
        assert torch.allclose(ours, marginal[:, token], atol=1e-5)
        expected = torch.autograd.grad(marginal[:, token].sum(), params, retain_graph=True)
        for a, b in zip(torch.autograd.grad(ours.sum(), params), expected, strict=True):
            assert torch.allclose(a, b, atol=1e-5)


def test_one_tokens_log_prob_follows_a_new_vocabulary() -> None:
    head = make_head(seed=8)
    hidden = torch.randn(3, 6)
    before = head.token_log_prob(hidden, 4)
    head.set_vocabulary(PosVocabulary(TAGS, ((3,), (0, 1), (0,), (1,), (2,), (2,), (1,))))  # 4: JJ only
    after = head.token_log_prob(hidden, 4)
    assert not torch.allclose(before, after)
    assert torch.allclose(after, head.log_probs(hidden)[:, 4], atol=1e-6)


def test_in_group_distribution_never_leaves_the_group() -> None:
    head = make_head(seed=4)
    hidden = torch.randn(len(TAGS), 6)
    groups = torch.arange(len(TAGS))
    in_group = head.token_log_probs_in_group(hidden, groups).exp()
    assert torch.allclose(in_group.sum(-1), torch.ones(len(TAGS)), atol=1e-6)
    assert (in_group[~VOCAB.membership()] == 0).all()
    assert torch.allclose(head.group_log_probs(hidden).exp().sum(-1), torch.ones(len(TAGS)), atol=1e-6)


def test_marginal_chunks_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    head = make_head(seed=6)
    hidden = torch.randn(9, 6)
    whole = head.log_probs(hidden)
    monkeypatch.setattr("engine.heads.posg.MARGINAL_CHUNK_ELEMENTS", 20)  # 2 rows per chunk
    assert torch.allclose(head.log_probs(hidden), whole)


def test_vocabulary_must_fit_the_head() -> None:
    head = POSGHead(len(TOKEN_TAGS), 6, ("NN", "VB", "JJ", "XX"))
    with pytest.raises(PosVocabularyError, match="does not fit"):
        head.set_vocabulary(VOCAB)
    with pytest.raises(PosVocabularyError, match="call set_vocabulary"):
        head.bundle_files()
    with pytest.raises(PosVocabularyError, match="no tokens"):
        PosVocabulary(("NN", "VB"), ((0,), (0,)))
    assert PosVocabulary.from_json(VOCAB.to_json()) == VOCAB
    with pytest.raises(PosVocabularyError, match="malformed"):
        PosVocabulary.from_json('{"format": 1, "tags": ["NN"]}')
