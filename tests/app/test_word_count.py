"""The word count follows every edit paragraph by paragraph (a long document is not recounted whole after each
pause in typing) and always equals a count of the whole text."""

from __future__ import annotations

import random

import pytest
from PySide6.QtGui import QTextCursor
from pytestqt.qtbot import QtBot

from app.editor.document import WORD, DocumentEditor, paragraph_words


def whole_count(editor: DocumentEditor) -> int:
    return len(WORD.findall(editor.toPlainText()))


def test_random_edits_undo_and_redo_keep_the_count_exact(qtbot: QtBot) -> None:
    editor = DocumentEditor()
    qtbot.addWidget(editor)
    editor.load_text("One two.\r\nthree\rfour\ufdd0five six\n", "utf-8")
    rng = random.Random(7)
    pieces = ["word ", "two words", "\n", "\n\nnew para ", "don't", " -- ", "", "é\u2029x"]
    for step in range(400):
        cursor = editor.textCursor()
        length = len(editor.toPlainText())
        cursor.setPosition(rng.randint(0, length))
        cursor.setPosition(rng.randint(0, length), QTextCursor.MoveMode.KeepAnchor)
        editor.setTextCursor(cursor)
        action = rng.random()
        if action < 0.6:
            editor.insert_variant(rng.choice(pieces))
        elif action < 0.75:
            editor.textCursor().removeSelectedText()
        elif action < 0.9:
            editor.undo()
        else:
            editor.redo()
        assert editor.word_count() == whole_count(editor), step


def test_counts_given_with_the_text_are_used_and_checked(qtbot: QtBot) -> None:
    editor = DocumentEditor()
    qtbot.addWidget(editor)
    text = "a b\nc\r\nd e f"
    editor.load_text(text, "utf-8", paragraph_words(text))
    assert editor.word_count() == 6
    editor.load_text(text, "utf-8", [1])  # counts of another text: counted again
    assert editor.word_count() == 6


def test_paragraph_words_counted_in_pieces_match_the_editors_paragraphs(qtbot: QtBot,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.editor.document.COUNT_PIECE", 3)
    text = "one two\r\nthree\rfour five\ufdd0six\n\nseven eight nine\r\n\r\nten\r" * 3
    editor = DocumentEditor()
    qtbot.addWidget(editor)
    editor.setPlainText(text)
    paragraphs = editor.document().toRawText().split("\u2029")
    assert paragraph_words(text) == [len(WORD.findall(p)) for p in paragraphs]
    assert paragraph_words("") == [0] and paragraph_words("a\n") == [1, 0]
