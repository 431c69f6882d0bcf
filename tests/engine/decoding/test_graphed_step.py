"""The fixed-shape step the GPU records (engine/decoding/graphed_step.py): same maths as the growing
step, rows reordered in place, float32 hidden states out, and a load-time check that catches a
wrong step. On CUDA (the `device` fixture, .ci/gpu-check) the step is recorded and replayed."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.decoding import DecodeConfig, generate_variants
from engine.decoding.graphed_step import CHECK_TOLERANCE, GraphedStepRunner, graphed_runtime
from engine.front_door import Engine
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config
from tests.engine.heads.f2_support import build_f2_model

LLAMA = {"backbone": "llama", "n_head": 4, "n_kv_head": 2, "mlp_width": 48}  # grouped-query: 2 query heads a key


def tiny_lm(tokenizer: VariorumTokenizer, device: torch.device, **overrides: object) -> LanguageModel:
    torch.manual_seed(3)
    return LanguageModel(tiny_config(tokenizer.vocab_size, **overrides)).to(device).eval()


@pytest.mark.parametrize("overrides", [{}, LLAMA], ids=["gpt2", "llama"])
def test_the_fixed_shape_step_equals_the_growing_step(device: torch.device, tokenizer: VariorumTokenizer,
                                                      overrides: dict[str, object]) -> None:
    model = tiny_lm(tokenizer, device, **overrides)
    backbone = model.backbone
    ids = torch.randint(2, tokenizer.vocab_size, (3, 12), device=device)  # [N, T]
    with torch.inference_mode():
        growing, fixed = backbone.new_cache(3), backbone.new_cache(3)
        backbone.decode(ids[:, :4], growing), backbone.decode(ids[:, :4], fixed)
        for t in range(4, 12):
            expected = backbone.decode(ids[:, t : t + 1], growing)  # [N, 1, D]
            position = torch.tensor([fixed.length], device=device)
            got = backbone.decode(ids[:, t : t + 1], fixed, position)
            fixed.advance(1)
            torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(fixed.keys[:, :, :, :12], growing.keys[:, :, :, :12])
        assert not fixed.keys[:, :, :, 12:].any()  # positions not yet reached stay zero (masked, finite)


def test_the_fixed_shape_step_takes_one_token(tokenizer: VariorumTokenizer) -> None:
    backbone = tiny_lm(tokenizer, torch.device("cpu")).backbone
    with torch.inference_mode(), pytest.raises(ValueError, match="one token per row, got 2"):
        backbone.decode(torch.zeros(1, 2, dtype=torch.long), backbone.new_cache(1), torch.tensor([0]))


@pytest.mark.parametrize(("head", "overrides"), [("softmax", {}), ("f2", {}), ("softmax", LLAMA)],
                         ids=["softmax", "f2", "llama"])
def test_a_float32_runner_samples_the_same_tokens_past_the_window(
    device: torch.device, tokenizer: VariorumTokenizer, head: str, overrides: dict[str, object]
) -> None:
    """100 new tokens in a 32-position window: recorded steps, then re-encodes of the sliding window
    (several tokens, eager) on the same cache, then recorded steps again; flat and two-stage sampling."""
    model = tiny_lm(tokenizer, device, **overrides) if head == "softmax" else build_f2_model(tokenizer, seed=3).to(
        device)
    settings = DecodeConfig(max_new_tokens=100, top_p=0.9, seed=11)
    runner = GraphedStepRunner(model.backbone, torch.float32)
    with torch.inference_mode():
        expected = generate_variants(model, tokenizer, "Mara found a", 3, settings)
        got = generate_variants(model, tokenizer, "Mara found a", 3, settings, runner=runner)
    assert [v.token_ids for v in got] == [v.token_ids for v in expected]
    assert max(len(v.token_ids) for v in got) > model.config.block_size  # the window did slide


def test_rows_are_reordered_in_place_while_their_count_stays(device: torch.device,
                                                             tokenizer: VariorumTokenizer) -> None:
    model = tiny_lm(tokenizer, device)
    runner = GraphedStepRunner(model.backbone, torch.float32)
    ids = torch.randint(2, tokenizer.vocab_size, (3, 5), device=device)
    with torch.inference_mode():
        cache, reference = runner.new_cache(3), model.new_cache(3)
        runner.decode(ids[:, :4], cache), model.decode(ids[:, :4], reference)
        runner.decode(ids[:, 4:], cache), model.decode(ids[:, 4:], reference)
        addresses = cache.keys.data_ptr(), cache.values.data_ptr()
        order = torch.tensor([2, 0, 0], device=device)
        cache.select_rows(order), reference.select_rows(order)
        assert (cache.keys.data_ptr(), cache.values.data_ptr()) == addresses  # the recorded step still reads them
        step = torch.tensor([[7], [8], [9]], device=device)
        torch.testing.assert_close(runner.decode(step, cache), model.decode(step, reference), atol=1e-5, rtol=1e-5)
        fewer = torch.tensor([1], device=device)  # a new row count: new buffers, a new recording
        cache.select_rows(fewer), reference.select_rows(fewer)
        assert cache.step_ids is None and cache.graph is None
        step = torch.tensor([[5]], device=device)
        torch.testing.assert_close(runner.decode(step, cache), model.decode(step, reference), atol=1e-5, rtol=1e-5)


def test_hidden_states_come_back_as_float32_copies(device: torch.device, tokenizer: VariorumTokenizer) -> None:
    model = tiny_lm(tokenizer, device)
    runner = GraphedStepRunner(model.backbone, torch.float32)
    with torch.inference_mode():
        cache = runner.new_cache(2)
        runner.decode(torch.zeros(2, 3, dtype=torch.long, device=device), cache)
        first = runner.decode(torch.full((2, 1), 5, device=device), cache)
        kept = first.clone()
        second = runner.decode(torch.full((2, 1), 6, device=device), cache)
    assert first.dtype == second.dtype == torch.float32
    torch.testing.assert_close(first, kept)  # the next step's output did not overwrite the one handed out


def test_a_bf16_runner_passes_its_check_and_decodes(device: torch.device, tokenizer: VariorumTokenizer) -> None:
    model = tiny_lm(tokenizer, device)
    runner, note = graphed_runtime(model.backbone)
    assert runner is not None and note == "" and runner.dtype == torch.bfloat16
    assert runner.backbone.token_embedding.weight.dtype == torch.bfloat16
    assert model.backbone.token_embedding.weight.dtype == torch.float32  # the model itself is left alone
    with torch.inference_mode():
        variants = generate_variants(model, tokenizer, "Mara found a", 2, DecodeConfig(max_new_tokens=20, seed=1),
                                     runner=runner)
    assert all(v.token_ids for v in variants)


def test_a_bf16_llama_copy_keeps_float32_rope_tables_and_decodes_close(device: torch.device,
                                                                      tokenizer: VariorumTokenizer) -> None:
    """The copy's weights are bf16 but its RoPE tables are the float32 ones, so every position keeps its own
    angles; over a 4-token prompt and 40 steps its hidden states stay within the load-time check's bound."""
    model = tiny_lm(tokenizer, device, block_size=64, **LLAMA)
    runner = GraphedStepRunner(model.backbone)
    copied = runner.backbone
    assert copied.token_embedding.weight.dtype == torch.bfloat16
    assert torch.equal(copied.cos, model.backbone.cos) and torch.equal(copied.sin, model.backbone.sin)
    assert copied.cos.dtype == copied.sin.dtype == torch.float32
    ids = torch.randint(2, tokenizer.vocab_size, (2, 44), device=device)  # [N, T]
    with torch.inference_mode():
        cache, reference = runner.new_cache(2), model.new_cache(2)
        ours, theirs = [runner.decode(ids[:, :4], cache)], [model.decode(ids[:, :4], reference)]
        for t in range(4, 44):
            ours.append(runner.decode(ids[:, t : t + 1], cache))
            theirs.append(model.decode(ids[:, t : t + 1], reference))
    expected = torch.cat(theirs, 1)  # [N, 44, D]
    assert float((torch.cat(ours, 1) - expected).abs().max() / expected.abs().max()) < CHECK_TOLERANCE


def test_the_check_refuses_a_step_that_computes_something_else(tokenizer: VariorumTokenizer) -> None:
    model = tiny_lm(tokenizer, torch.device("cpu"))
    wrong = tiny_lm(tokenizer, torch.device("cpu"))
    with torch.no_grad():
        # positions shifted by one, which is what an off-by-one position index computes
        wrong.backbone.transformer.wpe.weight.copy_(model.backbone.transformer.wpe.weight.roll(1, 0))
    runner = GraphedStepRunner(wrong.backbone)
    with pytest.raises(ValueError, match="differ from float32 by"):
        runner.check(model.backbone)


def test_the_api_keeps_eager_float32_torch_on_the_cpu(tiny_bundle: Path) -> None:
    model = Engine().load(tiny_bundle, device="cpu", runtime="torch")
    assert model.runtime == "torch" and model.runtime_note == ""


def test_the_api_uses_the_recorded_step_on_a_gpu(device: torch.device, tiny_bundle: Path) -> None:
    model = Engine().load(tiny_bundle, device=device.type, runtime="torch")
    expected = "torch (CUDA graph, bf16)" if device.type == "cuda" else "torch"
    assert model.runtime == expected, model.runtime_note
