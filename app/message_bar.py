"""A bar for errors, notices and offers (e.g. recovering unsaved work), under the document.

Messages never block the window (no modal dialogs), so the app keeps running and tests can read them.
Text is shown as plain text: messages quote file names and document titles, which may look like HTML.
The window keeps the bar in its editor column, under the document (app/main_window.py): showing or
dismissing a message only shortens or lengthens the document's text area, so it never covers a tab nor
moves a control, and a click meant for a tab always lands on the tab.
Each kind sets its text colour on the label itself: a style sheet's colour is not inherited by child
widgets, so the label would keep the theme's text colour (light in the dark theme, on a light background).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

STYLES = {  # kind: (background, text, border)
    "error": ("#fdecea", "#611a15", "#f5c6cb"),
    "info": ("#e8f4fd", "#0c3c60", "#b8daff"),
    "offer": ("#fff8e1", "#5d4200", "#ffe08a"),
}


class MessageBar(QFrame):
    """Shows one message at a time, with optional action buttons and a Dismiss button under it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel(wordWrap=True, textFormat=Qt.TextFormat.PlainText)
        self.label.setAccessibleName("Message")
        self.kind = ""
        self._row = QHBoxLayout()  # the buttons, right-aligned under the text: the column may be narrow
        self._row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.label)
        layout.addLayout(self._row)
        self._buttons: list[QPushButton] = []
        self.setAutoFillBackground(True)
        self.hide()

    def show_message(self, text: str, kind: str = "info", actions: list[tuple[str, Callable[[], object]]] | None = None,
                     details: str = "") -> None:
        """Show `text` (plain words); `details` (technical) is the message's tooltip."""
        for button in self._buttons:
            button.deleteLater()
        self._buttons = []
        self.kind = kind
        self.label.setText(text)
        self.label.setToolTip(details)
        background, text_colour, border = STYLES.get(kind, STYLES["info"])
        self.setStyleSheet(f"MessageBar {{ background: {background}; border: 1px solid {border}; }} "
                           f"MessageBar QLabel {{ color: {text_colour}; background: transparent; }}")
        for label, callback in [*(actions or []), ("Dismiss", self.dismiss)]:
            button = QPushButton(label)
            button.clicked.connect(callback)
            self._row.addWidget(button)
            self._buttons.append(button)
        self.show()

    def dismiss(self) -> None:
        self.kind = ""
        self.label.setText("")
        self.hide()

    def button(self, label: str) -> QPushButton:
        return next(b for b in self._buttons if b.text() == label)
