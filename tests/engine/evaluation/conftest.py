"""Evaluation fixtures: two tiny bundles (built like tests/conftest.py's tiny_bundle) and our tiny split."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import save_bundle
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import FIXTURES, tiny_config

TINY_SPLIT = FIXTURES / "tiny_eval_split.txt"


@pytest.fixture(autouse=True, scope="module")
def one_thread() -> Iterator[None]:
    """Tiny models run far faster single-threaded on a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def two_bundles(tmp_path_factory: pytest.TempPathFactory, tokenizer: VariorumTokenizer) -> list[Path]:
    paths = []
    for seed, fraction, termination in ((0, 0.2, "va"), (1, 0.01, "st")):  # ST: its state is carried by the stream
        torch.manual_seed(seed)
        model = LanguageModel(tiny_config(tokenizer.vocab_size, termination=termination)).eval()
        if termination == "st":  # z = u·h ≈ 32 at every position: σ(z) ≈ 1, so the ST model rarely stops at once
            with torch.no_grad():
                model.backbone.transformer.ln_f.bias.fill_(1.0)
                model.head.gate.weight.fill_(1.0)
        path = tmp_path_factory.mktemp("eval_bundles") / f"tiny{seed}"
        save_bundle(path, model, tokenizer, f"# Tiny model {seed}\n\nUntrained, for tests.\n",
                    {"train": {"valid_fraction": fraction}})
        paths.append(path)
    return paths
