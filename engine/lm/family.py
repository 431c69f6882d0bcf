"""The language-model family (kind "lm"): a GPT-2 or Llama backbone × an output head, continuing text.

What the registry (engine/families) needs to build, load, train, measure and export it; the model
is engine/model.py, its loaded model engine/lm/loaded.py and its trainer engine/lm/train.py. Each member
imports what it uses when it runs, so finding the family costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from engine.controls import LM_TASKS
from engine.families import HeldOutOnnx, ModelBuilder, ModelFamily, OnnxGraphs

if TYPE_CHECKING:
    from engine.checkpoints.inspect import CheckpointInfo
    from engine.loaded_model import LoadedModel
    from engine.model import LanguageModel
    from engine.tokenizer import VariorumTokenizer


def lm_tasks() -> tuple[str, ...]:
    """What a language model writes: continuations, and paraphrases where rewording's packages are
    installed (WordNet's files, lemminflect, spaCy's English model: engine/rewording)."""
    from engine.rewording import rewording_available

    return (*LM_TASKS, "paraphrase") if rewording_available() else LM_TASKS


class LanguageModelFamily:
    """Plain language models: one "model" section, the continue (and paraphrase) tasks, `variorum train`."""

    kind = "lm"
    name = "language model"
    config_sections = ("model",)
    trainer = "train"
    checkpoint_architectures = ("GPT2LMHeadModel", "LlamaForCausalLM")

    def tasks(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        return lm_tasks()

    def model_builder(self, config: Mapping[str, Any]) -> ModelBuilder:
        from engine.config import ModelConfig, config_from_dict
        from engine.model import LanguageModel

        model = config_from_dict(ModelConfig, config["model"])
        return model.vocab_size, lambda: LanguageModel(model)

    def load(self, directory: Path, device: torch.device, runtime: str) -> LoadedModel:
        from engine.bundles.bundle import load_bundle
        from engine.lm.loaded import LanguageLoadedModel

        return LanguageLoadedModel(load_bundle(directory, device), device, runtime)

    def train(self, argv: list[str]) -> int:
        from engine.lm.train import main

        return main(argv)

    def training_words(self, config: Mapping[str, Any], files: list[Path] | None) -> frozenset[str] | None:
        from engine.bundles.words import lm_training_words

        return lm_training_words(config.get("provenance", {}), files)

    def held_out_perplexity(self, directory: Path, files: list[Path], fraction: float | None,
                            everything: bool) -> dict[str, Any]:
        from engine.perplexity import lm_perplexity

        return lm_perplexity(directory, files, fraction, everything)

    def onnx_graphs(self, directory: Path) -> OnnxGraphs:
        from engine.backbones import LlamaBackbone
        from engine.bundles.bundle import load_bundle
        from engine.onnx.export import lm_step_graphs
        from engine.onnx.graphs import GPT2StepGraph
        from engine.onnx.llama_graphs import LlamaStepGraph

        model = load_bundle(directory, "cpu").model
        backbone, config = model.backbone, model.config
        if isinstance(backbone, LlamaBackbone):  # its cache holds only the key/value heads
            return lm_step_graphs(LlamaStepGraph(backbone), config, config.kv_heads)
        return lm_step_graphs(GPT2StepGraph(backbone), config, config.n_head)

    def onnx_perplexity(self, directory: Path, files: list[Path]) -> HeldOutOnnx:
        """Block perplexity of the bundle's validation split of `files`, as `variorum perplexity` measures it."""
        from engine.bundles.bundle import load_bundle
        from engine.onnx.runner import OnnxBackboneRunner
        from engine.onnx.session import open_graphs
        from engine.perplexity import block_perplexity, held_out_blocks

        bundle = load_bundle(directory)
        documents, blocks = held_out_blocks(bundle, files)
        config = bundle.model.config

        def perplexity(decoder: str | None, sha256: str) -> float:
            graphs = open_graphs(directory, self.kind, torch.device("cpu"), decoder, sha256)
            return block_perplexity(bundle.model, blocks, runner=OnnxBackboneRunner(graphs, config.block_size,
                                                                                     config.n_embd))[1]

        return HeldOutOnnx(perplexity, documents, int(blocks[:, 1:].numel()))

    def from_checkpoint(self, info: CheckpointInfo) -> tuple[LanguageModel, VariorumTokenizer]:
        if info.family == "llama":
            from engine.checkpoints.llama_import import import_llama

            return import_llama(info)
        from engine.checkpoints.gpt2_import import import_gpt2

        return import_gpt2(info)


FAMILY: ModelFamily = LanguageModelFamily()
