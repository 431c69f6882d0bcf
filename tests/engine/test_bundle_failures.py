"""Hostile or broken bundles (LM and PermGen): every bad size, type, weight or file is a `BundleError`
naming the field or file, raised before the model is allocated; nothing is a traceback."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.bundle import BundleError, load_bundle, save_bundle
from engine.permgen.bundle import load_permgen_bundle
from engine.permgen.model import PermGenModel
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import tiny_permgen_config

Loader = Callable[[Path], object]

# (field, value, what the message must name): sizes that would allocate gigabytes, wrong types
CONFIG_EDITS = [
    ("n_layer", 10000, "n_layer must be in"),
    ("n_embd", 65536, "n_embd must be in"),
    ("n_embd", 16384, "config implies"),  # within limits, but the weights file says otherwise
    ("block_size", 1e9, "block_size must be of type int"),
    ("n_layer", 200, "weights do not match the config"),
    ("n_head", 0, "n_head must be in"),
    ("n_layer", 4.0, "n_layer must be of type int"),
    ("n_layer", True, "n_layer must be of type int"),
    ("head", ["softmax"], "head must be of type str"),
    ("dropout", "0.1", "dropout must be of type float"),
    ("vocab_size", None, "vocab_size must be of type int"),
]


@pytest.fixture(scope="module")
def pg_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from engine.permgen.data import tokenizer_texts
    from engine.permgen.readers import read_examples
    from tests.engine.permgen.conftest import STORIES

    tokenizer = VariorumTokenizer.train(tokenizer_texts(read_examples(STORIES)), vocab_size=330)
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("pg") / "bundle"
    save_bundle(path, PermGenModel(tiny_permgen_config(tokenizer.vocab_size)), tokenizer, "# card\n")
    return path


@pytest.fixture(params=["lm", "permgen"])
def broken(request: pytest.FixtureRequest, tiny_bundle: Path, pg_bundle: Path,
           tmp_path: Path) -> tuple[Path, Loader]:
    """A copy of a tiny LM or PermGen bundle to break, and its loader."""
    source, loader = (tiny_bundle, load_bundle) if request.param == "lm" else (pg_bundle, load_permgen_bundle)
    target = tmp_path / "copy"
    shutil.copytree(source, target)
    return target, loader


def _edit_config(bundle: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    config = json.loads((bundle / "config.json").read_text())
    edit(config)
    (bundle / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize(("name", "value", "message"), CONFIG_EDITS)
def test_bad_model_field_is_named(broken: tuple[Path, Loader], name: str, value: object, message: str) -> None:
    bundle, loader = broken
    _edit_config(bundle, lambda config: config["model"].__setitem__(name, value))
    with pytest.raises(BundleError, match=message):
        loader(bundle)


def test_model_section_of_the_wrong_type(broken: tuple[Path, Loader]) -> None:
    bundle, loader = broken
    _edit_config(bundle, lambda config: config.__setitem__("model", [1, 2]))
    with pytest.raises(BundleError, match="model"):
        loader(bundle)


@pytest.mark.parametrize("name", ["config.json", "token_counts.json"])
def test_deeply_nested_json_is_named(broken: tuple[Path, Loader], name: str) -> None:
    bundle, loader = broken
    (bundle / name).write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(BundleError, match=f"{name} is nested too deeply"):
        loader(bundle)


def test_token_counts_as_a_directory(broken: tuple[Path, Loader]) -> None:
    bundle, loader = broken
    (bundle / "token_counts.json").unlink()
    (bundle / "token_counts.json").mkdir()
    with pytest.raises(BundleError, match=r"cannot read .*token_counts\.json"):
        loader(bundle)


def test_token_counts_of_the_wrong_type(broken: tuple[Path, Loader]) -> None:
    bundle, loader = broken
    (bundle / "token_counts.json").write_text(json.dumps({"a": 1}))
    with pytest.raises(BundleError, match=r"token_counts\.json must be a JSON list"):
        loader(bundle)


def _edit_weights(bundle: Path, edit: Callable[[str, torch.Tensor], torch.Tensor]) -> str:
    """Apply `edit` to the first weight; return its name."""
    state = load_file(str(bundle / "model.safetensors"))
    first = sorted(state)[0]
    state[first] = edit(first, state[first])
    save_file(state, str(bundle / "model.safetensors"))
    return first


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_weights_are_caught_at_load(broken: tuple[Path, Loader], bad: float) -> None:
    bundle, loader = broken
    name = _edit_weights(bundle, lambda _, t: t.clone().fill_(bad))
    with pytest.raises(BundleError, match=f"weight {name} holds NaN or infinite values"):
        loader(bundle)


def test_integer_weights_are_refused(broken: tuple[Path, Loader]) -> None:
    bundle, loader = broken
    name = _edit_weights(bundle, lambda _, t: t.to(torch.int32))
    with pytest.raises(BundleError, match=f"weight {name} has dtype torch.int32, expected torch.float32"):
        loader(bundle)
