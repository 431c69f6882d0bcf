"""The model-family seam (engine/families): the registry names what it does not know, every registered
family supplies the whole protocol, and a family registered by a test alone is read, listed, chosen,
loaded and measured by the generic code, which never names it."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import torch

from engine.bundled_model import BundledModel
from engine.bundles.bundle import (
    BundleError,
    bundle_family,
    load_model_bundle,
    load_typed_bundle,
    read_bundle_config,
    save_bundle,
)
from engine.bundles.words import training_words
from engine.cli.main import FORWARDED
from engine.cli.recipes import trainer_families
from engine.config import ModelConfig, config_from_dict
from engine.controls import TASKS
from engine.families import FAMILIES, ModelBuilder, ModelFamily, UnknownFamilyError, model_family
from engine.front_door import Engine
from engine.lm.family import LanguageModelFamily
from engine.lm.loaded import LanguageLoadedModel
from engine.loaded_model import LoadedModel
from engine.model import LanguageModel
from engine.perplexity import main as perplexity_main
from engine.tokenizer import VariorumTokenizer
from tests.conftest import FIXTURES, STORIES, tiny_config

EXAMPLE_BUNDLES = {"lm": FIXTURES / "bundles" / "v1-lm", "permgen": FIXTURES / "bundles" / "v1-permgen"}
MEMBERS = [name for name in vars(ModelFamily) if not name.startswith("_")]
METHODS = [name for name in MEMBERS if inspect.isfunction(vars(ModelFamily)[name])]


def test_an_unknown_kind_names_itself_and_the_registered_kinds() -> None:
    with pytest.raises(UnknownFamilyError, match=r"unknown model family 'diffusion'; available: \['lm', 'permgen'\]"):
        model_family("diffusion")
    for kind in (None, ["lm"]):  # what a config.json may hold instead of a name
        with pytest.raises(UnknownFamilyError, match=rf"unknown model family {re.escape(repr(kind))}; available"):
            model_family(kind)


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_every_registered_family_supplies_the_whole_protocol(kind: str) -> None:
    """Each member, and a round trip on a stored bundle of the family (add one to EXAMPLE_BUNDLES)."""
    family = model_family(kind)
    assert [name for name in MEMBERS if not hasattr(family, name)] == []
    assert all(callable(getattr(family, name)) for name in METHODS)
    assert family.kind == kind and family.name and family.config_sections[0] == "model"
    assert family.trainer in FORWARDED  # a `variorum` command
    config = read_bundle_config(EXAMPLE_BUNDLES[kind])
    assert family.tasks(config) and set(family.tasks(config)) <= set(TASKS)
    vocab_size, build = family.model_builder(config)
    model = build()
    assert isinstance(model, BundledModel) and model.kind == kind
    assert list(model.bundle_sections()) == list(family.config_sections)
    assert model.bundle_sections()["model"]["vocab_size"] == vocab_size
    loaded = family.load(EXAMPLE_BUNDLES[kind], torch.device("cpu"), "torch")
    assert isinstance(loaded, LoadedModel) and loaded.capabilities.tasks == family.tasks(config)


class FakeModel(LanguageModel):
    """A language model stored under a kind of its own, with a section of its own."""

    kind = "fake"

    def bundle_sections(self) -> dict[str, Any]:
        return {**super().bundle_sections(), "fake": {"writes": "abstract"}}


class FakeFamily(LanguageModelFamily):
    """A family that only this test registers; it borrows the language model's members it is not asked for."""

    kind = "fake"
    name = "fake model"
    config_sections = ("model", "fake")
    trainer = "train-fake"
    checkpoint_architectures = ()  # imports no pretrained checkpoint

    def tasks(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        return (str(config["fake"]["writes"]),)

    def model_builder(self, config: Mapping[str, Any]) -> ModelBuilder:
        model = config_from_dict(ModelConfig, config["model"])
        return model.vocab_size, lambda: FakeModel(model)

    def load(self, directory: Path, device: torch.device, runtime: str) -> LoadedModel:
        return LanguageLoadedModel(load_typed_bundle(directory, device, FakeModel), device, runtime)  # type: ignore[arg-type]

    def training_words(self, config: Mapping[str, Any], files: list[Path] | None) -> frozenset[str] | None:
        return frozenset({"fake"})

    def held_out_perplexity(self, directory: Path, files: list[Path], fraction: float | None,
                            everything: bool) -> dict[str, Any]:
        return {"family": self.name, "files": len(files)}


FAKE = FakeFamily()


@pytest.fixture
def fake_bundle(tmp_path: Path, tokenizer: VariorumTokenizer) -> Path:
    torch.manual_seed(0)
    path = tmp_path / "models" / "fake"
    save_bundle(path, FakeModel(tiny_config(tokenizer.vocab_size)).eval(), tokenizer, "# Fake\n\nA test's family.\n")
    return path


def test_a_bundle_of_an_unregistered_kind_is_refused_by_name(fake_bundle: Path) -> None:
    with pytest.raises(BundleError, match=r"kind 'fake' in config.json is not one of \['lm', 'permgen'\]"):
        load_model_bundle(fake_bundle)
    assert "kind 'fake'" in Engine(search_dirs=[fake_bundle.parent]).list_bundles()[0].error


def test_a_registered_family_is_read_listed_chosen_and_loaded(
    fake_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(FAMILIES, "fake", lambda: FAKE)
    bundle = load_model_bundle(fake_bundle)
    assert type(bundle.model) is FakeModel and bundle_family(fake_bundle) is FAKE
    engine = Engine(search_dirs=[fake_bundle.parent])
    assert engine.list_bundles()[0].tasks == ("abstract",)
    assert engine.default_bundle("abstract").path == fake_bundle  # type: ignore[union-attr]
    loaded = engine.load(fake_bundle, device="cpu", runtime="torch")
    assert isinstance(loaded, LanguageLoadedModel) and type(loaded.bundle.model) is FakeModel
    config = json.loads((fake_bundle / "config.json").read_text())
    del config["fake"]  # the family's own section is checked like PermGen's
    (fake_bundle / "config.json").write_text(json.dumps(config))
    with pytest.raises(BundleError, match="has no 'model' and 'fake' sections"):
        load_model_bundle(fake_bundle)


def test_a_registered_family_answers_the_tools(
    fake_bundle: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(FAMILIES, "fake", lambda: FAKE)
    assert perplexity_main(["--bundle", str(fake_bundle), "--files", str(STORIES)]) == 0
    assert json.loads(capsys.readouterr().out) == {"family": "fake model", "files": 1}
    assert training_words(fake_bundle) == frozenset({"fake"})
    assert trainer_families()["train-fake"] is FAKE
