"""A story pane shows the story as Insert will put it in: cased, detokenized, in reading order, while it
streams and once it is done, with colours and hover tips on the right words."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from PySide6.QtGui import QGuiApplication
from pytestqt.qtbot import QtBot

from app.variants.state import VariantState
from engine.front_door import RESOURCES_MODELS, BundleInfo, Engine, TokenEvent
from tests.app.conftest import MakeWindow

STORY_BUNDLE = RESOURCES_MODELS / "permgen-story"


def _events() -> list[TokenEvent]:
    """Sentence 2 written before sentence 1, as PermGen streams it: model text, each token naming its sentence."""
    pieces = [(2, ""), (2, "she"), (2, " could"), (2, " n't"), (2, " find"), (2, " it"), (2, " ."), (0, ""),
              (1, " "), (1, "jamie"), (1, " lost"), (1, " her"), (1, " key"), (1, " ."), (0, "")]
    return [TokenEvent(0, k, text, -0.5, 0, sentence) for k, (sentence, text) in enumerate(pieces)]


def test_a_sentence_by_sentence_variant_reads_in_order_as_it_streams() -> None:
    state = VariantState()
    events = _events()
    for event in events[:7]:
        state.add(event)
    assert state.text == "She couldn't find it."
    for event in events[7:]:
        state.add(event)
    assert state.text == "Jamie lost her key. She couldn't find it."
    assert state.order == [2, 1]
    words = [state.text[s.start : s.end] for s in state.spans]
    assert words == ["Jamie", "lost", "her", "key", ".", "She", "could", "n't", "find", "it", "."]


class StoryEngine(Engine):
    """The real engine with only the bundled story model."""

    def list_bundles(self, extra: Iterable[Path] = ()) -> list[BundleInfo]:
        return [b for b in super().list_bundles(extra) if Path(b.path) == STORY_BUNDLE]


def test_a_real_story_pane_is_byte_for_byte_what_insert_and_copy_give(make_window: MakeWindow,
                                                                      qtbot: QtBot) -> None:
    window = make_window(StoryEngine([RESOURCES_MODELS]))
    window.controls.mode.set_mode("story")
    window.controls.mode.title_edit.setText("The lost key")
    window.controls.mode.sentences.setValue(3)
    window.controls.decode.set_values({"n": 2, "seed_fixed": True, "seed": 5, "max_new_tokens": 15})
    shown: list[str] = []
    window.generator.tokens.connect(lambda _: shown.append(window.variants.panes[0].text.toPlainText()))
    assert window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=60_000)
    assert shown and all("[" not in text and text[:1] == text[:1].upper() for text in shown)
    for pane in window.variants.panes:
        assert pane.state.text and pane.text.toPlainText() == pane.state.text
        assert " ." not in pane.state.text and " n't" not in pane.state.text
        for span in pane.state.spans:  # every token's span holds that token's characters
            assert pane.state.text[span.start : span.end].strip()
    pane = window.variants.panes[1]
    pane.buttons["copy"].click()
    assert QGuiApplication.clipboard().text() == pane.text.toPlainText()
    pane.buttons["insert"].click()
    assert window.tabs.current().toPlainText() == pane.text.toPlainText()
