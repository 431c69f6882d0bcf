"""One variant's pane: streamed text, its seed/settings/log-prob, and Insert/Replace/Copy/Regenerate/Pin."""

from __future__ import annotations

import json

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtGui import QColor, QGuiApplication, QMouseEvent, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QPlainTextEdit,
    QToolButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from app.variants.colouring import colour_for
from app.variants.flow import FlowLayout
from app.variants.state import TokenSpan, VariantState

FINISH_WORDS = {"eos": "finished", "length": "length limit", "cancelled": "stopped", "loop": "stopped repeating itself",
                "": "writing…"}


class VariantPane(QFrame):
    """Shows one VariantState; emits requests the panel turns into editor actions."""

    insert_requested = Signal(str)
    replace_requested = Signal(str)
    regenerate_requested = Signal(object)  # this pane
    pin_toggled = Signal(object)

    def __init__(self, number: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.state = VariantState()
        self.labels: list[str] = []  # class label per span ("" = uncoloured)
        self.near_identical: list[int] = []  # numbers of the panes whose text is nearly the same
        self.header = QLabel(wordWrap=True)  # wraps rather than widening the pane past its column
        self.text = QPlainTextEdit(readOnly=True)
        self.text.setAccessibleName("variant text")
        self.text.setMinimumHeight(110)
        self.text.viewport().setMouseTracking(True)
        self.text.viewport().installEventFilter(self)
        self.buttons: dict[str, QToolButton] = {}
        row = FlowLayout()  # wraps the buttons in a narrow column
        for key, label, tip in (
            ("insert", "Insert", "Insert this variant at the cursor in the document (one undo step)."),
            ("replace", "Replace", "Replace the document's selection with this variant."),
            ("copy", "Copy", "Copy this variant to the clipboard."),
            ("regenerate", "Regenerate", "Write this one variant again with a new seed and the current settings."),
            ("pin", "Pin", "Keep this variant on screen when you generate again, to compare alternatives."),
        ):
            button = QToolButton()
            button.setText(label)
            button.setToolTip(tip)
            button.setAccessibleName(f"{label} variant")
            row.addWidget(button)
            self.buttons[key] = button
        self.buttons["pin"].setCheckable(True)
        self.buttons["insert"].clicked.connect(lambda: self.insert_requested.emit(self.state.text))
        self.buttons["replace"].clicked.connect(lambda: self.replace_requested.emit(self.state.text))
        self.buttons["copy"].clicked.connect(self.copy)
        self.buttons["regenerate"].clicked.connect(lambda: self.regenerate_requested.emit(self))
        self.buttons["pin"].toggled.connect(self._on_pin)
        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addWidget(self.text, 1)
        layout.addLayout(row)
        self.set_number(number)

    def set_number(self, number: int) -> None:
        self.number = number
        self.setAccessibleName(f"Variant {number}")
        self.refresh_header()

    def reset(self, state: VariantState | None = None) -> None:
        """Clear for a new generation, or show a stored state (history)."""
        pinned = self.state.pinned
        self.state = state if state is not None else VariantState(pinned=pinned)
        self.labels = []
        self.near_identical = []
        self.text.setPlainText(self.state.text)
        self.buttons["pin"].setChecked(self.state.pinned)
        self.refresh_header()

    def append(self, delta: str) -> None:
        if delta:
            cursor = self.text.textCursor()
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertText(delta)

    def refresh_header(self) -> None:
        s = self.state
        seed = "–" if s.seed is None else str(s.seed)
        status = FINISH_WORDS.get(s.finish_reason, s.finish_reason)
        pin = " · pinned" if s.pinned else ""
        twins = ", ".join(map(str, self.near_identical))
        flag = f" · <b>≈ {twins}</b> (nearly the same)" if twins else ""
        self.header.setText(f"<b>{self.number}</b> · seed {seed} · log p {s.log_prob:.1f} · "
                            f"{s.tokens} tokens · {status}{pin}{flag}")
        self.header.setToolTip("Settings used:\n" + json.dumps(s.settings, indent=1) if s.settings else "")

    def set_busy(self, busy: bool) -> None:
        for key in ("insert", "replace", "regenerate"):
            self.buttons[key].setEnabled(not busy)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.state.text)

    def _on_pin(self, checked: bool) -> None:
        self.state.pinned = checked
        self.refresh_header()
        self.pin_toggled.emit(self)

    def apply_colours(self, labels: list[str]) -> None:
        """Colour span i by labels[i] ("" leaves it plain); an empty list removes all colours."""
        self.labels = labels
        cursor = QTextCursor(self.text.document())
        cursor.select(QTextCursor.SelectionType.Document)
        cursor.setCharFormat(QTextCharFormat())
        for span, label in zip(self.state.spans, labels, strict=False):
            if not label:
                continue
            fmt = QTextCharFormat()
            fmt.setBackground(QColor(colour_for(label)).lighter(150))
            fmt.setForeground(QColor("#111111"))
            cursor.setPosition(span.start)
            cursor.setPosition(min(span.end, len(self.state.text)), QTextCursor.MoveMode.KeepAnchor)
            cursor.setCharFormat(fmt)

    def tooltip_at(self, position: int) -> str:
        span = self.state.span_at(position)
        if span is None:
            return ""
        return describe_span(self.state.text, span, self._label_of(span))

    def _label_of(self, span: TokenSpan) -> str:
        index = self.state.spans.index(span)
        return self.labels[index] if index < len(self.labels) else ""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.MouseMove and isinstance(event, QMouseEvent):
            position = self.text.cursorForPosition(event.position().toPoint()).position()
            tip = self.tooltip_at(position)
            if tip:
                QToolTip.showText(event.globalPosition().toPoint(), tip, self.text)
            else:
                QToolTip.hideText()
        return super().eventFilter(watched, event)


def describe_span(text: str, span: TokenSpan, label: str) -> str:
    """Hover text: the token, its class/tag (when colouring) and the model's probability."""
    piece = text[span.start : span.end].replace("\n", "⏎")
    parts = [f"“{piece}”"]
    if label:
        parts.append(label)
    parts.append(f"p = {span.probability:.3g}")
    if len(span.token_ids) > 1:
        parts.append(f"{len(span.token_ids)} tokens")
    return " · ".join(parts)

