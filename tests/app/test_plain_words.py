"""The window speaks a writer's words (technical names live in tooltips), labels the rarity slider's
risky range, and offers only the colourings this build can do, clearing its status when done."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QAbstractButton, QComboBox, QGroupBox, QLabel, QWidget
from pytestqt.qtbot import QtBot

from app import window_generation
from engine.controls import Capabilities, ClassGroups, HeadCapabilities, Termination
from engine.front_door import TaggerUnavailableError
from tests.app.conftest import MakeWindow
from tests.app.fakes import SOFTMAX, FakeEngine, FakeModel

F2_NMST = Capabilities(HeadCapabilities("f2+nmst", 5, classes=ClassGroups((2, 3, 4, 5)),
                                        termination=Termination("nmst", 1e-5)))
JARGON = ("eop", "log p", "k_POS", "Self-BLEU", "Distinct-2", "NMST", "ε", "export-onnx", "--bundle",
          "train split", "F²", "POS tag", "Top-k", "Top-p")


def _visible_words(window: QWidget) -> str:
    """Every text a writer sees without hovering: labels, box titles, buttons, picker entries."""
    texts = [w.text() for w in window.findChildren(QLabel) if w.isVisible()]
    texts += [w.title() for w in window.findChildren(QGroupBox) if w.isVisible()]
    texts += [w.text() for w in window.findChildren(QAbstractButton) if w.isVisible()]
    texts += [c.itemText(i) for c in window.findChildren(QComboBox) if c.isVisible() for i in range(c.count())]
    return "\n".join(texts)


def _generate(window, qtbot: QtBot) -> None:  # type: ignore[no-untyped-def]
    assert window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)


def test_no_jargon_in_sight_and_a_legend_for_the_colours(make_window: MakeWindow, qtbot: QtBot) -> None:
    card = "An F² model; the 98k-story train split is missing, so eop …"
    engine = FakeEngine(FakeModel(F2_NMST))
    engine.bundles = [engine.bundles[0].__class__(engine.bundles[0].path, "tiny", "f2", card)]
    window = make_window(engine)
    window.controls.decode.set_values({"n": 3})
    _generate(window, qtbot)
    window.variants.colour_mode.setCurrentIndex(window.variants.colour_mode.findData("frequency"))
    words = _visible_words(window)
    assert not [term for term in JARGON if term in words]
    assert window.controls.model.summary.text() == "Writes on from your text. A small model: fast and light, its " \
                                                   "writing rougher."
    assert "98k-story" in window.controls.model.summary.toolTip()
    assert "Self-BLEU" in window.variants.diversity.toolTip()
    assert window.variants.legend.isVisible() and "frequent" in window.variants.legend.text()


def test_the_rarity_slider_labels_its_risky_range(make_window: MakeWindow) -> None:
    window = make_window(FakeEngine(FakeModel(F2_NMST)))
    slider = window.controls.decode.sliders["class_rarity_bias"]
    assert slider.zone.isVisible() and "as trained" in slider.zone.text()
    slider.set_value(0.4)
    assert "bolder" in slider.zone.text()
    slider.set_value(2.0)
    assert "experimental" in slider.zone.text() and "non-words" in slider.zone.text()
    slider.set_value(-1.0)
    assert "commoner" in slider.zone.text()


def test_part_of_speech_colouring_is_offered_only_where_it_can_run(make_window: MakeWindow,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(window_generation, "can_tag_words", lambda: False)
    window = make_window(FakeEngine(FakeModel(SOFTMAX)))
    assert "pos" not in window.variants.offered_modes() and "frequency" in window.variants.offered_modes()
    monkeypatch.setattr(window_generation, "can_tag_words", lambda: True)
    assert "pos" in make_window(FakeEngine(FakeModel(SOFTMAX))).variants.offered_modes()


def test_a_tagger_that_fails_is_said_once_and_its_status_cleared(make_window: MakeWindow, qtbot: QtBot,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def no_tagger(texts: list[str]) -> list[list[tuple[int, int, str]]]:
        raise TaggerUnavailableError("spaCy is not installed; install it with: pip install spacy")

    monkeypatch.setattr(window_generation, "can_tag_words", lambda: True)
    monkeypatch.setattr(window_generation, "tag_words", no_tagger)
    window = make_window(FakeEngine(FakeModel(SOFTMAX)))
    _generate(window, qtbot)
    window.variants.colour_mode.setCurrentIndex(window.variants.colour_mode.findData("pos"))
    qtbot.waitUntil(lambda: window.messages.kind == "error", timeout=5000)
    assert "pip install" not in window.messages.label.text() and "pip install" in window.messages.label.toolTip()
    assert window.statusBar().currentMessage() == ""
    assert "pos" not in window.variants.offered_modes() and window.variants.mode() == "none"
    window.messages.dismiss()
    _generate(window, qtbot)
    qtbot.wait(100)
    assert window.messages.kind == "" and window.statusBar().currentMessage() != "Tagging parts of speech…"
