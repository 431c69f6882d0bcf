"""One variant's pane: its text as Insert will put it in, how it ended, and Insert/Replace/Copy/Regenerate/Pin."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QMouseEvent, QResizeEvent, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QTextEdit,
    QToolButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from app.variants.colouring import LABEL_TEXT, background_for
from app.variants.endings import (
    ending_details,
    ending_words,
    is_empty_result,
    likelihood_words,
    sentences_kept,
    settings_words,
    twins_note,
    unchanged_note,
)
from app.variants.flow import FlowLayout
from app.variants.spans import TokenSpan
from app.variants.state import VariantState

EMPTY_RESULT = "The model ended at once, before writing a word. Press Regenerate to try another."
MIN_TEXT_LINES = 3  # an empty or short pane still reads as a place where text will appear


class VariantPane(QFrame):
    """Shows one VariantState; emits requests the panel turns into editor actions.

    The header is one short line (number, how the variant ended, the pin); seed, likelihood and settings are
    in its tooltip, in words. Under it, at the pane's full width, a note says when a paraphrase kept the
    writer's wording (and offers another try) and which variants are nearly the same as this one. The text
    grows with its content: the panel scrolls, a pane never does."""

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
        self._shown = ""  # the text the text box shows (it may lag the state by one drain)
        self.header = QLabel(wordWrap=True)  # one short line; wraps rather than widen a narrow column
        self.note = QLabel(wordWrap=True)  # kept wording and near-twins, said under the header at its full width
        self.note.setAccessibleName("Variant note")
        self.again = QToolButton()
        self.again.setText("Try again")
        self.again.setToolTip("Write this variant again with a new seed, for another wording.")
        self.again.clicked.connect(lambda: self.regenerate_requested.emit(self))
        self.text = QTextEdit(readOnly=True, acceptRichText=False)
        self.text.setAccessibleName("variant text")
        self.text.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.text.setPlaceholderText("Writing…")
        self.text.viewport().setMouseTracking(True)
        self.text.viewport().installEventFilter(self)
        self.text.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self.buttons: dict[str, QToolButton] = {}
        row = FlowLayout()  # wraps the buttons in a narrow column
        row.addWidget(self.again)  # first, where the eye lands after the note
        for key, label, tip in (
            ("insert", "Insert", "Insert this variant at the cursor in the document (one undo step)."),
            ("replace", "Replace", "Replace the document's selection with this variant."),
            ("copy", "Copy", "Copy this variant to the clipboard."),
            ("regenerate", "Regenerate", "Write this one variant again with a new seed and the current settings."),
        ):
            row.addWidget(self._button(key, label, tip))
        pin = self._button("pin", "Pin", "Keep this variant on screen when you generate again, to compare "
                                         "alternatives.")
        pin.setCheckable(True)
        self.buttons["insert"].clicked.connect(lambda: self.insert_requested.emit(self.state.text))
        self.buttons["replace"].clicked.connect(lambda: self.replace_requested.emit(self.state.text))
        self.buttons["copy"].clicked.connect(self.copy)
        self.buttons["regenerate"].clicked.connect(lambda: self.regenerate_requested.emit(self))
        pin.toggled.connect(self._on_pin)
        top = QHBoxLayout()
        top.addWidget(self.header, 1)
        top.addWidget(pin)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.note)
        layout.addWidget(self.text)
        layout.addLayout(row)
        layout.addStretch(1)  # a pane taller than its content (its row-mate is longer) keeps it at the top
        self._busy = False
        self.set_number(number)
        self._fit_height()

    def _button(self, key: str, label: str, tip: str) -> QToolButton:
        button = QToolButton()
        button.setText(label)
        button.setToolTip(tip)
        button.setAccessibleName(f"{label} variant")
        self.buttons[key] = button
        return button

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
        self._shown = self.state.text
        self.text.setPlainText(self.state.text)
        self.buttons["pin"].setChecked(self.state.pinned)
        self.refresh_header()

    def show_text(self) -> None:
        """Show the state's text: append what streamed on, or rewrite it when earlier text changed (a story
        shows its sentences in reading order, so a new sentence may land before the last one)."""
        text = self.state.text
        if text == self._shown:
            return
        if text.startswith(self._shown):
            cursor = self.text.textCursor()
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertText(text[len(self._shown):])
        else:
            self.text.setPlainText(text)
        self._shown = text

    def _fit_height(self) -> None:
        """As tall as the text (at least a few lines), so the pane needs no scrollbar of its own."""
        document = self.text.document()
        document.setTextWidth(self.text.viewport().width())
        lines = self.text.fontMetrics().lineSpacing() * MIN_TEXT_LINES
        height = max(int(document.size().height()), lines) + 2 * self.text.frameWidth() + 4
        if height != self.text.height():
            self.text.setFixedHeight(height)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_height()

    def refresh_header(self) -> None:
        s = self.state
        self.header.setText(f"<b>{self.number}</b> · {ending_words(s)}")
        self.header.setToolTip(self.details())
        kept, total = sentences_kept(s)
        notes = [note for note in (unchanged_note(s), twins_note(self.near_identical)) if note]
        self.note.setText("\n".join(notes))
        self.note.setVisible(bool(notes))
        self.again.setVisible(bool(kept) and kept == total)
        self.text.setPlaceholderText(EMPTY_RESULT if is_empty_result(s) else "" if s.finish_reason else "Writing…")
        self._sync_buttons()

    def details(self) -> str:
        """The header's tooltip: how the variant ended and what it was written with, in a writer's words."""
        s = self.state
        lines = [f"How it ended: {ending_details(s.finish_reason)}." if s.finish_reason else "Still being written.",
                 likelihood_words(s)]
        if s.seed is not None:
            lines.append(f"Seed: {s.seed} (where its random choices started).")
        if len(s.order) > 1:
            lines.append("Sentences written in the order " + " → ".join(map(str, s.order)) +
                         "; shown in reading order.")
        if self.near_identical:
            lines.append("≈: nearly the same words as variant(s) " + ", ".join(map(str, self.near_identical)))
        written_with = settings_words(s.settings)
        if written_with:
            lines.append(f"Written with: {written_with}.")
        return "\n".join(lines)

    def set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._sync_buttons()

    def _sync_buttons(self) -> None:
        """Nothing to insert or copy from an empty pane; nothing to do while it is being written."""
        has_text = bool(self.state.text.strip())
        for key in ("insert", "replace"):
            self.buttons[key].setEnabled(has_text and not self._busy)
        self.buttons["copy"].setEnabled(has_text)
        self.buttons["regenerate"].setEnabled(not self._busy)
        self.again.setEnabled(not self._busy)

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
            fmt.setBackground(QColor(background_for(label)))
            fmt.setForeground(QColor(LABEL_TEXT))
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

