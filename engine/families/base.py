"""The model-family protocol: everything generic code needs of a family, so that it never names one.

A family is a kind of model a bundle can hold (config.json "kind"): the language model, PermGen,
and the families added later. The bundle reader builds its model (`model_builder`), the app and
the CLI load it for a device and a runtime (`load`), `variorum perplexity` measures it
(`held_out_perplexity`), the real-words control reads its training words (`training_words`), and
the bundle pickers ask what it writes (`tasks`). engine/families/registry.py finds a family by kind.

The protocol names only types of the layers below the bundle reader: the bundle reader asks the
registry, so neither it nor anything built on it can appear here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch

from engine.bundled_model import BundledModel

if TYPE_CHECKING:  # at run time the bundle reader imports this module without the decoding stack
    from engine.loaded_model import LoadedModel

ModelBuilder = tuple[int, Callable[[], BundledModel]]  # the vocabulary size a config implies, and the model's builder


class ModelFamily(Protocol):
    """What a model family supplies; see the module docstring and docs/architecture.md ("Model families")."""

    @property
    def kind(self) -> str:
        """config.json's "kind" of its bundles; also its `BundledModel.kind` and its ONNX export's kind."""

    @property
    def name(self) -> str:
        """What messages call it ("language model", "PermGen")."""

    @property
    def config_sections(self) -> tuple[str, ...]:
        """The sections its config.json must hold as objects, "model" (the decoder's ModelConfig) first."""

    def tasks(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        """The writing tasks (engine/controls.py TASKS) a bundle with this config.json does."""

    def model_builder(self, config: Mapping[str, Any]) -> ModelBuilder:
        """The vocabulary size a checked config.json implies and a builder of its untrained model;
        `ConfigError` or `TypeError` when a section is invalid (the bundle reader names the bundle)."""

    def load(self, directory: Path, device: torch.device, runtime: str) -> LoadedModel:
        """The bundle in `directory`, loaded on `device` and ready to generate; `runtime` is auto / torch /
        onnx / onnx-int8 (engine/onnx/runtime.py)."""

    def training_words(self, config: Mapping[str, Any], files: list[Path] | None) -> frozenset[str] | None:
        """The words of a bundle's training text (the real-words control's `words.txt`), read from `files`
        or the training files its config.json records; None when none of them is here."""

    def held_out_perplexity(self, directory: Path, files: list[Path], fraction: float | None,
                            everything: bool) -> dict[str, Any]:
        """`variorum perplexity`'s numbers for the bundle on the held-out part of `files` (the hash split
        with `fraction`, default the bundle's own, or all of them with `everything`, where the family's
        measure takes them)."""

