"""Weights and tokenizers that load but cannot compute are refused at load with one line: an F² class map of
zeros, weights near float32's limit (NaN text otherwise), and failures (panics) inside the tokenizer library."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer, models

from engine import tokenizer as tokenizer_module
from engine.bundles.bundle import BundleError, load_bundle, save_bundle
from engine.tokenizer import TokenizerError, VariorumTokenizer
from tests.engine.heads.f2_support import build_f2_model


@pytest.fixture
def f2_bundle(tmp_path: Path, tokenizer: VariorumTokenizer) -> Path:
    save_bundle(tmp_path / "f2", build_f2_model(tokenizer), tokenizer, "# F2\n")
    return tmp_path / "f2"


def _edit_weight(bundle: Path, name: str, value: float) -> None:
    state = load_file(str(bundle / "model.safetensors"))
    state[name] = torch.full_like(state[name], value)
    save_file(state, str(bundle / "model.safetensors"))


def test_an_f2_class_map_of_zeros_is_refused_at_load(f2_bundle: Path) -> None:
    _edit_weight(f2_bundle, "head.class_ends", 0)
    with pytest.raises(BundleError, match="F² head has no frequency classes"):
        load_bundle(f2_bundle)


def test_an_f2_class_map_that_does_not_rise_is_a_bundle_error(f2_bundle: Path) -> None:
    _edit_weight(f2_bundle, "head.class_ends", 5)
    with pytest.raises(BundleError, match="class ends must rise strictly"):
        load_bundle(f2_bundle)


def test_weights_near_the_float32_limit_are_refused(tiny_bundle: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "huge"
    shutil.copytree(tiny_bundle, bundle)
    name = sorted(load_file(str(bundle / "model.safetensors")))[0]
    _edit_weight(bundle, name, 3e38)
    with pytest.raises(BundleError, match=f"weight {name} holds values as large as 3e\\+38"):
        load_bundle(bundle)


class PanicException(BaseException):
    """Stands in for pyo3's PanicException (raised by the Rust library, not importable by name)."""


class _Panicking:
    """A tokenizers.Tokenizer whose every call panics."""

    def __getattr__(self, name: str) -> object:
        def panic(*_: object, **__: object) -> None:
            raise PanicException("called `Option::unwrap()` on a `None` value")

        return panic


@pytest.fixture
def panicking(tokenizer: VariorumTokenizer) -> Iterator[VariorumTokenizer]:
    real = tokenizer._tok
    tokenizer._tok = _Panicking()  # type: ignore[assignment]
    yield tokenizer
    tokenizer._tok = real


@pytest.mark.parametrize("call", [lambda t: t.encode("x"), lambda t: t.decode([5]), lambda t: t.encode_batch(["x"]),
                                  lambda t: t.encode_with_offsets("x")])
def test_a_panic_in_the_tokenizer_library_is_a_tokenizer_error(panicking: VariorumTokenizer, call: object) -> None:
    with pytest.raises(TokenizerError, match=r"tokenizer\.json is damaged"):
        call(panicking)  # type: ignore[operator]


def test_a_panic_while_loading_names_the_bundle(tiny_bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokenizer_module, "Tokenizer", _Panicking())
    with pytest.raises(BundleError, match=r"tokenizer failed while loading .*tokenizer.json is damaged"):
        load_bundle(tiny_bundle)


def test_a_piece_outside_the_byte_alphabet_is_refused(tokenizer: VariorumTokenizer) -> None:
    vocab = tokenizer._tok.get_vocab()
    vocab["日本"] = len(vocab)  # raw text, not GPT-2's byte stand-ins: no bytes to spell it with
    odd = VariorumTokenizer(Tokenizer(models.BPE(vocab, [])))
    with pytest.raises(TokenizerError, match="is not spelled in byte-level BPE's characters"):
        odd.probe()
