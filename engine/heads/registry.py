"""Builds an output head by name from a model config (so bundles can name their head)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from engine.config import ConfigError, ModelConfig
from engine.heads.base import OutputHead
from engine.heads.softmax import SoftmaxHead
from engine.tokenizer import VariorumTokenizer

HeadFactory = Callable[[ModelConfig, nn.Embedding], OutputHead]


def _softmax(config: ModelConfig, embedding: nn.Embedding) -> OutputHead:
    tied = embedding if config.tie_embeddings else None
    return SoftmaxHead(config.vocab_size, config.n_embd, tied)


HEADS: dict[str, HeadFactory] = {"softmax": _softmax}


# POSG: POS groups named by `config.pos_tags`; V_ρ comes with the weights or from training.
def _posg(config: ModelConfig, embedding: nn.Embedding) -> OutputHead:
    from engine.heads.posg import POSGHead

    if not config.pos_tags:
        raise ConfigError(
            "the posg head needs its POS groups (model config `pos_tags`); "
            "`variorum train --head posg` tags the training text and fills them in"
        )
    tied = embedding if config.tie_embeddings else None
    return POSGHead(config.vocab_size, config.n_embd, config.pos_tags, tied, config.group_prior == "token-mass")


HEADS["posg"] = _posg


# F²: K frequency classes fitted from the tokenizer's counts (`fit_head`); the class map
# itself is a set of head buffers saved with the weights, so a loaded bundle has its own classes.
def _f2(config: ModelConfig, embedding: nn.Embedding) -> OutputHead:
    from engine.heads.f2 import F2Head

    if config.f2_classes < 1:
        raise ConfigError(
            "the f2 head needs its number of frequency classes (model config `f2_classes`); "
            "`variorum train --head f2` fits them from the tokenizer's counts (engine.heads.registry.fit_head)"
        )
    tied = embedding if config.tie_embeddings else None
    return F2Head(config.vocab_size, config.n_embd, config.f2_classes, tied, config.f2_class_method,
                  config.group_prior == "token-mass")


HEADS["f2"] = _f2


def fit_head(config: ModelConfig, tokenizer: VariorumTokenizer) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """What a head learns from the tokenizer's training counts, before the model is built.

    Returns the completed config and head state to give the built head (`load_fitted_head`).
    F²: frequency classes (config `f2_classes` = K, class buffers); other heads: unchanged, {}.
    """
    if config.head != "f2":
        return config, {}
    from engine.heads.frequency_classes import fit_f2_config

    return fit_f2_config(config, tokenizer.counts)


def load_fitted_head(head: OutputHead, state: dict[str, torch.Tensor]) -> None:
    """Give a freshly built head the state `fit_head` returned (no-op for an empty state)."""
    if not state:
        return
    head = getattr(head, "inner", head)  # a termination wrapper's fitted state belongs to its inner head
    result = head.load_state_dict(state, strict=False)
    if result.unexpected_keys:
        raise ConfigError(f"fitted head state {sorted(state)} does not fit the model's {head.name!r} head")


# Termination: `termination` "st"/"nmst" wraps any head with an eos group (Eq. 9/10);
# heads "st"/"nmst" are the softmax head with that termination (the paper's ST+ / NMST+ models).
HEADS["st"] = HEADS["nmst"] = _softmax


def _with_termination(config: ModelConfig, head: OutputHead, embedding: nn.Embedding) -> OutputHead:
    kind = config.head if config.head in ("st", "nmst") else config.termination
    if kind == "va":
        return head
    from engine.heads.termination import TerminationHead
    from engine.tokenizer import EOS, SPECIAL_TOKENS

    return TerminationHead(head, kind, config.termination_eps, SPECIAL_TOKENS.index(EOS), config.n_embd)


def build_head(config: ModelConfig, embedding: nn.Embedding) -> OutputHead:
    try:
        factory = HEADS[config.head]
    except KeyError:
        raise ConfigError(f"unknown head {config.head!r}; available: {sorted(HEADS)}") from None
    return _with_termination(config, factory(config, embedding), embedding)
