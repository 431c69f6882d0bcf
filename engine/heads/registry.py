"""Builds an output head by name from a model config (so bundles can name their head)."""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from engine.config import ConfigError, ModelConfig
from engine.heads.base import OutputHead
from engine.heads.softmax import SoftmaxHead

HeadFactory = Callable[[ModelConfig, nn.Embedding], OutputHead]


def _softmax(config: ModelConfig, embedding: nn.Embedding) -> OutputHead:
    tied = embedding if config.tie_embeddings else None
    return SoftmaxHead(config.vocab_size, config.n_embd, tied)


HEADS: dict[str, HeadFactory] = {"softmax": _softmax}


def build_head(config: ModelConfig, embedding: nn.Embedding) -> OutputHead:
    try:
        factory = HEADS[config.head]
    except KeyError:
        raise ConfigError(f"unknown head {config.head!r}; available: {sorted(HEADS)}") from None
    return factory(config, embedding)
