"""Hostile or broken bundles (LM and PermGen): every bad size, type, weight or file is a `BundleError`
naming the field or file, raised before the model is allocated; nothing is a traceback."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.bundles.bundle import BundleError, ModelBundle, load_bundle, save_bundle
from engine.files import small_reads
from engine.front_door import Engine, describe_bundle
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


@pytest.mark.parametrize("provenance", ["x", {"train": [1]}, {"train": {"train_files": "a.txt"}},
                                        {"train": {"valid_fraction": "0.1"}}])
def test_provenance_of_the_wrong_type_is_refused_at_load(broken: tuple[Path, Loader], provenance: object) -> None:
    bundle, loader = broken
    _edit_config(bundle, lambda config: config.__setitem__("provenance", provenance))
    with pytest.raises(BundleError, match="provenance"):
        loader(bundle)


def _make_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _link_to_dev_zero(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


@pytest.mark.parametrize("name", ["token_counts.json", "tokenizer.json", "config.json", "card.md"])
@pytest.mark.parametrize("replace", [_make_fifo, _link_to_dev_zero])
def test_files_that_are_not_regular_files_are_refused(broken: tuple[Path, Loader], name: str,
                                                      replace: Callable[[Path], None]) -> None:
    bundle, loader = broken
    replace(bundle / name)
    with pytest.raises(BundleError, match=f"{name} .*not a regular file"):
        loader(bundle)


def test_a_file_over_the_size_limit_is_refused(broken: tuple[Path, Loader], monkeypatch: pytest.MonkeyPatch) -> None:
    bundle, loader = broken
    monkeypatch.setattr(small_reads, "SMALL_FILE_LIMIT", 100)
    with pytest.raises(BundleError, match=r"config\.json .*larger than the 100 bytes allowed"):
        loader(bundle)


def test_a_folder_for_the_weights_file_is_named(broken: tuple[Path, Loader]) -> None:
    bundle, loader = broken
    (bundle / "model.safetensors").unlink()
    (bundle / "model.safetensors").mkdir()
    with pytest.raises(BundleError, match=r"model\.safetensors is a folder, not a file"):
        loader(bundle)


def test_an_unreadable_weights_file_is_named(broken: tuple[Path, Loader], monkeypatch: pytest.MonkeyPatch) -> None:
    bundle, loader = broken
    opened = os.open

    def refuse_weights(path: object, *args: int) -> int:
        if str(path).endswith("model.safetensors"):  # what a mode-000 file gives a user other than root
            raise PermissionError(13, "Permission denied", str(path))
        return opened(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(small_reads.os, "open", refuse_weights)
    with pytest.raises(BundleError, match=r"model.safetensors cannot be read \(Permission denied\)"):
        loader(bundle)


def test_a_file_given_as_the_bundle_is_named(broken: tuple[Path, Loader]) -> None:
    bundle, loader = broken
    with pytest.raises(BundleError, match=r"config\.json is a file, not a bundle folder"):
        loader(bundle / "config.json")


@pytest.mark.parametrize(("starts", "message"), [
    (["temperature"], "must be a JSON object of starts for temperature, top_k, top_p, repetition_penalty, guidance, "
                      "got list"),
    ({"temprature": 0.8}, "'temprature' is not a decoding setting; a bundle may start temperature, top_k, top_p, "
                          "repetition_penalty, guidance"),
    ({"pos_top_k": 10}, "'pos_top_k' is not a setting a bundle may start; a bundle may start temperature, top_k, "
                        "top_p, repetition_penalty, guidance"),
    ({"guidance": 4}, "guidance must be a number in [1, 3] (1 = off), got 4"),
    ({"temperature": 5}, "temperature must be a number in [0.05, 3] (1 = off), got 5"),
    ({"top_p": 0}, "top_p must be a number in [0.05, 1] (1 = off), got 0"),
    ({"top_k": 40.5}, "top_k must be a whole number in [0, 200] (0 = off), got 40.5"),
    ({"repetition_penalty": "1.1"}, "repetition_penalty must be a number in [1, 2] (1 = off), got '1.1'"),
    ({"top_p": True}, "top_p must be a number in [0.05, 1] (1 = off), got True"),
])
def test_a_bad_decode_start_is_refused_naming_the_field_and_its_range(
        broken: tuple[Path, Loader], starts: object, message: str) -> None:
    bundle, loader = broken
    _edit_config(bundle, lambda config: config.__setitem__("decode_starts", starts))
    with pytest.raises(BundleError) as refused:
        loader(bundle)
    assert str(refused.value) == f'bundle {bundle}: "decode_starts" in config.json: {message}'
    assert describe_bundle(bundle).error == f'"decode_starts" in config.json: {message}'  # the pickers say it too


def test_a_bundles_decode_starts_reach_its_loaded_models_capabilities(broken: tuple[Path, Loader]) -> None:
    """Both families' loaded models carry the starts their bundle gives (a valid edit of the copy)."""
    bundle, loader = broken
    assert Engine([]).load(bundle, device="cpu").capabilities.decode_starts == ()
    _edit_config(bundle, lambda config: config.__setitem__("decode_starts", {"temperature": 0.8, "top_k": 40}))
    loaded = loader(bundle)
    assert isinstance(loaded, ModelBundle) and loaded.decode_starts == (("temperature", 0.8), ("top_k", 40))
    assert Engine([]).load(bundle, device="cpu").capabilities.decode_starts == (("temperature", 0.8), ("top_k", 40))
