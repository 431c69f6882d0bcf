"""Prepacked products: the same as nn.Linear and addmm, repacked whenever the weight changes; a Llama kept packed
only computes what it did."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from engine import packed_linear
from engine.backbones.llama import LlamaBackbone
from engine.config import ModelConfig
from engine.packed_linear import (
    HalfWeight,
    PackedLinear,
    half_products_available,
    keep_packed_only,
    keep_packed_weights_only,
    one_product_per_input,
    packed_weight,
    plain_tensor,
    project,
)


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
    torch.manual_seed(0)
    weight = torch.randn(24, 16)  # [V, D]
    with torch.inference_mode():
        for rows in (1, 3):
            hidden = torch.randn(rows, 16)
            torch.testing.assert_close(packed_linear.linear(hidden, weight), F.linear(hidden, weight),
                                       atol=1e-5, rtol=1e-5)
            assert (id(weight), False) in packed_linear._packed
            packed_linear._packed.pop((id(weight), False))


def _tiny_llama() -> LlamaBackbone:
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=50, n_layer=2, n_head=4, n_kv_head=2, n_embd=32, block_size=32, backbone="llama")
    return LlamaBackbone(config).eval()


def _products(backbone: LlamaBackbone) -> list[torch.nn.Linear]:
    blocks = backbone.block_list()
    return [layer for block in blocks for layer in (block.qkv, block.attn_out, block.gate_up, block.down)]


def test_layers_kept_packed_in_float32_compute_the_same_and_free_the_plain_weights() -> None:
    backbone = _tiny_llama()
    ids = torch.tensor([[3, 7, 1, 9, 4]])
    down = backbone.block_list()[0].down.weight.detach().clone()  # [D, F]
    with torch.no_grad():
        before = backbone(ids)  # [1, 5, D]
        plain_bytes = sum(layer.weight.numel() * 4 for layer in _products(backbone))
        assert keep_packed_only(_products(backbone)) == plain_bytes
        assert all(layer.weight.is_mkldnn for layer in _products(backbone))
        assert keep_packed_only(_products(backbone)) == 0  # already packed: nothing more to free
        torch.testing.assert_close(backbone(ids), before, atol=1e-5, rtol=1e-5)
        cache = backbone.new_cache(1)
        torch.testing.assert_close(backbone.decode(ids, cache), before, atol=1e-5, rtol=1e-5)  # the cached step too
    assert torch.equal(backbone.block_list()[0].down.weight.to_dense(), down)  # the same numbers, only laid out anew


@pytest.mark.skipif(not half_products_available(), reason="this PyTorch build has no FBGEMM")
def test_a_llama_loaded_to_generate_computes_with_its_weights_rounded_to_float16() -> None:
    backbone, rounded = _tiny_llama(), _tiny_llama()
    with torch.no_grad():
        for layer in _products(rounded):
            layer.weight.copy_(layer.weight.half().float())
        ids = torch.tensor([[3, 7, 1, 9, 4]])
        exact, expected = backbone(ids), rounded(ids)
        plain_bytes = sum(layer.weight.numel() * 4 for layer in _products(backbone))
        assert backbone.keep_packed_weights_only(half=True) == plain_bytes
        assert all(isinstance(layer.weight, HalfWeight) for layer in _products(backbone))
        assert backbone.keep_packed_weights_only(half=True) == 0  # kept already: nothing more to free
        torch.testing.assert_close(backbone(ids), expected, atol=1e-5, rtol=1e-5)  # the rounding is all that changes
        torch.testing.assert_close(backbone.decode(ids, backbone.new_cache(1)), expected, atol=1e-5, rtol=1e-5)
        assert not torch.allclose(expected, exact, atol=1e-7, rtol=0)  # …and it does change something
        torch.testing.assert_close(expected, exact, atol=1e-2, rtol=1e-2)
    half = backbone.block_list()[0].down.weight
    assert isinstance(half, HalfWeight)
    assert torch.equal(half.to_dense(), rounded.block_list()[0].down.weight)
    with pytest.raises(TypeError, match="loaded only to generate"):
        plain_tensor(half)  # an export reads tensors, and says why it cannot read this


def test_without_fbgemm_or_beyond_float16_a_weight_is_kept_packed_in_float32(monkeypatch: pytest.MonkeyPatch) -> None:
    backbone = _tiny_llama()
    with torch.no_grad():
        backbone.block_list()[0].qkv.weight[0, 0] = 1e5  # float16 would make it inf
    backbone.keep_packed_weights_only(half=True)
    assert backbone.block_list()[0].qkv.weight.is_mkldnn
    assert isinstance(backbone.block_list()[0].down.weight, HalfWeight) or not half_products_available()
    other = _tiny_llama()
    monkeypatch.setattr(packed_linear, "half_products_available", lambda: False)  # an ARM build, say
    other.keep_packed_weights_only(half=True)
    assert all(layer.weight.is_mkldnn for layer in _products(other))


def test_only_float32_cpu_weights_are_kept_packed_only() -> None:
    backbone = _tiny_llama().to(torch.bfloat16)
    assert keep_packed_weights_only(torch.nn.ModuleDict({"backbone": backbone})) == 0
    assert not backbone.block_list()[0].qkv.weight.is_mkldnn
    assert keep_packed_weights_only(torch.nn.Linear(4, 4, bias=False)) == 0  # no backbone, nothing to release


def test_a_llama_kept_packed_only_refuses_to_train_rather_than_give_wrong_gradients() -> None:
    backbone = _tiny_llama()
    backbone.keep_packed_weights_only()
    with pytest.raises(RuntimeError, match="loaded only to generate"):
        backbone(torch.tensor([[3, 7]]))  # the embedding's weight wants a gradient


@pytest.mark.skipif(not half_products_available(), reason="this PyTorch build has no FBGEMM")
def test_a_llama_loaded_to_generate_projects_onto_the_vocabulary_in_float16_too() -> None:
    """The head's [V, D] projection keeps its weight (the token embedding shares it) and reads a float16 copy."""
    model = torch.nn.ModuleDict({"backbone": _tiny_llama(), "proj": PackedLinear(32, 50, bias=False)})
    proj = model["proj"]
    assert isinstance(proj, PackedLinear)
    hidden = torch.randn(3, 32)
    with torch.no_grad():
        expected = F.linear(hidden, proj.weight.half().float())
        keep_packed_weights_only(model, half=True)
        assert isinstance(proj.float16, HalfWeight) and isinstance(proj.weight, torch.nn.Parameter)
        torch.testing.assert_close(proj(hidden), expected, atol=1e-5, rtol=1e-5)
    assert proj(hidden).requires_grad  # with gradients on, the float32 weight as before
    plain = torch.nn.ModuleDict({"backbone": _tiny_llama(), "proj": PackedLinear(32, 50, bias=False)})
    keep_packed_weights_only(plain)
    assert plain["proj"].float16 is None  # float32 asked for: the head stays float32 too
