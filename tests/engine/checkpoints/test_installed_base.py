"""The real pretrained base, where `variorum get-base` installed it on this computer (skipped elsewhere): it loads
through the one decoding core and writes, and so does every shipped model built on it."""

from __future__ import annotations

import json

import pytest

from engine.base_model import default_models_dir, installed_base
from engine.front_door import RESOURCES_MODELS, DecodeConfig, Engine, GenerationRequest

INSTALLED = installed_base(default_models_dir())
pytestmark = pytest.mark.skipif(INSTALLED is None, reason="the pretrained base is not installed here "
                                                          "(`variorum get-base`)")
ON_BASE = sorted(path.name for path in RESOURCES_MODELS.iterdir() if (path / "config.json").is_file()
                 and "base" in json.loads((path / "config.json").read_text()))


def _writes(bundle_name: str) -> str:
    engine = Engine()
    bundle = next(info for info in engine.list_bundles() if info.name == bundle_name)
    assert bundle.error == "" and bundle.pretrained
    model = engine.load(bundle.path, device="cpu", runtime="torch")
    task = model.capabilities.tasks[0]  # a language model continues; a PermGen model writes its one task
    request = GenerationRequest(task=task, prompt="Jenny wanted to learn to bake bread.", title="Jenny bakes bread",
                                n=1, decode=DecodeConfig(greedy=True, max_new_tokens=8))
    stream = model.stream(request)
    for _ in stream:
        pass
    return stream.variants[0].text


def test_the_installed_base_writes_english() -> None:
    assert INSTALLED is not None
    text = _writes(INSTALLED.bundle.name)
    assert len(text.split()) >= 3 and text.isascii()


@pytest.mark.parametrize("name", ON_BASE)
def test_each_shipped_model_on_the_base_loads_and_writes(name: str) -> None:
    assert _writes(name).strip()
