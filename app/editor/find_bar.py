"""A find bar under the editor: type to search, Enter for next, Shift+Enter for previous, Esc to close."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QWidget

from app.editor.document import DocumentEditor


class FindBar(QWidget):
    """Searches the current document; `editor_getter` returns it (None when no document is open)."""

    def __init__(self, editor_getter: Callable[[], DocumentEditor | None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._editor = editor_getter
        self.field = QLineEdit(placeholderText="Find in document")
        self.field.setAccessibleName("Find text")
        self.case = QCheckBox("Match case")
        self.status = QLabel()
        previous = QPushButton("Previous")
        following = QPushButton("Next")
        close = QPushButton("Close")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        for widget in (QLabel("Find:"), self.field, self.case, previous, following, self.status, close):
            layout.addWidget(widget)
        self.field.returnPressed.connect(lambda: self.search(False))
        self.field.textChanged.connect(lambda _: self.search(False, from_start=True))
        previous.clicked.connect(lambda: self.search(True))
        following.clicked.connect(lambda: self.search(False))
        close.clicked.connect(self.hide)
        self.hide()

    def open(self) -> None:
        self.show()
        editor = self._editor()
        if editor and editor.textCursor().hasSelection():
            self.field.setText(editor.selection_text())
        self.field.setFocus()
        self.field.selectAll()

    def search(self, backward: bool, from_start: bool = False) -> bool:
        """Select the next (or previous) match; named search, not find, which would hide QWidget.find()."""
        editor = self._editor()
        if editor is None:
            return False
        if from_start:
            cursor = editor.textCursor()
            cursor.setPosition(cursor.selectionStart())
            editor.setTextCursor(cursor)
        found = editor.find_text(self.field.text(), backward, self.case.isChecked())
        self.status.setText("" if found or not self.field.text() else "not found")
        return found

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.hide()
            editor = self._editor()
            if editor:
                editor.setFocus()
            return
        shift = event.modifiers() & Qt.KeyboardModifier.ShiftModifier
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and shift:
            self.search(True)
            return
        super().keyPressEvent(event)
