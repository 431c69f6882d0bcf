"""Decoding: score processors, settings and batched streaming generation."""

from engine.decoding.generate import VariantStream, generate_variants
from engine.decoding.processors import (
    DecodeSettingError,
    RepetitionPenalty,
    ScoreProcessor,
    Temperature,
    TopK,
    TopP,
)
from engine.decoding.settings import DecodeConfig
from engine.decoding.stream import DecodeStream, TokenEvent, Variant

__all__ = [
    "DecodeConfig",
    "DecodeSettingError",
    "DecodeStream",
    "RepetitionPenalty",
    "ScoreProcessor",
    "Temperature",
    "TokenEvent",
    "TopK",
    "TopP",
    "Variant",
    "VariantStream",
    "generate_variants",
]
