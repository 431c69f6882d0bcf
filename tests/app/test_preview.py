"""Choosing variants in place (Alt+] / Alt+[, Enter, Esc) and how an inserted variant joins the text."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from app.variants.state import VariantState
from tests.app.conftest import MakeWindow

ALT = Qt.KeyboardModifier.AltModifier
VARIANTS = [" She bought flour.", " He forgot the yeast.", "\nThe end."]


def _window_with_variants(make_window: MakeWindow, qtbot: QtBot, typed: str):  # type: ignore[no-untyped-def]
    window = make_window()
    window.variants.show_states([VariantState(text=t) for t in VARIANTS])
    editor = window.tabs.current()
    window.activateWindow()
    editor.setFocus()
    QTest.keyClicks(editor, typed)
    return window, editor


def test_alt_brackets_cycle_variants_in_place_and_esc_restores(make_window: MakeWindow, qtbot: QtBot) -> None:
    window, editor = _window_with_variants(make_window, qtbot, "Jo went to the store. ")
    QTest.keyClick(editor, Qt.Key.Key_BracketRight, ALT)
    assert editor.toPlainText() == "Jo went to the store. She bought flour."
    assert window.preview.active and len(editor.extraSelections()) == 1
    QTest.keyClick(editor, Qt.Key.Key_BracketRight, ALT)
    assert editor.toPlainText() == "Jo went to the store. He forgot the yeast."
    QTest.keyClick(editor, Qt.Key.Key_BracketLeft, ALT)
    QTest.keyClick(editor, Qt.Key.Key_BracketLeft, ALT)  # wraps round to the last
    assert editor.toPlainText() == "Jo went to the store. The end."
    QTest.keyClick(editor, Qt.Key.Key_Escape)
    assert editor.toPlainText() == "Jo went to the store. " and not window.preview.active
    assert editor.extraSelections() == []


def test_enter_keeps_the_variant_as_one_undo_step(make_window: MakeWindow, qtbot: QtBot) -> None:
    window, editor = _window_with_variants(make_window, qtbot, "Jo went to the store.")
    QTest.keyClick(editor, Qt.Key.Key_BracketRight, ALT)
    QTest.keyClick(editor, Qt.Key.Key_BracketRight, ALT)
    QTest.keyClick(editor, Qt.Key.Key_Return)
    assert editor.toPlainText() == "Jo went to the store. He forgot the yeast." and not window.preview.active
    editor.undo()
    assert editor.toPlainText() == "Jo went to the store."


def test_typing_during_a_preview_puts_the_text_back_first(make_window: MakeWindow, qtbot: QtBot) -> None:
    window, editor = _window_with_variants(make_window, qtbot, "Jo went home")
    QTest.keyClick(editor, Qt.Key.Key_BracketRight, ALT)
    assert editor.toPlainText() == "Jo went home She bought flour."
    QTest.keyClicks(editor, "!")
    assert editor.toPlainText() == "Jo went home!" and not window.preview.active


def test_insert_puts_one_separator_between_text_and_variant(make_window: MakeWindow, qtbot: QtBot) -> None:
    window, editor = _window_with_variants(make_window, qtbot, "Jo went to the store. ")
    window.variants.panes[0].buttons["insert"].click()
    assert editor.toPlainText() == "Jo went to the store. She bought flour."
    editor.setPlainText("Jo went to the store.")
    editor.moveCursor(QTextCursor.MoveOperation.End)
    window.insert_variant(1)
    assert editor.toPlainText() == "Jo went to the store. She bought flour."
