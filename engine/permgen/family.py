"""The PermGen family (kind "permgen"): the models that write stories, abstracts and paraphrases sentence by
sentence, in either layout (engine/permgen/network.py): the paper's encoder-decoder or a decoder-only
language model on a pretrained base.

What the registry (engine/families) needs to build, load, train, measure and export it; the models
are engine/permgen/model.py and decoder_model.py, its loaded model engine/permgen/loaded.py and its
trainer engine/permgen/train.py; the ONNX export is the encoder-decoder's. Each member imports what it
uses when it runs, so finding the family (to list bundles, say) loads neither transformers' BART nor the
decoders.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from engine.bundled_model import BundledModel
from engine.families import HeldOutOnnx, ModelBuilder, ModelFamily, OnnxGraphs

if TYPE_CHECKING:
    from engine.checkpoints.inspect import CheckpointInfo
    from engine.loaded_model import LoadedModel
    from engine.permgen.model import PermGenModel
    from engine.tokenizer import VariorumTokenizer


class PermGenFamily:
    """PermGen bundles: "model" (the decoder) and "permgen" (PermGen's own settings), one task each."""

    kind = "permgen"
    name = "PermGen"
    config_sections = ("model", "permgen")
    trainer = "train-permgen"
    checkpoint_architectures = ("BartForConditionalGeneration",)

    def tasks(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        return (str(config.get("permgen", {}).get("task", "story")),)

    def model_builder(self, config: Mapping[str, Any]) -> ModelBuilder:
        from engine.permgen.config import PermGenConfig
        from engine.permgen.network import build_permgen_model

        permgen = PermGenConfig.from_dict({**config["permgen"], "model": config["model"]})
        return permgen.model.vocab_size, lambda: build_permgen_model(permgen)

    def load(self, directory: Path, device: torch.device, runtime: str) -> LoadedModel:
        from engine.permgen.bundle import load_permgen_bundle
        from engine.permgen.loaded import PermGenLoadedModel

        return PermGenLoadedModel(load_permgen_bundle(directory, device), device, runtime)

    def train(self, argv: list[str]) -> int:
        from engine.permgen.train import main

        return main(argv)

    def training_words(self, config: Mapping[str, Any], files: list[Path] | None) -> frozenset[str] | None:
        from engine.permgen.data import permgen_training_words

        permgen = config.get("permgen", {})
        return permgen_training_words(config.get("provenance", {}), str(permgen.get("task", "story")),
                                      bool(permgen.get("lowercase", True)), files,
                                      str(permgen.get("paraphrase_source", "sentence")))

    def held_out_perplexity(self, directory: Path, files: list[Path], fraction: float | None,
                            everything: bool) -> dict[str, Any]:
        """The held-out target NLL in natural and random sentence order (engine/permgen/heldout.py), on the
        hash split the bundle's training held out: `fraction` and `everything` do not apply."""
        from engine.permgen.bundle import load_permgen_bundle
        from engine.permgen.heldout import bundle_held_out

        return bundle_held_out(load_permgen_bundle(directory), files)

    def onnx_graphs(self, directory: Path) -> OnnxGraphs:
        from engine.onnx.export import bart_graphs
        from engine.permgen.bundle import load_permgen_bundle

        model = encoder_decoder(directory, load_permgen_bundle(directory, "cpu").model)
        return bart_graphs(model.backbone, model.config.model)

    def onnx_perplexity(self, directory: Path, files: list[Path]) -> HeldOutOnnx:
        """Natural-order target perplexity of the held-out examples of `files` (`ppl_natural` of
        `held_out_perplexity`); only the decoder step differs between the two measures."""
        from engine.onnx.seq2seq_runner import OnnxSeq2SeqRunner
        from engine.onnx.session import open_graphs
        from engine.permgen.bundle import load_permgen_bundle
        from engine.permgen.heldout import held_out_examples, target_nll, target_tokens

        bundle = load_permgen_bundle(directory)
        data = held_out_examples(bundle, files)
        backbone = encoder_decoder(directory, bundle.model).backbone

        def perplexity(decoder: str | None, sha256: str) -> float:
            graphs = open_graphs(directory, self.kind, torch.device("cpu"), decoder, sha256)
            runner = OnnxSeq2SeqRunner(graphs, backbone.decoder)
            return math.exp(target_nll(bundle.model, data, 1, natural=True, runner=runner))

        tokens = target_tokens(data)
        return HeldOutOnnx(perplexity, len(data), tokens)

    def from_checkpoint(self, info: CheckpointInfo) -> tuple[BundledModel, VariorumTokenizer]:
        """A BART checkpoint as a plain-BART PermGen bundle of task "story", cased, natural order
        (engine/permgen/bart_import.py); `variorum train-permgen --init-from` fine-tunes it for a task."""
        from engine.permgen.bart_import import import_bart

        return import_bart(info)


def encoder_decoder(directory: Path, model: BundledModel) -> PermGenModel:
    """The bundle's model when it is an encoder-decoder, the layout with ONNX graphs; else a ValueError."""
    from engine.permgen.loaded import ONLY_TORCH
    from engine.permgen.model import PermGenModel

    if not isinstance(model, PermGenModel):
        raise ValueError(f"bundle {directory}: {ONLY_TORCH}; it decodes with torch")
    return model


FAMILY: ModelFamily = PermGenFamily()
