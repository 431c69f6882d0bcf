"""A GPT-2 checkpoint (`GPT2LMHeadModel`) as one of our language models: its blocks, its renumbered
vocabulary (engine/checkpoints/vocabulary.py) and a softmax head tied to its token embedding, which
is what GPT-2's own output layer is (no bias). The result computes the checkpoint's logits for
every one of its tokens, under the new ids (checked in the tests against transformers' model).

Refused with one line: options our decoding maths does not run (an activation other than GPT-2's
tanh GELU, attention scaled by layer index or upcast and reordered, cross-attention).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import GPT2Model

from engine.backbones.gpt2 import GPT2Backbone
from engine.backbones.hf_checkpoint import load_hf_pretrained
from engine.checkpoints.inspect import CheckpointError, CheckpointInfo
from engine.checkpoints.vocabulary import import_vocabulary, move_rows
from engine.config import ModelConfig
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer

TANH_GELU = ("gelu_new", "gelu_pytorch_tanh")
UNSUPPORTED_FLAGS = ("scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention")


def _check_options(info: CheckpointInfo, transformer: GPT2Model) -> None:
    hf = transformer.config
    if hf.activation_function not in TANH_GELU:
        raise CheckpointError(f"{info.path}: activation {hf.activation_function!r} is not GPT-2's tanh GELU; "
                              "Variorum runs GPT-2 blocks as GPT-2 defines them")
    for flag in UNSUPPORTED_FLAGS:
        if getattr(hf, flag, False):
            raise CheckpointError(f"{info.path}: {flag} is set; Variorum runs GPT-2 blocks without it")


def import_gpt2(info: CheckpointInfo, dropout: float = 0.1) -> tuple[LanguageModel, VariorumTokenizer]:
    """The checkpoint as a softmax-head language model over its renumbered vocabulary, and that tokenizer."""
    if info.family != "gpt2":
        raise CheckpointError(f"{info.path}: a {info.architecture} checkpoint, not GPT-2")
    vocabulary = import_vocabulary(info)
    transformer = load_hf_pretrained(GPT2Model, info.path, "GPT-2")
    _check_options(info, transformer)
    size = len(vocabulary.source_rows)
    embedding = nn.Embedding(size, transformer.config.n_embd)
    with torch.no_grad():
        embedding.weight.copy_(move_rows(transformer.wte.weight, vocabulary.source_rows))  # [V_new, D]
    transformer.wte = embedding
    transformer.config.vocab_size = size
    hf = transformer.config
    config = ModelConfig(vocab_size=size, n_layer=hf.n_layer, n_head=hf.n_head, n_embd=hf.n_embd,
                         block_size=hf.n_positions, dropout=dropout, head="softmax")
    return LanguageModel(config, GPT2Backbone(config, transformer)), vocabulary.tokenizer
