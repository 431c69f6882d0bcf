"""History without friction: every batch has its own label, Generate shows the new variants, and a story's
title, keywords and sentence order are kept with its batch so "Use its settings" brings them back."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from tests.app.conftest import MakeWindow
from tests.app.fakes import FakeEngine, FakeModel, writes


def _generate(window, qtbot: QtBot) -> None:  # type: ignore[no-untyped-def]
    assert window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)


def test_repeated_batches_have_their_own_labels(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    _generate(window, qtbot)
    _generate(window, qtbot)
    labels = [window.history_list.item(i).text() for i in range(window.history_list.count())]
    assert len(labels) == 2 and len(set(labels)) == 2


def test_generate_switches_from_history_to_the_variants(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    window.side_tabs.setCurrentIndex(1)  # the writer was looking at the history
    _generate(window, qtbot)
    assert window.side_tabs.currentWidget() is window.variants


def test_a_storys_plan_is_kept_with_its_batch_and_brought_back(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window(FakeEngine(FakeModel(writes("continue", "story"))))
    mode = window.controls.mode
    mode.set_mode("story")
    mode.title_edit.setText("The lost key")
    mode.keywords.setText("key, door")
    mode.sentences.setValue(4)
    mode.order.setCurrentIndex(mode.order.findData("full"))
    mode.full.setText("2, 1, 3, 4")
    _generate(window, qtbot)
    mode.title_edit.setText("Another story")
    mode.keywords.setText("")
    mode.order.setCurrentIndex(mode.order.findData("model"))
    mode.set_mode("continue")
    window.use_batch_settings(0)
    assert mode.mode() == "story" and mode.title_edit.text() == "The lost key" and mode.keywords.text() == "key, door"
    assert mode.sentences.value() == 4 and mode.order.currentData() == "full" and mode.full.text() == "2, 1, 3, 4"
    assert window.tabs.current().history.batches[0].settings["inputs"]["title"] == "The lost key"
