"""A saved coherence scorer: read back it scores as fitted, and it refuses a language model it was not
fitted on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import load_bundle, save_bundle
from engine.coherence.features import FeatureLimits, continuation_features, feature_width
from engine.coherence.fit import LinearScore
from engine.coherence.scorer import (
    SCORER_FILE,
    ScorerRecord,
    ScorerUnavailableError,
    load_scorer,
    model_fingerprint,
    save_scorer,
    share_equal_weights,
)
from engine.model import LanguageModel
from engine.packed_linear import half_products_available

PROMPT = "The dog ran to the park."
ENDINGS = [" It played with a ball.", " The stock market fell."]


def _saved_scorer(tmp_path: Path, bundle: Path) -> tuple[Path, LinearScore]:
    model = load_bundle(bundle).model
    assert isinstance(model, LanguageModel)
    width = feature_width(model)
    generator = torch.Generator().manual_seed(0)
    score = LinearScore(torch.randn(width, generator=generator), torch.rand(width, generator=generator) + 0.5,
                        torch.randn(width, generator=generator))
    folder = tmp_path / "scorer"
    save_scorer(folder, score, ScorerRecord(bundle.name, model_fingerprint(bundle), FeatureLimits(24, 8, 4),
                                            {"story_cloze_test_accuracy": 0.5}))
    return folder, score


def test_a_saved_scorer_scores_as_its_weights_say(tmp_path: Path, tiny_bundle: Path) -> None:
    folder, score = _saved_scorer(tmp_path, tiny_bundle)
    scorer = load_scorer(folder, [tiny_bundle.parent])
    bundle = load_bundle(tiny_bundle)
    assert isinstance(bundle.model, LanguageModel)
    expected = score(continuation_features(bundle.model, bundle.tokenizer, [PROMPT] * 2, ENDINGS,
                                           FeatureLimits(24, 8, 4)))
    assert scorer(PROMPT, ENDINGS) == pytest.approx(expected.tolist(), abs=1e-5)
    assert scorer(PROMPT, []) == []
    assert scorer.record.measured == {"story_cloze_test_accuracy": 0.5}


def test_a_scorer_needs_the_very_model_it_was_fitted_on(tmp_path: Path, tiny_bundle: Path) -> None:
    folder, _ = _saved_scorer(tmp_path, tiny_bundle)
    with pytest.raises(ScorerUnavailableError, match="needs the model tiny, which is not installed"):
        load_scorer(folder, [tmp_path / "elsewhere"])
    changed = tmp_path / "models" / "tiny"
    shutil.copytree(tiny_bundle, changed)
    model = load_bundle(changed).model
    with torch.no_grad():
        next(model.parameters()).add_(1.0)  # the copy gets other weights
    save_bundle(changed, model, load_bundle(changed).tokenizer, "# changed\n", {})
    with pytest.raises(ScorerUnavailableError, match="fitted on another version of tiny"):
        load_scorer(folder, [changed.parent])


@pytest.mark.parametrize("damage", [
    lambda data: data.pop("fingerprint"),
    lambda data: data.update(kind="bundle"),
    lambda data: data["limits"].update(batch_size=0),
    lambda data: data["limits"].update(extra=1),
])
def test_a_damaged_description_is_refused_in_one_line(tmp_path: Path, tiny_bundle: Path, damage: object) -> None:
    folder, _ = _saved_scorer(tmp_path, tiny_bundle)
    data = json.loads((folder / SCORER_FILE).read_text())
    damage(data)  # type: ignore[operator]
    (folder / SCORER_FILE).write_text(json.dumps(data))
    with pytest.raises(ScorerUnavailableError):
        load_scorer(folder, [tiny_bundle.parent])


def test_weights_equal_to_another_models_are_held_once(tiny_bundle: Path) -> None:
    scorer_model, adapted = load_bundle(tiny_bundle).model, load_bundle(tiny_bundle).model
    names = [name for name, _ in adapted.named_parameters()]
    with torch.no_grad():
        dict(adapted.named_parameters())[names[-1]].add_(1.0)  # the adapted model changed one tensor
    features_before = continuation_features(scorer_model, load_bundle(tiny_bundle).tokenizer, [PROMPT], ENDINGS[:1])
    shared = share_equal_weights(scorer_model, adapted)
    mine, theirs = dict(scorer_model.named_parameters()), dict(adapted.named_parameters())
    assert shared == sum(p.numel() for n, p in mine.items() if n != names[-1])
    assert all(mine[n].data_ptr() == theirs[n].data_ptr() for n in names[:-1])
    assert mine[names[-1]].data_ptr() != theirs[names[-1]].data_ptr()
    features_after = continuation_features(scorer_model, load_bundle(tiny_bundle).tokenizer, [PROMPT], ENDINGS[:1])
    assert torch.equal(features_before, features_after)


def test_an_imported_models_fingerprint_names_its_weights_not_its_folder(tmp_path: Path) -> None:
    """Two installs of the same base (other folders, other importer versions) have one fingerprint."""
    sections = [{"checkpoint": "/home/a/base.gguf", "architecture": "LlamaForCausalLM",
                 "weights_sha256": {"base.gguf": "ab" * 32}},
                {"checkpoint": "/Users/b/x/base.gguf", "name": "other", "architecture": "LlamaForCausalLM",
                 "weights_sha256": {"base.gguf": "ab" * 32}, "files_sha256": {"config.json": "cd" * 32}}]
    prints = []
    for number, section in enumerate(sections):
        folder = tmp_path / f"b{number}"
        folder.mkdir()
        config = {"format_version": 2, "kind": "lm", "model": {}, "base": section}
        (folder / "config.json").write_text(json.dumps(config))
        prints.append(model_fingerprint(folder))
    assert prints[0] == prints[1]


def test_a_source_kept_packed_only_lends_its_packed_weights_where_they_are_equal() -> None:
    """A Continue model loaded to generate holds its blocks' weights packed only; the scorer shares those."""
    from engine.packed_linear import keep_packed_only, linear

    torch.manual_seed(0)
    source = torch.nn.Sequential(torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(16, 8, bias=False))
    model = torch.nn.Sequential(torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(16, 8, bias=False))
    model.load_state_dict(source.state_dict())
    with torch.no_grad():
        model[1].weight.add_(1.0)  # the scorer's second layer differs
        first = model[0].weight.detach().clone()
    keep_packed_only([source[0], source[1]])
    assert share_equal_weights(model, source) == 8 * 16
    assert model[0].weight is source[0].weight and not model[1].weight.is_mkldnn
    with torch.no_grad():
        row = torch.randn(1, 8)
        torch.testing.assert_close(linear(row, model[0].weight), row @ first.T, atol=1e-5, rtol=1e-5)


