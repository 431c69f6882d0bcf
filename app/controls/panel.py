"""The controls column: model, mode, decoding controls, presets, and the Generate / Stop buttons."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from app.controls.decode_box import DecodeBox
from app.controls.mode_box import ModeBox
from app.controls.model_box import ModelBox
from app.controls.spec import default_values
from app.controls.widgets import guard_wheel
from app.persistence.presets import PresetStore


class ControlsPanel(QWidget):
    """Composes the boxes; the main window reads `decode.values()`, `mode.inputs()` and listens to signals."""

    generate_clicked = Signal()
    stop_clicked = Signal()
    preset_message = Signal(str)

    def __init__(self, presets: PresetStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.presets = presets
        self.model = ModelBox()
        self.mode = ModeBox()
        self.decode = DecodeBox()
        self.generate = QPushButton("Generate  (Ctrl+Enter)")
        self.generate.setAccessibleName("Generate")
        self.stop = QPushButton("Stop  (Esc)")
        self.stop.setAccessibleName("Stop")
        self.stop.setToolTip("Stop writing now; what was written so far is kept.")
        self.stop.setEnabled(False)
        self._running = False
        self.mode.usable_changed.connect(lambda _: self._sync_generate())
        self.mode.mode_changed.connect(self.decode.set_task)
        self.decode.set_task(self.mode.mode())
        self.decode.n.valueChanged.connect(self._show_variant_count)
        self._show_variant_count(self.decode.n.value())
        self.generate.clicked.connect(self.generate_clicked)
        self.stop.clicked.connect(self.stop_clicked)
        buttons = QHBoxLayout()
        buttons.addWidget(self.generate, 2)
        buttons.addWidget(self.stop, 1)
        inner = QWidget()
        column = QVBoxLayout(inner)
        for widget in (self.model, self.mode, self.decode, self._preset_box()):
            column.addWidget(widget)
        column.addStretch(1)
        scroll = QScrollArea(widgetResizable=True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(inner)
        guard_wheel(inner)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll, 1)
        layout.addLayout(buttons)

    def _preset_box(self) -> QGroupBox:
        box = QGroupBox("Presets")
        self.preset_picker = QComboBox(editable=True)
        self.preset_picker.setAccessibleName("Preset name")
        self.preset_picker.setToolTip("Type a name and press Save to keep the current settings; "
                                      "pick a name and press Load to bring them back.")
        self.refresh_presets()
        column = QVBoxLayout(box)
        column.addWidget(self.preset_picker)
        grid = QGridLayout()  # two by two: four buttons in a row would not fit the column at 1280×800
        column.addLayout(grid)
        for index, (label, slot, tip) in enumerate((
            ("Load", self._load_clicked, "Apply the chosen preset's settings."),
            ("Save", self._save_clicked, "Save the current settings under this name."),
            ("Delete", self._delete_clicked, "Forget the chosen preset."),
            ("Reset", self.reset_controls, "Put every control back to its default."),
        )):
            button = QPushButton(label)
            button.setToolTip(tip)
            button.setAccessibleName(f"{label} preset")
            button.clicked.connect(slot)
            grid.addWidget(button, index // 2, index % 2)
        return box

    def refresh_presets(self) -> None:
        current = self.preset_picker.currentText()
        self.preset_picker.clear()
        self.preset_picker.addItems(self.presets.names())
        self.preset_picker.setCurrentText(current)

    def save_preset(self, name: str) -> None:
        self.presets.save(name, self.decode.values())
        self.refresh_presets()
        self.preset_picker.setCurrentText(name.strip())
        self.preset_message.emit(f"Preset “{name.strip()}” saved.")

    def load_preset(self, name: str) -> None:
        self.decode.set_values(self.presets.load(name))
        self.preset_message.emit(f"Preset “{name}” loaded.")

    def reset_controls(self) -> None:
        self.decode.set_values(default_values(self.decode.capabilities))
        self.preset_message.emit("Controls reset to their defaults.")

    def _save_clicked(self) -> None:
        self._guard(lambda: self.save_preset(self.preset_picker.currentText()))

    def _load_clicked(self) -> None:
        self._guard(lambda: self.load_preset(self.preset_picker.currentText()))

    def _delete_clicked(self) -> None:
        name = self.preset_picker.currentText()
        self.presets.delete(name)
        self.refresh_presets()
        self.preset_message.emit(f"Preset “{name}” deleted.")

    def _guard(self, action: Any) -> None:
        try:
            action()
        except ValueError as error:  # PresetError: no name, unknown name
            self.preset_message.emit(str(error))

    def _show_variant_count(self, n: int) -> None:
        self.mode.set_variant_count(n)
        self.generate.setToolTip(f"Write {n} variant{'s' if n != 1 else ''} with the current mode and settings.")

    def set_running(self, running: bool) -> None:
        self._running = running
        self._sync_generate()
        self.stop.setEnabled(running)

    def _sync_generate(self) -> None:
        """Generate only when idle and the loaded model can do the shown mode."""
        self.generate.setEnabled(not self._running and not self.mode.unavailable_reason())
