"""Shared fixtures: a tokenizer, tiny models and a tiny bundle built from our own fixture text."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import save_bundle
from engine.config import ModelConfig
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer

FIXTURES = Path(__file__).parent / "fixtures"
STORIES = FIXTURES / "tiny_stories.txt"


# Decoding, head, training-step and request tests run on every device here: the CPU always, CUDA
# when this machine has it (.ci/gpu-check runs them on a GPU machine).
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> torch.device:
    """Each device the suite can reach: tensors, generators and masks must all live on it."""
    return torch.device(str(request.param))


def story_lines() -> list[str]:
    return [line for line in STORIES.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def tokenizer() -> VariorumTokenizer:
    return VariorumTokenizer.train(story_lines(), vocab_size=320)


def tiny_config(vocab_size: int, **overrides: object) -> ModelConfig:
    settings: dict[str, object] = {
        "vocab_size": vocab_size, "n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 32, "dropout": 0.0,
    }
    settings.update(overrides)
    return ModelConfig(**settings)  # type: ignore[arg-type]


@pytest.fixture
def tiny_model(tokenizer: VariorumTokenizer) -> LanguageModel:
    torch.manual_seed(0)
    return LanguageModel(tiny_config(tokenizer.vocab_size)).eval()


@pytest.fixture(scope="session")
def tiny_bundle(tmp_path_factory: pytest.TempPathFactory, tokenizer: VariorumTokenizer) -> Path:
    torch.manual_seed(0)
    model = LanguageModel(tiny_config(tokenizer.vocab_size)).eval()
    path = tmp_path_factory.mktemp("bundles") / "tiny"
    save_bundle(path, model, tokenizer, "# Tiny test model\n\nAn untrained two-layer model for tests.\n",
                {"train": {"valid_fraction": 0.2}})
    return path


@pytest.fixture(autouse=True)
def no_shipped_scorer(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never read the real base: drafts are chosen as on a machine without it (the generating model's
    own score), wherever the suite runs. tests/engine/checkpoints/test_installed_base.py reads it on purpose."""
    from engine.coherence import choice

    monkeypatch.setattr(choice, "SHIPPED_SCORER", tmp_path_factory.getbasetemp() / "no-coherence-scorer")
