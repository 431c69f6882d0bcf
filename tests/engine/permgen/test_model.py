"""The π-SGD objective (Eq. 7), permutation sampling, hierarchical embeddings and the BART backbone."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
import torch

from engine.config import ConfigError, ModelConfig
from engine.permgen.config import PermGenConfig
from engine.permgen.marks import hierarchical_positions
from engine.permgen.model import PAD_ID, START_ID, EncodedExample, PermGenModel, collate
from engine.permgen.permutation import PermutationSampler

EXAMPLES = [
    EncodedExample([40, 41, 42], [[50, 51], [52], [53, 54, 55]]),
    EncodedExample([43], [[60], [61, 62]]),
]


def test_loss_is_eq7_the_batch_mean_of_per_example_summed_nll(pg_model: PermGenModel) -> None:
    batch = collate(EXAMPLES, [[3, 1, 2], [2, 1]])
    hidden = pg_model.decoder_hidden(batch).detach()
    log_probs = torch.log_softmax(pg_model.head.proj(hidden), dim=-1).detach()  # softmax head, [B, T, V]
    per_example = []
    for i in range(2):
        length = int((batch.targets[i] >= 0).sum())
        per_example.append(-sum(float(log_probs[i, t, batch.targets[i, t]]) for t in range(length)))
    assert float(pg_model(batch).detach()) == pytest.approx(sum(per_example) / 2, rel=1e-5)
    assert batch.targets.shape[1] == 3 + 6 + 3 + 1  # 6 words + 3 <B> + 3 <E> + <EOP>


def test_padding_does_not_change_an_example_loss(pg_model: PermGenModel) -> None:
    alone = collate(EXAMPLES[1:], [[2, 1]])
    padded = collate(EXAMPLES, [[1, 2, 3], [2, 1]])
    assert pg_model.token_nll(alone).sum().item() == pytest.approx(pg_model.token_nll(padded)[1].sum().item(), rel=1e-4)


def test_every_position_row_trains_including_row_1(pg_model: PermGenModel) -> None:
    """The authors' padding_idx = 1 froze sentence 1 / local position 1; ours must not."""
    pg_model.train()
    pg_model(collate(EXAMPLES, [[1, 2, 3], [1, 2]])).backward()
    decoder = pg_model.backbone.decoder
    assert decoder.embed_sentence.padding_idx is None and decoder.embed_local.padding_idx is None
    assert decoder.embed_sentence.weight.grad is not None and decoder.embed_local.weight.grad is not None
    assert bool((decoder.embed_sentence.weight.grad[:4].abs().sum(1) > 0).all())
    assert bool((decoder.embed_local.weight.grad[:4].abs().sum(1) > 0).all())


def test_no_absolute_decoder_positions(pg_model: PermGenModel) -> None:
    """A sentence's hidden states do not depend on where the start token sits: only (t, local) do."""
    assert not any("embed_positions" in name for name, _ in pg_model.backbone.decoder.named_parameters())


def test_cached_step_decoding_matches_teacher_forcing(pg_model: PermGenModel) -> None:
    batch = collate(EXAMPLES[:1], [[2, 3, 1]])
    full = pg_model.decoder_hidden(batch)[0]  # [T, D]
    backbone = pg_model.backbone
    states = backbone.encode(batch.source, batch.source_mask)
    cache = backbone.new_cache()
    steps = []
    with torch.no_grad():
        for t in range(batch.decoder_input.shape[1]):
            token = batch.decoder_input[:, t : t + 1]
            steps.append(backbone.decoder(token, batch.sentence[:, t : t + 1], batch.local[:, t : t + 1], states,
                                          batch.source_mask, past=cache)[0, 0])
    torch.testing.assert_close(torch.stack(steps), full.detach(), rtol=1e-4, atol=1e-4)


def test_permutations_are_uniform_over_all_orders() -> None:
    sampler = PermutationSampler(seed=3)
    counts = Counter(tuple(order) for step in range(3000) for order in sampler.orders(step, [3]))
    assert set(counts) == set(itertools.permutations([1, 2, 3]))
    expected = 3000 / 6
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi2 < 20.5  # chi-square, 5 degrees of freedom: P(> 20.5) ≈ 0.001


def test_permutations_are_fresh_per_step_and_reproducible() -> None:
    sampler = PermutationSampler(seed=1)
    first, again = sampler.orders(7, [5, 5, 4]), sampler.orders(7, [5, 5, 4])
    assert first == again  # a resumed run redraws step 7's orders
    assert len({tuple(o) for step in range(20) for o in sampler.orders(step, [5])}) > 10
    assert PermutationSampler(seed=1, identity=True).orders(0, [3, 2]) == [[1, 2, 3], [1, 2]]


def test_hierarchical_positions_in_a_collated_batch() -> None:
    batch = collate(EXAMPLES, [[3, 1, 2], [2, 1]])
    g, loc = hierarchical_positions(batch.decoder_input[0].tolist())
    assert batch.sentence[0].tolist() == g and batch.local[0].tolist() == loc
    assert batch.decoder_input[0, 0] == START_ID and batch.decoder_input[1, -1] == PAD_ID


def test_termination_heads_are_refused() -> None:
    with pytest.raises(ConfigError, match="EOP"):
        PermGenConfig(model=ModelConfig(backbone="bart", termination="nmst"))
