"""Prepacked products: the same as nn.Linear and addmm, repacked whenever the weight changes."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from engine.packed_linear import PackedLinear, one_product_per_input, packed_weight, project


def test_inference_equals_the_plain_product_and_training_keeps_autograd() -> None:
    torch.manual_seed(0)
    layer = PackedLinear(16, 40, bias=False)
    hidden = torch.randn(2, 3, 16)
    with torch.inference_mode():
        torch.testing.assert_close(layer(hidden[:, -1]), F.linear(hidden[:, -1], layer.weight), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(layer(hidden), F.linear(hidden, layer.weight), atol=1e-5, rtol=1e-5)
    layer(hidden).sum().backward()  # grad enabled: nn.Linear's own path
    assert layer.weight.grad is not None


def test_an_in_place_weight_change_repacks() -> None:
    torch.manual_seed(0)
    layer, hidden = PackedLinear(16, 40, bias=False), torch.randn(5, 16)
    with torch.no_grad():
        before = layer(hidden)
        layer.weight.mul_(2.0)  # as an optimizer step or load_state_dict does, in place
        torch.testing.assert_close(layer(hidden), 2.0 * before, atol=1e-5, rtol=1e-5)
        layer.load_state_dict({"weight": torch.zeros(40, 16)})
        assert torch.equal(layer(hidden), torch.zeros(5, 40))


def test_a_packed_layer_still_deep_copies() -> None:
    layer = PackedLinear(16, 40, bias=False)
    with torch.no_grad():
        packed_weight(layer.weight)
        twin = copy.deepcopy(layer)  # the opaque packed copy lives outside the module
        hidden = torch.randn(3, 16)
        torch.testing.assert_close(twin(hidden), layer(hidden))


def test_a_block_product_on_the_packed_conv1d_weight_equals_addmm() -> None:
    """GPT-2 stores [in, out]; `project` packs its transpose and keeps one cached copy per layout."""
    torch.manual_seed(0)
    weight, bias, square = torch.randn(16, 24), torch.randn(24), torch.randn(16, 16)  # [D, V]
    with torch.inference_mode():
        for rows in (1, 2, 5):  # one row takes MKL's path, two or more the packed weight
            hidden = torch.randn(rows, 16)
            torch.testing.assert_close(project(hidden, weight, bias), torch.addmm(bias, hidden, weight),
                                       atol=1e-5, rtol=1e-5)
        assert packed_weight(weight, transposed=True) is packed_weight(weight, transposed=True)
        assert packed_weight(square, transposed=True) is not packed_weight(square)  # Wᵀ and W are different weights
        torch.testing.assert_close(project(torch.eye(16)[:2], square, torch.zeros(16)), square[:2])
        made_here = torch.randn(16, 24)  # an inference tensor: no version counter, so the plain product
        hidden = torch.randn(3, 16)
        torch.testing.assert_close(project(hidden, made_here, bias), torch.addmm(bias, hidden, made_here))


def test_one_product_per_input_computes_each_inputs_product_once() -> None:
    layer = PackedLinear(6, 9)
    model = torch.nn.Sequential(layer)
    first, second = torch.randn(3, 6), torch.randn(3, 6)
    with torch.no_grad():
        with one_product_per_input(model):
            a = layer(first)
            assert layer(first) is a  # the same tensor: the product is shared
            b = layer(second)
            assert b is not a and torch.allclose(b, F.linear(second, layer.weight, layer.bias), atol=1e-5)
            assert layer(first.clone()) is not a  # an equal tensor that is another object is computed again
        assert layer.memo is None and layer(first) is not a  # outside the block nothing is kept


def test_a_llama_block_product_is_packed_for_a_single_row_too() -> None:
    """[V, D] block weights (a Llama's) go through the packed weight at every row count, one row included."""
    from engine import packed_linear

    torch.manual_seed(0)
    weight = torch.randn(24, 16)  # [V, D]
    with torch.inference_mode():
        for rows in (1, 3):
            hidden = torch.randn(rows, 16)
            torch.testing.assert_close(packed_linear.linear(hidden, weight), F.linear(hidden, weight),
                                       atol=1e-5, rtol=1e-5)
            assert (id(weight), False) in packed_linear._packed
            packed_linear._packed.pop((id(weight), False))
