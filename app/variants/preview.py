"""Choosing a variant in place: Alt+] / Alt+[ put the variants one at a time into the document at the
cursor (highlighted), Enter keeps the one shown, Esc puts the text back as it was.

The preview is real document text inside one undo step (the first insertion opens it; each further one
joins it), so keeping it is exactly one undo step like Insert, and leaving undoes it. Any other key or
a click leaves the preview before it acts, so nothing the writer types lands inside a preview.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QColor, QKeyEvent, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit

from engine.prompt_join import fit_after

PREVIEW_BACKGROUND = "#fff1b8"  # with dark text, readable in both themes
PREVIEW_TEXT = "#1a1a1a"
CYCLE_KEYS = (Qt.Key.Key_BracketRight, Qt.Key.Key_BracketLeft)
KEEP_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)
MODIFIER_KEYS = (Qt.Key.Key_Alt, Qt.Key.Key_Shift, Qt.Key.Key_Control, Qt.Key.Key_Meta, Qt.Key.Key_AltGr)
HINT = "Alt+] next · Alt+[ previous · Enter keep · Esc leave"


def text_before_selection(editor: QPlainTextEdit) -> str:
    """The document's text before the cursor's selection (what an inserted variant will follow)."""
    return editor.toPlainText()[: editor.textCursor().selectionStart()]


def qt_length(text: str) -> int:
    """Length in Qt's document positions (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


class InlinePreview(QObject):
    """Shows `texts()` (the variants panel's texts) one at a time in an editor; see the module docstring."""

    message = Signal(str)  # for the status bar

    def __init__(self, texts: Callable[[], list[str]], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._texts = texts
        self.editor: QPlainTextEdit | None = None  # the editor showing a preview; None when none is shown
        self.index = 0  # which of the texts is shown
        self._start = 0  # where the preview starts in the document
        self._length = 0  # its length in document positions
        self._before = ""  # the document text before it

    @property
    def active(self) -> bool:
        return self.editor is not None

    def cycle(self, editor: QPlainTextEdit, step: int) -> bool:
        """Show the next (step 1) or previous (step -1) variant at the cursor; False when there is none."""
        texts = [t for t in self._texts() if t.strip()]
        if self.editor is not None and self.editor is not editor:
            self.leave()
        if not texts:
            self.leave()
            return False
        if self.editor is None:
            cursor = editor.textCursor()
            self._start, self._before = cursor.selectionStart(), text_before_selection(editor)
            self.index = 0 if step > 0 else len(texts) - 1
            cursor.beginEditBlock()  # replaces any selection; undone by leave()
            self.editor = editor
            editor.installEventFilter(self)
            editor.viewport().installEventFilter(self)
        else:
            self.index = (self.index + step) % len(texts)
            cursor = self._range(editor)
            cursor.joinPreviousEditBlock()
        text = fit_after(self._before, texts[self.index])
        cursor.insertText(text)
        cursor.endEditBlock()
        self._length = qt_length(text)
        editor.setTextCursor(cursor)
        self._highlight(editor)
        self.message.emit(f"Variant {self.index + 1} of {len(texts)} in place · {HINT}")
        return True

    def keep(self) -> None:
        """Leave the shown variant in the document (one undo step)."""
        editor = self._end()
        if editor is not None:
            self.message.emit(f"Kept variant {self.index + 1}.")

    def leave(self) -> None:
        """Put the document back as it was before the preview."""
        editor = self._end()
        if editor is not None:
            editor.undo()
            self.message.emit("Preview closed; your text is as it was.")

    def _end(self) -> QPlainTextEdit | None:
        editor, self.editor = self.editor, None
        if editor is not None:
            editor.removeEventFilter(self)
            editor.viewport().removeEventFilter(self)
            editor.setExtraSelections([])
        return editor

    def _range(self, editor: QPlainTextEdit) -> QTextCursor:
        cursor = QTextCursor(editor.document())
        cursor.setPosition(self._start)
        cursor.setPosition(self._start + self._length, QTextCursor.MoveMode.KeepAnchor)
        return cursor

    def _highlight(self, editor: QPlainTextEdit) -> None:
        selection = QTextEdit.ExtraSelection()
        selection.cursor = self._range(editor)
        selection.format.setBackground(QColor(PREVIEW_BACKGROUND))
        selection.format.setForeground(QColor(PREVIEW_TEXT))
        editor.setExtraSelections([selection])

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.MouseButtonPress:
            self.leave()
        elif kind in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress) and isinstance(event, QKeyEvent):
            return self._on_key(event, kind == QEvent.Type.KeyPress)
        return False

    def _on_key(self, event: QKeyEvent, press: bool) -> bool:
        key = event.key()
        alt = bool(event.modifiers() & Qt.KeyboardModifier.AltModifier)
        if key in MODIFIER_KEYS or (alt and key in CYCLE_KEYS):
            return False  # Alt+] / Alt+[ reach the window's actions, which call cycle()
        if key in (*KEEP_KEYS, Qt.Key.Key_Escape) and not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier:
            event.accept()  # ours, not the window's Esc (Stop) shortcut nor a new line
            if press and key in KEEP_KEYS:
                self.keep()
            elif press:
                self.leave()
            return True
        self.leave()  # anything else: the text goes back first, then the key does what it always does
        return False
