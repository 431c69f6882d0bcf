"""Tiny PermGen fixtures: a tokenizer and model built from our own fixture stories (seconds on a CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.config import ModelConfig
from engine.permgen.config import PermGenConfig
from engine.permgen.data import tokenizer_texts
from engine.permgen.model import PermGenModel
from engine.permgen.readers import read_examples
from engine.tokenizer import VariorumTokenizer

FIXTURES = Path(__file__).parents[2] / "fixtures" / "permgen"
STORIES = FIXTURES / "stories.titlesepkeysepstory.txt"


@pytest.fixture(scope="session")
def pg_tokenizer() -> VariorumTokenizer:
    return VariorumTokenizer.train(tokenizer_texts(read_examples(STORIES)), vocab_size=330)


def tiny_permgen_config(vocab_size: int, **model: object) -> PermGenConfig:
    settings: dict[str, object] = {"vocab_size": vocab_size, "backbone": "bart", "n_layer": 2, "n_head": 2,
                                   "n_embd": 32, "dropout": 0.0}
    settings.update(model)
    return PermGenConfig(model=ModelConfig(**settings), encoder_layers=1, max_source_len=32,  # type: ignore[arg-type]
                         max_sentence_len=12)


@pytest.fixture
def pg_model(pg_tokenizer: VariorumTokenizer) -> PermGenModel:
    torch.manual_seed(0)
    return PermGenModel(tiny_permgen_config(pg_tokenizer.vocab_size)).eval()
