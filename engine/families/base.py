"""The model-family protocol: everything generic code needs of a family, so that it never names one.

A family is a kind of model a bundle can hold (config.json "kind"): the language model, PermGen,
and the families added later. The bundle reader builds its model (`model_builder`), the app and
the CLI load it for a device and a runtime (`load`), `variorum build-recipe` trains it (`trainer`,
`train`), `variorum perplexity` measures it
(`held_out_perplexity`), `variorum export-onnx` exports it (`onnx_graphs`) and checks its int8
decoder (`onnx_perplexity`), the real-words control reads its training words (`training_words`),
the bundle pickers ask what it writes (`tasks`), and `variorum import` builds it from the pretrained
checkpoints whose architectures it runs (`checkpoint_architectures`, `from_checkpoint`).
engine/families/registry.py finds a family by kind.

The protocol names only types of the layers below the bundle reader: the bundle reader and the ONNX
exporter ask the registry, so neither they nor anything built on them can appear here. A family
hands the exporter its graphs as `OnnxGraphs`, and the int8 check a `HeldOutOnnx` measure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch
from torch import nn

from engine.bundled_model import BundledModel

if TYPE_CHECKING:  # at run time the bundle reader imports this module without the decoding stack
    from engine.checkpoints.inspect import CheckpointInfo
    from engine.loaded_model import LoadedModel
    from engine.tokenizer import VariorumTokenizer

ModelBuilder = tuple[int, Callable[[], BundledModel]]  # the vocabulary size a config implies, and the model's builder
Dimensions = dict[str, list[str | int]]  # tensor name → its dimensions; a name (str) makes one dynamic


@dataclass(frozen=True)
class OnnxGraph:
    """One graph to export: the module to trace, the inputs it is traced with, its named inputs and outputs.

    Its file is `<role>.onnx`; the "decoder" role is the step ONNX Runtime runs for every token."""

    role: str
    module: nn.Module
    example: tuple[torch.Tensor, ...]
    inputs: Dimensions
    outputs: Dimensions


@dataclass(frozen=True)
class OnnxGraphs:
    """A bundle's graphs, exported in this order, and the key / value cache layout the runtime checks."""

    graphs: tuple[OnnxGraph, ...]
    layers: int
    heads: int  # the cache's heads: the key/value heads (a Llama's n_kv_head; n_head elsewhere)
    head_dim: int


DecoderPerplexity = Callable[[str | None, str], float]


@dataclass(frozen=True)
class HeldOutOnnx:
    """Held-out perplexity through a bundle's exported graphs, for the int8 check (engine/onnx/quantize.py).

    `perplexity(decoder, sha256)` measures on the CPU with the decoder file `decoder` of the bundle's
    onnx folder (checked against `sha256`) in place of the exported one; `decoder` None keeps the
    exported one. `examples` (documents, or source-target pairs) and `tokens` say how much it measures."""

    perplexity: DecoderPerplexity
    examples: int
    tokens: int


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

    @property
    def trainer(self) -> str:
        """The `variorum` command that trains it (engine/cli/main.py); recipes name it as their "trainer"."""

    def tasks(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        """The writing tasks (engine/controls.py TASKS) a bundle with this config.json does."""

    def model_builder(self, config: Mapping[str, Any]) -> ModelBuilder:
        """The vocabulary size a checked config.json implies and a builder of its untrained model;
        `ConfigError` or `TypeError` when a section is invalid (the bundle reader names the bundle)."""

    def load(self, directory: Path, device: torch.device, runtime: str) -> LoadedModel:
        """The bundle in `directory`, loaded on `device` and ready to generate; `runtime` is auto / torch /
        onnx / onnx-int8 (engine/onnx/runtime.py)."""

    def train(self, argv: list[str]) -> int:
        """Run its trainer command with `argv` (the command's own flags) → the exit status."""

    def training_words(self, config: Mapping[str, Any], files: list[Path] | None) -> frozenset[str] | None:
        """The words of a bundle's training text (the real-words control's `words.txt`), read from `files`
        or the training files its config.json records; None when none of them is here."""

    def held_out_perplexity(self, directory: Path, files: list[Path], fraction: float | None,
                            everything: bool) -> dict[str, Any]:
        """`variorum perplexity`'s numbers for the bundle on the held-out part of `files` (the hash split
        with `fraction`, default the bundle's own, or all of them with `everything`, where the family's
        measure takes them)."""

    def onnx_graphs(self, directory: Path) -> OnnxGraphs:
        """The graphs `variorum export-onnx` writes for the bundle, traced from its weights."""

    def onnx_perplexity(self, directory: Path, files: list[Path]) -> HeldOutOnnx:
        """The held-out measure on `files` by which the int8 check compares the fp32 and int8 decoders."""

    @property
    def checkpoint_architectures(self) -> tuple[str, ...]:
        """The `architectures` of a pretrained checkpoint's config.json that `from_checkpoint` builds
        (engine/checkpoints/inspect.py); empty when the family imports none."""

    def from_checkpoint(self, info: CheckpointInfo) -> tuple[BundledModel, VariorumTokenizer]:
        """The checked checkpoint `info` as an untrained-head model of this family over the checkpoint's
        renumbered vocabulary (engine/checkpoints/vocabulary.py), and that tokenizer; the same
        checkpoint always gives the same weights (a bundle that stores only what changed rebuilds its
        base with it). `CheckpointError` naming what it cannot run."""

