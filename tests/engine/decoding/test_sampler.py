"""Counter-based row sampling and the preallocated KV cache."""

from __future__ import annotations

import torch

from engine.backbones.kv_cache import KVCache
from engine.decoding.sampler import MASK32, STAGE_GROUP, STAGE_TOKEN, draw_rows, row_uniforms, uniform_bits
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer


def test_uniforms_depend_only_on_seed_step_and_stage() -> None:
    seeds = torch.tensor([0, 1, 2**40 + 7, 2**62])
    u = row_uniforms(seeds, 3, STAGE_TOKEN)
    assert bool(((u > 0) & (u < 1)).all())
    assert torch.equal(row_uniforms(seeds[2:3], 3, STAGE_TOKEN), u[2:3])  # not on the batch around it
    assert len(set(u.tolist()) | set(row_uniforms(seeds, 4, STAGE_TOKEN).tolist())) == 8
    assert not torch.equal(row_uniforms(seeds, 3, STAGE_GROUP), u)


def test_uniforms_are_the_same_bits_on_python_ints_and_on_tensors() -> None:
    seeds = torch.tensor([0, 1, 2**40 + 7, 2**62, 2**63 - 1])
    counter = (3 * 2 + STAGE_TOKEN) & MASK32
    on_tensor = uniform_bits(seeds, counter)  # the vectorised path (GPU rows)
    assert on_tensor.tolist() == [uniform_bits(seed, counter) for seed in seeds.tolist()]  # the CPU path
    # values of the earlier all-tensor implementation: a seed keeps its draws
    assert row_uniforms(seeds[:4], 3, STAGE_TOKEN).tolist() == [
        0.7464283281688311, 0.3641511693983515, 0.9819277708567669, 0.7264407131536239]


def test_draws_follow_the_distribution_and_never_pick_forbidden_ids() -> None:
    probs = torch.tensor([0.5, 0.0, 0.3, 0.2, 0.0])
    scores = probs.log().expand(20_000, -1)
    picks = draw_rows(scores, torch.arange(20_000), step=1, stage=STAGE_TOKEN, greedy=False)
    frequencies = torch.bincount(picks, minlength=5).double() / 20_000
    assert frequencies[1] == frequencies[4] == 0
    torch.testing.assert_close(frequencies, probs.double(), atol=0.015, rtol=0)  # ~5 standard errors
    assert draw_rows(scores[:2], torch.arange(2), 1, STAGE_TOKEN, greedy=True).tolist() == [0, 0]


def test_cached_decoding_matches_the_full_forward(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    ids = torch.tensor([[tokenizer.eos_id, *tokenizer.encode("The dog ran to the park and sat.")]] * 2)  # [2, T]
    full = tiny_model.hidden_states(ids)  # transformers' forward, [2, T, D]
    cache = tiny_model.new_cache(2)
    with torch.no_grad():
        prompt = tiny_model.decode(ids[:, :4], cache)
        steps = [tiny_model.decode(ids[:, t : t + 1], cache) for t in range(4, ids.shape[1])]
    torch.testing.assert_close(torch.cat([prompt, *steps], dim=1), full, atol=1e-5, rtol=1e-4)
    cache.select_rows(torch.tensor([1]))
    assert cache.keys.shape[1] == 1 and cache.length == ids.shape[1]


def test_decode_equals_transformers_forward_step_by_step(tiny_model: LanguageModel) -> None:
    """The functional decode path (fused GELU, no module calls) reproduces transformers' forward."""
    ids = torch.randint(0, tiny_model.config.vocab_size, (3, 9), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        full = tiny_model.hidden_states(ids)  # [3, 9, D]
        cache = tiny_model.new_cache(3)
        prompt = tiny_model.decode(ids[:, :5], cache)
        steps = [tiny_model.decode(ids[:, t : t + 1], cache) for t in range(5, 9)]
        bare = KVCache.allocate(*cache.keys.shape[:3], cache.capacity, cache.keys.shape[4], cache.keys)
        looked_up = tiny_model.decode(ids, bare)  # a cache without the weights `new_cache` looks up once
    assert cache.weights and not bare.weights
    assert torch.allclose(torch.cat([prompt, *steps], dim=1), full, atol=1e-5)
    assert torch.allclose(looked_up, full, atol=1e-5)
