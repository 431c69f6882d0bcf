"""The Llama block's attention takes the attention kernel's output in any memory layout: CUDA's fused kernels
return [B, H, T, d] as a view of a [B, T, H, d] buffer, which the CPU's never does."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from engine.backbones.llama import LlamaBackbone
from engine.config import ModelConfig


def _strided_like_cuda(*args: object, **kwargs: object) -> torch.Tensor:
    out = SDPA(*args, **kwargs)  # [B, H, T, d]
    return out.transpose(1, 2).contiguous().transpose(1, 2)  # same values, strides of a [B, T, H, d] buffer


SDPA = F.scaled_dot_product_attention


@pytest.mark.parametrize("kv_heads", [4, 2])
def test_a_kernel_output_laid_out_otherwise_gives_the_same_states(monkeypatch: pytest.MonkeyPatch,
                                                                   kv_heads: int) -> None:
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=50, n_layer=2, n_head=4, n_kv_head=kv_heads, n_embd=32, block_size=32,
                         backbone="llama")
    backbone = LlamaBackbone(config).eval()
    ids = torch.randint(0, 50, (3, 7))  # [B, T]
    with torch.no_grad():
        expected = backbone(ids)  # [B, T, D]
        monkeypatch.setattr(F, "scaled_dot_product_attention", _strided_like_cuda)
        assert not _strided_like_cuda(torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4),
                                      torch.randn(1, 2, 3, 4)).is_contiguous()
        assert torch.allclose(backbone(ids), expected, atol=1e-6)
