"""Choosing among drafts in the window: only the chosen variants reach the panes, the status line says what
is happening, and Paraphrase drafts only on a model whose meaning floor chooses among the drafts."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from app.controls.modes import ModeInputs, build_request
from app.variants.progress import drafting_words
from engine.controls import Capabilities, ParagraphControls
from engine.decoding import DecodeConfig
from engine.front_door import Engine, GenerationRequest
from tests.app.conftest import MakeWindow


def test_only_the_chosen_variants_reach_the_panes(make_window: MakeWindow, qtbot: QtBot, tiny_bundle: Path) -> None:
    window = make_window(Engine(search_dirs=[tiny_bundle.parent]))
    window.tabs.current().setPlainText("Once upon a time")
    window.controls.decode.set_values({"n": 2, "max_new_tokens": 8, "seed_fixed": True, "seed": 5,
                                       "real_words": False, "drafts": 3})
    finished: list[object] = []
    window.generator.finished.connect(finished.append)
    window.generate()
    qtbot.waitUntil(lambda: bool(finished), timeout=20_000)
    outcome = finished[0]
    panes = window.variants.panes[:2]
    assert len(outcome.variants) == 2  # type: ignore[attr-defined]
    assert outcome.drafted > 0 and outcome.choosing  # type: ignore[attr-defined]
    for pane, variant in zip(panes, outcome.variants, strict=True):  # type: ignore[attr-defined]
        assert pane.state.text == variant.text  # the chosen text, not a mix of drafts
        assert 5 <= pane.state.seed < 11  # one of the six drafts' seeds


def test_the_status_line_counts_drafts_then_says_it_is_choosing() -> None:
    request = GenerationRequest(prompt="Once", n=2, decode=DecodeConfig(max_new_tokens=10, drafts=4))
    words, share = drafting_words(request, 40, False, 2.0)
    assert words.startswith("Writing 8 drafts for 2 variants · 20 tokens/s · up to 2 s left")
    assert share == pytest.approx(0.5)
    words, share = drafting_words(request, 80, True, 4.0)
    assert words == "Choosing the 2 variants that make most sense, of 8 drafts…" and share == 1.0
    assert drafting_words(request, 0, False, 0.0) == ("Writing 8 drafts for 2 variants: starting…", None)


def test_a_paraphrase_drafts_only_where_a_meaning_floor_chooses_among_them() -> None:
    inputs = ModeInputs()
    inputs.selection = "The dog ran home."
    capabilities = Capabilities(tasks=("continue", "paraphrase"))  # rewording: nothing to choose among
    request = build_request("paraphrase", inputs, 3, DecodeConfig(drafts=4), capabilities)
    assert request.decode.drafts == 1
    assert build_request("continue", inputs, 3, DecodeConfig(drafts=4), capabilities).decode.drafts == 4
    floored = Capabilities(tasks=("paraphrase",), paragraph=ParagraphControls(10, False, True, "rotary", True))
    assert build_request("paraphrase", inputs, 3, DecodeConfig(drafts=4), floored).decode.drafts == 4


def test_a_refused_request_is_said_in_words_without_the_error_type(make_window: MakeWindow, qtbot: QtBot,
                                                                   tiny_bundle: Path) -> None:
    window = make_window(Engine(search_dirs=[tiny_bundle.parent]))
    window.tabs.current().setPlainText("Once upon a time")
    window.controls.decode.set_values({"n": 2, "max_new_tokens": 4, "real_words": False})
    assert window.model is not None
    window.model.stream = lambda request, should_stop=None: (_ for _ in ()).throw(  # type: ignore[method-assign]
        ValueError("the passage is too long: select at most 2,000 words"))
    finished: list[object] = []
    window.generator.finished.connect(finished.append)
    window.generate()
    qtbot.waitUntil(lambda: bool(finished), timeout=10_000)
    text = window.messages.label.text()
    assert "the passage is too long: select at most 2,000 words" in text and "ValueError" not in text
