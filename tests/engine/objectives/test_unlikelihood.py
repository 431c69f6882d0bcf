"""Unlikelihood: per-sequence candidates, hand-computed penalties, n-gram marks, greedy rollouts."""

from __future__ import annotations

import math

import pytest
import torch

from engine.config import ConfigError
from engine.model import IGNORE_INDEX, LanguageModel
from engine.objectives.base import MleObjective
from engine.objectives.unlikelihood import (
    SequenceUnlikelihood,
    TokenUnlikelihood,
    context_candidates,
    greedy_rollout,
    repeated_ngram_mask,
    token_unlikelihood,
)


def as_sets(mask: torch.Tensor) -> list[list[set[int]]]:
    return [[set(torch.nonzero(cell).flatten().tolist()) for cell in row] for row in mask]


def test_candidates_are_previous_context_of_the_same_row_only() -> None:
    inputs = torch.tensor([[1, 2, 1, 3], [5, 6, 7, 5]])
    targets = torch.tensor([[2, 1, 3, 2], [6, 7, 5, IGNORE_INDEX]])
    sets = as_sets(context_candidates(inputs, targets, vocab_size=8))
    assert sets[0] == [{1}, {2}, {1, 2}, {1, 3}]  # C_t = {x_1..x_t} minus the next token
    assert sets[1] == [{5}, {5, 6}, {6, 7}, set()]  # ignored target: no candidates
    assert all(c <= {5, 6, 7} for c in sets[1])  # never row 0's tokens


def test_excluded_ids_are_never_candidates() -> None:
    inputs, targets = torch.tensor([[1, 4, 2]]), torch.tensor([[4, 2, 0]])
    assert as_sets(context_candidates(inputs, targets, 5, exclude=[1])) == [[set(), {4}, {2, 4}]]


def test_token_unlikelihood_by_hand() -> None:
    probs = torch.tensor([[[0.5, 0.25, 0.25], [0.1, 0.2, 0.7]]])
    candidates = torch.tensor([[[False, True, True], [True, False, False]]])
    ul = token_unlikelihood(probs.log(), candidates)
    expected = [-2 * math.log(0.75), -math.log(0.9)]
    torch.testing.assert_close(ul, torch.tensor([expected]))


def test_token_objective_is_nll_plus_alpha_ul(tiny_model: LanguageModel) -> None:
    torch.manual_seed(0)
    ids = torch.randint(0, 320, (2, 8))
    inputs, targets = ids[:, :-1], ids[:, 1:]
    hidden = tiny_model.hidden_states(inputs)
    with torch.no_grad():
        log_probs = torch.log_softmax(tiny_model.head.logits(hidden), -1)  # type: ignore[operator]
        ul = token_unlikelihood(log_probs, context_candidates(inputs, targets, 320))
        nll = tiny_model.token_nll(hidden, targets)
        loss = TokenUnlikelihood(MleObjective(), alpha=0.7).token_losses(tiny_model, hidden, inputs, targets)
    torch.testing.assert_close(loss, nll + 0.7 * ul)
    zero = TokenUnlikelihood(MleObjective(), alpha=0.0).loss(tiny_model, inputs, targets)
    torch.testing.assert_close(zero, tiny_model(inputs, targets))


def test_repeated_ngram_marks_every_position_of_a_repeat() -> None:
    tokens = torch.tensor([[1, 2, 1, 2, 1, 3], [4, 4, 4, 4, 5, 6]])
    assert repeated_ngram_mask(tokens, n=2).int().tolist() == [[0, 0, 1, 1, 1, 0], [0, 1, 1, 1, 0, 0]]
    assert repeated_ngram_mask(tokens, n=4).int().tolist() == [[0] * 6, [0] * 6]
    assert repeated_ngram_mask(torch.tensor([[7, 8, 7, 8]]), n=2).int().tolist() == [[0, 0, 1, 1]]  # last n-gram


def test_greedy_rollout_matches_uncached_argmax(tiny_model: LanguageModel) -> None:
    prefix = torch.tensor([[0, 40, 41], [0, 50, 9]])
    rollout = greedy_rollout(tiny_model, prefix, 5)
    sequence = prefix
    for _ in range(5):
        nxt = tiny_model.next_log_probs(sequence)[:, -1].argmax(-1)
        sequence = torch.cat((sequence, nxt[:, None]), dim=1)
    assert torch.equal(rollout, sequence[:, 3:])


def test_sequence_loss_penalises_repeats_with_gradient(tiny_model: LanguageModel) -> None:
    objective = SequenceUnlikelihood(MleObjective(), rate=1.0, prefix=4, continuation=20, ngram=2)
    objective.begin_step(0, torch.zeros(1, 1, dtype=torch.long))
    assert objective.sequence_step
    prefix = torch.tensor([[0, 40, 41, 42]])
    loss = objective.loss(tiny_model.train(), torch.cat((prefix, prefix), 1), torch.zeros(1, 8, dtype=torch.long))
    rollout = greedy_rollout(tiny_model.eval(), prefix, 20)
    marked = repeated_ngram_mask(rollout, 2)
    assert bool(marked.any())  # an untrained model repeats itself greedily
    loss.backward()
    assert float(loss.detach()) > 0
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in tiny_model.parameters())


def test_sequence_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="rate"):
        SequenceUnlikelihood(MleObjective(), rate=1.5)
    with pytest.raises(ConfigError, match="block_size"):
        SequenceUnlikelihood(MleObjective(), prefix=50, continuation=100).check_block(32)
    a = SequenceUnlikelihood(MleObjective(), rate=0.5, seed=3)
    b = SequenceUnlikelihood(MleObjective(), rate=0.5, seed=3)
    choices = []
    for step in range(20):
        a.begin_step(step, torch.zeros(1, 1, dtype=torch.long))
        b.begin_step(step, torch.zeros(1, 1, dtype=torch.long))
        choices.append(a.sequence_step)
        assert a.sequence_step == b.sequence_step  # same on every rank and after resume
    assert 0 < sum(choices) < 20
