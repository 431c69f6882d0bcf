"""A spin box for seeds across the whole engine range (0 … MAX_SEED, 63 bits), which QSpinBox (32-bit) cannot hold."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import QAbstractSpinBox, QWidget

from engine.decode_fields import MAX_SEED

SHOWN_DIGITS = 10


def _parse(text: str) -> int | None:
    """The seed a text spells, or None when it is not a whole number in range."""
    text = text.strip()
    if not (text.isascii() and text.isdigit()):
        return None
    number = int(text)
    return number if number <= MAX_SEED else None


class SeedBox(QAbstractSpinBox):
    """Type or step a seed; `valueChanged(int)` fires on every change, typed digits included."""

    valueChanged = Signal(object)  # a Python int: a C++ int signal would cut 63-bit seeds

    def __init__(self, value: int = 0, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._value = value
        self.lineEdit().setText(str(value))
        self.lineEdit().textEdited.connect(self._on_edited)
        self.editingFinished.connect(lambda: self.lineEdit().setText(str(self._value)))
        # wide enough for most of a 19-digit seed; the rest scrolls into view (the column must fit 1280×800)
        self.setMinimumWidth(self.fontMetrics().horizontalAdvance("9" * SHOWN_DIGITS) + 30)

    def value(self) -> int:
        return self._value

    def setValue(self, value: int) -> None:  # Qt naming, like QSpinBox.setValue
        value = min(max(int(value), 0), MAX_SEED)
        self.lineEdit().setText(str(value))
        self._store(value)

    def _store(self, value: int) -> None:
        if value != self._value:
            self._value = value
            self.valueChanged.emit(value)

    def _on_edited(self, text: str) -> None:
        parsed = _parse(text)
        if parsed is not None:
            self._store(parsed)

    def validate(self, text: str, pos: int) -> tuple[QValidator.State, str, int]:
        if not text.strip():
            return QValidator.State.Intermediate, text, pos
        state = QValidator.State.Acceptable if _parse(text) is not None else QValidator.State.Invalid
        return state, text, pos

    def stepBy(self, steps: int) -> None:
        self.setValue(self._value + steps)

    def stepEnabled(self) -> QAbstractSpinBox.StepEnabledFlag:
        flags = QAbstractSpinBox.StepEnabledFlag.StepNone
        if self._value > 0:
            flags |= QAbstractSpinBox.StepEnabledFlag.StepDownEnabled
        if self._value < MAX_SEED:
            flags |= QAbstractSpinBox.StepEnabledFlag.StepUpEnabled
        return flags
