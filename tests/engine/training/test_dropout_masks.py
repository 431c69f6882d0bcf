"""Dropout masks cut from 64-bit random integers: their statistics, and a compiled CPU step using them."""

from __future__ import annotations

import pytest
import torch

from engine.training import dropout_masks
from engine.training.dropout_masks import keep_threshold, native_dropout, uniform_15bit
from engine.training.speed import compile_step


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_keep_rate_and_scaling(p: float) -> None:
    torch.manual_seed(0)
    x = torch.randn(400, 1000)
    out, keep = native_dropout(x, p, True)
    assert keep.dtype == torch.bool and keep.shape == x.shape
    # 400k Bernoulli(1 − p) draws: standard error ≤ 0.0008
    assert abs(keep.float().mean().item() - (1 - p)) < 0.004
    torch.testing.assert_close(out, x * keep / (1 - p))


def test_threshold_is_exact_to_the_resolution() -> None:
    assert keep_threshold(0.1) == 3277  # 0.1 · 32768 = 3276.8
    assert abs((1 - keep_threshold(0.1) / 32768) - 0.9) < 2**-16


def test_slices_are_uniform_and_independent() -> None:
    torch.manual_seed(1)
    u = uniform_15bit(400_000, torch.device("cpu"))
    assert u.min() >= 0 and u.max() < 32768
    # the four slices of one int64 (positions 4k … 4k+3) and their neighbours: uncorrelated, each
    # uniform (mean 16383.5, variance 32768² / 12)
    slices = u.view(-1, 4).double()
    torch.testing.assert_close(slices.mean(0), torch.full((4,), 16383.5, dtype=torch.float64), rtol=0.01, atol=0)
    correlation = torch.corrcoef(slices.T)
    assert (correlation - torch.eye(4, dtype=torch.float64)).abs().max() < 0.01
    # a mask with p = 0.5 keeps both of two neighbours a quarter of the time
    keep = u >= keep_threshold(0.5)
    assert abs((keep[1:] & keep[:-1]).float().mean().item() - 0.25) < 0.005


def test_count_not_a_multiple_of_four() -> None:
    assert uniform_15bit(7, torch.device("cpu")).shape == (7,)


def test_eval_mode_and_extremes() -> None:
    x = torch.randn(3, 5)
    out, keep = native_dropout(x, 0.1, False)
    assert torch.equal(out, x) and bool(keep.all())
    out, keep = native_dropout(x, 1.0, True)
    assert not out.any() and not keep.any()


def test_seed_fixes_the_mask() -> None:
    x = torch.ones(64, 64)
    torch.manual_seed(3)
    first = native_dropout(x, 0.3, True)[1]
    torch.manual_seed(3)
    assert torch.equal(first, native_dropout(x, 0.3, True)[1])


class ScaledDropout(torch.nn.Module):
    """sum(dropout(w · x)): d/dw = sum(x · mask) / (1 − p) = sum(output) / w."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.dropout(self.w * x, 0.25, self.training)


def test_compiled_cpu_step_uses_these_masks_and_their_gradient() -> None:
    module = ScaledDropout()
    compiled = compile_step(module, "cpu", fixed_shapes=False)
    x = torch.rand(32, 48) + 0.5
    torch.manual_seed(7)
    out = compiled(x)
    out.sum().backward()
    # the compiled step draws the same generator numbers as the eager function: the same mask
    torch.manual_seed(7)
    expected, keep = dropout_masks.native_dropout(module.w.detach() * x, 0.25, True)
    torch.testing.assert_close(out.detach(), expected)
    assert module.w.grad is not None
    torch.testing.assert_close(module.w.grad, (x * keep).sum() / 0.75)
