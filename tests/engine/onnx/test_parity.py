"""ONNX Runtime decodes exactly like torch: same tokens for 100 steps, log-probs within 1e-4, every head."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import load_bundle
from engine.decoding import DecodeConfig, VariantStream
from engine.decoding.real_words import AllowedWords, TokenPieces, WordSpeller
from engine.heads.termination import TerminationHead
from engine.lm.loaded import choose_lm_runtime
from engine.metrics.invented import words
from engine.onnx.runner import OnnxBackboneRunner
from tests.conftest import STORIES
from tests.engine.decoding.test_real_words import assert_only_allowed_words
from tests.engine.onnx.conftest import HEADS

pytest.importorskip("onnxruntime")

TOLERANCE = 1e-4  # fp32 graphs: the bound on |Δ log-prob|


def onnx_runner(path: Path, device: torch.device | None = None) -> OnnxBackboneRunner:
    """The bundle's ONNX runner on `device` (CPU by default); skips on a GPU without onnxruntime-gpu."""
    device = device or torch.device("cpu")
    if device.type == "cuda":
        import onnxruntime

        if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
            pytest.skip("the installed onnxruntime has no CUDA execution provider (onnxruntime-gpu)")
    bundle = load_bundle(path)
    choice = choose_lm_runtime(path, bundle.model.config.block_size, bundle.model.config.n_embd, "onnx", device)
    assert choice.runner is not None, choice.note
    return choice.runner


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("settings", [
    DecodeConfig(max_new_tokens=100, top_p=0.9, seed=11),
    DecodeConfig(max_new_tokens=100, temperature=1.5, top_k=20, repetition_penalty=1.2, seed=5),
], ids=["top-p", "top-k-repetition"])
def test_same_seed_same_tokens_for_100_steps(
    head: str, settings: DecodeConfig, make_exported: Callable[[str], Path], device: torch.device
) -> None:
    path = make_exported(head)
    onnx = onnx_runner(path, device)
    bundle = load_bundle(path, device)
    prompt = bundle.tokenizer.encode("Once upon a time")
    results = []
    for runner in (None, onnx):
        stream = VariantStream(bundle.model, bundle.tokenizer, prompt, 4, settings, runner=runner)
        list(stream)
        results.append(stream.variants)
    steps = 0
    for torch_variant, onnx_variant in zip(*results, strict=True):
        assert onnx_variant.token_ids == torch_variant.token_ids
        assert onnx_variant.token_groups == torch_variant.token_groups
        deltas = torch.tensor(onnx_variant.token_log_probs) - torch.tensor(torch_variant.token_log_probs)
        assert float(deltas.abs().max()) < TOLERANCE
        steps = max(steps, len(torch_variant.token_ids))
    assert steps == 100  # the 32-position window slid several times: re-encoding is covered too


def _distributions(head: object, hidden: torch.Tensor, steps: torch.Tensor) -> list[torch.Tensor]:
    """Marginal, group and in-group log-probs of every group: the head's two-level distribution."""
    assert isinstance(head, torch.nn.Module)
    out = [head.log_probs(hidden, steps), head.group_log_probs(hidden, steps)]
    for group in range(head.num_groups):
        out.append(head.token_log_probs_in_group(hidden, torch.full((hidden.shape[0],), group, device=hidden.device),
                                                 steps))
    if isinstance(head, TerminationHead):
        state = torch.zeros(hidden.shape[0], dtype=torch.float64, device=hidden.device)
        out.extend(t for t in head.eos_terms(hidden, steps, state) if t is not None)
    return out


@pytest.mark.parametrize("head", HEADS)
def test_two_level_distributions_match_torch(head: str, make_exported: Callable[[str], Path],
                                             device: torch.device) -> None:
    path = make_exported(head)
    runner = onnx_runner(path, device)
    model = load_bundle(path, device).model
    ids = torch.randint(0, model.config.vocab_size, (3, 9), generator=torch.Generator().manual_seed(0)).to(device)
    with torch.inference_mode():
        torch_cache, onnx_cache = model.new_cache(3), runner.new_cache(3)
        pairs = [(model.decode(ids, torch_cache), runner.decode(ids, onnx_cache))]  # a prompt, then single steps
        for token in (5, 17, 42):
            step = torch.full((3, 1), token, device=device)
            pairs.append((model.decode(step, torch_cache), runner.decode(step, onnx_cache)))
        for torch_hidden, onnx_hidden in pairs:
            last_torch, last_onnx = torch_hidden[:, -1], onnx_hidden[:, -1]
            steps = torch.tensor([3, 7, 30], device=device)
            for expected, got in zip(_distributions(model.head, last_torch, steps),
                                     _distributions(model.head, last_onnx, steps), strict=True):
                finite = torch.isfinite(expected)
                assert torch.equal(finite, torch.isfinite(got))  # the same tokens are outside each group
                assert float((expected[finite] - got[finite]).abs().max()) < TOLERANCE


