"""The prepacked vocabulary projection: the same product as nn.Linear, repacked whenever the weight changes."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from engine.heads.packed_linear import PackedLinear, packed_weight


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
