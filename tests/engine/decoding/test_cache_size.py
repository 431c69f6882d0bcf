"""A request's key/value cache holds the positions it needs, not the model's whole window, and a cache that
cannot fit in free memory is refused with a message before anything is allocated."""

from __future__ import annotations

import pytest
import torch

from engine.backbones import kv_cache
from engine.decoding import DecodeConfig
from engine.decoding.generate import generate_variants
from engine.decoding.step import LanguageModelRows
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config


@pytest.fixture
def wide_model(tokenizer: VariorumTokenizer) -> LanguageModel:
    torch.manual_seed(0)
    return LanguageModel(tiny_config(tokenizer.vocab_size, block_size=65_536)).eval()


def test_the_cache_holds_the_prompt_and_the_new_tokens_only(wide_model: LanguageModel) -> None:
    with torch.inference_mode():
        rows = LanguageModelRows(wide_model, [[0, 5, 6]] * 8, 20)
    assert rows.cache.capacity == 23 and rows.cache.keys.shape[1] == 8


def test_a_cache_larger_than_free_memory_is_refused_before_allocating(
    tiny_model: LanguageModel, tokenizer: VariorumTokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kv_cache, "free_memory", lambda device: 1000)
    allocated: list[object] = []
    monkeypatch.setattr(torch.Tensor, "new_zeros", lambda *args, **kwargs: allocated.append(args))
    with pytest.raises(kv_cache.CacheTooLargeError, match="ask for fewer variants or fewer tokens"):
        generate_variants(tiny_model, tokenizer, "Tom", 8, DecodeConfig(max_new_tokens=20, seed=0))
    assert allocated == []
