"""Editor behaviour: Insert/Replace are single undo steps, files, recent list, word count, find, shortcuts."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from pytestqt.qtbot import QtBot

from tests.app.conftest import MakeWindow


def _generate(window, qtbot: QtBot) -> None:  # type: ignore[no-untyped-def]
    window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)


def test_insert_variant_is_one_undo_step(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    editor = window.tabs.current()
    qtbot.keyClicks(editor, "Dear diary")
    _generate(window, qtbot)
    variant = window.variants.panes[0].state.text
    assert len(variant) > 10
    window.variants.panes[0].buttons["insert"].click()
    assert editor.toPlainText() == "Dear diary" + variant
    editor.undo()  # one undo removes the whole variant, not one character or word
    assert editor.toPlainText() == "Dear diary"
    editor.redo()
    assert editor.toPlainText() == "Dear diary" + variant


def test_replace_selection_is_one_undo_step_and_needs_a_selection(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    editor = window.tabs.current()
    editor.setPlainText("one two three")
    _generate(window, qtbot)
    variant = window.variants.panes[1].state.text
    window.variants.panes[1].buttons["replace"].click()
    assert window.messages.kind == "error" and "Select the text" in window.messages.label.text()
    assert editor.toPlainText() == "one two three"
    cursor = editor.textCursor()
    cursor.setPosition(4)
    cursor.setPosition(7, QTextCursor.MoveMode.KeepAnchor)
    editor.setTextCursor(cursor)
    window.variants.panes[1].buttons["replace"].click()
    assert editor.toPlainText() == "one " + variant.lstrip() + " three"  # the text's own space separates
    editor.undo()
    assert editor.toPlainText() == "one two three"


def test_ctrl_number_inserts_that_variant(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    _generate(window, qtbot)
    editor = window.tabs.current()
    editor.setFocus()
    qtbot.keyClick(editor, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
    assert editor.toPlainText() == window.variants.panes[1].state.text.lstrip()  # no space at the very start


def test_ctrl_enter_generates(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    editor = window.tabs.current()
    editor.setFocus()
    with qtbot.waitSignal(window.generator.finished, timeout=5000):
        qtbot.keyClick(editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert window.variants.panes and window.variants.panes[0].state.text


def test_continue_uses_text_before_cursor(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    editor = window.tabs.current()
    editor.setPlainText("Before the cursor. After it.")
    cursor = editor.textCursor()
    cursor.setPosition(len("Before the cursor."))
    editor.setTextCursor(cursor)
    _generate(window, qtbot)
    assert window.engine.model.requests[-1].prompt == "Before the cursor."  # type: ignore[attr-defined]


def test_save_open_recent_and_word_count(make_window: MakeWindow, qtbot: QtBot, tmp_path: Path) -> None:
    window = make_window()
    editor = window.tabs.current()
    editor.setPlainText("It was a dark and stormy night.")
    target = tmp_path / "draft.md"
    assert window.save_current(target)
    assert target.read_text() == "It was a dark and stormy night."
    assert not editor.modified and window.tabs.tabText(0) == "draft.md"
    assert window.settings.recent_files[0] == str(target.resolve())
    qtbot.waitUntil(lambda: window.words_label.text() == "7 words", timeout=2000)
    other = tmp_path / "notes.txt"
    other.write_text("alpha beta\ngamma")
    opened = window.open_path(other)
    assert opened is not None and opened.toPlainText() == "alpha beta\ngamma" and opened.word_count() == 3
    assert window.open_path(tmp_path / "image.png") is None
    assert "only plain text" in window.messages.label.text()
    assert window.open_path(tmp_path / "missing.txt") is None
    assert "Could not open" in window.messages.label.text()


def test_find_wraps_around(make_window: MakeWindow) -> None:
    window = make_window()
    editor = window.tabs.current()
    editor.setPlainText("cat dog cat")
    assert editor.find_text("cat") and editor.textCursor().selectionStart() == 0
    assert editor.find_text("cat") and editor.textCursor().selectionStart() == 8
    assert editor.find_text("cat") and editor.textCursor().selectionStart() == 0  # wrapped
    assert not editor.find_text("bird")
    window.find_bar.open()
    window.find_bar.field.setText("dog")
    assert editor.selection_text() == "dog"