def test_rows_selected_and_window_reset_like_the_torch_cache(make_exported: Callable[[str], Path]) -> None:
    path = make_exported("softmax")
    model, runner = load_bundle(path).model, onnx_runner(path)
    ids = torch.randint(0, model.config.vocab_size, (3, 6), generator=torch.Generator().manual_seed(1))
    rows = torch.tensor([2, 2, 0])
    with torch.inference_mode():
        torch_cache, onnx_cache = model.new_cache(3), runner.new_cache(3)
        model.decode(ids, torch_cache)
        runner.decode(ids, onnx_cache)
        torch_cache.select_rows(rows)
        onnx_cache.select_rows(rows)
        step = torch.tensor([[4], [9], [12]])
        assert torch.allclose(model.decode(step, torch_cache), runner.decode(step, onnx_cache), atol=1e-5)
        onnx_cache.length = 0  # re-encoding a window starts from an empty cache, as KVCache's
        torch_cache.length = 0
        assert torch.allclose(model.decode(ids, torch_cache), runner.decode(ids, onnx_cache), atol=1e-5)
        assert onnx_cache.length == torch_cache.length == 6
        with pytest.raises(ValueError, match="cannot set its length"):
            onnx_cache.length = 7
        with pytest.raises(ValueError, match="KV cache holds 32 positions"):
            runner.decode(torch.zeros(3, 27, dtype=torch.long), onnx_cache)


def test_io_binding_path_gives_the_numpy_path_s_outputs(make_exported: Callable[[str], Path]) -> None:
    """The binding path (what CUDA uses) runs here on the CPU: same names, shapes and values."""
    from engine.onnx.export_format import cache_names
    from engine.onnx.runner import run_bound, run_graph

    runner = onnx_runner(make_exported("softmax"))
    layers, heads, head_dim = runner.layers, runner.heads, runner.head_dim
    ids = torch.randint(0, 50, (2, 3), generator=torch.Generator().manual_seed(2))
    past = [torch.randn(2, heads, 4, head_dim) for _ in range(2 * layers)]
    inputs = {"input_ids": ids, **dict(zip(cache_names("past", layers), past, strict=True))}
    grown = [2, heads, 7, head_dim]  # [N, H, S + T, d]
    outputs = {"hidden": [2, 3, runner.n_embd], **{name: grown for name in cache_names("present", layers)}}
    cpu = torch.device("cpu")
    for numpy_out, bound_out in zip(run_graph(runner.session, inputs, outputs, cpu),
                                    run_bound(runner.session, inputs, outputs, cpu), strict=True):
        assert torch.equal(numpy_out, bound_out)


@pytest.mark.parametrize("head", ["softmax", "f2+nmst"])
def test_real_words_only_decodes_alike_on_onnx(head: str, make_exported: Callable[[str], Path],
                                               device: torch.device) -> None:
    """The real-words mask acts in the sampler, after the runner: both runtimes draw the same words."""
    path = make_exported(head)
    onnx = onnx_runner(path, device)
    bundle = load_bundle(path, device)
    tokenizer = bundle.tokenizer
    allowed = AllowedWords(words(STORIES.read_text()))
    speller = WordSpeller(TokenPieces(tokenizer.piece_bytes(), [tokenizer.eos_id]), allowed, device)
    settings = DecodeConfig(max_new_tokens=60, top_p=0.95, seed=3, real_words=True)
    prompt = tokenizer.encode("Once upon a time")
    results = []
    for runner in (None, onnx):
        stream = VariantStream(bundle.model, tokenizer, prompt, 3, settings, runner=runner, words=speller)
        list(stream)
        results.append(stream.variants)
    assert [v.token_ids for v in results[0]] == [v.token_ids for v in results[1]]
    for variant in results[0]:
        assert_only_allowed_words(tokenizer.decode(variant.token_ids), "Once upon a time", variant.finish_reason,
                                  allowed)
