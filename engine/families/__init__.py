"""Model families: the protocol a family supplies and the registry that finds one by a bundle's kind.

Generic code (the bundle reader, the bundle pickers, the engine API, the evaluation, the ONNX
exporter, the training words) asks `model_family(kind)` instead of testing the kind;
docs/architecture.md ("Model families") says what a new family supplies and how it registers.
"""

from engine.families.base import HeldOutOnnx, ModelBuilder, ModelFamily, OnnxGraph, OnnxGraphs
from engine.families.registry import (
    FAMILIES,
    UnknownFamilyError,
    family_for_architecture,
    family_kinds,
    model_families,
    model_family,
)

__all__ = [
    "FAMILIES",
    "HeldOutOnnx",
    "ModelBuilder",
    "ModelFamily",
    "OnnxGraph",
    "OnnxGraphs",
    "UnknownFamilyError",
    "family_for_architecture",
    "family_kinds",
    "model_families",
    "model_family",
]
