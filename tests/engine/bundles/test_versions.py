"""The one bundle reader: version-1 bundles (fixtures written by the format-1 writers, and the shipped
models) load unchanged and compute what they computed before; newer, unknown or mismatched configs
are clear errors; the writer names the kind and can store half-precision weights."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from engine.bundles.bundle import (
    BundleError,
    bundle_kind,
    load_bundle,
    load_model_bundle,
    read_bundle_config,
    save_bundle,
)
from engine.config import BUNDLE_FORMAT_VERSION
from engine.front_door import Engine
from engine.lm.loaded import LanguageLoadedModel
from engine.model import LanguageModel
from engine.permgen.bundle import load_permgen_bundle
from engine.permgen.loaded import PermGenLoadedModel
from engine.permgen.model import EncodedExample, PermGenModel, collate
from engine.tokenizer import VariorumTokenizer
from tests.conftest import FIXTURES, tiny_config
from tests.engine.permgen.conftest import STORIES, tiny_permgen_config

OLD = FIXTURES / "bundles"
EXPECTED: dict[str, Any] = json.loads((OLD / "v1-expected.json").read_text())
SHIPPED = Path(__file__).parents[3] / "resources" / "models"


@pytest.fixture(scope="module")
def pg_tokenizer() -> VariorumTokenizer:
    from engine.permgen.data import tokenizer_texts
    from engine.permgen.readers import read_examples

    return VariorumTokenizer.train(tokenizer_texts(read_examples(STORIES)), vocab_size=330)


@pytest.fixture
def pg_model(pg_tokenizer: VariorumTokenizer) -> PermGenModel:
    torch.manual_seed(0)
    return PermGenModel(tiny_permgen_config(pg_tokenizer.vocab_size)).eval()


@pytest.fixture
def copy_of(tmp_path: Path) -> Any:
    def copy(source: Path) -> Path:
        shutil.copytree(source, tmp_path / source.name)
        return tmp_path / source.name
    return copy


def _edit(bundle: Path, **fields: object) -> None:
    config = json.loads((bundle / "config.json").read_text())
    config.update(fields)
    (bundle / "config.json").write_text(json.dumps(config))


def test_version_1_language_model_loads_and_computes_as_before() -> None:
    assert "kind" not in json.loads((OLD / "v1-lm" / "config.json").read_text())  # the old layout, unchanged
    bundle = load_model_bundle(OLD / "v1-lm")
    assert isinstance(bundle.model, LanguageModel) and bundle_kind(OLD / "v1-lm") == "lm"
    with torch.no_grad():
        log_probs = bundle.model.next_log_probs(torch.tensor([EXPECTED["lm_input"]]))
    assert list(log_probs.shape) == EXPECTED["lm_next_log_probs_shape"]
    assert log_probs.flatten()[:16].tolist() == pytest.approx(EXPECTED["lm_next_log_probs_head"], abs=1e-6)
    assert float(log_probs.double().sum()) == pytest.approx(EXPECTED["lm_next_log_probs_sum"], rel=1e-6)


def test_version_1_permgen_bundle_loads_and_computes_as_before() -> None:
    bundle = load_model_bundle(OLD / "v1-permgen")
    assert isinstance(bundle.model, PermGenModel)
    tok = bundle.tokenizer
    example = EncodedExample(tok.encode(EXPECTED["pg_source"]), [tok.encode(s) for s in EXPECTED["pg_sentences"]])
    with torch.no_grad():
        nll = bundle.model.token_nll(collate([example], [EXPECTED["pg_order"]]))
    assert list(nll.shape) == EXPECTED["pg_token_nll_shape"]
    assert nll.flatten()[:16].tolist() == pytest.approx(EXPECTED["pg_token_nll_head"], abs=1e-5)
    assert float(nll.double().sum()) == pytest.approx(EXPECTED["pg_token_nll_sum"], rel=1e-6)


@pytest.mark.parametrize(("name", "family", "version"), [
    ("roc-stories-tiny", LanguageLoadedModel, 1), ("continue-f2-nmst", LanguageLoadedModel, 2),
    ("continue-posg-nmst", LanguageLoadedModel, 2), ("permgen-story", PermGenLoadedModel, 2),
    ("permgen-abstract", PermGenLoadedModel, 2)])
def test_shipped_bundles_load_through_the_one_reader(name: str, family: type, version: int) -> None:
    path = SHIPPED / name
    assert read_bundle_config(path)["format_version"] == version  # shipped as written, never rewritten
    model = Engine(search_dirs=[]).load(path, device="cpu")
    assert type(model) is family


def test_the_writer_names_the_kind_and_the_reader_returns_that_family(
    tmp_path: Path, tokenizer: VariorumTokenizer, pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer
) -> None:
    save_bundle(tmp_path / "lm", LanguageModel(tiny_config(tokenizer.vocab_size)), tokenizer, "# lm\n")
    save_bundle(tmp_path / "pg", pg_model, pg_tokenizer, "# pg\n")
    for name, kind, model_type in (("lm", "lm", LanguageModel), ("pg", "permgen", PermGenModel)):
        config = read_bundle_config(tmp_path / name)
        assert (config["format_version"], config["kind"]) == (BUNDLE_FORMAT_VERSION, kind)
        assert isinstance(load_model_bundle(tmp_path / name).model, model_type)
    with pytest.raises(BundleError, match="holds a 'permgen' model, not a 'lm' one"):
        load_bundle(tmp_path / "pg")
    with pytest.raises(BundleError, match="holds a 'lm' model, not a 'permgen' one"):
        load_permgen_bundle(tmp_path / "lm")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_weights_are_written_and_load_as_float32(
    tmp_path: Path, pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer, dtype: torch.dtype
) -> None:
    save_bundle(tmp_path / "b", pg_model, pg_tokenizer, "# pg\n", weights_dtype=str(dtype).removeprefix("torch."))
    stored = load_file(str(tmp_path / "b" / "model.safetensors"))
    assert {t.dtype for t in stored.values() if t.is_floating_point()} == {dtype}
    loaded = load_permgen_bundle(tmp_path / "b").model
    assert all(p.dtype == torch.float32 for p in loaded.parameters())
    name = next(k for k, t in stored.items() if t.dim() == 2)
    assert torch.equal(loaded.state_dict()[name], stored[name].float())
    assert all(p.dtype == torch.float32 for p in pg_model.parameters())  # the trained model is untouched
    with pytest.raises(BundleError, match="weights dtype must be one of"):
        save_bundle(tmp_path / "c", pg_model, pg_tokenizer, "# pg\n", weights_dtype="int8")


@pytest.mark.parametrize(("fields", "message"), [
    ({"format_version": BUNDLE_FORMAT_VERSION + 1}, r"is newer than this Variorum can read \(it reads versions 1 to"),
    ({"format_version": "1"}, "format version '1' is unknown"),
    ({"format_version": 0}, "format version 0 is unknown"),
    ({"format_version": True}, "format version True is unknown"),
    ({"kind": "diffusion"}, "kind 'diffusion' in config.json is not one of"),
    ({"kind": None}, "kind None in config.json is not one of"),
])
def test_unreadable_versions_and_kinds_are_named(copy_of: Any, fields: dict[str, object], message: str) -> None:
    bundle = copy_of(OLD / "v1-lm")
    _edit(bundle, **fields)
    with pytest.raises(BundleError, match=message):
        load_model_bundle(bundle)
    assert bundle_kind(bundle) is None  # and describing it never raises


def test_version_2_needs_a_kind_and_permgen_needs_its_section(copy_of: Any) -> None:
    lm, pg = copy_of(OLD / "v1-lm"), copy_of(OLD / "v1-permgen")
    _edit(lm, format_version=2)
    with pytest.raises(BundleError, match="kind None"):
        load_model_bundle(lm)
    config = json.loads((pg / "config.json").read_text())
    del config["permgen"]
    (pg / "config.json").write_text(json.dumps(config))
    with pytest.raises(BundleError, match="has no 'model' and 'permgen' sections"):
        load_model_bundle(pg)
    _edit(lm, kind="lm", model=None)
    with pytest.raises(BundleError, match=r"config\.json has no 'model' section$"):
        load_model_bundle(lm)


def test_a_permgen_config_claiming_to_be_a_language_model_is_named(copy_of: Any) -> None:
    bundle = copy_of(OLD / "v1-permgen")
    _edit(bundle, kind="lm")
    with pytest.raises(BundleError, match=r"invalid model config \(a language model's backbone is 'gpt2' or 'llama'"):
        load_model_bundle(bundle)
    _edit(bundle, kind="permgen", permgen={"encoder_layers": 1, "max_sentence_len": 8, "tasks": "story"})
    with pytest.raises(BundleError, match=r"invalid PermGen config .*unknown field\(s\) \['tasks'\]"):
        load_model_bundle(bundle)
