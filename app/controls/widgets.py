"""Slider widgets: a labelled linear/integer slider and a log-scale factor slider (POS bias's factor bounds), and
the wheel guard that lets the controls column scroll over them."""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtWidgets import QAbstractSlider, QAbstractSpinBox, QComboBox, QHBoxLayout, QLabel, QSlider, QWidget

from app.controls.spec import SliderSpec
from engine.decode_fields import POS_BIAS_FACTORS

STEP = 0.01  # resolution of float sliders (every float control is meaningful to two decimals)
WHEEL_WIDGETS = (QAbstractSlider, QAbstractSpinBox, QComboBox)  # what a mouse wheel would change in passing


class WheelGuard(QObject):
    """Hands the mouse wheel of a slider, spin box or picker that does not have the keyboard focus to its
    parent, so a wheel turned over the controls column scrolls the column instead of changing whatever
    control passes under the pointer. Clicking or tabbing to a control gives it the wheel back."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Wheel and isinstance(watched, QWidget) and not watched.hasFocus():
            event.ignore()  # not accepted: Qt offers it to the parents, up to the scroll area
            return True
        return False


_GUARD = WheelGuard()


def guard_wheel(widget: QWidget) -> None:
    """Give `widget` and each slider, spin box and picker inside it the wheel only when focused."""
    for control in [widget, *widget.findChildren(QWidget)]:
        if isinstance(control, WHEEL_WIDGETS):
            control.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # the wheel alone never focuses it
            control.installEventFilter(_GUARD)


class ValueSlider(QWidget):
    """A slider for one SliderSpec, showing its value; `value()` is in the spec's units."""

    changed = Signal(float)

    def __init__(self, spec: SliderSpec, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.spec = spec
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setAccessibleName(spec.label)
        self.slider.setToolTip(spec.help)
        if spec.integer:
            self.slider.setRange(int(spec.minimum), int(spec.maximum))
        else:
            self.slider.setRange(0, round((spec.maximum - spec.minimum) / STEP))
        self.readout = _slider_row(self, self.slider, "")
        guard_wheel(self.slider)  # method boxes are rebuilt per model: each new slider guards itself
        self.zone = QLabel(wordWrap=True)  # what the value's range does, under the slider (specs with zones)
        self.zone.setAccessibleName(f"{spec.label} range")
        self.zone.setVisible(bool(spec.zones))
        self.slider.valueChanged.connect(self._on_slider)
        self.set_value(spec.default)

    def value(self) -> float:
        return self._reading(self.slider.value())

    def set_value(self, value: float) -> None:
        self.slider.setValue(self._position(value))
        self._show()

    def held(self, value: float) -> float:
        """What `value()` reads after `set_value(value)`, so a start finer than the slider's step compares as shown."""
        return self._reading(self._position(value))

    def _position(self, value: float) -> int:
        s = self.spec
        value = min(max(float(value), s.minimum), s.maximum)
        return int(round(value) if s.integer else round((value - s.minimum) / STEP))

    def _reading(self, position: int) -> float:
        s = self.spec
        return float(position) if s.integer else round(s.minimum + position * STEP, 2)

    def _on_slider(self, _: int) -> None:
        self._show()
        self.changed.emit(self.value())

    def _show(self) -> None:
        v = self.value()
        off = self.spec.says_off and v == self.spec.off
        self.readout.setText("off" if off else (f"{int(v)}" if self.spec.integer else f"{v:.2f}"))
        self.zone.setText(f"<i>{self.spec.zone(v)}</i>")


class FactorSlider(QWidget):
    """A multiplicative factor on a log scale within POS bias's factor bounds (×0.1 to ×10, centre ×1)."""

    changed = Signal(float)

    def __init__(self, name: str, tooltip: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.low, self.high = POS_BIAS_FACTORS.low, POS_BIAS_FACTORS.upper
        self.slider.setRange(round(100 * math.log10(self.low)), round(100 * math.log10(self.high)))  # 10 ** (pos / 100)
        self.slider.setAccessibleName(f"{name} bias")
        self.slider.setToolTip(tooltip)
        self.readout = _slider_row(self, self.slider, "×1.00")
        guard_wheel(self.slider)
        self.slider.valueChanged.connect(self._on_slider)

    def value(self) -> float:
        return round(10 ** (self.slider.value() / 100), 3)

    def set_value(self, factor: float) -> None:
        factor = min(max(float(factor), self.low), self.high)
        self.slider.setValue(round(100 * math.log10(factor)))
        self.readout.setText(f"×{self.value():.2f}")

    def _on_slider(self, _: int) -> None:
        self.readout.setText(f"×{self.value():.2f}")
        self.changed.emit(self.value())


def _slider_row(owner: QWidget, slider: QSlider, text: str) -> QLabel:
    """Lay out `slider` with a value readout to its right in `owner`; returns the readout."""
    readout = QLabel(text)
    readout.setMinimumWidth(44)
    layout = QHBoxLayout(owner)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addWidget(slider, 1)
    layout.addWidget(readout)
    return readout
