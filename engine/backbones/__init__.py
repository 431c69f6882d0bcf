"""Backbones: networks that turn token ids into hidden states (decoder-only GPT-2 for now)."""

from engine.backbones.gpt2 import GPT2Backbone

__all__ = ["GPT2Backbone"]
