"""Variants panel: pinning, history restore, token colouring and hover, the diversity maths."""

from __future__ import annotations

import math

import pytest
from pytestqt.qtbot import QtBot

from app.variants.colouring import frequency_classes, span_tags
from app.variants.diversity import distinct_n, self_bleu
from app.variants.pane import describe_span
from app.variants.state import TokenSpan, VariantState
from engine.front_door import TokenEvent
from tests.app.conftest import MakeWindow
from tests.app.fakes import POSG, SOFTMAX, WORDS, FakeEngine, FakeModel


def _generate(window, qtbot: QtBot) -> None:  # type: ignore[no-untyped-def]
    window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)


def test_pinned_variant_stays_when_generating_again(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    _generate(window, qtbot)
    kept = window.variants.panes[2]
    kept.buttons["pin"].click()
    text = kept.state.text
    window.controls.decode.n.setValue(2)
    _generate(window, qtbot)
    panes = window.variants.panes
    assert len(panes) == 3 and panes[0] is kept and panes[0].state.text == text and panes[0].number == 1
    assert panes[1].state.text == "".join(WORDS[:12])


def test_history_keeps_every_batch_and_restores_it(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    window.controls.decode.set_values({"temperature": 0.5})
    _generate(window, qtbot)
    first = [p.state.text for p in window.variants.panes]
    window.controls.decode.set_values({"temperature": 1.5, "n": 2})
    _generate(window, qtbot)
    history = window.tabs.current().history
    assert len(history) == 2 and window.history_list.count() == 2
    assert history.batches[0].settings["temperature"] == 0.5 and len(history.batches[1].variants) == 2
    window.restore_batch(0)
    assert [p.state.text for p in window.variants.panes] == first
    assert window.controls.decode.values()["temperature"] == 1.5  # restoring shows variants, keeps controls
    window.use_batch_settings(0)  # the controls follow the batch only when asked
    assert window.controls.decode.values()["temperature"] == 0.5
    window.new_document()  # history is per document
    assert window.history_list.count() == 0


def test_colour_by_frequency_and_group_with_hover(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window(FakeEngine(FakeModel(POSG, length=4)))
    _generate(window, qtbot)
    pane = window.variants.panes[0]
    window.variants.colour_mode.setCurrentIndex(window.variants.colour_mode.findData("frequency"))
    # fake counts fall with the token id: ids 0-2 are the top 30% of 12 (the engine's floor(3.6)) → frequent
    assert pane.labels == ["frequent"] * 3 + ["medium"]
    assert pane.tooltip_at(1) == f"“the” · frequent · p = {math.exp(-1):.3g}"
    window.variants.colour_mode.setCurrentIndex(window.variants.colour_mode.findData("group"))
    assert pane.labels == ["even", "odd", "even", "odd"]
    window.variants.colour_mode.setCurrentIndex(window.variants.colour_mode.findData("pos"))
    # a POS-guided head's own sampled tag is used; its coarse group shown beside it
    assert pane.labels[0] == "even · other"
    window.variants.colour_mode.setCurrentIndex(0)
    assert pane.labels == [] and pane.tooltip_at(1).startswith("“the” · p = ")


def test_pos_colouring_with_the_tagger(make_window: MakeWindow, qtbot: QtBot) -> None:
    pytest.importorskip("spacy")
    window = make_window(FakeEngine(FakeModel(SOFTMAX, length=3)))
    _generate(window, qtbot)
    pane = window.variants.panes[0]  # "the cat sat"
    window.variants.colour_mode.setCurrentIndex(window.variants.colour_mode.findData("pos"))
    qtbot.waitUntil(lambda: bool(pane.labels) or window.messages.kind == "error", timeout=20_000)
    if window.messages.kind == "error":
        pytest.skip(window.messages.label.text())
    assert pane.labels == ["DT · determiners", "NN · nouns", "VBD · verbs"]


def test_state_merges_tokens_of_one_character() -> None:
    state = VariantState()
    state.add(TokenEvent(0, 5, "", -1.0, 0))  # first byte of a multi-byte character
    state.add(TokenEvent(0, 6, "é", -2.0, 0))
    state.add(TokenEvent(0, 7, "t", -0.5, 1))
    assert state.text == "ét" and state.tokens == 3 and state.log_prob == -3.5
    assert state.spans == [TokenSpan(0, 1, [5, 6], -3.0, 0), TokenSpan(1, 2, [7], -0.5, 1)]
    assert state.span_at(1) is state.spans[1] and state.span_at(2) is None
    assert describe_span(state.text, state.spans[0], "") == f"“é” · p = {math.exp(-3):.3g} · 2 tokens"
    assert VariantState.from_dict(state.to_dict()).spans == state.spans


def test_frequency_classes_and_span_tags() -> None:
    counts = [50, 0, 40, 30, 20, 10, 9, 8, 7, 6]  # 10 types: 3 frequent, 5 medium, 2 rare
    classes = frequency_classes(counts)
    assert classes[0] == classes[2] == classes[3] == "frequent"
    assert [classes[i] for i in (4, 5, 6, 7, 8)] == ["medium"] * 5
    assert classes[9] == "rare" and classes[1] == "unseen"
    # 7 types: the engine's report groups cut at floor(0.3·7) = 2 and floor(0.8·7) = 5 (rounding would give 6)
    assert frequency_classes([9, 8, 7, 6, 5, 4, 3]) == ["frequent"] * 2 + ["medium"] * 3 + ["rare"] * 2
    assert frequency_classes([0, 0, 0]) == ["unseen"] * 3
    spans = [TokenSpan(0, 3, [1], 0.0, 0), TokenSpan(3, 4, [2], 0.0, 0), TokenSpan(4, 7, [3], 0.0, 0)]
    assert span_tags(spans, [(0, 3, "DT"), (4, 7, "NN")]) == ["DT", "", "NN"]


def test_diversity_maths() -> None:
    # Distinct-2: bigrams (a b)(b c) + (a b)(b d) → 3 distinct of 4
    assert distinct_n(["a b c", "a b d"], 2) == 0.75
    assert distinct_n(["one"], 2) is None
    assert self_bleu(["the cat sat on the mat", "the cat sat on the mat"]) == pytest.approx(100.0)
    low = self_bleu(["red green blue yellow", "one two three four five"])
    assert low is not None and low < 5
    assert self_bleu(["only one"]) is None
