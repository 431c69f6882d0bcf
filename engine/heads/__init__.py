"""Output heads: the layer that turns hidden states into a (grouped) next-token distribution."""

from engine.heads.base import OutputHead
from engine.heads.registry import HEADS, build_head
from engine.heads.softmax import SoftmaxHead

__all__ = ["HEADS", "OutputHead", "SoftmaxHead", "build_head"]
