"""The app-facing API: request validation, bundle discovery, loading and streaming."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import packed_linear
from engine.bundles.bundle import BundleError
from engine.decoding import DecodeConfig
from engine.front_door import Engine, GenerationRequest
from engine.lm.family import lm_tasks


def test_request_validation() -> None:
    with pytest.raises(ValueError, match="between 1 and 8"):
        GenerationRequest(n=0)
    with pytest.raises(ValueError, match="task 'haiku' is not available"):
        GenerationRequest(task="haiku")


def test_list_bundles_reads_card_summary_and_flags_broken(tiny_bundle: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"model": {}}')
    (tmp_path / "not-a-bundle").mkdir()
    infos = Engine([tiny_bundle.parent, tmp_path, tmp_path / "missing"]).list_bundles()
    by_name = {info.name: info for info in infos}
    assert set(by_name) == {"tiny", "broken"}
    assert by_name["tiny"].head == "softmax" and by_name["tiny"].error == ""
    assert by_name["tiny"].summary == "An untrained two-layer model for tests."
    assert by_name["broken"].error.startswith("format version None is unknown")


def test_load_and_stream_matches_generate(tiny_bundle: Path) -> None:
    model = Engine([]).load(tiny_bundle, device="cpu")
    request = GenerationRequest(prompt="Tom", n=2, decode=DecodeConfig(max_new_tokens=8, seed=5))
    streamed = ["", ""]
    stream = model.stream(request)
    for event in stream:
        streamed[event.variant] += event.text_delta
    generated = model.generate(request)
    assert [v.text for v in generated] == streamed == [v.text for v in stream.variants]
    assert model.capabilities.tasks == lm_tasks() and not model.capabilities.beam_search


def test_load_missing_bundle_is_bundle_error(tmp_path: Path) -> None:
    with pytest.raises(BundleError):
        Engine([]).load(tmp_path / "nothing", device="cpu")


def test_loading_packs_the_weights_the_first_request_multiplies_by(tiny_bundle: Path) -> None:
    model = Engine().load(tiny_bundle, device="cpu", runtime="torch")
    lm = model.bundle.model  # type: ignore[attr-defined]
    block = lm.backbone.transformer.h[0]
    assert (id(block.attn.c_attn.weight), True) in packed_linear._packed  # the block products' layout
    assert (id(lm.head.proj.weight), False) in packed_linear._packed  # the vocabulary projection's
