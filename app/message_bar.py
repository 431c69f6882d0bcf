"""A bar at the top of the window for errors, notices and offers (e.g. recovering unsaved work).

Messages never block the window (no modal dialogs), so the app keeps running and tests can read them.
Text is shown as plain text: messages quote file names and document titles, which may look like HTML.
Given a parent, the bar floats over the parent's top edge instead of taking a place in its layout, so
showing or dismissing a message never moves the controls under the writer's pointer.
Each kind sets its text colour on the label itself: a style sheet's colour is not inherited by child
widgets, so the label would keep the theme's text colour (light in the dark theme, on a light background).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

STYLES = {  # kind: (background, text, border)
    "error": ("#fdecea", "#611a15", "#f5c6cb"),
    "info": ("#e8f4fd", "#0c3c60", "#b8daff"),
    "offer": ("#fff8e1", "#5d4200", "#ffe08a"),
}


class MessageBar(QFrame):
    """Shows one message at a time with optional action buttons and a close button."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel(wordWrap=True, textFormat=Qt.TextFormat.PlainText)
        self.label.setAccessibleName("Message")
        self.kind = ""
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(8, 4, 8, 4)
        self._layout.addWidget(self.label, 1)
        self._buttons: list[QPushButton] = []
        self.setAutoFillBackground(True)
        if parent is not None:
            parent.installEventFilter(self)  # follow the parent's width
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
            self._layout.addWidget(button)
            self._buttons.append(button)
        self.show()
        self.raise_()
        self._place()

    def _place(self) -> None:
        """Span the parent's top edge, as tall as the message needs."""
        parent = self.parentWidget()
        if parent is not None:
            width = parent.width()
            layout = self._layout
            height = layout.totalHeightForWidth(width) if layout.hasHeightForWidth() else self.sizeHint().height()
            self.setGeometry(0, 0, width, max(height, self.minimumSizeHint().height()))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize and self.isVisible():
            self._place()
        return False

    def dismiss(self) -> None:
        self.kind = ""
        self.label.setText("")
        self.hide()

    def button(self, label: str) -> QPushButton:
        return next(b for b in self._buttons if b.text() == label)
