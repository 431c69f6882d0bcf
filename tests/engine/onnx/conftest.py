"""Tiny bundles of every head, exported to ONNX once per test session (test modules skip without onnxruntime)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import save_bundle
from engine.heads.termination import TerminationHead
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config
from tests.engine.evaluation.test_decoders import posg_model
from tests.engine.heads.f2_support import build_f2_model

HEADS = ["softmax", "f2", "posg", "st", "nmst", "f2+nmst"]


def build_model(head: str, tokenizer: VariorumTokenizer) -> LanguageModel:
    """A tiny untrained model with `head` that rarely ends a text, so a decode runs its 100 steps.

    The final layer norm's bias is set to 1, so u·h ≈ Σu: the POSG group holding eos (SPECIAL) and
    the ST/NMST gates can be given a steady "go on" score (ε stays small, ST needs σ(z) ≈ 1)."""
    if head == "posg":
        model = posg_model(tokenizer)
    elif head == "f2":
        model = build_f2_model(tokenizer)
    elif head == "f2+nmst":
        model = build_f2_model(tokenizer, termination="nmst")
    else:
        torch.manual_seed(0)
        model = LanguageModel(tiny_config(tokenizer.vocab_size, head=head)).eval()
    with torch.no_grad():
        model.backbone.transformer.ln_f.bias.fill_(1.0)
        if head == "posg":
            model.head.pos_proj.weight[2].fill_(-0.5)  # type: ignore[operator]  # SPECIAL: logit ≈ −16
        if isinstance(model.head, TerminationHead):
            model.head.gate.weight.fill_(0.5 if model.head.kind == "st" else -0.5)  # z ≈ ±16
    return model


@pytest.fixture(scope="session")
def make_exported(
    tmp_path_factory: pytest.TempPathFactory, tokenizer: VariorumTokenizer
) -> Callable[[str], Path]:
    """head name → a bundle directory of that head with its ONNX export (built once each)."""
    from engine.onnx.export import export_bundle

    made: dict[str, Path] = {}

    def make(head: str) -> Path:
        if head not in made:
            path = tmp_path_factory.mktemp("onnx") / head
            save_bundle(path, build_model(head, tokenizer), tokenizer, f"# Tiny {head} model\n\nFor tests.\n")
            export_bundle(path)
            made[head] = path
        return made[head]

    return make
