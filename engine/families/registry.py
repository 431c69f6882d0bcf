"""Model families by the kind a bundle's config.json names; each family's module is imported on first use.

    FAMILIES["permgen"]()  → the PermGen family (engine/permgen/family.py `FAMILY`)

A family is registered by one entry here naming the module that declares it as `FAMILY`. Like the
CLI's command table, the entry names the module instead of importing it: a family builds on the
generic modules that ask this registry (the bundle reader, the ONNX exporter, the evaluation), so
importing it here would close a cycle, and loading a family's module only when a bundle of its
kind is read keeps listing bundles cheap. A test registers a family of its own by adding an entry.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from engine.config import ConfigError
from engine.families.base import ModelFamily

FamilyLoader = Callable[[], ModelFamily]


class UnknownFamilyError(ConfigError):
    """No family is registered for a kind; the message names it and the registered kinds."""


def declared_in(module: str) -> FamilyLoader:
    """A loader of the family that `module` declares as `FAMILY` (imported by the first call)."""

    def load() -> ModelFamily:
        family: ModelFamily = importlib.import_module(module).FAMILY
        return family

    return load


FAMILIES: dict[str, FamilyLoader] = {
    "lm": declared_in("engine.lm.family"),
    "permgen": declared_in("engine.permgen.family"),
}


def family_kinds() -> list[str]:
    """The registered kinds, in registration order."""
    return list(FAMILIES)


def model_family(kind: object) -> ModelFamily:
    """The family of `kind`, or an `UnknownFamilyError` naming it and the registered kinds."""
    loader = FAMILIES.get(kind) if isinstance(kind, str) else None
    if loader is None:
        raise UnknownFamilyError(f"unknown model family {kind!r}; available: {family_kinds()}")
    return loader()


def model_families() -> list[ModelFamily]:
    """Every registered family (each module imported)."""
    return [model_family(kind) for kind in FAMILIES]


def family_for_architecture(architecture: str) -> ModelFamily | None:
    """The family that imports pretrained checkpoints of `architecture` (its `checkpoint_architectures`), if any."""
    return next((family for family in model_families() if architecture in family.checkpoint_architectures), None)
