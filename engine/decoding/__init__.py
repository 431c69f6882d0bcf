"""Decoding: score processors, settings and batched streaming generation."""

from engine.decoding.generate import (
    DecodeStream,
    TokenEvent,
    Variant,
    VariantStream,
    generate_variants,
)
from engine.decoding.processors import (
    DecodeSettingError,
    RepetitionPenalty,
    ScoreProcessor,
    Temperature,
    TopK,
    TopP,
)
from engine.decoding.settings import DecodeConfig

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
