"""Builds tiny F² models for tests: classes fitted with MefMax from the fixture tokenizer's counts."""

from __future__ import annotations

import torch

from engine.heads.f2 import F2Head
from engine.heads.registry import fit_head, load_fitted_head
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config


def build_f2_model(tokenizer: VariorumTokenizer, seed: int = 0, **overrides: object) -> LanguageModel:
    config, state = fit_head(tiny_config(tokenizer.vocab_size, head="f2", **overrides), tokenizer)
    torch.manual_seed(seed)
    model = LanguageModel(config)
    load_fitted_head(model.head, state)
    return model.eval()


def f2_head(model: LanguageModel) -> F2Head:
    assert isinstance(model.head, F2Head)
    return model.head
