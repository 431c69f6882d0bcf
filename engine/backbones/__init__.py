"""Backbones: networks that turn token ids into hidden states (decoder-only GPT-2 and Llama; BART's in bart.py).

A language model's backbone is chosen by its config's `backbone` field (`build_backbone`). Both offer the
same surface to the model and the decoders: `forward(ids) -> hidden`, `new_cache`, `decode`,
`token_embedding` and `block_stack` (what a fine-tune of the last blocks trains).
"""

from engine.backbones.gpt2 import GPT2Backbone
from engine.backbones.llama import LlamaBackbone
from engine.config import ConfigError, ModelConfig

Backbone = GPT2Backbone | LlamaBackbone


def build_backbone(config: ModelConfig) -> Backbone:
    """A freshly initialised language-model backbone of the kind `config.backbone` names."""
    if config.backbone not in ("gpt2", "llama"):
        raise ConfigError(f"a language model's backbone is 'gpt2' or 'llama', not {config.backbone!r} "
                          "(bart is PermGen's encoder-decoder)")
    return LlamaBackbone(config) if config.backbone == "llama" else GPT2Backbone(config)


__all__ = ["Backbone", "GPT2Backbone", "LlamaBackbone", "build_backbone"]