@pytest.mark.skipif(not half_products_available(), reason="this PyTorch build has no FBGEMM")
def test_a_source_kept_in_float16_lends_its_copies_to_layers_that_round_to_them() -> None:
    """A Continue model on the base loaded to generate keeps its blocks' weights in float16 for FBGEMM; the scorer
    reads the base's equal layers through those copies rather than holding the weights twice."""
    from engine.packed_linear import HalfWeight, keep_packed_only, linear

    torch.manual_seed(0)
    source = torch.nn.Sequential(torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(16, 8, bias=False))
    model = torch.nn.Sequential(torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(16, 8, bias=False))
    model.load_state_dict(source.state_dict())
    with torch.no_grad():
        model[1].weight.add_(0.01)  # the scorer's second layer differs by more than float16's rounding
        rounded = model[0].weight.detach().half().float()
    keep_packed_only([source[0], source[1]], half=True)
    assert share_equal_weights(model, source) == 8 * 16
    assert model[0].weight is source[0].weight and isinstance(model[0].weight, HalfWeight)
    assert isinstance(model[1].weight, torch.nn.Parameter)
    with torch.no_grad():
        row = torch.randn(1, 8)
        torch.testing.assert_close(linear(row, model[0].weight), row @ rounded.T, atol=1e-5, rtol=1e-5)
